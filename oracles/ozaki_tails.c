/* The Ozaki splitting's tails (ozaki_internal.h): the products that involve a value's bits below
 * its line's slices, added one by one per element (exactly, in __int128 where they fit) or
 * summed ahead of the elements in doubles where that is exact (see oracle_ozaki.c). */
#include "ozaki_internal.h"

#include "format_internal.h"
#include "freivalds.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bigmem.h"
#include "decode.h"
#include "gemmcheck/kernels.h"
#include "oracle_common.h"
#include "parallel.h"
#include "stash.h"

void gck_ozaki_tail_terms(const gck_ozaki *o, int64_t bi, int64_t i, int64_t j,
                          void (*add)(void *ctx, unsigned __int128 m, int32_t e, bool neg),
                          void *ctx) {
    int64_t ma, mb, na, nb;
    const tailv *ta, *tb;
    gck_oz_tails_at(o, bi, i, j, &ma, &mb, &ta, &na, &tb, &nb);
    /* a·b = main_a·main_b (the slice products) + tail_a·b + a·tail_b - tail_a·tail_b */
    for (int64_t x = 0; x < na; x++) {
        dec d = value_at(&o->vb, mb, j, ta[x].k);
        if (d.m) add(ctx, (unsigned __int128)ta[x].m * d.m, ta[x].e + d.e, ta[x].neg != d.neg);
    }
    for (int64_t x = 0, y = 0; x < nb; x++) {
        dec d = value_at(&o->va, ma, i, tb[x].k);
        if (d.m) add(ctx, (unsigned __int128)tb[x].m * d.m, tb[x].e + d.e, tb[x].neg != d.neg);
        while (y < na && ta[y].k < tb[x].k) y++;
        if (y < na && ta[y].k == tb[x].k) /* both have a tail at this k */
            add(ctx, (unsigned __int128)ta[y].m * tb[x].m, ta[y].e + tb[x].e,
                ta[y].neg == tb[x].neg);
    }
}

/* One side's tail products into *s (see gck_ozaki_tail_sum128): each tail tv[x] times the value
 * of the partner line at the tail's k (element x·ks from p), for a partner format of fb fraction
 * and eb exponent bits in `bytes` bytes; the call sites pass constants, so that the decoding is
 * specialised per format. */
static inline __attribute__((always_inline)) void tail_side128(const tailv *tv, int64_t n,
                                                               const char *p, int64_t ks, int fb,
                                                               int eb, int bytes, gck_sum128 *s) {
    for (int64_t x = 0; x < n; x++) {
        bool sp;
        dec d = strip(decode_raw(raw_at(p, bytes, tv[x].k * ks), fb, eb, &sp));
        if (d.m)
            gck_sum128_add(s, (unsigned __int128)tv[x].m * d.m, (int64_t)tv[x].e + d.e,
                           tv[x].neg != d.neg);
    }
}

/* One side's tail products into *s, product by product: a line's tails times the partner line
 * (member, line of v). */
static void tail_side(const tailv *tv, int64_t n, const lines *v, int64_t member, int64_t line,
                      gck_sum128 *s) {
    if (!n) return;
    const char *p = (const char *)v->base + member * v->member_bytes + line * v->ls * v->lay.bytes;
    switch (v->type) {
    case GCK_F16: tail_side128(tv, n, p, v->ks, 10, 5, 2, s); break;
    case GCK_BF16: tail_side128(tv, n, p, v->ks, 7, 8, 2, s); break;
    case GCK_F64: tail_side128(tv, n, p, v->ks, 52, 11, 8, s); break;
    default: tail_side128(tv, n, p, v->ks, 23, 8, 4, s); /* f32, TF32 */
    }
}

bool gck_oz_tails_one_by_one128(const gck_ozaki *o, int64_t ma, int64_t mb, int64_t i, int64_t j,
                                const tailv *ta, int64_t na, const tailv *tb, int64_t nb,
                                gck_sum128 *s) {
    /* as gck_ozaki_tail_terms: tail_a·b + a·tail_b - tail_a·tail_b */
    tail_side(ta, na, &o->vb, mb, j, s);
    tail_side(tb, nb, &o->va, ma, i, s);
    for (int64_t x = 0, y = 0; na && x < nb; x++) {
        while (y < na && ta[y].k < tb[x].k) y++;
        if (y == na) break;
        if (ta[y].k == tb[x].k)
            gck_sum128_add(s, (unsigned __int128)ta[y].m * tb[x].m, (int64_t)ta[y].e + tb[x].e,
                           ta[y].neg == tb[x].neg);
    }
    return !s->overflow;
}

bool gck_ozaki_tail_sum128(const gck_ozaki *o, int64_t bi, int64_t i, int64_t j, gck_sum128 *s,
                           int64_t counts[2]) {
    int64_t ma, mb, na, nb;
    const tailv *ta, *tb;
    gck_oz_tails_at(o, bi, i, j, &ma, &mb, &ta, &na, &tb, &nb);
    if (!na && !nb) return !s->overflow;
    counts[0]++;
    if (o->tsum && gck_oz_tails_exact(o, ma, mb, i, j, na, nb)) {
        counts[1]++;
        gck_sum128_add_double(s, o->tsum[((o->pairs == 1 ? 0 : bi) * o->n + j) * o->m + i]);
        return !s->overflow;
    }
    return gck_oz_tails_one_by_one128(o, ma, mb, i, j, ta, na, tb, nb, s);
}

/* ---- the tails' products, summed ahead of the elements ------------------------------------ */

