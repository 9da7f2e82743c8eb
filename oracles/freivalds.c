/* Freivalds' test modulo p = 2^61 - 1 (freivalds.h). */
#include "freivalds.h"

#include <stdlib.h>
#include <string.h>

#include "parallel.h"

uint64_t gck_mod_p61(unsigned __int128 x) {
    x = (x & GCK_P61) + (x >> 61);
    x = (x & GCK_P61) + (x >> 61);
    return (uint64_t)(x >= GCK_P61 ? x - GCK_P61 : x);
}

uint64_t gck_mod_p61_signed(__int128 v) {
    uint64_t r = gck_mod_p61(v >= 0 ? (unsigned __int128)v : (unsigned __int128)(-v));
    return v >= 0 || r == 0 ? r : GCK_P61 - r;
}

/* y = X·x mod p for a column-major rows x cols matrix of integer-valued doubles below 2^53 and
 * x below 2^61 (sums kept in __int128: below 2^53·2^61·cols, cols < 2^13); the rows cut among
 * the cores. */
typedef struct matvec_job {
    const double *X;
    const int8_t *X8; /* instead of X: a matrix of bytes */
    int64_t rows, cols;
    const uint64_t *x;
    __int128 *acc;
    uint64_t *y;
} matvec_job;

static void matvec_part(void *arg, int part, int64_t lo, int64_t hi) {
    (void)part;
    const matvec_job *m = arg;
    __int128 *acc = m->acc;
    memset(acc + lo, 0, (size_t)(hi - lo) * sizeof *acc);
    for (int64_t c = 0; c < m->cols; c++)
        if (m->X8) {
            const int8_t *col = m->X8 + c * m->rows;
            for (int64_t r = lo; r < hi; r++) acc[r] += (__int128)(int64_t)col[r] * m->x[c];
        } else {
            const double *col = m->X + c * m->rows;
            for (int64_t r = lo; r < hi; r++) acc[r] += (__int128)(int64_t)col[r] * m->x[c];
        }
    for (int64_t r = lo; r < hi; r++) m->y[r] = gck_mod_p61_signed(acc[r]);
}

void gck_freivalds_matvec(const double *X, int64_t rows, int64_t cols, const uint64_t *x,
                          __int128 *acc, uint64_t *y) {
    matvec_job m = {X, NULL, rows, cols, x, acc, y};
    gck_parallel_for(gck_parallel_parts(rows, cols), rows, &m, matvec_part);
}

void gck_freivalds_matvec8(const int8_t *X, int64_t rows, int64_t cols, const uint64_t *x,
                           __int128 *acc, uint64_t *y) {
    matvec_job m = {NULL, X, rows, cols, x, acc, y};
    gck_parallel_for(gck_parallel_parts(rows, cols), rows, &m, matvec_part);
}

/* y = X·x mod p for a row-major rows x cols matrix X (its rows adjacent), as matvec_mod; the rows
 * cut among the cores. */
static void matvec_rows_part(void *arg, int part, int64_t lo, int64_t hi) {
    (void)part;
    const matvec_job *m = arg;
    for (int64_t r = lo; r < hi; r++) {
        __int128 acc = 0;
        if (m->X8) {
            const int8_t *row = m->X8 + r * m->cols;
            for (int64_t c = 0; c < m->cols; c++) acc += (__int128)(int64_t)row[c] * m->x[c];
        } else {
            const double *row = m->X + r * m->cols;
            for (int64_t c = 0; c < m->cols; c++) acc += (__int128)(int64_t)row[c] * m->x[c];
        }
        m->y[r] = gck_mod_p61_signed(acc);
    }
}

void gck_freivalds_matvec_rows(const double *X, int64_t rows, int64_t cols, const uint64_t *x,
                               uint64_t *y) {
    matvec_job m = {X, NULL, rows, cols, x, NULL, y};
    gck_parallel_for(gck_parallel_parts(rows, cols), rows, &m, matvec_rows_part);
}

void gck_freivalds_matvec_rows8(const int8_t *X, int64_t rows, int64_t cols, const uint64_t *x,
                                uint64_t *y) {
    matvec_job m = {NULL, X, rows, cols, x, NULL, y};
    gck_parallel_for(gck_parallel_parts(rows, cols), rows, &m, matvec_rows_part);
}

void gck_freivalds_vector(uint64_t seed, uint64_t *x, int64_t n) {
    for (int64_t j = 0; j < n; j++) { /* splitmix64, the top 32 bits of each output */
        uint64_t z = (seed += 0x9e3779b97f4a7c15u);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
        x[j] = (z ^ (z >> 31)) >> 32;
    }
}

bool gck_freivalds_check(const double *A, const double *B, const double *C, int64_t m, int64_t n,
                         int64_t k, uint64_t seed) {
    int64_t most = m > k ? m : k;
    uint64_t *x = malloc((size_t)n * sizeof *x), *bx = malloc((size_t)k * sizeof *bx),
             *abx = malloc((size_t)m * sizeof *abx), *cx = malloc((size_t)m * sizeof *cx);
    __int128 *acc = malloc((size_t)most * sizeof *acc);
    bool ok = x && bx && abx && cx && acc;
    if (ok) {
        gck_freivalds_vector(seed, x, n);
        gck_freivalds_matvec(B, k, n, x, acc, bx);   /* B·x */
        gck_freivalds_matvec(A, m, k, bx, acc, abx); /* A·(B·x) */
        gck_freivalds_matvec(C, m, n, x, acc, cx);   /* C·x */
        ok = memcmp(abx, cx, (size_t)m * sizeof *cx) == 0;
    }
    free(x);
    free(bx);
    free(abx);
    free(cx);
    free(acc);
    return ok;
}
