/* Exact sums of products by error-free splitting: the Ozaki scheme (K. Ozaki, T. Ogita,
 * S. Oishi, S. M. Rump, "Error-free transformations of matrix multiplication by using fast
 * routines of matrix multiplication and its applications", Numer. Algorithms 59, 2012), in its
 * integer form (H. Ootomo, K. Ozaki, R. Yokota, "DGEMM on integer matrix multiplication unit",
 * IJHPCA 2024).
 *
 * Each row i of op(A) gets a scale 2^Ea_i above its largest magnitude, and each value a_ik of it,
 * an integer multiple of its lowest set bit, is written exactly as
 *     a_ik = sum_s  dA_s(i,k) · 2^(Ea_i - beta·(s+1)),   |dA_s| < 2^beta, s = 0 .. SA-1,
 * where SA·beta covers the widest row (from its top bit to its lowest set bit); likewise
 * b_kj = sum_t dB_t(k,j)·2^(Eb_j - beta·(t+1)). Then
 *     S_ij = sum_{s,t} 2^(Ea_i + Eb_j - beta·(s+t+2)) · P_st(i,j),   P_st = dA_s · dB_t.
 * With beta = floor((53 - ceil(log2 K)) / 2), every product of digits is below 2^(2·beta) and any
 * partial sum of K of them below K·2^(2·beta) <= 2^53: every P_st is computed exactly by any f64
 * GEMM, whatever its order of summation, blocking or use of FMA. The P_st of equal s + t = d have
 * the same weight and are added in int64 (at most min(SA, SB) terms below 2^53 each), so an
 * element keeps SA + SB - 1 integer terms, which the exact oracle adds into its integer
 * accumulator and rounds once.
 *
 * The f64 GEMM is gemmcheck's own (kernels/), which is itself under test; so each term matrix Q_d
 * is checked exactly against the digits, by Freivalds' test in the integers modulo the prime
 * p = 2^61 - 1: Q_d·x = sum_{s+t=d} dA_s·(dB_t·x) (mod p) for a vector x of 32-bit values. A
 * wrong Q_d passes with probability at most 2^-32; a failed check drops the splitting and the
 * oracle sums the products one by one, as when splitting would not pay or not fit in memory.
 *
 * The bits of a value below its line's slices (its tail: zero for most values) are kept exactly
 * and their products added one by one (a·b = slices' product + tail_a·b + a·tail_b -
 * tail_a·tail_b), so that a few small values do not set the slice count of a whole line. */
#include "oracle_ozaki.h"

#include "format_internal.h"
#include "freivalds.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "gemmcheck/kernels.h"
#include "oracle_common.h"
#include "parallel.h"
#include "stash.h"

/* Splitting is used in AUTO mode from this many products (per GEMM), and in any mode while its
 * arrays take at most OZ_MAX_BYTES. */
#define OZ_MIN_PRODUCTS (INT64_C(1) << 22)
#define OZ_MAX_BYTES    (INT64_C(4) << 30)
#define OZ_MAX_BITS     120 /* slices·beta: a value's significand shifted into an __int128 */

/* One operand as lines (rows of op(A), columns of op(B)) along k. */
typedef struct lines {
    const void *base;
    gck_format type;
    layout lay;
    int64_t stride, members, count, k, ls, ks; /* element (line, k) at line·ls + k·ks */
    int64_t member_bytes;                      /* from one member to the next */
} lines;

/* A value's bits below its line's slices: m·2^e with the value's sign, at step k; v the same
 * as a double (exact: m has at most 53 bits and e >= -1074). */
typedef struct tailv {
    int64_t k;
    uint64_t m;
    int32_t e, neg;
    double v;
} tailv;

/* Where a line's tails lie: every tail is a multiple of 2^lo, and their magnitudes add up to
 * less than 2^up. */
typedef struct tail_span {
    int32_t lo, up;
} tail_span;

struct gck_ozaki {
    int64_t m, n, k, pairs;    /* pairs: members with their own sums (1 when A and B are shared) */
    bool a_batched, b_batched; /* a member of A (B) per batch member, else one for all */
    int sa, sb, beta, nd;
    int64_t corrupt;  /* gck_ozaki_options' planted fault (tests; < 0: none) */
    int32_t *ea, *eb; /* per member and row of op(A) / column of op(B): the scale exponent */
    uint8_t *need_a, *need_b; /* as ea, eb: the most slices a value of the line needs */
    int64_t *q;               /* [pair][j][i][d]: the terms of each element */
    int32_t lowest, width;
    /* the tails: the bits of a value below its line's SA (SB) slices, kept exactly, per line
     * (member·lines + line) in order of k; their products are added one by one */
    lines va, vb;
    int64_t *ta_start, *tb_start;
    tailv *ta, *tb;
    tail_span *sp_a, *sp_b; /* per line, as ta_start */
    /* the tails' partners as doubles (NaN and Inf as 0) with the lines adjacent, k by k:
     * op(B) for op(A)'s tails ([member][k][j]), op(A) for op(B)'s ([member][k][i]) */
    double *pa, *pb;
    void *va_copy, *vb_copy; /* va, vb line by line, when the operands' lines are strided */
    /* [pair][j][i]: each element's tail products, tail_a·b + a·tail_b - tail_a·tail_b, summed in
     * doubles; exact where tails_exact says so (else the element adds them one by one) */
    double *tsum;
    int32_t low_a, low_b; /* the lowest set bit of any value of op(A), op(B) */
    int64_t ntail_a, ntail_b;
};

static gck_ozaki_mode mode = GCK_OZAKI_AUTO;
static bool mode_set;

void gck_ozaki_set_mode(gck_ozaki_mode m) {
    mode = m;
    mode_set = true;
}

gck_ozaki_options gck_ozaki_defaults(void) {
    gck_ozaki_options o = {GCK_OZAKI_AUTO, -1};
    const char *e = getenv("GEMMCHECK_OZAKI");
    if (mode_set)
        o.mode = mode;
    else if (e && !strcmp(e, "always"))
        o.mode = GCK_OZAKI_ALWAYS;
    else if (e && !strcmp(e, "never"))
        o.mode = GCK_OZAKI_NEVER;
    return o;
}

void gck_ozaki_free(gck_ozaki *o) {
    if (!o) return;
    free(o->ea);
    free(o->eb);
    free(o->need_a);
    free(o->need_b);
    free(o->q);
    free(o->ta_start);
    free(o->tb_start);
    free(o->ta);
    free(o->tb);
    free(o->sp_a);
    free(o->sp_b);
    free(o->pa);
    free(o->pb);
    free(o->va_copy);
    free(o->vb_copy);
    free(o->tsum);
    free(o);
}

