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

/* op(A) for a·tail_b, whose reads go down a column of op(A) as the elements of a column of D are
 * evaluated one row after another: op(A) as the caller stores it where its columns are adjacent
 * (each read then beside the previous row's), else the line-major copy (the same values). From
 * the copy, each read was a line of K values past the last, a miss: on a Zen 4, f32 4096^3 on
 * 5 x 5 int8 residues (2,743 tails in op(B)), the tail products took 19.7% of the exact
 * oracle's time reading through the copy, 11.9% reading op(A) as stored. */
static const lines *a_across(const gck_ozaki *o) {
    return o->va_given.ls == 1 ? &o->va_given : &o->va;
}

/* The first byte of line `line` of member `member` of v. */
static inline const char *line_at(const lines *v, int64_t member, int64_t line) {
    return (const char *)v->base + member * v->member_bytes + line * v->ls * v->lay.bytes;
}

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
        dec d = value_at(a_across(o), ma, i, tb[x].k);
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
    const char *p = line_at(v, member, line);
    switch (v->type) {
    case GCK_F16: tail_side128(tv, n, p, v->ks, 10, 5, 2, s); break;
    case GCK_BF16: tail_side128(tv, n, p, v->ks, 7, 8, 2, s); break;
    case GCK_F64: tail_side128(tv, n, p, v->ks, 52, 11, 8, s); break;
    default: tail_side128(tv, n, p, v->ks, 23, 8, 4, s); /* f32, TF32 */
    }
}

void gck_oz_tails_prefetch(const gck_ozaki *o, int64_t bi, int64_t i0, int64_t i1, int64_t j) {
    if (!o->ta && !o->tb) return;
    const lines *vb = &o->vb, *va = a_across(o);
    for (int64_t i = i0; i < i1; i++) {
        int64_t ma, mb, na, nb;
        const tailv *ta, *tb;
        gck_oz_tails_at(o, bi, i, j, &ma, &mb, &ta, &na, &tb, &nb);
        if ((!na && !nb) || (o->tsum && gck_oz_tails_exact(o, ma, mb, i, j, na, nb))) continue;
        const char *pb = line_at(vb, mb, j);
        for (int64_t x = 0; x < na; x++) __builtin_prefetch(pb + ta[x].k * vb->ks * vb->lay.bytes);
        if (va->ls == 1) continue; /* down a column of op(A) as stored: the hardware's prefetch */
        const char *pa = line_at(va, ma, i);
        for (int64_t x = 0; x < nb; x++) __builtin_prefetch(pa + tb[x].k * va->ks * va->lay.bytes);
    }
}

