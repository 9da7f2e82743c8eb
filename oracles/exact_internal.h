/* The exact oracle's parts, shared by its plan (exact_plan.c), superaccumulator
 * (exact_superacc.c), per-element evaluation (exact_eval.c) and whole GEMM (oracle_exact.c)
 * (internal: private to oracles/). */
#ifndef GEMMCHECK_ORACLES_EXACT_INTERNAL_H
#define GEMMCHECK_ORACLES_EXACT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "decode.h"
#include "format_internal.h"
#include "oracle_exact.h"
#include "oracle_ozaki.h"

static inline dec decode_double(double x) {
    uint64_t u;
    bool special;
    memcpy(&u, &x, sizeof u);
    return strip(decode_raw(u, 52, 11, &special));
}

/* How the sum S of an element's products is accumulated (chosen per GEMM from the operands'
 * exponent spread and significand widths). */
enum {
    PATH_ZERO,      /* A or B holds no non-zero finite value: S = 0 */
    PATH_FIX64,     /* fixed point, S fits one int64 */
    PATH_FIX128,    /* fixed point, S fits one __int128 */
    PATH_BUCKET64,  /* products of <= 31-bit significands into int64 exponent buckets */
    PATH_BUCKET128, /* any products into __int128 exponent buckets */
    PATH_OZAKI,     /* every element's sum from slice products (oracle_ozaki.c) */
};

/* Buckets are 2^BUCKET_LOG = 4 bits of exponent apart; a value's significand is stored shifted
 * left by its exponent mod 4, so that a product needs no shift: its bucket is the sum of the
 * operands' exponents divided by 4. */
#define BUCKET_LOG      2
#define BUCKET_PRESHIFT 3 /* the largest such shift */

/* A bucket64 operand value: significand (shifted by r mod 4) and bucket offset r / 4, side by
 * side, so that a product is two sign-extending loads, a multiply and an indexed add. */
typedef struct sigexp {
    int32_t s;
    uint32_t q;
} sigexp;

struct gck_exact_plan {
    const gck_case *c;
    const void *A, *B, *C;
    uint8_t *row_special, *col_special; /* a NaN/Inf in row i of op(A) / column j of op(B) */
    int path;
    /* Every array below is laid out op(A)[member][i][k] and op(B)[member][j][k]. */
    int64_t *afix, *bfix; /* FIX: a = afix·2^emin_a */
    /* buckets: with r = e - emin, the significand shifted left by r mod 4, and r / 4 */
    sigexp *apk, *bpk;    /* BUCKET64: both side by side */
    int64_t *asig, *bsig; /* BUCKET128: the significands ... */
    int32_t *aexp, *bexp; /* ... and r / 4 */
    /* buckets: range of r / 4 over the non-zero values of a row of op(A) / column of op(B)
     * (zeros sit at offset 0: adding their 0 to any bucket changes nothing) */
    int32_t *alo, *ahi, *blo, *bhi;
    int64_t block; /* products per bucket copy between two folds into S */
    int ncopy;     /* copies of the buckets, used in turn (1 or 4) */
    int nbuckets;
    int32_t base_s; /* exponent of bit 0 of the accumulator of S */
    int nlimbs_s;
    int nlimbs_f; /* the largest final frame any element needs */
    dec alpha, beta;
    /* the case's facts each element needs, looked up once */
    bool rab, rc;
    gck_format td;
    const gck_format_info *fo;
    int64_t crs, ccs;
    gck_ozaki *oz;    /* PATH_OZAKI: the sums */
    char oz_why[160]; /* otherwise: why not */
};

struct gck_exact_ws {
    int64_t *s, *f;
    void *buckets; /* ncopy copies of nbuckets int64 or __int128, zero between elements */
    uint32_t *mag;
    int ns, nf, nb;
    int s_lo, s_top;  /* S's limbs that matter: s_lo..s_top-1 digits, s_top 0 or -1 (sign) */
    long lane;        /* elements by the 128-bit lane */
    long lane256;     /* elements by the 256-bit lane */
    long lane_double; /* of the 128-bit lane's, those finished in doubles (lane_double) */
    int64_t tails[2]; /* of those, elements meeting a tail; those whose tail sum came ahead */
};

static inline void add64(int64_t *l, int64_t o, uint64_t v, int neg) {
    unsigned __int128 w = (unsigned __int128)v << (o & 31);
    int64_t *q = l + (o >> 5);
    int64_t s = neg ? -1 : 1;
    q[0] += s * (int64_t)(uint32_t)w;
    q[1] += s * (int64_t)(uint32_t)(w >> 32);
    q[2] += s * (int64_t)(uint64_t)(w >> 64);
}

static inline void add128(int64_t *l, int64_t o, unsigned __int128 v, int neg) {
    add64(l, o, (uint64_t)v, neg);
    if (v >> 64) add64(l, o + 64, (uint64_t)(v >> 64), neg);
}

/* N·2^q, exact when the result is a double: 2^q built from its bits where it is one. */
static inline double scale2(uint64_t N, int64_t q) {
    if (q < -1074 || q > 1023)
        return ldexp((double)N, (int)(q < -2200 ? -2200 : q > 2200 ? 2200 : q));
    return (double)N * pow2_bits(q);
}

/* Carry-propagate: every limb but the top one in [0, 2^32); the top one carries the sign. */
void gck_sacc_normalize(int64_t *l, int n);

/* Round the value (limbs, bit 0 at 2^base) once to format f. *zero: the value was exactly 0. */
double gck_sacc_round_to(const int64_t *l, int n, int32_t base, const gck_format_info *f,
                         uint32_t *mag, bool *zero);

/* |value| rounded up to a double. */
double gck_sacc_magnitude_up(const int64_t *l, int n, int32_t base, uint32_t *mag, int *neg);

#endif