void gck_ozaki_shape(const gck_ozaki *o, int *slices_a, int *slices_b, int *beta) {
    *slices_a = o->sa;
    *slices_b = o->sb;
    *beta = o->beta;
}

void gck_ozaki_tails(const gck_ozaki *o, int64_t *tails_a, int64_t *tails_b) {
    *tails_a = o->ntail_a;
    *tails_b = o->ntail_b;
}

void gck_ozaki_range(const gck_ozaki *o, int32_t *lowest, int32_t *width) {
    *lowest = o->lowest;
    *width = o->width;
}

/* The value of a line at step k, decoded in the shortest form, whose last bit is at or above the
 * operand's lowest set bit (the frame of the tails' products starts there). A NaN or Inf gives
 * m = 0 (such elements are decided by the IEEE rules first). */
static inline __attribute__((always_inline)) dec value_as(const lines *v, layout lay,
                                                          int64_t member, int64_t line, int64_t k) {
    bool sp;
    return strip(decode_raw(raw_at((const char *)v->base + member * v->member_bytes, lay.bytes,
                                   line * v->ls + k * v->ks),
                            lay.fb, lay.eb, &sp));
}

static inline __attribute__((always_inline)) dec value_at(const lines *v, int64_t member,
                                                          int64_t line, int64_t k) {
    return value_as(v, v->lay, member, line, k);
}

/* The tails of row i of op(A) and column j of op(B) for batch member bi: *na from *ta, *nb from
 * *tb, each in order of k; *ma and *mb the members they belong to. */
static inline __attribute__((always_inline)) void
tails_at(const gck_ozaki *o, int64_t bi, int64_t i, int64_t j, int64_t *ma, int64_t *mb,
         const tailv **ta, int64_t *na, const tailv **tb, int64_t *nb) {
    *ma = o->a_batched ? bi : 0, *mb = o->b_batched ? bi : 0;
    const int64_t *sa = o->ta ? o->ta_start + *ma * o->m + i : NULL,
                  *sb = o->tb ? o->tb_start + *mb * o->n + j : NULL;
    *ta = sa ? o->ta + sa[0] : NULL, *na = sa ? sa[1] - sa[0] : 0;
    *tb = sb ? o->tb + sb[0] : NULL, *nb = sb ? sb[1] - sb[0] : 0;
}

