/* Freivalds' test modulo the Mersenne prime p = 2^61 - 1, for products of integer-valued double
 * matrices (the Ozaki splitting's slice products, whose exact values are integers below 2^53):
 * C = A·B is checked as C·x = A·(B·x) mod p for a random x; a wrong C passes with probability
 * at most 1/2^32 per test (x has 32-bit entries; a non-zero row of C - A·B maps x to 0 mod p
 * on at most one value of one entry given the others). Matrices are column-major unless
 * said otherwise (internal: private to oracles/). */
#ifndef GEMMCHECK_ORACLES_FREIVALDS_H
#define GEMMCHECK_ORACLES_FREIVALDS_H

#include <stdbool.h>
#include <stdint.h>

/** The prime. */
#define GCK_P61 ((UINT64_C(1) << 61) - 1)

/** x mod p, for any unsigned 128-bit x. */
uint64_t gck_mod_p61(unsigned __int128 x);
/** v mod p in [0, p), for any signed 128-bit v. */
uint64_t gck_mod_p61_signed(__int128 v);

/** n entries of 32 bits drawn from `seed` (splitmix64's output, top half). */
void gck_freivalds_vector(uint64_t seed, uint64_t *x, int64_t n);

/** y = X·x mod p for a rows x cols matrix X of integer-valued doubles below 2^53 in magnitude
 *  and x below 2^61, cols < 2^13 (the sums fit __int128); acc holds `rows` sums; the rows cut
 *  among the cores. */
void gck_freivalds_matvec(const double *X, int64_t rows, int64_t cols, const uint64_t *x,
                          __int128 *acc, uint64_t *y);
/** The same for X stored row by row (its rows adjacent). */
void gck_freivalds_matvec_rows(const double *X, int64_t rows, int64_t cols, const uint64_t *x,
                               uint64_t *y);
/** The two above for a matrix of bytes (the int8 slices). */
void gck_freivalds_matvec8(const int8_t *X, int64_t rows, int64_t cols, const uint64_t *x,
                           __int128 *acc, uint64_t *y);
void gck_freivalds_matvec_rows8(const int8_t *X, int64_t rows, int64_t cols, const uint64_t *x,
                                uint64_t *y);

/** Whether C = A·B (A m x k, B k x n, C m x n, all integer-valued doubles below 2^53, k and n
 *  below 2^13) by one test with the vector of `seed`; false also when memory runs out. */
bool gck_freivalds_check(const double *A, const double *B, const double *C, int64_t m, int64_t n,
                         int64_t k, uint64_t seed);

#endif
