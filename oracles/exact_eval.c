/* The exact oracle per element (exact_internal.h): the sum of an element's products by the
 * plan's path, alpha, beta·c and the result's error added in a frame, one rounding to D's
 * format; the 128-bit lane for split products (see oracle_exact.c). */
#include "exact_internal.h"
#include "format_internal.h"
#include "fpenv.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "oracle_common.h"
#include "oracle_ozaki.h"
#include "parallel.h"
#include "tiles.h"

/* ---- per element ------------------------------------------------------------------------- */

long gck_exact_ws_lane(const gck_exact_ws *w) { return w->lane; }

void gck_exact_ws_tails(const gck_exact_ws *w, int64_t *met, int64_t *ahead) {
    *met = w->tails[0];
    *ahead = w->tails[1];
}

gck_exact_ws *gck_exact_ws_new(const gck_exact_plan *p) {
    gck_exact_ws *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->ns = p->nlimbs_s;
    w->nf = p->nlimbs_f;
    w->nb = p->nbuckets;
    size_t bsize = p->path == PATH_BUCKET64 ? sizeof(int64_t) : sizeof(__int128);
    w->s = malloc((size_t)w->ns * sizeof *w->s);
    w->f = malloc((size_t)w->nf * sizeof *w->f);
    w->mag = malloc((size_t)(w->nf > w->ns ? w->nf : w->ns) * sizeof *w->mag);
    bool buckets = p->path == PATH_BUCKET64 || p->path == PATH_BUCKET128;
    w->buckets = buckets ? calloc((size_t)(p->ncopy * w->nb), bsize) : malloc(1);
    if (!w->s || !w->f || !w->mag || !w->buckets) {
        gck_exact_ws_free(w);
        return NULL;
    }
    return w;
}

void gck_exact_ws_free(gck_exact_ws *w) {
    if (!w) return;
    free(w->s);
    free(w->f);
    free(w->buckets);
    free(w->mag);
    free(w);
}

/* Add the signed v·2^o to the limbs. */
static inline void add_signed128(int64_t *l, int64_t o, __int128 v) {
    if (v) add128(l, o, v < 0 ? -(unsigned __int128)v : (unsigned __int128)v, v < 0);
}

/* Buckets lo..hi of every copy (bucket b weighs 2^(4b)) added into S and cleared, in one
 * carry chain from the lowest bucket up: the copies of bucket b and the carry make `acc`, whose
 * low 4 bits are S's bits 4b..4b+3 and whose rest carries on; eight digits make a 32-bit limb.
 * The chain runs over whole limbs (buckets 8L..8L+7): those outside lo..hi are 0. `acc` is an
 * int64 for a single copy of int64 buckets (below 2^62, the carry below 2^58) and an __int128
 * otherwise (four copies below 2^63 or 2^124, the carry below 2^123). */
#define FOLD_BODY(ACC, NCOPY)                                                                      \
    do {                                                                                           \
        ACC carry = 0;                                                                             \
        for (int L = lo >> 3; L <= hi >> 3; L++) {                                                 \
            uint64_t word = 0;                                                                     \
            for (int t = 0; t < 8; t++) {                                                          \
                ACC acc = carry;                                                                   \
                for (int cp = 0; cp < NCOPY; cp++) {                                               \
                    acc += (ACC)bk[cp * nb + 8 * L + t];                                           \
                    bk[cp * nb + 8 * L + t] = 0;                                                   \
                }                                                                                  \
                word |= ((uint64_t)acc & 0xf) << (4 * t);                                          \
                carry = acc >> 4; /* floor: the digit is non-negative */                           \
            }                                                                                      \
            l[L] += (int64_t)word;                                                                 \
        }                                                                                          \
        add_signed128(l, (int64_t)((hi >> 3) + 1) << 5, carry);                                    \
        gck_sacc_normalize(l, n);                                                                  \
    } while (0)

static void fold64(int64_t *bk, int ncopy, int nb, int lo, int hi, int64_t *l, int n) {
    if (ncopy == 1)
        FOLD_BODY(int64_t, 1);
    else
        FOLD_BODY(__int128, 4);
}

static void fold128(__int128 *bk, int ncopy, int nb, int lo, int hi, int64_t *l, int n) {
    if (ncopy == 1)
        FOLD_BODY(__int128, 1);
    else
        FOLD_BODY(__int128, 4);
}