void gck_ozaki_tail_terms(const gck_ozaki *o, int64_t bi, int64_t i, int64_t j,
                          void (*add)(void *ctx, unsigned __int128 m, int32_t e, bool neg),
                          void *ctx) {
    int64_t ma, mb, na, nb;
    const tailv *ta, *tb;
    tails_at(o, bi, i, j, &ma, &mb, &ta, &na, &tb, &nb);
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

/* *s += (-1)^neg·ma·mb·2^(e - base), false (nothing added) when the product lies below 2^base or
 * it or the sum would reach 2^125. */
static inline bool add_prod128(__int128 *s, uint64_t ma, uint64_t mb, int64_t e, int32_t base,
                               bool neg) {
    int64_t sh = e - base;
    if (sh < 0 || bits_of(ma) + bits_of(mb) + sh > 125) return false;
    __int128 v = (__int128)(((unsigned __int128)ma * mb) << sh);
    return !__builtin_add_overflow(*s, neg ? -v : v, s);
}

/* One side's tail products into *s (see gck_ozaki_tail_sum128): each tail tv[x] times the value
 * of the partner line at the tail's k (element x·ks from p), for a partner format of fb fraction
 * and eb exponent bits in `bytes` bytes; the call sites pass constants, so that the decoding is
 * specialised per format. */
static inline __attribute__((always_inline)) bool tail_side128(const tailv *tv, int64_t n,
                                                               const char *p, int64_t ks, int fb,
                                                               int eb, int bytes, int32_t base,
                                                               __int128 *s) {
    for (int64_t x = 0; x < n; x++) {
        bool sp;
        dec d = strip(decode_raw(raw_at(p, bytes, tv[x].k * ks), fb, eb, &sp));
        if (d.m && !add_prod128(s, tv[x].m, d.m, (int64_t)tv[x].e + d.e, base, tv[x].neg != d.neg))
            return false;
    }
    return true;
}

/* *s += v (a double that is a multiple of 2^base), false as add_prod128. */
static bool add_double128(__int128 *s, double v, int32_t base) {
    if (v == 0.0) return true;
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    bool special;
    dec d = strip(decode_raw(bits, 52, 11, &special)); /* its last bit at or above 2^base */
    return add_prod128(s, d.m, 1, d.e, base, d.neg);
}

/* One side's tail products into *s, product by product: a line's tails times the partner line
 * (member, line of v). */
static bool tail_side(const tailv *tv, int64_t n, const lines *v, int64_t member, int64_t line,
                      int32_t base, __int128 *s) {
    if (!n) return true;
    const char *p = (const char *)v->base + member * v->member_bytes + line * v->ls * v->lay.bytes;
    switch (v->type) {
    case GCK_F16: return tail_side128(tv, n, p, v->ks, 10, 5, 2, base, s);
    case GCK_BF16: return tail_side128(tv, n, p, v->ks, 7, 8, 2, base, s);
    case GCK_F64: return tail_side128(tv, n, p, v->ks, 52, 11, 8, base, s);
    default: return tail_side128(tv, n, p, v->ks, 23, 8, 4, base, s); /* f32, TF32 */
    }
}

/* Whether element (i, j) of members ma, mb has its tail products summed exactly in tsum. Its
 * terms (tail_a·b, a·tail_b, tail_a·tail_b) are multiples of 2^L, L the lower of the two sides'
 * lowest bits (a tail's lowest bit plus the partner operand's), and each group adds up to less
 * than 2^U (the side's span times its partner line's scale; tail_a·tail_b less than either), so
 * with 2^(U+2) <= 2^(L+53) every product and partial sum is a multiple of 2^L below 2^(L+53)
 * and representable (L >= -1074, U + 2 <= 1024): no operation rounds, in any order. */
static bool tails_exact(const gck_ozaki *o, int64_t ma, int64_t mb, int64_t i, int64_t j,
                        int64_t na, int64_t nb) {
    int32_t L = INT32_MAX, U = INT32_MIN;
    if (na) {
        const tail_span *sp = o->sp_a + ma * o->m + i;
        L = sp->lo + o->low_b, U = sp->up + o->eb[mb * o->n + j];
    }
    if (nb) {
        const tail_span *sp = o->sp_b + mb * o->n + j;
        int32_t l = sp->lo + o->low_a, u = sp->up + o->ea[ma * o->m + i];
        L = l < L ? l : L, U = u > U ? u : U;
    }
    return L >= -1074 && (int64_t)U + 2 <= ((int64_t)L + 53 < 1024 ? (int64_t)L + 53 : 1024);
}

bool gck_ozaki_tail_sum128(const gck_ozaki *o, int64_t bi, int64_t i, int64_t j, int32_t base,
                           __int128 *s, int64_t counts[2]) {
    int64_t ma, mb, na, nb;
    const tailv *ta, *tb;
    tails_at(o, bi, i, j, &ma, &mb, &ta, &na, &tb, &nb);
    if (!na && !nb) return true;
    counts[0]++;
    if (o->tsum && tails_exact(o, ma, mb, i, j, na, nb)) {
        counts[1]++;
        return add_double128(s, o->tsum[((o->pairs == 1 ? 0 : bi) * o->n + j) * o->m + i], base);
    }
    /* as gck_ozaki_tail_terms: tail_a·b + a·tail_b - tail_a·tail_b */
    if (!tail_side(ta, na, &o->vb, mb, j, base, s) || !tail_side(tb, nb, &o->va, ma, i, base, s))
        return false;
    for (int64_t x = 0, y = 0; na && x < nb; x++) {
        while (y < na && ta[y].k < tb[x].k) y++;
        if (y == na) break;
        if (ta[y].k == tb[x].k && !add_prod128(s, ta[y].m, tb[x].m, (int64_t)ta[y].e + tb[x].e,
                                               base, ta[y].neg == tb[x].neg))
            return false;
    }
    return true;
}

const int64_t *gck_ozaki_terms(const gck_ozaki *o, int64_t bi, int64_t i, int64_t j, int32_t *w0,
                               int *count) {
    int64_t pair = o->pairs == 1 ? 0 : bi, ma = o->a_batched ? bi : 0, mb = o->b_batched ? bi : 0;
    *w0 = o->ea[ma * o->m + i] + o->eb[mb * o->n + j] - 2 * o->beta;
    *count = o->nd;
    return o->q + ((pair * o->n + j) * o->m + i) * o->nd;
}

/* Each line's scale E (the exponent just above its largest magnitude; 0 for a line without a
 * non-zero finite value), and how many slices of beta bits each value needs below its line's
 * scale: hist[n] values need n (the last bin, OZ_NEED_BINS - 1, those needing more), need[t]
 * the most any value of line t needs; *low: the lowest set bit of any value. The lines are cut
 * among the cores, each with its own histogram. */
#define OZ_NEED_BINS 64
#define OZ_MAX_PARTS 64
#define OZ_NEED_TAB  2048 /* gaps w below a line's scale looked up (from 63·26 up: the last bin) */
typedef struct scales_job {
    const lines *v;
    int beta;
    int32_t *E;
    uint8_t *need;
    uint8_t tab[OZ_NEED_TAB]; /* tab[w]: the slices a value needs whose last bit is w below E */
    int64_t hist[OZ_MAX_PARTS][OZ_NEED_BINS];
    int32_t low[OZ_MAX_PARTS];
} scales_job;

/* scales_part for one storage layout. The largest magnitude of a line is the largest of its
 * values' stored bits without the sign among the finite ones (IEEE formats order magnitudes as
 * integers), so the first pass over a line compares integers only. */
static inline __attribute__((always_inline)) void scales_as(scales_job *x, layout lay, int part,
                                                            int64_t lo, int64_t hi) {
    const lines *v = x->v;
    int64_t *hist = x->hist[part];
    int32_t low = INT32_MAX;
    const uint64_t sign = UINT64_C(1) << (lay.fb + lay.eb), inf = (uint64_t)((1 << lay.eb) - 1)
                                                                  << lay.fb;
    for (int64_t t = lo; t < hi; t++) {
        const char *p = (const char *)v->base + t / v->count * v->member_bytes +
                        t % v->count * v->ls * lay.bytes;
        uint64_t big = 0;
        for (int64_t k = 0; k < v->k; k++) {
            uint64_t u = raw_at(p, lay.bytes, k * v->ks) & (sign - 1);
            big = u < inf && u > big ? u : big;
        }
        bool sp;
        dec top = decode_raw(big, lay.fb, lay.eb, &sp);
        int32_t e = x->E[t] = big ? top.e + bits_of(top.m) : 0;
        int most = 0;
        for (int64_t k = 0; big && k < v->k; k++) { /* the line is cache-hot */
            dec d = strip(decode_raw(raw_at(p, lay.bytes, k * v->ks), lay.fb, lay.eb, &sp));
            if (!d.m) continue;
            int64_t w = (int64_t)e - d.e; /* at least 1 */
            int need = x->tab[w < OZ_NEED_TAB ? w : OZ_NEED_TAB - 1];
            hist[need]++;
            most = need > most ? need : most;
            low = d.e < low ? d.e : low;
        }
        x->need[t] = (uint8_t)most;
    }
    x->low[part] = low;
}

static void scales_part(void *arg, int part, int64_t lo, int64_t hi) {
    scales_job *x = arg;
#define SCALES(lay) scales_as(x, lay, part, lo, hi)
    FOR_EACH_LAYOUT(x->v->type, SCALES)
#undef SCALES
}

/* Parts for a pass over `count` lines of v, at most OZ_MAX_PARTS (the per-part results). */
static int line_parts(const lines *v, int64_t count) {
    int parts = gck_parallel_parts(count, v->k);
    return parts < OZ_MAX_PARTS ? parts : OZ_MAX_PARTS;
}

static bool line_scales(const lines *v, int beta, int32_t *E, uint8_t *need, int64_t *hist,
                        int32_t *low) {
    scales_job *x = calloc(1, sizeof *x);
    if (!x) return false;
    x->v = v, x->beta = beta, x->E = E, x->need = need;
    for (int w = 0; w < OZ_NEED_TAB; w++) { /* ceil(w / beta), the last bin for the rest */
        int n = (w + beta - 1) / beta;
        x->tab[w] = (uint8_t)(n < OZ_NEED_BINS ? n : OZ_NEED_BINS - 1);
    }
    int parts = line_parts(v, v->members * v->count);
    gck_parallel_for(parts, v->members * v->count, x, scales_part);
    for (int p = 0; p < parts; p++) {
        for (int n = 0; n < OZ_NEED_BINS; n++) hist[n] += x->hist[p][n];
        if (x->low[p] < *low) *low = x->low[p];
    }
    free(x);
    return true;
}

/* The most slices any value needs (0: no non-zero finite value). */
static int most_needed(const int64_t *hist) {
    int n = OZ_NEED_BINS - 1;
    while (n > 0 && !hist[n]) n--;
    return n;
}

/* Values that need more than S slices (those with a tail). */
static int64_t tails_beyond(const int64_t *hist, int S) {
    int64_t n = 0;
    for (int x = S + 1; x < OZ_NEED_BINS; x++) n += hist[x];
    return n;
}

/* The tails of the values that need more than S slices, line by line in order of k (CSR: line
 * t's at out[start[t] .. start[t+1]]), and each line's span; *tmin: the lowest bit of any tail.
 * Two passes over the lines, cut among the cores: each line's count, then (from their prefix
 * sums) its tails. */
typedef struct tails_job {
    const lines *v;
    const int32_t *E;
    const uint8_t *need; /* the most slices a value of each line needs: lines within S have none */
    int beta, S;
    int64_t *start; /* first pass: start[t + 1] = line t's count */
    tailv *out;     /* NULL in the first pass */
    tail_span *span;
    int32_t tmin[OZ_MAX_PARTS];
} tails_job;

/* The smallest c with n <= 2^c (n >= 1). */
static int32_t ceil_log2(int64_t n) { return n <= 1 ? 0 : 64 - __builtin_clzll((uint64_t)n - 1); }

static inline __attribute__((always_inline)) void tails_as(tails_job *x, layout lay, int part,
                                                           int64_t lo, int64_t hi) {
    const lines *v = x->v;
    int32_t tmin = INT32_MAX;
    for (int64_t t = lo; t < hi; t++) {
        if (x->need[t] <= x->S) { /* no tail */
            if (!x->out) x->start[t + 1] = 0;
            continue;
        }
        int32_t cut = x->E[t] - x->beta * x->S; /* the slices keep the bits from cut up */
        int64_t n = x->out ? x->start[t] : 0;
        int32_t low = INT32_MAX, top = INT32_MIN;
        for (int64_t k = 0; k < v->k; k++) {
            dec d = value_as(v, lay, t / v->count, t % v->count, k);
            if (!d.m || d.e >= cut) continue;
            if (x->out) {
                int w = cut - d.e; /* the tail's bits: below the cut (d.e is set: never 0) */
                uint64_t m = w >= 64 ? d.m : d.m & ((UINT64_C(1) << w) - 1);
                double tv = ldexp((double)m, d.e);
                x->out[n] = (tailv){k, m, d.e, d.neg, d.neg ? -tv : tv};
                if (d.e < low) low = d.e;
                if (d.e + bits_of(m) > top) top = d.e + bits_of(m);
            }
            n++;
        }
        if (!x->out)
            x->start[t + 1] = n;
        else if (low != INT32_MAX) /* the line's n tails add up to less than n·2^top */
            x->span[t] = (tail_span){low, top + ceil_log2(n - x->start[t])};
        if (low < tmin) tmin = low;
    }
    x->tmin[part] = tmin;
}

static void tails_part(void *arg, int part, int64_t lo, int64_t hi) {
    tails_job *x = arg;
#define TAILS(lay) tails_as(x, lay, part, lo, hi)
    FOR_EACH_LAYOUT(x->v->type, TAILS)
#undef TAILS
}

static bool collect_tails(const lines *v, const int32_t *E, const uint8_t *need, int beta, int S,
                          int64_t count, int64_t **start, tailv **out, tail_span **span,
                          int32_t *tmin) {
    int64_t nl = v->members * v->count;
    *start = malloc((size_t)(nl + 1) * sizeof **start);
    *out = malloc((size_t)(count > 0 ? count : 1) * sizeof **out);
    *span = calloc((size_t)nl, sizeof **span);
    tails_job *x = calloc(1, sizeof *x);
    bool ok = *start && *out && *span && x;
    if (ok) {
        *x = (tails_job){
            .v = v, .E = E, .need = need, .beta = beta, .S = S, .start = *start, .span = *span};
        int parts = line_parts(v, nl);
        gck_parallel_for(parts, nl, x, tails_part);
        (*start)[0] = 0;
        for (int64_t t = 0; t < nl; t++) (*start)[t + 1] += (*start)[t];
        ok = (*start)[nl] == count;
        x->out = *out;
        if (ok) gck_parallel_for(parts, nl, x, tails_part);
        for (int p = 0; ok && p < parts; p++)
            if (x->tmin[p] < *tmin) *tmin = x->tmin[p];
    }
    free(x);
    return ok;
}

/* Digit s (of S slices of beta bits) of the value d of a line of scale E. */
static inline double digit(dec d, int32_t E, int beta, int S, int s) {
    if (!d.m) return 0.0;          /* zeros, and NaN or Inf (decided by the IEEE rules instead) */
    int sh = d.e - (E - beta * S); /* below 0: the value has a tail, which is dropped here */
    if (sh <= -64) return 0.0;
    unsigned __int128 x = sh >= 0 ? (unsigned __int128)d.m << sh : (unsigned __int128)(d.m >> -sh);
    uint64_t g = (uint64_t)(x >> (beta * (S - 1 - s))) & ((UINT64_C(1) << beta) - 1);
    return d.neg ? -(double)g : (double)g;
}

/* Slice s of the lines of member b, line by line (element (line, k) at line·K + k: op(B)'s
 * slice is the K x count column-major matrix, op(A)'s the transpose of its count x K one); the
 * lines cut among the cores. */
typedef struct slice_job {
    const lines *v;
    const int32_t *E;
    int64_t b;
    int beta, S, s;
    double *out;
} slice_job;

/* digit() when the slices span at most 63 bits (beta·S <= 63), in 64-bit integers without
 * branches: the value's significand as stored (its trailing zeros too) shifted to the slices'
 * frame, whose lowest bit lies at `cut` (a shift right of 63 leaves nothing of a significand
 * below 2^53), then the slice `up` bits above the frame's lowest. */
static inline __attribute__((always_inline)) double digit64(dec d, int32_t cut, int up,
                                                            uint64_t mask) {
    int32_t sh = d.e - cut;
    uint64_t x = sh >= 0 ? d.m << (sh & 63) : d.m >> (-sh < 63 ? -sh : 63);
    double g = (double)((x >> up) & mask);
    return d.neg ? -g : g;
}

/* slice_part for one storage layout. */
static inline __attribute__((always_inline)) void slice_as(const slice_job *x, layout lay,
                                                           int64_t lo, int64_t hi) {
    const lines *v = x->v;
    const int32_t *E = x->E + x->b * v->count;
    const char *base = (const char *)v->base + x->b * v->member_bytes;
    bool narrow = x->beta * x->S <= 63;
    int up = x->beta * (x->S - 1 - x->s);
    uint64_t mask = (UINT64_C(1) << x->beta) - 1;
    for (int64_t l = lo; l < hi; l++) {
        int32_t cut = E[l] - x->beta * x->S;
        double *out = x->out + l * v->k;
        for (int64_t k = 0; k < v->k; k++) {
            bool sp;
            dec d = decode_raw(raw_at(base, lay.bytes, l * v->ls + k * v->ks), lay.fb, lay.eb, &sp);
            out[k] =
                narrow ? digit64(d, cut, up, mask) : digit(strip(d), E[l], x->beta, x->S, x->s);
        }
    }
}

static void slice_part(void *arg, int part, int64_t lo, int64_t hi) {
    (void)part;
    const slice_job *x = arg;
#define SLICE(lay) slice_as(x, lay, lo, hi)
    FOR_EACH_LAYOUT(x->v->type, SLICE)
#undef SLICE
}

static void slice(const lines *v, const int32_t *E, int64_t b, int beta, int S, int s,
                  double *out) {
    slice_job x = {v, E, b, beta, S, s, out};
    gck_parallel_for(line_parts(v, v->count), v->count, &x, slice_part);
}

/* ---- building the terms -------------------------------------------------------------------- */

typedef struct work {
    double *as, *bs, *p; /* a slice of op(A)ᵀ (K x M), the SB slices of op(B) (K x N), a product */
    uint64_t *x, *yb, *ra; /* Freivalds: x (N), dB_t·x (SB x K), dA_s·(dB_t·x) (M) */
    __int128 *acc;         /* sums of a matrix-vector product (max(M, K)) */
    __int128 *rhs;         /* ND x M */
} work;

static void work_free(work *w) {
    void *all[] = {w->as, w->bs, w->p, w->x, w->yb, w->ra, w->acc, w->rhs};
    for (size_t t = 0; t < sizeof all / sizeof all[0]; t++) free(all[t]);
}

static bool work_alloc(work *w, const gck_ozaki *o) {
    int64_t M = o->m, N = o->n, K = o->k, mk = M > K ? M : K;
    /* the large ones from the stash when it has them (the checker's bound leaves two) */
    void *as = gck_stash_take((size_t)(M * K) * sizeof(double)),
         *bs = gck_stash_take((size_t)(o->sb * K * N) * sizeof(double)),
         *p = gck_stash_take((size_t)(M * N) * sizeof(double));
    *w = (work){as ? as : malloc((size_t)(M * K) * sizeof(double)),
                bs ? bs : malloc((size_t)(o->sb * K * N) * sizeof(double)),
                p ? p : malloc((size_t)(M * N) * sizeof(double)),
                malloc((size_t)N * sizeof(uint64_t)),
                malloc((size_t)(o->sb * K) * sizeof(uint64_t)),
                malloc((size_t)M * sizeof(uint64_t)),
                malloc((size_t)mk * sizeof(__int128)),
                malloc((size_t)(o->nd * M) * sizeof(__int128))};
    return w->as && w->bs && w->p && w->x && w->yb && w->ra && w->acc && w->rhs;
}

/* P = dA_s · dB_t with gemmcheck's f64 GEMM (exact: see the top of the file); a holds dA_s
 * transposed. */
static bool slice_product(const gck_ozaki *o, const double *a, const double *b, double *p) {
    gck_case g; /* f64, column-major, tight, alpha = 1, beta = 0 (C not read) */
    gck_case_init(&g, o->m, o->n, o->k);
    g.transa = GCK_OP_T, g.lda = o->k;
    char msg[256];
    return gck_gemm(&g, a, b, p, p, NULL, msg, sizeof msg) == GCK_GEMM_OK;
}

/* Q_d += P for the slice product P (M x N), the columns cut among the cores; a part that meets
 * a NaN or a value out of range (a wrong product: exact ones are integers below 2^53) says so. */
typedef struct accum_job {
    const double *p;
    int64_t *q;
    const __int128 *rhs;
    const uint64_t *x;
    __int128 *acc;
    int64_t m, n, nd, d;
    bool bad[OZ_MAX_PARTS];
} accum_job;

static void accum_part(void *arg, int part, int64_t lo, int64_t hi) {
    accum_job *x = arg;
    bool bad = false;
    for (int64_t j = lo; j < hi; j++)
        for (int64_t i = 0; i < x->m; i++) {
            double v = x->p[i + j * x->m];
            if (!(fabs(v) < 0x1p60))
                bad = true;
            else
                x->q[(j * x->m + i) * x->nd + x->d] += (int64_t)v;
        }
    x->bad[part] = bad;
}

/* Freivalds' test of every Q_d on rows [lo, hi): Q_d·x against the sum of dA_s·(dB_t·x). */
static void verify_part(void *arg, int part, int64_t lo, int64_t hi) {
    accum_job *x = arg;
    bool bad = false;
    for (int64_t d = 0; d < x->nd; d++) {
        memset(x->acc + lo, 0, (size_t)(hi - lo) * sizeof *x->acc);
        for (int64_t j = 0; j < x->n; j++)
            for (int64_t i = lo; i < hi; i++)
                x->acc[i] += (__int128)x->q[(j * x->m + i) * x->nd + d] * (__int128)x->x[j];
        for (int64_t i = lo; i < hi; i++)
            if (gck_mod_p61_signed(x->acc[i]) !=
                gck_mod_p61((unsigned __int128)x->rhs[d * x->m + i]))
                bad = true;
    }
    x->bad[part] = bad;
}

/* Runs one of the passes above over `count` columns or rows; false when a part failed. */
static bool accum_pass(accum_job *x, int64_t count, void (*body)(void *, int, int64_t, int64_t)) {
    int parts = gck_parallel_parts(count, count == x->n ? x->m : x->n);
    if (parts > OZ_MAX_PARTS) parts = OZ_MAX_PARTS;
    gck_parallel_for(parts, count, x, body);
    for (int p = 0; p < parts; p++)
        if (x->bad[p]) return false;
    return true;
}

/* The terms of one pair of members: every slice product added into q (this pair's block), each
 * term matrix checked by Freivalds' test. false: out of memory or a wrong product. */
static bool build_pair(gck_ozaki *o, const lines *va, const lines *vb, int64_t ma, int64_t mb,
                       int64_t *q, work *w, uint64_t seed) {
    int64_t M = o->m, N = o->n, K = o->k, nd = o->nd;
    gck_freivalds_vector(seed, w->x, N);
    for (int t = 0; t < o->sb; t++) {
        slice(vb, o->eb, mb, o->beta, o->sb, t, w->bs + t * K * N);
        gck_freivalds_matvec(w->bs + t * K * N, K, N, w->x, w->acc, w->yb + t * K);
    }
    memset(w->rhs, 0, (size_t)(nd * M) * sizeof *w->rhs);
    accum_job x = {
        .p = w->p, .q = q, .rhs = w->rhs, .x = w->x, .acc = w->acc, .m = M, .n = N, .nd = nd};
    for (int s = 0; s < o->sa; s++) {
        slice(va, o->ea, ma, o->beta, o->sa, s, w->as);
        for (int t = 0; t < o->sb; t++) {
            if (!slice_product(o, w->as, w->bs + t * K * N, w->p)) return false;
            if (o->corrupt >= 0 && s + t == 0) w->p[o->corrupt % (M * N)] += 1;
            x.d = s + t;
            if (!accum_pass(&x, N, accum_part)) return false;
            gck_freivalds_matvec_rows(w->as, M, K, w->yb + t * K, w->ra);
            for (int64_t i = 0; i < M; i++) w->rhs[x.d * M + i] += w->ra[i];
        }
    }
    return accum_pass(&x, M, verify_part);
}

/* ---- the tails' products, summed ahead of the elements ------------------------------------ */

/* tsum of pair p (members ma, mb): += tail_a·b over the rows of op(A) in blocks of 8, summed
 * along j in a scratch of 8 rows and then written out 8 adjacent sums per j (each part writes
 * its rows only); += a·tail_b over the columns; -= tail_a·tail_b. An element uses its sum only
 * where tails_exact holds: then none of these operations rounds, in any order. */
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
static bool build_tsum(gck_ozaki *o) {
    int64_t M = o->m, N = o->n, blocks = (M + 7) / 8;
    int parts = gck_parallel_parts(blocks, 8 * N);
    parts = parts < OZ_MAX_PARTS ? parts : OZ_MAX_PARTS;
    if (!o->tsum) o->tsum = calloc((size_t)(o->pairs * M * N), sizeof *o->tsum);
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
        free(o->tsum);
        o->tsum = NULL;
    }
    return ok;
}