bool gck_oz_tails_one_by_one128(const gck_ozaki *o, int64_t ma, int64_t mb, int64_t i, int64_t j,
                                const tailv *ta, int64_t na, const tailv *tb, int64_t nb,
                                gck_sum128 *s) {
    /* as gck_ozaki_tail_terms: tail_a·b + a·tail_b - tail_a·tail_b */
    tail_side(ta, na, &o->vb, mb, j, s);
    tail_side(tb, nb, a_across(o), ma, i, s);
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

/* tsum of pair p (members ma, mb), in one pass over the columns j, TS_COLS at a time, that writes
 * each column of tsum whole: tail_a·b (op(A)'s tails bucketed by k, each times the block's
 * columns of op(B) at its k, those decoded once into a scratch block, the products summed side
 * by side in cache); -= tail_a·tail_b (the tails of column j met by op(A)'s at the same k);
 * += a·tail_b (each tail of column j times op(A)'s column at its k, whole: decoded from A itself
 * where its columns are adjacent and floats hold its values, else from `at`, op(A) transposed
 * at the steps op(B)'s tails have, made before the pass, as floats where floats hold the
 * values). An element uses its sum only where gck_oz_tails_exact holds: then none of these
 * operations rounds, in any order. (The a·tail_b part went before by blocks of 8 rows of tsum,
 * each block reading every column: 0.073 s of a 4096^3 f16 oracle's 0.155 for the tails, Zen 4;
 * whole columns from `at`, then blocks of columns: see docs/PERFORMANCE.md.) */
typedef struct atail {
    int64_t i, k;
    double v;
} atail;

typedef struct tsum_job {
    const gck_ozaki *o;
    double *t;
    int64_t ma, mb;
    const atail *byk;    /* op(A)'s tails of member ma in order of k */
    const int64_t *kat;  /* byk[kat[k] .. kat[k + 1]): those at step k */
    int64_t na;          /* how many */
    const int64_t *kl;   /* the steps k op(B)'s tails of member mb have, nk of them, ascending */
    const int32_t *kpos; /* per tail of op(B) of member mb: its k's place in kl */
    int64_t nk;
    void *at;         /* [q][i]: op(A) at step kl[q], row i (NaN and Inf as 0); NULL: no tails */
    bool at_floats;   /* at holds floats (else doubles) */
    bool a_cols;      /* no `at`: op(A)'s columns decoded where the caller stores them */
    double **scratch; /* per part: TS_COLS columns of op(B), K values each, side by side; the
                       * sums of a block of TS_COLS columns, M each, side by side; then K floats
                       * (a column's decoding) and M floats (a column of op(A), where a_cols) */
} tsum_job;

/* value x of a line as a double, NaN and Inf as 0 (as value_at) */
static inline __attribute__((always_inline)) double finite_at(const char *p, gck_format f,
                                                              int64_t x) {
    double y = gck_fmt_load_as(p, f, x);
    return isfinite(y) ? y : 0.0;
}

/* float x[i] as a double, a NaN or Inf as +0: its bits made those of +0 by a mask, so that the
 * loops calling it are vectorised (isfinite on a float was not) */
static inline __attribute__((always_inline)) double finite_float_at(const float *x, int64_t i) {
    uint32_t b;
    memcpy(&b, &x[i], sizeof b);
    b &= -(uint32_t)((b & 0x7f800000u) != 0x7f800000u);
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

/* y[0 .. M) += v·x[0 .. M), x floats or doubles (every product and sum exact here) */
static void add_scaled_f(double *restrict y, const float *restrict x, double v, int64_t M) {
    for (int64_t i = 0; i < M; i++) y[i] += v * (double)x[i];
}
static void add_scaled_d(double *restrict y, const double *restrict x, double v, int64_t M) {
    for (int64_t i = 0; i < M; i++) y[i] += v * x[i];
}
/* the same, x's NaN and Inf as 0 */
static void add_scaled_finite(double *restrict y, const float *restrict x, double v, int64_t M) {
    for (int64_t i = 0; i < M; i++) y[i] += v * finite_float_at(x, i);
}

/* tc += v times op(A)'s column at step k (member ma), decoded into acol where the caller stores it
 * (tsum_job's a_cols), else read from `at` (its place q there). */
static inline void add_a_column(const tsum_job *x, double *restrict tc, float *restrict acol,
                                int64_t k, int64_t q, double v) {
    int64_t M = x->o->m;
    if (x->a_cols) {
        const lines *va = &x->o->va_given;
        int64_t bytes = gck_format_get(va->type)->storage_bytes;
        const char *col = (const char *)va->base + x->ma * va->member_bytes + k * va->ks * bytes;
        gck_kfloats(acol, col, va->type, 1, M);
        add_scaled_finite(tc, acol, v, M);
    } else if (x->at_floats) {
        add_scaled_f(tc, (const float *)x->at + q * M, v, M);
    } else {
        add_scaled_d(tc, (const double *)x->at + q * M, v, M);
    }
}

/* Columns j0 .. j0 + nj - 1 of op(B) (nj <= TS_COLS) decoded into bq, side by side: bq[k·TS_COLS
 * + c] the value of column j0 + c at step k (NaN and Inf as 0; 0 beyond nj); fcol: K floats of
 * room. */
#define TS_COLS 4
static inline __attribute__((always_inline)) void b_columns(const tsum_job *x, int64_t j0, int nj,
                                                            double *restrict bq,
                                                            float *restrict fcol, gck_format f) {
    const lines *vb = &x->o->vb;
    int64_t K = x->o->k;
    const char *base = (const char *)vb->base + x->mb * vb->member_bytes;
    for (int c = 0; c < TS_COLS; c++) {
        int64_t j = j0 + c;
        if (c >= nj) {
            for (int64_t k = 0; k < K; k++) bq[k * TS_COLS + c] = 0;
        } else if (gck_fmt_floats_hold(f)) { /* the column as the kernels' packing reads it */
            gck_kfloats(fcol, base + j * vb->ls * gck_format_get(f)->storage_bytes, f, vb->ks, K);
            for (int64_t k = 0; k < K; k++) bq[k * TS_COLS + c] = finite_float_at(fcol, k);
        } else {
            for (int64_t k = 0; k < K; k++)
                bq[k * TS_COLS + c] = finite_at(base, f, j * vb->ls + k * vb->ks);
        }
    }
}

/* tsum's columns [lo, hi), TS_COLS at a time: op(A)'s tails (byk) times the block's columns of
 * op(B) summed side by side in acc (each tail read once per block, its four products in one
 * pass), then each column's own tails as in one column. */
static inline __attribute__((always_inline)) void
tsum_cols_as(const tsum_job *x, int part, int64_t lo, int64_t hi, gck_format f) {
    const gck_ozaki *o = x->o;
    int64_t M = o->m, K = o->k;
    const int64_t *sb = o->tb ? o->tb_start + x->mb * o->n : NULL;
    double *restrict bq = x->scratch[part], *restrict acc = bq + K * TS_COLS;
    float *restrict fcol = (float *)(acc + M * TS_COLS), *restrict acol = fcol + K;
    for (int64_t j0 = lo; j0 < hi; j0 += TS_COLS) {
        int nj = hi - j0 < TS_COLS ? (int)(hi - j0) : TS_COLS;
        if (x->na) {
            b_columns(x, j0, nj, bq, fcol, f);
            memset(acc, 0, (size_t)(M * TS_COLS) * sizeof *acc);
            for (int64_t y = 0; y < x->na; y++) {
                double v = x->byk[y].v, *restrict a = acc + x->byk[y].i * TS_COLS;
                const double *restrict b = bq + x->byk[y].k * TS_COLS;
                for (int c = 0; c < TS_COLS; c++) a[c] += v * b[c];
            }
        }
        for (int c = 0; c < nj; c++) {
            int64_t j = j0 + c;
            double *restrict tc = x->t + j * M;
            if (x->na)
                for (int64_t i = 0; i < M; i++) tc[i] = acc[i * TS_COLS + c];
            else
                memset(tc, 0, (size_t)M * sizeof *tc);
            for (int64_t z = sb ? sb[j] : 0; x->na && sb && z < sb[j + 1]; z++)
                for (int64_t y = x->kat[o->tb[z].k]; y < x->kat[o->tb[z].k + 1]; y++)
                    tc[x->byk[y].i] -= x->byk[y].v * o->tb[z].v;
            for (int64_t z = sb ? sb[j] : 0; (x->at || x->a_cols) && z < sb[j + 1]; z++)
                add_a_column(x, tc, acol, o->tb[z].k, x->a_cols ? 0 : x->kpos[z - sb[0]],
                             o->tb[z].v);
        }
    }
}

static void tsum_cols_part(void *arg, int part, int64_t lo, int64_t hi) {
    const tsum_job *x = arg;
    GCK_FOR_EACH_STORED(x->o->vb.type, tsum_cols_as, x, part, lo, hi)
}

/* Rows [lo, hi) of `at` (tsum_job), blocks of 64 rows: their lines stay in cache while every
 * step is read from them. */
#define AT_ROWS 64
static inline __attribute__((always_inline)) void at_rows_as(const tsum_job *x, int64_t lo,
                                                             int64_t hi, gck_format f) {
    const gck_ozaki *o = x->o;
    const lines *va = &o->va;
    int64_t M = o->m;
    const char *base = (const char *)va->base + x->ma * va->member_bytes;
    for (int64_t i0 = lo; i0 < hi; i0 += AT_ROWS) {
        int64_t i1 = hi - i0 < AT_ROWS ? hi : i0 + AT_ROWS;
        for (int64_t q = 0; q < x->nk; q++) {
            int64_t k = x->kl[q];
            if (x->at_floats) {
                float *r = (float *)x->at + q * M;
                for (int64_t i = i0; i < i1; i++)
                    r[i] = (float)finite_at(base, f, i * va->ls + k * va->ks);
            } else {
                double *r = (double *)x->at + q * M;
                for (int64_t i = i0; i < i1; i++)
                    r[i] = finite_at(base, f, i * va->ls + k * va->ks);
            }
        }
    }
}

static void at_rows_part(void *arg, int part, int64_t lo, int64_t hi) {
    (void)part;
    const tsum_job *x = arg;
    GCK_FOR_EACH_STORED(x->o->va.type, at_rows_as, x, lo, hi)
}

/* op(A)'s tails of member ma bucketed by k into x (byk, kat: to be freed); false when out of
 * memory. */
static bool tails_by_k(const gck_ozaki *o, int64_t ma, tsum_job *x) {
    int64_t K = o->k, M = o->m;
    const int64_t *sa = o->ta ? o->ta_start + ma * M : NULL;
    x->na = sa ? sa[M] - sa[0] : 0;
    int64_t *start = calloc((size_t)(K + 2), sizeof *start);
    atail *byk = malloc((size_t)(x->na ? x->na : 1) * sizeof *byk);
    x->kat = start, x->byk = byk;
    if (!start || !byk) return false;
    for (int64_t z = sa ? sa[0] : 0; sa && z < sa[M]; z++) start[o->ta[z].k + 2]++;
    for (int64_t k = 0; k < K; k++) start[k + 2] += start[k + 1];
    for (int64_t i = 0; sa && i < M; i++)
        for (int64_t z = sa[i]; z < sa[i + 1]; z++)
            byk[start[o->ta[z].k + 1]++] = (atail){i, o->ta[z].k, o->ta[z].v};
    return true; /* start[k] .. start[k + 1] now bound the tails at k */
}

/* The steps k op(B)'s tails of member mb have, ascending, into x (kl, kpos: to be freed): the
 * pass over rows decodes op(A) at those only. False when out of memory. */
static bool tails_steps(const gck_ozaki *o, int64_t mb, tsum_job *x) {
    int64_t K = o->k, N = o->n;
    const int64_t *sb = o->tb_start + mb * N;
    int64_t nb = sb[N] - sb[0];
    int64_t *kl = malloc((size_t)K * sizeof *kl);
    int32_t *kpos = malloc((size_t)(nb ? nb : 1) * sizeof *kpos), *at = malloc((size_t)K * 4);
    x->kl = kl, x->kpos = kpos, x->nk = 0;
    bool ok = kl && kpos && at;
    if (ok) {
        memset(at, 0xff, (size_t)K * 4); /* -1: no tail at k */
        for (int64_t z = sb[0]; z < sb[N]; z++) at[o->tb[z].k] = 0;
        for (int64_t k = 0; k < K; k++)
            if (at[k] == 0) at[k] = (int32_t)x->nk, kl[x->nk++] = k;
        for (int64_t z = sb[0]; z < sb[N]; z++) kpos[z - sb[0]] = at[o->tb[z].k];
    }
    free(at);
    return ok;
}

/* op(A) of member ma at op(B)'s tails' steps (x->kl) transposed into x->at (to be freed with
 * gck_big_free); false when out of memory. */
static bool transposed_at_steps(const gck_ozaki *o, tsum_job *x) {
    int64_t M = o->m;
    x->at_floats = gck_fmt_floats_hold(o->va.type);
    size_t bytes = (size_t)(x->nk * M) * (x->at_floats ? sizeof(float) : sizeof(double));
    if (!(x->at = gck_big_alloc(bytes))) return false;
    gck_parallel_for(gck_parallel_parts(M, x->nk), M, x, at_rows_part);
    return true;
}

/* tsum for every pair (its memory as gck_big_calloc or gck_big_alloc gives it: every column is
 * written whole); false (tsum freed: every element adds its tail products one by one) when out
 * of memory. */
bool gck_oz_build_tsum(gck_ozaki *o) {
    int64_t M = o->m, N = o->n, K = o->k;
    int parts = gck_parallel_parts(N, M + K);
    parts = parts < OZ_MAX_PARTS ? parts : OZ_MAX_PARTS;
    if (!o->tsum) o->tsum = gck_big_alloc((size_t)(o->pairs * M * N) * sizeof *o->tsum);
    double *scratch[OZ_MAX_PARTS] = {0};
    bool ok = o->tsum != NULL;
    for (int t = 0; ok && t < parts; t++)
        ok = (scratch[t] = malloc((size_t)(K + M) * (TS_COLS * sizeof(double) + sizeof(float)))) !=
             NULL;
    /* op(A)'s columns adjacent where the caller stores them, of values floats hold: each tail of
     * op(B) decodes the one it needs there (F16C for f16), no transposed copy is made */
    bool a_cols = o->va_given.ls == 1 && gck_fmt_floats_hold(o->va_given.type);
    for (int64_t p = 0; ok && p < o->pairs; p++) {
        tsum_job x = {.o = o,
                      .t = o->tsum + p * M * N,
                      .ma = o->a_batched ? p : 0,
                      .mb = o->b_batched ? p : 0,
                      .scratch = scratch};
        ok = tails_by_k(o, x.ma, &x);
        if (ok && o->tb && o->tb_start[x.mb * N + N] > o->tb_start[x.mb * N]) {
            x.a_cols = a_cols;
            ok = a_cols || (tails_steps(o, x.mb, &x) && transposed_at_steps(o, &x));
        }
        if (ok) gck_parallel_for(parts, N, &x, tsum_cols_part);
        free((void *)x.kat);
        free((void *)x.byk);
        free((void *)x.kl);
        free((void *)x.kpos);
        gck_big_free(x.at);
    }
    for (int t = 0; t < OZ_MAX_PARTS; t++) free(scratch[t]);
    if (!ok) {
        gck_big_free(o->tsum);
        o->tsum = NULL;
    }
    return ok;
}