/* One product into its bucket: bk[qa + qb] += sa·sb. */
#define BUCKET64_ADD(bk, x, y) (bk)[(x).q + (y).q] += (int64_t)(x).s * (y).s

#define BUCKET128_ADD(bk, k) (bk)[ae[k] + be[k]] += (__int128)as[k] * bs[k]

/* A tail product into the limbs (bit 0 at 2^base). */
typedef struct tail_sink {
    int64_t *l;
    int32_t base;
} tail_sink;

static void add_tail(void *ctx, unsigned __int128 m, int32_t e, bool neg) {
    tail_sink *t = ctx;
    add128(t->l, (int64_t)e - t->base, m, neg);
}

/* S from the Ozaki splitting: the element's terms, each added at its weight, and its tails'
 * products. */
static void sum_split(const gck_exact_plan *p, int64_t *l, int n, int64_t bi, int64_t i,
                      int64_t j) {
    int32_t w0;
    int count, step;
    const int64_t *t = gck_ozaki_terms(p->oz, bi, i, j, &w0, &count, &step);
    for (int d = 0; d < count; d++)
        if (t[d])
            add64(l, (int64_t)w0 - (int64_t)step * d - p->base_s,
                  t[d] < 0 ? (uint64_t)-t[d] : (uint64_t)t[d], t[d] < 0);
    tail_sink sink = {l, p->base_s};
    gck_ozaki_tail_terms(p->oz, bi, i, j, add_tail, &sink);
    gck_sacc_normalize(l, n);
}

/* S = sum_k a_ik b_kj into w->s (limbs, bit 0 at 2^base_s). */
static void sum_products(const gck_exact_plan *p, gck_exact_ws *w, int64_t ma, int64_t mb,
                         int64_t i, int64_t j) {
    const gck_case *c = p->c;
    int64_t *l = w->s;
    int n = w->ns;
    int64_t K = c->k, ra = ma * c->m + i, cb = mb * c->n + j;
    memset(l, 0, (size_t)n * sizeof *l);
    if (p->path == PATH_ZERO) return;
    if (p->path == PATH_OZAKI) {
        sum_split(p, l, n, ma > mb ? ma : mb, i, j);
        return;
    }
    if (p->path == PATH_FIX64 || p->path == PATH_FIX128) {
        const int64_t *a = p->afix + ra * K, *b = p->bfix + cb * K;
        unsigned __int128 u;
        int64_t k = 0;
        if (p->path == PATH_FIX64) {
            int64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
            for (; k + 4 <= K; k += 4) {
                s0 += a[k] * b[k];
                s1 += a[k + 1] * b[k + 1];
                s2 += a[k + 2] * b[k + 2];
                s3 += a[k + 3] * b[k + 3];
            }
            for (; k < K; k++) s0 += a[k] * b[k];
            u = (unsigned __int128)(__int128)((s0 + s1) + (s2 + s3));
        } else {
            __int128 s0 = 0, s1 = 0, s2 = 0, s3 = 0;
            for (; k + 4 <= K; k += 4) {
                s0 += (__int128)a[k] * b[k];
                s1 += (__int128)a[k + 1] * b[k + 1];
                s2 += (__int128)a[k + 2] * b[k + 2];
                s3 += (__int128)a[k + 3] * b[k + 3];
            }
            for (; k < K; k++) s0 += (__int128)a[k] * b[k];
            u = (unsigned __int128)((s0 + s1) + (s2 + s3));
        }
        for (int q = 0; q < 4; q++) l[q] = (int64_t)(uint32_t)(u >> (32 * q));
        if ((__int128)u < 0) l[4] = -1; /* two's complement: the limbs above are all ones */
        gck_sacc_normalize(l, n);
        return;
    }
    int lo = p->alo[ra] + p->blo[cb], hi = p->ahi[ra] + p->bhi[cb];
    int nb = w->nb, ncopy = p->ncopy;
    int64_t step = ncopy * p->block; /* each copy takes at most `block` products per round */
    int o1 = (1 % ncopy) * nb, o2 = (2 % ncopy) * nb, o3 = (3 % ncopy) * nb;
    if (p->path == PATH_BUCKET64) {
        const sigexp *a = p->apk + ra * K, *b = p->bpk + cb * K;
        int64_t *bk = w->buckets, *b1 = bk + o1, *b2 = bk + o2, *b3 = bk + o3;
        for (int64_t k0 = 0; k0 < K; k0 += step) {
            int64_t kend = K - k0 < step ? K : k0 + step, k = k0;
            for (; k + 4 <= kend; k += 4) {
                BUCKET64_ADD(bk, a[k], b[k]);
                BUCKET64_ADD(b1, a[k + 1], b[k + 1]);
                BUCKET64_ADD(b2, a[k + 2], b[k + 2]);
                BUCKET64_ADD(b3, a[k + 3], b[k + 3]);
            }
            for (; k < kend; k++) BUCKET64_ADD(bk + ((k - k0) & (ncopy - 1)) * nb, a[k], b[k]);
            fold64(bk, ncopy, nb, lo, hi, l, n);
        }
    } else {
        const int64_t *as = p->asig + ra * K, *bs = p->bsig + cb * K;
        const int32_t *ae = p->aexp + ra * K, *be = p->bexp + cb * K;
        __int128 *bk = w->buckets, *b1 = bk + o1, *b2 = bk + o2, *b3 = bk + o3;
        for (int64_t k0 = 0; k0 < K; k0 += step) {
            int64_t kend = K - k0 < step ? K : k0 + step, k = k0;
            for (; k + 4 <= kend; k += 4) {
                BUCKET128_ADD(bk, k);
                BUCKET128_ADD(b1, k + 1);
                BUCKET128_ADD(b2, k + 2);
                BUCKET128_ADD(b3, k + 3);
            }
            for (; k < kend; k++) BUCKET128_ADD(bk + ((k - k0) & (ncopy - 1)) * nb, k);
            fold128(bk, ncopy, nb, lo, hi, l, n);
        }
    }
}