/* The weights' range: the lowest bit of any term and the bits any sum needs above it. */
static void weight_range(gck_ozaki *o, int64_t la, int64_t lb) {
    int32_t lo_a = INT32_MAX, hi_a = INT32_MIN, lo_b = INT32_MAX, hi_b = INT32_MIN;
    for (int64_t l = 0; l < la; l++) {
        if (o->ea[l] < lo_a) lo_a = o->ea[l];
        if (o->ea[l] > hi_a) hi_a = o->ea[l];
    }
    for (int64_t l = 0; l < lb; l++) {
        if (o->eb[l] < lo_b) lo_b = o->eb[l];
        if (o->eb[l] > hi_b) hi_b = o->eb[l];
    }
    o->lowest = lo_a + lo_b - o->beta * (o->sa + o->sb);
    /* the top term: below min(SA, SB)·2^53 <= 2^56 at weight Ea + Eb - 2·beta; ND terms add at
     * most 4 bits of carries */
    o->width = hi_a + hi_b - 2 * o->beta + 64 - o->lowest;
}

/* The slice counts of least estimated cost, in f64 multiply-adds: SA·SB slice products of M·N·K
 * each, and every tail value TAIL_COST times for each element it meets (a decoded product added
 * to the element's accumulator); *cost: that cost. */
