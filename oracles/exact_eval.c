/* The exact oracle per element (exact_internal.h): the sum of an element's products by the
 * plan's path, alpha, beta·c and the result's error added in a frame, one rounding to D's
 * format; the 128- and 256-bit lanes for split products (see oracle_exact.c). */
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
#include "ozaki_internal.h"
#include "parallel.h"
#include "tiles.h"

/* ---- per element ------------------------------------------------------------------------- */

long gck_exact_ws_lane(const gck_exact_ws *w) { return w->lane; }

long gck_exact_ws_lane256(const gck_exact_ws *w) { return w->lane256; }

long gck_exact_ws_lane_double(const gck_exact_ws *w) { return w->lane_double; }

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
 * result, fit one __int128 (gck_sum128, whose frame starts at the element's own lowest term):
 * the same sums, rounding and error as the limbs below, in a few integer operations. Any term
 * that would not fit sends the element down the limbs. */

/* |s|, without a branch on its sign */
static inline unsigned __int128 mag128(__int128 s) {
    __int128 m = s >> 127;
    return (unsigned __int128)((s ^ m) - m);
}

/* u·2^base (u != 0) rounded to nearest, ties to even, once to format f (as round_to). */
static double round128(unsigned __int128 u, int64_t base, const gck_format_info *f) {
    int t = gck_top128(u);
    int64_t E = base + t, q = (E > f->emin ? E : f->emin) - f->precision + 1, lo = q - base;
    uint64_t N;
    if (lo <= 0) {
        N = (uint64_t)(u << -lo); /* exact: t - lo < precision */
    } else if (lo < 128) {        /* the round bit and the sticky bits compared, without a branch */
        N = (uint64_t)(u >> lo);
        unsigned __int128 rem = u & (((unsigned __int128)1 << lo) - 1),
                          half = (unsigned __int128)1 << (lo - 1);
        N += (uint64_t)((rem > half) | ((rem == half) & (N & 1)));
    } else { /* u < 2^(lo - 1) but for lo = 128 */
        N = lo == 128 && u > (unsigned __int128)1 << 127;
    }
    double v = scale2(N, q);
    return v > f->max ? INFINITY : v;
}

/* u·2^base rounded up to a double (as magnitude_up). */
static double up128(unsigned __int128 u, int64_t base) {
    int t = gck_top128(u);
    if (t < 0) return 0.0;
    int64_t lo = t - 52;
    if (base + lo < -1074) lo = -1074 - base;
    if (lo <= 0) return scale2((uint64_t)(u << -lo), base + lo);
    if (lo >= 128) return scale2(1, base + lo);
    uint64_t N = (uint64_t)(u >> lo);
    N += (u & (((unsigned __int128)1 << lo) - 1)) != 0;
    return scale2(N, base + lo);
}

/* 2^-900 <= |P| <= 2^1000: an exact product's check by FMA cannot lose its residue below the
 * subnormals, and no sum or difference of such values below overflows. */
static inline bool mid_range(double P) { return fabs(P) >= 0x1p-900 && fabs(P) <= 0x1p+1000; }

/* v·P exact (checked by an FMA unless v is a power of two), into *P; false when not. */
static inline bool exact_product(double v, const dec *vd, double x, double *P) {
    *P = v * x;
    return mid_range(*P) && (vd->m == 1 || fma(v, x, -*P) == 0);
}

/* The element from its sum S = x->s·2^(x->base) (x->s != 0) in doubles, when S has at most 53
 * significant bits and lies well inside double's range: alpha·S and beta·c exact products
 * (checked), their sum v + t exact by TwoSum (Knuth), rounded once to D's format from the pair
 * (gck_fmt_round2_to), and the error of a finite result g, when t = 0, from TwoSum(v, -g) =
 * d + e: |d| rounded up past e; false (nothing written) when any of it does not hold, the
 * integers then decide. Needs round to nearest (the oracle's environment, fpenv.h). */
static inline __attribute__((always_inline)) bool lane_double_of(const gck_exact_plan *p, double S,
                                                                 double cv, const double *got,
                                                                 gck_oracle_eval *out) {
    double P, Q = 0;
    if (!exact_product(p->c->alpha, &p->alpha, S, &P)) return false;
    if (p->rc && p->beta.m && cv != 0 && !exact_product(p->c->beta, &p->beta, cv, &Q)) return false;
    double v = P + Q, bv = v - P, t = (P - (v - bv)) + (Q - bv); /* v + t = P + Q */
    if (v == 0) return false; /* exactly 0: its sign follows the IEEE rules (the limbs') */
    double err = NAN;
    int sign = 0;
    if (got && isfinite(*got)) {
        if (t != 0) return false;
        double g = -*got, d = v + g, bd = d - v, e = (v - (d - bd)) + (g - bd), ad = fabs(d);
        if (!isfinite(d) || !isfinite(e)) return false;
        /* e of d's sign: |d + e| just above |d|, rounded up to the next double; of the other
         * sign: |d + e| in (pred(|d|), |d|) (it is not pred itself, or d = RN(d + e) would be
         * pred), rounded up to |d| */
        /* the next double up by its bits (ad > 0 and finite where e != 0: d = 0 only when the
         * sum is exact), added without a branch: e's sign against d's is random */
        uint64_t u;
        memcpy(&u, &ad, sizeof u);
        u += (uint64_t)(e != 0 && (e > 0) == (d > 0));
        memcpy(&ad, &u, sizeof ad);
        err = ad;
        sign = (d < 0) - (d > 0); /* d has the sign of exact - result */
    }
    out->value = p->td == GCK_F64             ? v /* RN(P + Q) */
                 : p->td == GCK_F32 && t == 0 ? (double)(float)v
                                              : gck_fmt_round2_to(v, t, p->td);
    out->abs_error = err;
    out->err_sign = sign;
    return true;
}

/* lane_double_of from the sum S = x->s·2^(x->base) (x->s != 0) when it has at most 53
 * significant bits (its trailing zeros dropped: the frame starts at its lowest term) well inside
 * double's range. */
static inline __attribute__((always_inline)) bool lane_double(const gck_exact_plan *p,
                                                              const gck_sum128 *x, double cv,
                                                              const double *got,
                                                              gck_oracle_eval *out) {
    unsigned __int128 u = mag128(x->s);
    uint64_t lo = (uint64_t)u;
    int z = lo ? __builtin_ctzll(lo) : 64 + __builtin_ctzll((uint64_t)(u >> 64));
    u >>= z;
    int64_t base = (int64_t)x->base + z;
    if (base < -1074 || base > 900 || u >> 53) return false;
    double S = scale2((uint64_t)u, base); /* exact */
    return lane_double_of(p, x->s < 0 ? -S : S, cv, got, out);
}

/* The bits of the largest magnitude among an element's nq terms (branch-free absolute values). */
static inline int terms_bits(const int64_t *t, int nq) {
    uint64_t any = 0;
    for (int d = 0; d < nq; d++) any |= (uint64_t)((t[d] ^ (t[d] >> 63)) - (t[d] >> 63));
    return bits_of(any);
}

/* What the elements of column j of member bi share on the lane, looked up once per run. */
typedef struct lane_col {
    const gck_ozaki *o;
    int64_t bi, j, ma, mb;
    const int64_t *q;  /* element i's terms at q + i·nq */
    const int32_t *ea; /* the member's row scales */
    int32_t w;         /* + ea[i]: the weight of element i's last term */
    int nq, step;
    const int64_t *ta_start; /* the member's rows' tails (NULL: none) */
    const tailv *tb;         /* column j's tails, nb of them */
    int64_t nb;
    const double *tsum; /* column j's tail products summed ahead (NULL: none) */
} lane_col;

static lane_col lane_col_of(const gck_ozaki *o, int64_t bi, int64_t j) {
    int64_t pair = o->pairs == 1 ? 0 : bi, ma = o->a_batched ? bi : 0, mb = o->b_batched ? bi : 0;
    int step = o->beta * o->group;
    lane_col L = {o,
                  bi,
                  j,
                  ma,
                  mb,
                  o->q + (pair * o->n + j) * o->m * o->nq,
                  o->ea + ma * o->m,
                  o->eb[mb * o->n + j] - 2 * o->beta - o->beta * (o->group - 1) -
                      step * (o->nq - 1),
                  o->nq,
                  step,
                  o->ta ? o->ta_start + ma * o->m : NULL,
                  NULL,
                  0,
                  o->tsum ? o->tsum + (pair * o->n + j) * o->m : NULL};
    if (o->tb) {
        const int64_t *sb = o->tb_start + mb * o->n + j;
        L.tb = o->tb + sb[0];
        L.nb = sb[1] - sb[0];
    }
    return L;
}

/* Element i of the column when its sum is one term q·2^(ea[i] + w) and the tails' sum T made
 * ahead (or none), and both are doubles whose sum is one (TwoSum's residue zero): then the sum
 * S = q·2^(ea[i] + w) + T exactly, finished by lane_double_of without the integers (an f64
 * slice product's element: one term, of at most 53 bits). False (nothing written) when any of
 * it does not hold. */
static inline __attribute__((always_inline)) bool
lane_one_term(const gck_exact_plan *p, const lane_col *L, int64_t i, int64_t na, int64_t q,
              double cv, const double *got, gck_oracle_eval *out, gck_exact_ws *w) {
    int64_t base = (int64_t)L->ea[i] + L->w;
    uint64_t mq = q < 0 ? -(uint64_t)q : (uint64_t)q;
    if (mq >> 53 || base < -1074 || base > 900) return false;
    double S = (double)q * pow2_bits(base), T = 0; /* exact */
    if (na || L->nb) {
        if (!L->tsum || !gck_oz_tails_exact(L->o, L->ma, L->mb, i, L->j, na, L->nb)) return false;
        T = L->tsum[i];
        double s = S + T, bs = s - S;
        if ((S - (s - bs)) + (T - bs) != 0 || !isfinite(s)) return false; /* S + T not a double */
        S = s;
    }
    if (S == 0 || !lane_double_of(p, S, cv, got, out)) return false;
    w->lane_double++;
    if (na || L->nb) w->tails[0]++, w->tails[1]++;
    return true;
}

/* Element i of the column by the lane: false (nothing written) when a term does not fit or the
 * value is exactly 0 (its sign follows the IEEE rules: the limbs' path decides it). */
static inline __attribute__((always_inline)) bool lane_eval(const gck_exact_plan *p,
                                                            const lane_col *L, int64_t i, double cv,
                                                            const double *got, gck_oracle_eval *out,
                                                            gck_exact_ws *w) {
    int64_t *tails = w->tails;
    int nq = L->nq, step = L->step;
    const int64_t *t = L->q + i * nq;
    int64_t na = L->ta_start ? L->ta_start[i + 1] - L->ta_start[i] : 0;
    if (nq == 1 && lane_one_term(p, L, i, na, t[0], cv, got, out, w)) return true;
    /* S's terms, term d at 2^(step·(nq - 1 - d)) above the last one's weight: below
     * 2^(bits + step·(nq - 1) + 1) for terms below 2^bits */
    if (terms_bits(t, nq) + step * (nq - 1) + 1 > 124) return false;
    __int128 s = 0;
    for (int d = 0; d < nq; d++) s = (__int128)((unsigned __int128)s << step) + t[d];
    gck_sum128 x = {s, L->ea[i] + L->w, false};
    if (na || L->nb) { /* the tails' products */
        const gck_ozaki *o = L->o;
        tails[0]++;
        if (L->tsum && gck_oz_tails_exact(o, L->ma, L->mb, i, L->j, na, L->nb)) {
            tails[1]++;
            gck_sum128_add_double(&x, L->tsum[i]);
        } else if (!gck_oz_tails_one_by_one128(o, L->ma, L->mb, i, L->j,
                                               na ? o->ta + L->ta_start[i] : NULL, na, L->tb, L->nb,
                                               &x))
            return false;
        if (x.overflow) return false;
    }
    if (x.s == 0) return false;
    if (lane_double(p, &x, cv, got, out)) {
        w->lane_double++;
        return true;
    }
    /* alpha·S */
    unsigned __int128 u = mag128(x.s);
    if (p->alpha.m != 1) {
        if (gck_top128(u) + bits_of(p->alpha.m) > 124) return false;
        u *= p->alpha.m;
    }
    __int128 nm = (x.s >> 127) ^ -(__int128)(p->alpha.neg != 0); /* all ones: negative */
    gck_sum128 v = {((__int128)u ^ nm) - nm, x.base + p->alpha.e, false};
    if (p->rc && p->beta.m) { /* + beta·c (c is finite here) */
        dec cd = decode_double(cv);
        gck_sum128_add(&v, (unsigned __int128)cd.m * p->beta.m, (int64_t)cd.e + p->beta.e,
                       cd.neg != p->beta.neg);
    }
    if (v.overflow || v.s == 0) return false;
    double err = NAN;
    int sign = 0;
    if (got && isfinite(*got)) { /* |value - result| */
        dec gd = decode_double(*got);
        gck_sum128 diff = v;
        gck_sum128_add(&diff, gd.m, gd.e, !gd.neg);
        if (diff.overflow) return false;
        err = up128(mag128(diff.s), diff.base);
        sign = (diff.s < 0) - (diff.s > 0); /* diff = exact - result */
    }
    double r = round128(mag128(v.s), v.base, p->fo);
    out->value = v.s < 0 ? -r : r;
    out->abs_error = err;
    out->err_sign = sign;
    return true;
}

/* ---- the 256-bit lane ---------------------------------------------------------------------
 * An element of a split product without tails whose terms span more than the 128-bit lane
 * holds (f64 on 3 x 3 f64 slices: up to 140 bits, on 8 x 8 int8 slices 133): the same sums in
 * four 64-bit limbs, two's complement, kept below 2^251 in magnitude, then compressed to 127
 * bits and a sticky bit for the 128-bit rounding. Anything larger goes down the limbs. */

typedef struct sum256 {
    uint64_t l[4]; /* little-endian */
    int32_t base;  /* the exponent of bit 0 */
    bool overflow;
} sum256;

enum { W_ROOM = 250 }; /* the most bits a term or a shifted sum may reach */

static inline bool w_negative(const uint64_t *a) { return a[3] >> 63; }

static inline void w_neg(uint64_t *a) {
    unsigned __int128 c = 1;
    for (int k = 0; k < 4; k++) {
        c += (uint64_t)~a[k];
        a[k] = (uint64_t)c;
        c >>= 64;
    }
}

static inline void w_add(uint64_t *a, const uint64_t *b) {
    unsigned __int128 c = 0;
    for (int k = 0; k < 4; k++) {
        c += (unsigned __int128)a[k] + b[k];
        a[k] = (uint64_t)c;
        c >>= 64;
    }
}

/* a <<= n (0 <= n < 256), two's complement */
static inline void w_shl(uint64_t *a, int n) {
    int q = n >> 6, r = n & 63;
    uint64_t o[4];
    for (int k = 3; k >= 0; k--) {
        uint64_t hi = k - q >= 0 ? a[k - q] : 0, lo = k - q - 1 >= 0 ? a[k - q - 1] : 0;
        o[k] = r ? (hi << r) | (lo >> (64 - r)) : hi;
    }
    memcpy(a, o, sizeof o);
}

/* a <<= n (0 < n < 64), two's complement */
static inline void w_shl_small(uint64_t *a, int n) {
    a[3] = (a[3] << n) | (a[2] >> (64 - n));
    a[2] = (a[2] << n) | (a[1] >> (64 - n));
    a[1] = (a[1] << n) | (a[0] >> (64 - n));
    a[0] <<= n;
}

static inline void w_mag(const uint64_t *a, uint64_t *m) {
    memcpy(m, a, 4 * sizeof *m);
    if (w_negative(a)) w_neg(m);
}

static inline int w_top(const uint64_t *m) {
    for (int k = 3; k >= 0; k--)
        if (m[k]) return 64 * k + 63 - __builtin_clzll(m[k]);
    return -1;
}

static inline bool w_zero(const uint64_t *a) { return !(a[0] | a[1] | a[2] | a[3]); }

/* x += (-1)^neg·m·2^e, the frame moved down to 2^e when e lies below it */
static void w_add_term(sum256 *x, unsigned __int128 m, int64_t e, bool neg) {
    if (!m || x->overflow) return;
    uint64_t mg[4];
    w_mag(x->l, mg);
    int top = w_top(mg);
    int64_t sh = e - x->base;
    if (sh < 0) {
        if (-sh > W_ROOM || top - sh > W_ROOM) {
            x->overflow = true;
            return;
        }
        w_shl(x->l, (int)-sh);
        x->base = (int32_t)e;
        sh = 0;
    }
    if (sh > W_ROOM || gck_top128(m) + sh > W_ROOM) {
        x->overflow = true;
        return;
    }
    uint64_t t[4] = {(uint64_t)m, (uint64_t)(m >> 64), 0, 0};
    w_shl(t, (int)sh);
    if (neg) w_neg(t);
    w_add(x->l, t); /* both below 2^251 in magnitude: no wrap */
    w_mag(x->l, mg);
    if (w_top(mg) > W_ROOM) x->overflow = true;
}

/* The magnitude m·2^*base (m != 0) as a 128-bit integer at a new *base: exact below 2^127, else
 * its top 127 bits with a sticky bit for any bit below them (rounding to 53 bits or fewer, to
 * nearest or up, then sees the same value). */
static unsigned __int128 w_compress(const uint64_t *m, int32_t *base) {
    int t = w_top(m);
    if (t < 127) return (unsigned __int128)m[1] << 64 | m[0];
    int r = t - 126, q = r >> 6, b = r & 63;
    uint64_t o[2];
    for (int k = 0; k < 2; k++) {
        uint64_t lo = k + q < 4 ? m[k + q] : 0, hi = k + q + 1 < 4 ? m[k + q + 1] : 0;
        o[k] = b ? (lo >> b) | (hi << (64 - b)) : lo;
    }
    bool sticky = b && (m[q] & ((UINT64_C(1) << b) - 1));
    for (int k = 0; k < q; k++) sticky |= m[k] != 0;
    *base += r;
    return ((unsigned __int128)o[1] << 64 | o[0]) | sticky;
}

static bool lane256_eval(const gck_exact_plan *p, const lane_col *L, int64_t i, double cv,
                         const double *got, gck_oracle_eval *out) {
    int nq = L->nq, step = L->step;
    if ((L->ta_start && L->ta_start[i + 1] > L->ta_start[i]) || L->nb || step < 1 || step >= 64)
        return false;
    const int64_t *t = L->q + i * nq;
    if (terms_bits(t, nq) + step * (nq - 1) + 1 + bits_of(p->alpha.m) > W_ROOM) return false;
    sum256 v = {{0, 0, 0, 0}, L->ea[i] + L->w, false};
    for (int d = 0; d < nq; d++) { /* v = v·2^step + t[d] */
        w_shl_small(v.l, step);
        uint64_t x = (uint64_t)t[d], ext = (uint64_t)(t[d] >> 63), term[4] = {x, ext, ext, ext};
        w_add(v.l, term);
    }
    if (w_zero(v.l)) return false;
    /* alpha·S */
    uint64_t mg[4];
    w_mag(v.l, mg);
    bool neg = w_negative(v.l) != (bool)p->alpha.neg;
    if (p->alpha.m != 1) {
        unsigned __int128 c = 0;
        for (int k = 0; k < 4; k++) {
            c += (unsigned __int128)mg[k] * p->alpha.m;
            mg[k] = (uint64_t)c;
            c >>= 64;
        }
    }
    memcpy(v.l, mg, sizeof mg);
    if (neg) w_neg(v.l);
    v.base += p->alpha.e;
    if (p->rc && p->beta.m) { /* + beta·c (c is finite here) */
        dec cd = decode_double(cv);
        w_add_term(&v, (unsigned __int128)cd.m * p->beta.m, (int64_t)cd.e + p->beta.e,
                   cd.neg != p->beta.neg);
    }
    if (v.overflow || w_zero(v.l)) return false;
    double err = NAN;
    int sign = 0;
    if (got && isfinite(*got)) { /* |value - result| */
        dec gd = decode_double(*got);
        sum256 diff = v;
        w_add_term(&diff, gd.m, gd.e, !gd.neg);
        if (diff.overflow) return false;
        bool z = w_zero(diff.l), dn = w_negative(diff.l);
        if (z) {
            err = 0.0;
        } else {
            w_mag(diff.l, mg);
            int32_t b = diff.base;
            unsigned __int128 u = w_compress(mg, &b);
            err = up128(u, b);
        }
        sign = z ? 0 : dn ? 1 : -1; /* diff = exact - result */
    }
    w_mag(v.l, mg);
    int32_t b = v.base;
    unsigned __int128 u = w_compress(mg, &b);
    double r = round128(u, b, p->fo);
    out->value = w_negative(v.l) ? -r : r;
    out->abs_error = err;
    out->err_sign = sign;
    return true;
}

/* The element by the 128-bit lane, else the 256-bit one: 1 or 2, 0 when neither. */
static int eval_lanes(const gck_exact_plan *p, int64_t bi, int64_t i, int64_t j, double cv,
                      const double *got, gck_oracle_eval *out, gck_exact_ws *w) {
    lane_col L = lane_col_of(p->oz, bi, j);
    return lane_eval(p, &L, i, cv, got, out, w) ? 1 : lane256_eval(p, &L, i, cv, got, out) ? 2 : 0;
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
    int lane =
        rab && p->path == PATH_OZAKI ? eval_lanes(p, ma > mb ? ma : mb, i, j, cv, got, out, w) : 0;
    if (lane) {
        w->lane += lane == 1;
        w->lane256 += lane == 2;
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

void gck_exact_eval_run(const gck_exact_plan *p, gck_exact_ws *w, int64_t bi, int64_t i0,
                        int64_t i1, int64_t j, const double *got, gck_oracle_eval *out) {
    const gck_case *c = p->c;
    int64_t ma = c->stride_a == 0 ? 0 : bi, mb = c->stride_b == 0 ? 0 : bi;
    if (!p->rab || p->path != PATH_OZAKI || p->col_special[mb * c->n + j]) {
        for (int64_t i = i0; i < i1; i++)
            gck_exact_eval(p, w, bi, i, j, false, got ? &got[i - i0] : NULL, &out[i - i0]);
        return;
    }
    lane_col L = lane_col_of(p->oz, ma > mb ? ma : mb, j);
    gck_oz_tails_prefetch(p->oz, bi, i0, i1, j);
    const uint8_t *rs = p->row_special + ma * c->m;
    const void *C = p->rc ? gck_oracle_member(p->C, c->type_c, c->stride_c, bi) : NULL;
    for (int64_t i = i0; i < i1; i++) {
        gck_oracle_eval *e = &out[i - i0];
        const double *g = got ? &got[i - i0] : NULL;
        double cv = C ? gck_fmt_load(C, c->type_c, i * p->crs + j * p->ccs) : 0.0;
        e->special_input = false;
        if (rs[i] || !isfinite(cv))
            gck_exact_eval(p, w, bi, i, j, false, g, e);
        else if (lane_eval(p, &L, i, cv, g, e, w))
            w->lane++;
        else if (lane256_eval(p, &L, i, cv, g, e))
            w->lane256++;
        else
            gck_exact_eval(p, w, bi, i, j, false, g, e);
    }
}