/* S, and the limbs of it that matter: above s_top the limbs only extend its sign (after
 * normalize, a negative S has digits 2^32 - 1 up to a top limb of -1), below s_lo they are 0. */
static void accumulate(const gck_exact_plan *p, gck_exact_ws *w, int64_t ma, int64_t mb, int64_t i,
                       int64_t j) {
    sum_products(p, w, ma, mb, i, j);
    const int64_t *l = w->s;
    int n = w->ns, t = n - 2;
    int64_t ext = l[n - 1] < 0 ? 0xffffffff : 0;
    while (t >= 0 && l[t] == ext) t--;
    w->s_top = t + 1;
    w->s[t + 1] = ext ? -1 : 0;
    int z = 0;
    while (z <= t && l[z] == 0) z++;
    w->s_lo = z;
}

/* The final frame alpha·S + beta·c into w->f, sized from the terms at hand: *base is the
 * exponent of its bit 0, *n its limbs; room is left for -D̂ when `got` is given. */
static void finish(const gck_exact_plan *p, gck_exact_ws *w, bool with_s, dec cd, const dec *gd,
                   int32_t *base, int *n) {
    int64_t lo = INT64_MAX, hi = INT64_MIN, x;
    int64_t s0 = (int64_t)p->base_s + p->alpha.e; /* alpha·S's bit 0 */
    with_s = with_s && p->alpha.m && (w->s_top > w->s_lo || w->s[w->s_top]);
    if (with_s) {
        lo = s0 + 32 * w->s_lo;
        hi = s0 + 32 * (w->s_top + 1) + 96;
    }
    if (cd.m && p->beta.m) {
        x = (int64_t)cd.e + p->beta.e;
        if (x < lo) lo = x;
        if (x + 160 > hi) hi = x + 160;
    }
    if (gd && gd->m) {
        x = gd->e;
        if (x < lo) lo = x;
        if (x + 96 > hi) hi = x + 96;
    }
    if (lo == INT64_MAX) lo = hi = 0;
    *base = (int32_t)lo;
    *n = (int)((hi - lo) >> 5) + 4;
    int64_t *f = w->f;
    memset(f, 0, (size_t)*n * sizeof *f);
    if (with_s) {
        /* alpha·S: each 32-bit digit times alpha's significand, shifted into place */
        int64_t off = s0 + 32 * w->s_lo - lo;
        int sh = (int)(off & 31);
        int64_t *dst = f + (off >> 5);
        unsigned __int128 am = (unsigned __int128)p->alpha.m << sh;
        int sign = p->alpha.neg ? -1 : 1;
        if (p->alpha.m == 1) { /* alpha = ±2^e: S shifted */
            for (int i = w->s_lo, d = 0; i <= w->s_top; i++, d++) {
                int64_t v = w->s[i] * sign * ((int64_t)1 << sh); /* |v| < 2^63 */
                dst[d] += (int64_t)(uint32_t)v;
                dst[d + 1] += v >> 32;
            }
        }
        for (int i = w->s_lo, d = 0; p->alpha.m != 1 && i <= w->s_top; i++, d++) {
            if (!w->s[i]) continue;
            __int128 prod = (__int128)w->s[i] * (__int128)am * sign;
            unsigned __int128 u = (unsigned __int128)prod;
            dst[d] += (int64_t)(uint32_t)u;
            dst[d + 1] += (int64_t)(uint32_t)(u >> 32);
            dst[d + 2] += (int64_t)(uint32_t)(u >> 64);
            dst[d + 3] += (int64_t)(prod >> 96); /* sign-carrying top */
        }
    }
    if (cd.m && p->beta.m)
        add128(f, (int64_t)cd.e + p->beta.e - lo, (unsigned __int128)cd.m * p->beta.m,
               cd.neg ^ p->beta.neg);
    gck_sacc_normalize(f, *n);
}