#define TAIL_COST 200.0
static void choose_slices(gck_ozaki *o, const int64_t *ha, const int64_t *hb, double *cost) {
    int maxa = most_needed(ha), maxb = most_needed(hb);
    if (maxa > OZ_MAX_BITS / o->beta) maxa = OZ_MAX_BITS / o->beta;
    if (maxb > OZ_MAX_BITS / o->beta) maxb = OZ_MAX_BITS / o->beta;
    double mnk = (double)o->m * (double)o->n * (double)o->k * (double)o->pairs;
    *cost = INFINITY;
    for (int sa = 1; sa <= maxa; sa++)
        for (int sb = 1; sb <= maxb; sb++) {
            double c = sa * sb * mnk + TAIL_COST * (double)o->pairs *
                                           ((double)o->n * (double)tails_beyond(ha, sa) +
                                            (double)o->m * (double)tails_beyond(hb, sb));
            if (c < *cost) *cost = c, o->sa = sa, o->sb = sb;
        }
}

/* Whether to split: always in ALWAYS mode (memory permitting), else when the product is large
 * and splitting costs at most half of summing one by one (about OZ_ONE_BY_ONE multiply-adds of
 * an f64 GEMM per product, as measured on a Zen 3: 0.35 ns per product against 0.035). */
#define OZ_ONE_BY_ONE 10.0
static bool decide(gck_ozaki *o, gck_ozaki_mode md, double cost, char *why, size_t len) {
    int64_t products = o->pairs * o->m * o->n * o->k;
    double bytes = 8.0 * ((double)o->pairs * (double)o->m * (double)o->n * o->nd +
                          (double)o->m * (double)o->k + (double)o->sb * (double)o->k * o->n +
                          (double)o->m * (double)o->n);
    if (o->va_copy) /* op(A) or op(B) copied line by line */
        bytes += (double)o->va.members * (double)o->m * (double)o->k * o->va.lay.bytes;
    if (o->vb_copy) bytes += (double)o->vb.members * (double)o->n * (double)o->k * o->vb.lay.bytes;
    if (o->ntail_a || o->ntail_b) /* the tails' sums and partners */
        bytes += 8.0 * (double)o->pairs * (double)o->m * (double)o->n +
                 8.0 * (double)o->k *
                     ((o->ntail_b ? (double)o->va.members * o->m : 0) +
                      (o->ntail_a ? (double)o->vb.members * o->n : 0));
    if (bytes > (double)OZ_MAX_BYTES)
        snprintf(why, len, "splitting would take %.1f GiB", bytes / (1 << 30));
    else if (md == GCK_OZAKI_ALWAYS)
        return true;
    else if (products < OZ_MIN_PRODUCTS)
        snprintf(why, len, "too few products (%lld) for splitting to pay", (long long)products);
    else if (cost > OZ_ONE_BY_ONE / 2 * (double)products)
        snprintf(why, len,
                 "splitting would cost %.1f f64 multiply-adds per product (%d x %d slices and "
                 "%lld + %lld tails)",
                 cost / (double)products, o->sa, o->sb, (long long)o->ntail_a,
                 (long long)o->ntail_b);
    else
        return true;
    return false;
}