/* tsum of pair p (members ma, mb): += tail_a·b over the rows of op(A) in blocks of 8, summed
 * along j in a scratch of 8 rows and then written out 8 adjacent sums per j (each part writes
 * its rows only); += a·tail_b over the columns; -= tail_a·tail_b. An element uses its sum only
 * where gck_oz_tails_exact holds: then none of these operations rounds, in any order. */
typedef struct tsum_job {
    const gck_ozaki *o;
    double *t;
    int64_t ma, mb;
    double **scratch; /* per part: 8 rows of N */
} tsum_job;

/* y[0 .. n) += v·x[0 .. n) */
static void axpy(double *restrict y, const double *restrict x, double v, int64_t n) {
    for (int64_t q = 0; q < n; q++) y[q] += v * x[q];
}

static void tsum_rows_part(void *arg, int part, int64_t lo, int64_t hi) {
    const tsum_job *x = arg;
    const gck_ozaki *o = x->o;
    int64_t M = o->m, N = o->n;
    const int64_t *st = o->ta_start + x->ma * M;
    const double *pb = o->pb + x->mb * o->k * N;
    double *sc = x->scratch[part];
    for (int64_t blk = lo; blk < hi; blk++) {
        int64_t i0 = blk * 8, i1 = i0 + 8 < M ? i0 + 8 : M;
        if (st[i1] == st[i0]) continue;
        memset(sc, 0, (size_t)(8 * N) * sizeof *sc);
        for (int64_t i = i0; i < i1; i++)
            for (int64_t z = st[i]; z < st[i + 1]; z++)
                axpy(sc + (i - i0) * N, pb + o->ta[z].k * N, o->ta[z].v, N);
        for (int64_t j = 0; j < N; j++)
            for (int64_t i = i0; i < i1; i++) x->t[j * M + i] = sc[(i - i0) * N + j];
    }
}

static void tsum_cols_part(void *arg, int part, int64_t lo, int64_t hi) {
    (void)part;
    const tsum_job *x = arg;
    const gck_ozaki *o = x->o;
    int64_t M = o->m;
    const int64_t *st = o->tb_start + x->mb * o->n;
    const double *pa = o->pa + x->ma * o->k * M;
    for (int64_t j = lo; j < hi; j++)
        for (int64_t z = st[j]; z < st[j + 1]; z++)
            axpy(x->t + j * M, pa + o->tb[z].k * M, o->tb[z].v, M);
}

/* -= tail_a·tail_b: op(A)'s tails bucketed by k, met by each tail of each column. */
static bool tsum_both(const tsum_job *x) {
    const gck_ozaki *o = x->o;
    int64_t K = o->k, M = o->m, N = o->n, na;
    if (!o->ntail_a || !o->ntail_b) return true;
    const int64_t *sa = o->ta_start + x->ma * M, *sb = o->tb_start + x->mb * N;
    if (!(na = sa[M] - sa[0]) || sb[N] == sb[0]) return true;
    int64_t *start = calloc((size_t)(K + 2), sizeof *start);
    tailv *byk = malloc((size_t)na * sizeof *byk);
    if (!start || !byk) {
        free(start);
        free(byk);
        return false;
    }
    for (int64_t z = sa[0]; z < sa[M]; z++) start[o->ta[z].k + 2]++;
    for (int64_t k = 0; k < K; k++) start[k + 2] += start[k + 1];
    for (int64_t i = 0; i < M; i++) /* the row in m */
        for (int64_t z = sa[i]; z < sa[i + 1]; z++)
            byk[start[o->ta[z].k + 1]++] = (tailv){o->ta[z].k, (uint64_t)i, 0, 0, o->ta[z].v};
    for (int64_t j = 0; j < N; j++)
        for (int64_t z = sb[j]; z < sb[j + 1]; z++)
            for (int64_t y = start[o->tb[z].k]; y < start[o->tb[z].k + 1]; y++)
                x->t[j * M + byk[y].m] -= byk[y].v * o->tb[z].v;
    free(start);
    free(byk);
    return true;
}

/* tsum for every pair; false (tsum freed: every element adds its tail products one by one) when
 * out of memory. */
bool gck_oz_build_tsum(gck_ozaki *o) {
    int64_t M = o->m, N = o->n, blocks = (M + 7) / 8;
    int parts = gck_parallel_parts(blocks, 8 * N);
    parts = parts < OZ_MAX_PARTS ? parts : OZ_MAX_PARTS;
    if (!o->tsum) o->tsum = gck_big_calloc((size_t)(o->pairs * M * N), sizeof *o->tsum);
    double *scratch[OZ_MAX_PARTS] = {0};
    bool ok = o->tsum != NULL;
    for (int t = 0; ok && o->ntail_a && t < parts; t++)
        ok = (scratch[t] = malloc((size_t)(8 * N) * sizeof *scratch[t])) != NULL;
    for (int64_t p = 0; ok && p < o->pairs; p++) {
        tsum_job x = {o, o->tsum + p * M * N, o->a_batched ? p : 0, o->b_batched ? p : 0, scratch};
        if (o->ntail_a) gck_parallel_for(parts, blocks, &x, tsum_rows_part);
        if (o->ntail_b) gck_parallel_for(gck_parallel_parts(N, M), N, &x, tsum_cols_part);
        ok = tsum_both(&x);
    }
    for (int t = 0; t < OZ_MAX_PARTS; t++) free(scratch[t]);
    if (!ok) {
        gck_big_free(o->tsum);
        o->tsum = NULL;
    }
    return ok;
}