/* ---- the 128-bit lane ---------------------------------------------------------------------
 * An element of a split product whose value alpha·S + beta·c, and its difference from the
 * result, fit one __int128 at S's frame: the same sums, rounding and error as the limbs below,
 * in a few integer operations. Any term that would not fit sends the element down the limbs. */

typedef struct sum128 {
    __int128 s;
    int32_t base; /* the exponent of bit 0 */
    bool overflow;
} sum128;

static int top128(unsigned __int128 u) {
    uint64_t hi = (uint64_t)(u >> 64), lo = (uint64_t)u;
    return hi ? 127 - __builtin_clzll(hi) : lo ? 63 - __builtin_clzll(lo) : -1;
}

/* s += (-1)^neg·m·2^sh, unless a term or the sum would reach 2^126. */
static inline void add_term128(sum128 *x, unsigned __int128 m, int64_t sh, bool neg) {
    if (!m) return;
    if (sh < 0 || top128(m) + sh > 124) {
        x->overflow = true;
        return;
    }
    __int128 v = (__int128)(m << sh);
    if (__builtin_add_overflow(x->s, neg ? -v : v, &x->s)) x->overflow = true;
}

/* u·2^base (u != 0) rounded to nearest, ties to even, once to format f (as round_to). */
static double round128(unsigned __int128 u, int64_t base, const gck_format_info *f) {
    int t = top128(u);
    int64_t E = base + t, q = (E > f->emin ? E : f->emin) - f->precision + 1, lo = q - base;
    uint64_t N;
    if (lo <= 0) {
        N = (uint64_t)(u << -lo); /* exact: t - lo < precision */
    } else {
        N = lo >= 128 ? 0 : (uint64_t)(u >> lo);
        unsigned round = lo - 1 >= 128 ? 0 : (unsigned)(u >> (lo - 1)) & 1;
        bool sticky = lo - 1 >= 128 ? true : (u & (((unsigned __int128)1 << (lo - 1)) - 1)) != 0;
        if (round && (sticky || (N & 1))) N++;
    }
    double v = scale2(N, q);
    return v > f->max ? INFINITY : v;
}

/* u·2^base rounded up to a double (as magnitude_up). */
static double up128(unsigned __int128 u, int64_t base) {
    int t = top128(u);
    if (t < 0) return 0.0;
    int64_t lo = t - 52;
    if (base + lo < -1074) lo = -1074 - base;
    if (lo <= 0) return scale2((uint64_t)(u << -lo), base + lo);
    uint64_t N = lo >= 128 ? 0 : (uint64_t)(u >> lo);
    if (lo >= 128 || (u & (((unsigned __int128)1 << lo) - 1))) N++;
    return scale2(N, base + lo);
}

/* The element by the lane: false (nothing written) when a term does not fit or the value is
 * exactly 0 (its sign follows the IEEE rules: the limbs' path decides it). */