/* The values of v as doubles (NaN and Inf as 0) with the lines adjacent: element (line, k) of
 * member b at (b·K + k)·count + line; the steps k cut among the cores, copied in blocks of
 * 64 x 64. */
typedef struct adjacent_job {
    const lines *v;
    double *dst;
} adjacent_job;

static inline __attribute__((always_inline)) void adjacent_as(const adjacent_job *x, int64_t lo,
                                                              int64_t hi, gck_format fmt) {
    const lines *v = x->v;
    int64_t n = v->count, K = v->k, blocks = (K + 63) / 64;
    for (int64_t t = lo; t < hi; t++) {
        int64_t b = t / blocks, k0 = t % blocks * 64, k1 = k0 + 64 < K ? k0 + 64 : K;
        const char *src = (const char *)v->base + b * v->member_bytes;
        double *dst = x->dst + b * K * n;
        for (int64_t l0 = 0; l0 < n; l0 += 64)
            for (int64_t k = k0; k < k1; k++)
                for (int64_t l = l0; l < l0 + 64 && l < n; l++) {
                    double y = gck_fmt_load_as(src, fmt, l * v->ls + k * v->ks);
                    dst[k * n + l] = isfinite(y) ? y : 0.0; /* NaN and Inf as 0 (as value_at) */
                }
    }
}

static void adjacent_part(void *arg, int part, int64_t lo, int64_t hi) {
    (void)part;
    GCK_FOR_EACH_STORED(((const adjacent_job *)arg)->v->type, adjacent_as, arg, lo, hi)
}

/* The copy of v (to be freed) in `into` when given (room for it), else in new memory; NULL when
 * out of memory. */
static double *adjacent_lines(const lines *v, double *into) {
    double *copy = into ? into : malloc((size_t)(v->members * v->count * v->k) * sizeof *copy);
    if (!copy) return NULL;
    adjacent_job x = {v, copy};
    int64_t blocks = v->members * ((v->k + 63) / 64);
    gck_parallel_for(gck_parallel_parts(blocks, 64 * v->count), blocks, &x, adjacent_part);
    return copy;
}

/* The lines of v copied line by line (element (line, k) at line·K + k), in v's format, when its
 * lines are strided: every pass over the lines (scales, tails, slices) then reads adjacent
 * values instead of one per cache line and page. The steps k cut among the cores, copied in
 * blocks of 64 x 64. */
typedef struct line_major_job {
    const lines *v;
    char *dst;
} line_major_job;

static inline __attribute__((always_inline)) void
line_major_as(const line_major_job *x, int64_t bytes, int64_t lo, int64_t hi) {
    const lines *v = x->v;
    int64_t n = v->count, K = v->k, blocks = (n + 63) / 64;
    for (int64_t t = lo; t < hi; t++) {
        int64_t b = t / blocks, l0 = t % blocks * 64, l1 = l0 + 64 < n ? l0 + 64 : n;
        const char *src = (const char *)v->base + b * v->member_bytes;
        char *dst = x->dst + b * n * K * bytes;
        for (int64_t k0 = 0; k0 < K; k0 += 64)
            for (int64_t l = l0; l < l1; l++)
                for (int64_t k = k0; k < k0 + 64 && k < K; k++)
                    memcpy(dst + (l * K + k) * bytes, src + (l * v->ls + k * v->ks) * bytes,
                           (size_t)bytes);
    }
}

/* line_major_as with the value's size a constant (a move, not a call of memcpy). */
static void line_major_part(void *arg, int part, int64_t lo, int64_t hi) {
    (void)part;
    const line_major_job *x = arg;
    switch (x->v->lay.bytes) {
    case 2: line_major_as(x, 2, lo, hi); break;
    case 4: line_major_as(x, 4, lo, hi); break;
    default: line_major_as(x, 8, lo, hi); break;
    }
}

/* v in line-major order: itself when its steps are adjacent already, else a copy (*copy, to be
 * freed; NULL and false when out of memory). */
static bool line_major(lines *v, void **copy) {
    *copy = NULL;
    if (v->ks == 1 || v->k < 2) return true;
    int64_t n = v->count, K = v->k, bytes = v->lay.bytes;
    if (!(*copy = malloc((size_t)(v->members * n * K * bytes)))) return false;
    line_major_job x = {v, *copy};
    int64_t blocks = v->members * ((n + 63) / 64);
    gck_parallel_for(gck_parallel_parts(blocks, 64 * K), blocks, &x, line_major_part);
    v->base = *copy;
    v->ls = K, v->ks = 1, v->member_bytes = n * K * bytes;
    return true;
}

/* Operand x (GCK_A or GCK_B) of the case as lines: the rows of op(A) or the columns of op(B). */
static lines lines_of(const gck_case *c, gck_operand x, const void *X) {
    bool a = x == GCK_A;
    gck_format t = a ? c->type_a : c->type_b;
    int64_t rs, cs, stride = a ? c->stride_a : c->stride_b;
    gck_case_op_strides(c, x, &rs, &cs);
    return (lines){.base = X,
                   .type = t,
                   .lay = layout_of(t),
                   .stride = stride,
                   .members = stride ? c->batch : 1,
                   .count = a ? c->m : c->n,
                   .k = c->k,
                   .ls = a ? rs : cs,
                   .ks = a ? cs : rs,
                   .member_bytes = stride * gck_format_get(t)->storage_bytes};
}

/* The tails of both operands; *tmina, *tminb: the lowest bit of any tail of each. False (with
 * why) when out of memory. */
static bool prepare_tails(gck_ozaki *o, int32_t *tmina, int32_t *tminb, char *why, size_t len) {
    if ((o->ntail_a && !collect_tails(&o->va, o->ea, o->need_a, o->beta, o->sa, o->ntail_a,
                                      &o->ta_start, &o->ta, &o->sp_a, tmina)) ||
        (o->ntail_b && !collect_tails(&o->vb, o->eb, o->need_b, o->beta, o->sb, o->ntail_b,
                                      &o->tb_start, &o->tb, &o->sp_b, tminb))) {
        snprintf(why, len, "out of memory for the tails");
        return false;
    }
    return true;
}