static bool eval128(const gck_exact_plan *p, int64_t bi, int64_t i, int64_t j, double cv,
                    const double *got, gck_oracle_eval *out, int64_t tails[2]) {
    int32_t w0;
    int count, step;
    const int64_t *t = gck_ozaki_terms(p->oz, bi, i, j, &w0, &count, &step);
    sum128 x = {0, p->base_s, false};
    for (int d = 0; d < count; d++)
        add_term128(&x, t[d] < 0 ? -(unsigned __int128)t[d] : (unsigned __int128)t[d],
                    (int64_t)w0 - (int64_t)step * d - p->base_s, t[d] < 0);
    if (x.overflow || !gck_ozaki_tail_sum128(p->oz, bi, i, j, x.base, &x.s, tails) || x.s == 0)
        return false;
    /* alpha·S at base_s + alpha.e */
    unsigned __int128 u = x.s < 0 ? -(unsigned __int128)x.s : (unsigned __int128)x.s;
    if (top128(u) + bits_of(p->alpha.m) > 124) return false;
    bool neg = (x.s < 0) != (bool)p->alpha.neg;
    sum128 v = {neg ? -(__int128)(u * p->alpha.m) : (__int128)(u * p->alpha.m),
                p->base_s + p->alpha.e, false};
    if (p->rc && p->beta.m) { /* + beta·c (c is finite here) */
        dec cd = decode_double(cv);
        add_term128(&v, (unsigned __int128)cd.m * p->beta.m, (int64_t)cd.e + p->beta.e - v.base,
                    cd.neg != p->beta.neg);
    }
    if (v.overflow || v.s == 0) return false;
    double err = NAN;
    int sign = 0;
    if (got && isfinite(*got)) { /* |value - result| */
        dec gd = decode_double(*got);
        sum128 diff = v;
        add_term128(&diff, gd.m, (int64_t)gd.e - v.base, !gd.neg);
        if (diff.overflow) return false;
        err = up128(diff.s < 0 ? -(unsigned __int128)diff.s : (unsigned __int128)diff.s, v.base);
        sign = diff.s < 0 ? 1 : diff.s > 0 ? -1 : 0; /* diff = exact - result */
    }
    u = v.s < 0 ? -(unsigned __int128)v.s : (unsigned __int128)v.s;
    double r = round128(u, v.base, p->fo);
    out->value = v.s < 0 ? -r : r;
    out->abs_error = err;
    out->err_sign = sign;
    return true;
}

void gck_exact_eval(const gck_exact_plan *p, gck_exact_ws *w, int64_t bi, int64_t i, int64_t j,
                    bool skip_zero, const double *got, gck_oracle_eval *out) {
    const gck_case *c = p->c;
    bool rab = p->rab;
    int64_t ma = c->stride_a == 0 ? 0 : bi, mb = c->stride_b == 0 ? 0 : bi;
    double cv = 0.0;
    if (p->rc)
        cv = gck_fmt_load(gck_oracle_member(p->C, c->type_c, c->stride_c, bi), c->type_c,
                          i * p->crs + j * p->ccs);
    out->special_input = false;
    out->abs_error = NAN;
    out->err_sign = 0;
    bool special =
        (rab && (p->row_special[ma * c->m + i] || p->col_special[mb * c->n + j])) || !isfinite(cv);
    gck_oracle_pre pre;
    if (special) {
        gck_oracle_pass1(c, p->A, p->B, p->C, bi, i, j, skip_zero, &pre);
        if (pre.special) {
            out->special_input = true;
            out->value = pre.value;
            return;
        }
    }
    /* finite inputs: terms with a zero factor contribute 0 whether skipped or not */
    if (rab && p->path == PATH_OZAKI &&
        eval128(p, ma > mb ? ma : mb, i, j, cv, got, out, w->tails)) {
        w->lane++;
        return;
    }
    if (rab) accumulate(p, w, ma, mb, i, j);
    dec cd = decode_double(cv), gd = {0, 0, 0};
    bool err = got && isfinite(*got);
    if (err) gd = decode_double(*got);
    int32_t base;
    int n;
    finish(p, w, rab, cd, err ? &gd : NULL, &base, &n);
    bool zero;
    double v = gck_sacc_round_to(w->f, n, base, p->fo, w->mag, &zero);
    if (zero) {
        gck_oracle_pass1(c, p->A, p->B, p->C, bi, i, j, skip_zero, &pre);
        v = gck_oracle_exact_zero(c, &pre);
    }
    out->value = v;
    if (err) {
        if (gd.m) { /* the frame holds alpha·S + beta·c, normalized: add -D̂ */
            add64(w->f, (int64_t)gd.e - base, gd.m, !gd.neg);
            gck_sacc_normalize(w->f, n);
        }
        int neg; /* the frame holds exact - result */
        out->abs_error = gck_sacc_magnitude_up(w->f, n, base, w->mag, &neg);
        out->err_sign = out->abs_error == 0 ? 0 : neg ? 1 : -1;
    }
}