/* Whether to sum the tails' products ahead: always in ALWAYS mode (when there are tails), else
 * when it pays: its passes over both operands and the product (about M·K + K·N + M·N values per
 * pair) against the tail products the elements would add one by one, each several times the
 * cost of a value of those passes. */
static bool ahead_pays(const gck_ozaki *o, gck_ozaki_mode md) {
    double products = (double)o->ntail_a * (double)o->n + (double)o->ntail_b * (double)o->m,
           passes = (double)o->k * (double)(o->m + o->n) + (double)o->m * (double)o->n;
    return products > 0 && (md == GCK_OZAKI_ALWAYS || 8 * products >= passes * (double)o->pairs);
}

/* The tails' partners and sums (build_tsum), in the slices' and product's memory where it has
 * room (its pages are in place already), which the work no longer needs; when out of memory
 * the elements add their tail products one by one. */
static void sum_tails_ahead(gck_ozaki *o, work *w) {
    double *into_b = o->vb.members == 1 ? w->bs : NULL, *into_a = o->va.members == 1 ? w->as : NULL;
    if (o->ntail_a && !(o->pb = adjacent_lines(&o->vb, into_b))) return;
    if (o->pb == w->bs) w->bs = NULL;
    if (o->ntail_b && !(o->pa = adjacent_lines(&o->va, into_a))) return;
    if (o->pa == w->as) w->as = NULL;
    if (o->pairs == 1) {
        o->tsum = w->p, w->p = NULL;
        memset(o->tsum, 0, (size_t)(o->m * o->n) * sizeof *o->tsum);
    }
    build_tsum(o);
}

gck_ozaki *gck_ozaki_new(const gck_case *c, const void *A, const void *B,
                         const gck_ozaki_options *opt, char *why, size_t why_len) {
    gck_ozaki_mode md = opt->mode;
    snprintf(why, why_len, "splitting is off (GEMMCHECK_OZAKI=never)");
    if (md == GCK_OZAKI_NEVER || !gck_case_reads_ab(c)) return NULL;
    gck_ozaki *o = calloc(1, sizeof *o);
    if (!o) return NULL;
    o->m = c->m, o->n = c->n, o->k = c->k;
    o->corrupt = opt->corrupt;
    o->pairs = c->stride_a || c->stride_b ? c->batch : 1;
    o->a_batched = c->stride_a != 0, o->b_batched = c->stride_b != 0;
    int64_t ma = c->stride_a ? c->batch : 1, mb = c->stride_b ? c->batch : 1;
    lines va = lines_of(c, GCK_A, A), vb = lines_of(c, GCK_B, B);
    bool may_split = md == GCK_OZAKI_ALWAYS || o->pairs * c->m * c->n * c->k >= OZ_MIN_PRODUCTS;
    if (may_split && (!line_major(&va, &o->va_copy) || !line_major(&vb, &o->vb_copy))) {
        snprintf(why, why_len, "out of memory");
        gck_ozaki_free(o);
        return NULL;
    }
    o->ea = malloc((size_t)(ma * c->m) * sizeof *o->ea);
    o->eb = malloc((size_t)(mb * c->n) * sizeof *o->eb);
    o->need_a = malloc((size_t)(ma * c->m));
    o->need_b = malloc((size_t)(mb * c->n));
    int log2k = 0;
    while ((INT64_C(1) << log2k) < c->k) log2k++;
    o->beta = (53 - log2k) / 2;
    if (!o->ea || !o->eb || !o->need_a || !o->need_b || log2k > 40) {
        snprintf(why, why_len, log2k > 40 ? "K too large" : "out of memory");
        gck_ozaki_free(o);
        return NULL;
    }
    int64_t ha[OZ_NEED_BINS] = {0}, hb[OZ_NEED_BINS] = {0};
    int32_t lowa = INT32_MAX, lowb = INT32_MAX, tmina = INT32_MAX, tminb = INT32_MAX;
    bool scaled = line_scales(&va, o->beta, o->ea, o->need_a, ha, &lowa) &&
                  line_scales(&vb, o->beta, o->eb, o->need_b, hb, &lowb);
    if (!scaled || !most_needed(ha) || !most_needed(hb)) {
        snprintf(why, why_len, !scaled ? "out of memory" : "no non-zero finite product");
        gck_ozaki_free(o);
        return NULL;
    }
    double cost;
    choose_slices(o, ha, hb, &cost);
    o->nd = o->sa + o->sb - 1;
    o->ntail_a = tails_beyond(ha, o->sa);
    o->ntail_b = tails_beyond(hb, o->sb);
    o->va = va;
    o->vb = vb;
    work w = {0};
    bool ok = decide(o, md, cost, why, why_len);
    o->low_a = lowa, o->low_b = lowb;
    ok = ok && prepare_tails(o, &tmina, &tminb, why, why_len);
    if (ok) {
        weight_range(o, ma * c->m, mb * c->n);
        /* the tails' products lie below the slices': tail x value */
        if (tmina != INT32_MAX && tmina + lowb < o->lowest)
            o->width += o->lowest - (tmina + lowb), o->lowest = tmina + lowb;
        if (tminb != INT32_MAX && lowa + tminb < o->lowest)
            o->width += o->lowest - (lowa + tminb), o->lowest = lowa + tminb;
        o->q = calloc((size_t)(o->pairs * c->m * c->n * o->nd), sizeof *o->q);
        ok = o->q && work_alloc(&w, o);
        if (!ok) snprintf(why, why_len, "out of memory for the slices");
        for (int64_t p = 0; ok && p < o->pairs; p++) {
            ok = build_pair(o, &va, &vb, c->stride_a ? p : 0, c->stride_b ? p : 0,
                            o->q + p * c->m * c->n * o->nd, &w, 0x6f7a616b69u + (uint64_t)p);
            if (!ok) {
                snprintf(why, why_len, "an f64 slice product failed its check (Freivalds)");
                fprintf(stderr, "gemmcheck: warning: the f64 GEMM of a slice product (Ozaki "
                                "splitting) gave a wrong result; the exact oracle sums the "
                                "products one by one instead\n");
            }
        }
        if (ok && ahead_pays(o, md)) sum_tails_ahead(o, &w);
        if (o->q) work_free(&w);
    }
    if (!ok) {
        gck_ozaki_free(o);
        return NULL;
    }
    return o;
}
