/* The fast exact oracle: the same result as the MPFR oracle (docs/SEMANTICS.md), computed with
 * integers.
 *
 * A and B are decoded once per GEMM, straight from their bits, into sign, integer significand
 * and exponent (x = m·2^e), laid out densely along k. Each product m_a·m_b is an exact integer
 * (at most 48 bits for f16, bf16 and f32, 106 with f64). How the products of an element are
 * summed is chosen per GEMM from the operands' exponent spread and significand widths:
 *   - fixed point (shortest form, m odd): when every value is an integer multiple of its
 *     operand's smallest unit and the sum fits 63 (or 125) bits, S is one int64 (__int128): a
 *     multiply and an add per product;
 *   - exponent buckets otherwise (stored form): with r = e - emin, a significand is kept
 *     shifted left by r mod 4 and a product is added, without any shift, to the int64
 *     (__int128) bucket r_a/4 + r_b/4. Bucket terms stay below 2^P (P: the two widest
 *     significands plus 6 bits), so a bounded number of them fit; before that the buckets are
 *     folded, by one carry chain, into a fixed-point superaccumulator of 32-bit digits in
 *     int64 limbs. With K >= 256 four copies of the buckets, used in turn, keep consecutive
 *     products from waiting on each other.
 * The sum S is then multiplied by alpha's significand (exact), beta·c and, for the checker, -D̂
 * are added in a frame sized from these terms, and the integer is rounded once to D's format:
 * round to nearest even on the output grid (2^(max(E, emin) - p + 1) for the leading bit 2^E),
 * gradual underflow, overflow to ±Inf. No floating-point operation touches the value on the
 * way. Special values and the sign of exact zeros come from the pass shared with the MPFR
 * oracle. D is evaluated in L2-sized tiles handed out to the threads.
 *
 * The buckets are the "small superaccumulator" idea (R. M. Neal, "Fast exact summation using
 * small and large superaccumulators", arXiv:1505.05571, 2015) applied to exact integer
 * products; the fixed-point path is the classic exact fp16 dot product in a wide integer. */
#include "oracle_exact.h"
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
static const char *const path_names[] = {"zero",     "fix64",     "fix128",
                                         "bucket64", "bucket128", "ozaki"};

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
    int oz_beta;      /* ... and the bits of its slices */
    char oz_why[160]; /* otherwise: why not */
};

void gck_exact_plan_free(gck_exact_plan *p) {
    if (!p) return;
    void *arrays[] = {p->afix, p->bfix, p->apk, p->bpk, p->asig, p->bsig,        p->aexp,
                      p->bexp, p->alo,  p->ahi, p->blo, p->bhi,  p->row_special, p->col_special};
    for (size_t t = 0; t < sizeof arrays / sizeof arrays[0]; t++) free(arrays[t]);
    gck_ozaki_free(p->oz);
    free(p);
}

const char *gck_exact_plan_path(const gck_exact_plan *p) { return path_names[p->path]; }

void gck_exact_plan_describe(const gck_exact_plan *p, char *buf, size_t len) {
    int sa, sb, beta;
    if (p->oz) {
        gck_ozaki_shape(p->oz, &sa, &sb, &beta);
        int64_t ta, tb;
        gck_ozaki_tails(p->oz, &ta, &tb);
        snprintf(buf, len,
                 "ozaki: %d x %d slices of %d bits, %d f64 GEMMs per member, each checked by "
                 "Freivalds' test; %lld + %lld values with a tail",
                 sa, sb, beta, sa * sb, (long long)ta, (long long)tb);
    } else
        snprintf(buf, len, "%s, products one by one (no splitting: %s)", path_names[p->path],
                 p->oz_why[0] ? p->oz_why : "A and B not read");
}

void gck_exact_plan_limit_block(gck_exact_plan *p, int64_t products) {
    if (products >= 1 && products < p->block) p->block = products;
}

/* One operand seen as lines (rows of op(A), columns of op(B)) along k. */
typedef struct opview {
    const void *base;
    gck_format type;
    int64_t stride, members, lines, K, ls, ks; /* element (line, k) at line·ls + k·ks */
} opview;

typedef struct opstats {
    int32_t emin;    /* shortest form: smallest exponent of a last bit */
    int32_t emax;    /* largest exponent of a top bit, plus one */
    int mbits;       /* shortest form: widest significand */
    int32_t emin_r;  /* stored form: smallest exponent of a last bit */
    int32_t emaxe_r; /* stored form: largest exponent of a last bit */
    int mbits_r;     /* stored form: widest significand */
} opstats;

/* Both passes below are instantiated per storage layout (FOR_EACH_LAYOUT). */

/* Pass 1: specials per line; exponent ranges over the operand in the shortest form (for fixed
 * point) and in the stored form (for buckets: its last-bit exponents spread no wider than the
 * values' exponents, which keeps the buckets few). Over the lines [lo, hi) of all members; when
 * the lines are adjacent (ls = 1) step by step across them, so that the reads are adjacent. */
static inline __attribute__((always_inline)) void
op_stats_as(const opview *v, layout lay, uint8_t *special, opstats *st, int64_t lo, int64_t hi) {
    *st = (opstats){INT32_MAX, INT32_MIN, 0, INT32_MAX, INT32_MIN, 0};
    bool across = v->ls == 1 && v->ks != 1;
    for (int64_t b = lo / v->lines; b <= (hi - 1) / v->lines; b++) {
        const void *base = gck_oracle_member(v->base, v->type, v->stride, b);
        int64_t l0 = b * v->lines > lo ? 0 : lo - b * v->lines,
                l1 = (b + 1) * v->lines < hi ? v->lines : hi - b * v->lines;
        int64_t outer = across ? v->K : l1 - l0, inner = across ? l1 - l0 : v->K;
        for (int64_t u = 0; u < outer; u++)
            for (int64_t w = 0; w < inner; w++) {
                int64_t line = across ? l0 + w : l0 + u, k = across ? u : w;
                bool sp;
                dec d = decode_raw(raw_at(base, lay.bytes, line * v->ls + k * v->ks), lay.fb,
                                   lay.eb, &sp);
                special[b * v->lines + line] |= sp;
                if (!d.m) continue;
                int nb = bits_of(d.m);
                if (d.e < st->emin_r) st->emin_r = d.e;
                if (d.e > st->emaxe_r) st->emaxe_r = d.e;
                if (nb > st->mbits_r) st->mbits_r = nb;
                if (d.e + nb > st->emax) st->emax = d.e + nb;
                dec sd = strip(d);
                if (sd.e < st->emin) st->emin = sd.e;
                if (bits_of(sd.m) > st->mbits) st->mbits = bits_of(sd.m);
            }
    }
}

/* The lines cut among the cores, each part with its own ranges, merged. */
#define STATS_PARTS 64
typedef struct stats_job {
    const opview *v;
    uint8_t *special;
    opstats st[STATS_PARTS];
} stats_job;

static void op_stats_part(void *arg, int part, int64_t lo, int64_t hi) {
    stats_job *x = arg;
    const opview *v = x->v;
#define STATS(lay) op_stats_as(v, lay, x->special, &x->st[part], lo, hi)
    FOR_EACH_LAYOUT(v->type, STATS)
#undef STATS
}

static void op_stats(const opview *v, uint8_t *special, opstats *st) {
    *st = (opstats){INT32_MAX, INT32_MIN, 0, INT32_MAX, INT32_MIN, 0};
    int64_t n = v->members * v->lines;
    if (!n || !v->K) return;
    stats_job x = {.v = v, .special = special};
    int parts = gck_parallel_parts(n, v->K);
    parts = parts < STATS_PARTS ? parts : STATS_PARTS;
    gck_parallel_for(parts, n, &x, op_stats_part);
    for (int p = 0; p < parts; p++) {
        const opstats *q = &x.st[p];
        st->emin = q->emin < st->emin ? q->emin : st->emin;
        st->emax = q->emax > st->emax ? q->emax : st->emax;
        st->mbits = q->mbits > st->mbits ? q->mbits : st->mbits;
        st->emin_r = q->emin_r < st->emin_r ? q->emin_r : st->emin_r;
        st->emaxe_r = q->emaxe_r > st->emaxe_r ? q->emaxe_r : st->emaxe_r;
        st->mbits_r = q->mbits_r > st->mbits_r ? q->mbits_r : st->mbits_r;
    }
}

/* Pass 2: the representation the path uses. Fixed point: the shortest form, relative to
 * st->emin. Buckets: the stored form with r = e - st->emin_r; zeros get bucket 0 (adding 0
 * anywhere changes nothing) and stay out of the line's range lo..hi (in buckets). */
static inline __attribute__((always_inline)) void op_fill_as(const opview *v, layout lay, int path,
                                                             const opstats *st, int32_t *lo,
                                                             int32_t *hi, int64_t *fix, sigexp *pk,
                                                             int64_t *sig, int32_t *ex) {
    bool fixed = path == PATH_FIX64 || path == PATH_FIX128;
    for (int64_t b = 0; b < v->members; b++) {
        const void *base = gck_oracle_member(v->base, v->type, v->stride, b);
        for (int64_t line = 0; line < v->lines; line++) {
            int64_t t = b * v->lines + line;
            int32_t l = INT32_MAX, h = 0;
            for (int64_t k = 0; k < v->K; k++) {
                bool sp;
                dec d = decode_raw(raw_at(base, lay.bytes, line * v->ls + k * v->ks), lay.fb,
                                   lay.eb, &sp);
                int64_t x = t * v->K + k;
                if (fixed) {
                    d = strip(d);
                    int64_t sg = d.neg ? -(int64_t)d.m : (int64_t)d.m;
                    fix[x] = d.m ? (int64_t)((uint64_t)sg << (d.e - st->emin)) : 0;
                    continue;
                }
                int32_t r = d.e - st->emin_r, q = d.m ? r >> BUCKET_LOG : 0;
                int64_t sg = d.neg ? -(int64_t)d.m : (int64_t)d.m;
                sg = d.m ? (int64_t)((uint64_t)sg << (r & ((1 << BUCKET_LOG) - 1))) : 0;
                if (d.m && q < l) l = q;
                if (d.m && q > h) h = q;
                if (path == PATH_BUCKET64)
                    pk[x] = (sigexp){(int32_t)sg, (uint32_t)q};
                else {
                    sig[x] = sg;
                    ex[x] = q;
                }
            }
            if (!fixed) {
                lo[t] = l == INT32_MAX ? 0 : l;
                hi[t] = h;
            }
        }
    }
}

static void op_fill(const opview *v, int path, const opstats *st, int32_t *lo, int32_t *hi,
                    int64_t *fix, sigexp *pk, int64_t *sig, int32_t *ex) {
#define FILL(lay) op_fill_as(v, lay, path, st, lo, hi, fix, pk, sig, ex)
    FOR_EACH_LAYOUT(v->type, FILL)
#undef FILL
}

/* The path (fixed point in 64 or 128 bits, or buckets), the number of bucket copies, the block
 * of bucket terms between folds and the bucket count, from the operands' exponent ranges. */
static void choose_path(gck_exact_plan *p, const gck_case *c, const opstats *sa, const opstats *sb,
                        bool any, int growth) {
    int wa = sa->emax - sa->emin, wb = sb->emax - sb->emin;  /* fixed-point widths */
    int P = sa->mbits_r + sb->mbits_r + 2 * BUCKET_PRESHIFT; /* widest bucket term */
    if (!any)
        p->path = PATH_ZERO;
    else if (wa + wb + growth <= 63)
        p->path = PATH_FIX64;
    else if (wa <= 62 && wb <= 62 && wa + wb + growth <= 125)
        p->path = PATH_FIX128;
    else if (sa->mbits_r + BUCKET_PRESHIFT <= 31 && sb->mbits_r + BUCKET_PRESHIFT <= 31 && P <= 60)
        p->path = PATH_BUCKET64;
    else
        p->path = PATH_BUCKET128;
    /* Four copies keep products that land in the same bucket from waiting on each other; with
     * few products per element one copy is cheaper to fold. */
    p->ncopy = c->k >= 256 ? 4 : 1;
    /* Bucket terms are below 2^P; `block` of them stay below 2^63, or 2^62 for a single copy
     * (2^124 for __int128 buckets): the limits the fold's carry chain needs. */
    int room = (p->path == PATH_BUCKET64 ? (p->ncopy == 1 ? 62 : 63) : 124) - P;
    p->block = (int64_t)1 << (room < 30 ? room : 30);
    /* bucket indices, rounded up to whole limbs (the fold runs over eight at a time) */
    int nbk =
        ((sa->emaxe_r - sa->emin_r) >> BUCKET_LOG) + ((sb->emaxe_r - sb->emin_r) >> BUCKET_LOG) + 1;
    p->nbuckets = (nbk + 7) & ~7;
}

/* The path's encoded operands: na values of op(A), nb of op(B). */
static bool alloc_encoded(gck_exact_plan *p, int64_t na, int64_t nb) {
    switch (p->path) {
    case PATH_FIX64:
    case PATH_FIX128:
        return (p->afix = malloc((size_t)na * sizeof *p->afix)) &&
               (p->bfix = malloc((size_t)nb * sizeof *p->bfix));
    case PATH_BUCKET64:
        return (p->apk = malloc((size_t)na * sizeof *p->apk)) &&
               (p->bpk = malloc((size_t)nb * sizeof *p->bpk));
    case PATH_BUCKET128:
        return (p->asig = malloc((size_t)na * sizeof *p->asig)) &&
               (p->bsig = malloc((size_t)nb * sizeof *p->bsig)) &&
               (p->aexp = malloc((size_t)na * sizeof *p->aexp)) &&
               (p->bexp = malloc((size_t)nb * sizeof *p->bexp));
    default: return true;
    }
}

/* The frames: S's (bit 0 at the smallest product's last bit, room for every product and K of
 * carries, at least the 5 limbs a 128-bit sum needs) and the largest final frame (alpha·S,
 * beta·c for any c of C's format, and -D̂ for any double; each element sizes its own frame from
 * its actual terms, see finish). */
/* The largest final frame (alpha·S, beta·c for any c of C's format, and -D̂ for any double; each
 * element sizes its own frame from its actual terms, see finish), from S's frame. */
static void size_final(gck_exact_plan *p, const gck_case *c) {
    const gck_format_info *fc = gck_format_get(c->type_c);
    p->alpha = decode_double(c->alpha);
    p->beta = decode_double(c->beta);
    int64_t s_lo = (int64_t)p->base_s + p->alpha.e, s_hi = s_lo + 32 * p->nlimbs_s + 96;
    int64_t c_lo = fc->emin - fc->precision + 1 + p->beta.e, c_hi = fc->emax + p->beta.e + 160;
    int64_t lo = s_lo < c_lo ? s_lo : c_lo, hi = s_hi > c_hi ? s_hi : c_hi;
    if (lo > -1074) lo = -1074;
    if (hi < 1024 + 96) hi = 1024 + 96;
    p->nlimbs_f = (int)((hi - lo) >> 5) + 4;
}

/* S's frame: bit 0 at the smallest product's last bit, room for every product and K of carries,
 * at least the 5 limbs a 128-bit sum needs. */
static void size_frames(gck_exact_plan *p, const gck_case *c, const opstats *sa, const opstats *sb,
                        int growth) {
    bool fixed = p->path == PATH_FIX64 || p->path == PATH_FIX128;
    p->base_s = fixed ? sa->emin + sb->emin : sa->emin_r + sb->emin_r;
    int width = fixed ? (sa->emax - sa->emin) + (sb->emax - sb->emin)
                      : (sa->emax - sa->emin_r) + (sb->emax - sb->emin_r);
    p->nlimbs_s = (width + growth) / 32 + 6;
    size_final(p, c);
}

gck_exact_plan *gck_exact_plan_new(const gck_case *c, const void *A, const void *B, const void *C) {
    gck_ozaki_options o = gck_ozaki_defaults();
    return gck_exact_plan_new_with(c, A, B, C, &o);
}

gck_exact_plan *gck_exact_plan_new_with(const gck_case *c, const void *A, const void *B,
                                        const void *C, const gck_ozaki_options *opt) {
    gck_exact_plan *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->c = c;
    p->A = A;
    p->B = B;
    p->C = C;
    bool rab = gck_case_reads_ab(c);
    int64_t members_a = c->stride_a == 0 ? 1 : c->batch,
            members_b = c->stride_b == 0 ? 1 : c->batch;
    int64_t la = members_a * c->m, lb = members_b * c->n;
    p->row_special = calloc((size_t)(la + 1), 1);
    p->col_special = calloc((size_t)(lb + 1), 1);
    p->alo = malloc((size_t)(la + 1) * sizeof *p->alo);
    p->ahi = malloc((size_t)(la + 1) * sizeof *p->ahi);
    p->blo = malloc((size_t)(lb + 1) * sizeof *p->blo);
    p->bhi = malloc((size_t)(lb + 1) * sizeof *p->bhi);
    if (!p->row_special || !p->col_special || !p->alo || !p->ahi || !p->blo || !p->bhi) {
        gck_exact_plan_free(p);
        return NULL;
    }
    int64_t ars, acs, brs, bcs;
    gck_case_op_strides(c, GCK_A, &ars, &acs);
    gck_case_op_strides(c, GCK_B, &brs, &bcs);
    opview va = {A, c->type_a, c->stride_a, members_a, c->m, c->k, ars, acs};
    opview vb = {B, c->type_b, c->stride_b, members_b, c->n, c->k, bcs, brs};
    opstats sa = {0, 0, 0, 0, 0, 0}, sb = sa;
    if (rab) {
        op_stats(&va, p->row_special, &sa);
        op_stats(&vb, p->col_special, &sb);
    }
    bool any = rab && sa.emin != INT32_MAX && sb.emin != INT32_MAX;
    if (!any) sa = sb = (opstats){0, 0, 0, 0, 0, 0};
    int growth = 2 + bits_of((uint64_t)c->k + 1);
    if (any && (p->oz = gck_ozaki_new(c, A, B, opt, p->oz_why, sizeof p->oz_why))) {
        int32_t width;
        int slices_a, slices_b;
        p->path = PATH_OZAKI;
        gck_ozaki_range(p->oz, &p->base_s, &width);
        gck_ozaki_shape(p->oz, &slices_a, &slices_b, &p->oz_beta);
        p->nlimbs_s = width / 32 + 6;
        size_final(p, c);
    } else {
        choose_path(p, c, &sa, &sb, any, growth);
        if (!alloc_encoded(p, la * c->k, lb * c->k)) {
            gck_exact_plan_free(p);
            return NULL;
        }
        if (p->path != PATH_ZERO) {
            op_fill(&va, p->path, &sa, p->alo, p->ahi, p->afix, p->apk, p->asig, p->aexp);
            op_fill(&vb, p->path, &sb, p->blo, p->bhi, p->bfix, p->bpk, p->bsig, p->bexp);
        }
        size_frames(p, c, &sa, &sb, growth);
    }
    p->rab = rab;
    p->rc = gck_case_reads_c(c);
    p->td = gck_case_type(c, GCK_D);
    p->fo = gck_format_get(p->td);
    gck_case_op_strides(c, GCK_C, &p->crs, &p->ccs);
    return p;
}

/* ---- the superaccumulator ---------------------------------------------------------------- */

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

/* Carry-propagate: every limb but the top one in [0, 2^32); the top one carries the sign. */
static void normalize(int64_t *l, int n) {
    for (int i = 0; i < n - 1; i++) {
        int64_t carry = l[i] >> 32; /* floor division by 2^32 */
        l[i] -= carry * ((int64_t)1 << 32);
        l[i + 1] += carry;
    }
}

/* |value| into mag (normalized limbs, all in [0, 2^32)); returns 1 when negative. */
static int magnitude(const int64_t *l, int n, uint32_t *mag) {
    int neg = l[n - 1] < 0;
    int64_t carry = neg ? 1 : 0;
    for (int i = 0; i < n; i++) {
        int64_t v = neg ? (int64_t)(~(uint32_t)l[i]) + carry : l[i];
        if (neg) {
            carry = v >> 32;
            v &= 0xffffffff;
        }
        mag[i] = (uint32_t)v;
    }
    return neg;
}

static int top_bit(const uint32_t *mag, int n) {
    for (int i = n - 1; i >= 0; i--)
        if (mag[i]) return i * 32 + 31 - __builtin_clz(mag[i]);
    return -1;
}

static inline uint32_t word_at(const uint32_t *mag, int n, int64_t w) {
    return w >= 0 && w < n ? mag[w] : 0;
}

/* Bits [lo, lo+count) of mag (count <= 64; bits outside the limbs are 0). */
static uint64_t bits(const uint32_t *mag, int n, int64_t lo, int count) {
    int64_t w = lo >= 0 ? lo / 32 : -((-lo + 31) / 32); /* floor(lo / 32) */
    int sh = (int)(lo - 32 * w);
    unsigned __int128 x = (unsigned __int128)word_at(mag, n, w) |
                          (unsigned __int128)word_at(mag, n, w + 1) << 32 |
                          (unsigned __int128)word_at(mag, n, w + 2) << 64;
    uint64_t v = (uint64_t)(x >> sh);
    return count < 64 ? v & ((UINT64_C(1) << count) - 1) : v;
}

static bool any_below(const uint32_t *mag, int n, int64_t b) {
    if (b <= 0) return false;
    int64_t full = b >> 5;
    for (int64_t i = 0; i < full && i < n; i++)
        if (mag[i]) return true;
    if (full < n && (b & 31) && (mag[full] & ((1u << (b & 31)) - 1u))) return true;
    return false;
}

/* N·2^q, exact when the result is a double: 2^q built from its bits where it is one. */
static inline double scale2(uint64_t N, int64_t q) {
    if (q < -1074 || q > 1023)
        return ldexp((double)N, (int)(q < -2200 ? -2200 : q > 2200 ? 2200 : q));
    uint64_t u = q >= -1022 ? (uint64_t)(q + 1023) << 52 : UINT64_C(1) << (q + 1074);
    double p2;
    memcpy(&p2, &u, sizeof p2);
    return (double)N * p2;
}

/* Round the value (limbs, bit 0 at 2^base) once to format f. *zero: the value was exactly 0. */
static double round_to(const int64_t *l, int n, int32_t base, const gck_format_info *f,
                       uint32_t *mag, bool *zero) {
    int neg = magnitude(l, n, mag);
    int t = top_bit(mag, n);
    *zero = t < 0;
    if (t < 0) return 0.0;
    int32_t E = base + t;                                       /* 2^E <= |x| < 2^(E+1) */
    int32_t q = (E > f->emin ? E : f->emin) - f->precision + 1; /* the output grid */
    int64_t lo = (int64_t)q - base;                             /* bit index of 2^q */
    uint64_t N = lo > t ? 0 : bits(mag, n, lo, (int)(t - lo + 1));
    int round = (int)bits(mag, n, lo - 1, 1);
    bool sticky = any_below(mag, n, lo - 1);
    if (round && (sticky || (N & 1))) N++;
    double v = scale2(N, q); /* exact: N <= 2^p, q on the grid of the format */
    if (v > f->max) v = INFINITY;
    return neg ? -v : v;
}

/* |value| rounded up to a double. */
static double magnitude_up(const int64_t *l, int n, int32_t base, uint32_t *mag, int *neg) {
    *neg = magnitude(l, n, mag);
    int t = top_bit(mag, n);
    if (t < 0) return 0.0;
    int64_t lo = t - 52;
    if (base + lo < -1074) lo = -1074 - (int64_t)base; /* double's subnormals keep fewer bits */
    uint64_t N = lo > t ? 0 : bits(mag, n, lo, (int)(t - lo + 1));
    if (any_below(mag, n, lo)) N++;
    return scale2(N, (int64_t)base + lo); /* exact: N <= 2^53 on double's grid */
}

/* ---- per element ------------------------------------------------------------------------- */

struct gck_exact_ws {
    int64_t *s, *f;
    void *buckets; /* ncopy copies of nbuckets int64 or __int128, zero between elements */
    uint32_t *mag;
    int ns, nf, nb;
    int s_lo, s_top;  /* S's limbs that matter: s_lo..s_top-1 digits, s_top 0 or -1 (sign) */
    long lane;        /* elements by the 128-bit lane */
    int64_t tails[2]; /* of those, elements meeting a tail; those whose tail sum came ahead */
};

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
        normalize(l, n);                                                                           \
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
    int count;
    const int64_t *t = gck_ozaki_terms(p->oz, bi, i, j, &w0, &count);
    for (int d = 0; d < count; d++)
        if (t[d])
            add64(l, (int64_t)w0 - (int64_t)p->oz_beta * d - p->base_s,
                  t[d] < 0 ? (uint64_t)-t[d] : (uint64_t)t[d], t[d] < 0);
    tail_sink sink = {l, p->base_s};
    gck_ozaki_tail_terms(p->oz, bi, i, j, add_tail, &sink);
    normalize(l, n);
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
        normalize(l, n);
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
    normalize(f, *n);
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
    int count;
    const int64_t *t = gck_ozaki_terms(p->oz, bi, i, j, &w0, &count);
    sum128 x = {0, p->base_s, false};
    for (int d = 0; d < count; d++)
        add_term128(&x, t[d] < 0 ? -(unsigned __int128)t[d] : (unsigned __int128)t[d],
                    (int64_t)w0 - (int64_t)p->oz_beta * d - p->base_s, t[d] < 0);
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
    double v = round_to(w->f, n, base, p->fo, w->mag, &zero);
    if (zero) {
        gck_oracle_pass1(c, p->A, p->B, p->C, bi, i, j, skip_zero, &pre);
        v = gck_oracle_exact_zero(c, &pre);
    }
    out->value = v;
    if (err) {
        if (gd.m) { /* the frame holds alpha·S + beta·c, normalized: add -D̂ */
            add64(w->f, (int64_t)gd.e - base, gd.m, !gd.neg);
            normalize(w->f, n);
        }
        int neg; /* the frame holds exact - result */
        out->abs_error = magnitude_up(w->f, n, base, w->mag, &neg);
        out->err_sign = out->abs_error == 0 ? 0 : neg ? 1 : -1;
    }
}

/* ---- the whole GEMM ---------------------------------------------------------------------- */

/* D is cut into tiles of T x T elements (per batch member), handed out to the threads one at a
 * time; T is chosen so that the tile's rows of op(A) and columns of op(B) stay in a core's L2
 * while its elements are evaluated. */
typedef struct ex_tiles {
    const gck_exact_plan *p;
    void *D;
    gck_tiles g;
    atomic_llong next;
} ex_tiles;

typedef struct ex_job {
    ex_tiles *tiles;
    bool ok;
} ex_job;

int64_t gck_exact_plan_tile(const gck_exact_plan *p) {
    const int64_t budget = 1 << 20;                                /* bytes of L2 for one tile */
    int64_t line = p->c->k * (p->path == PATH_BUCKET128 ? 12 : 8); /* one decoded row/column */
    int64_t t = line ? budget / (2 * line) : 64;
    return t < 4 ? 4 : t > 64 ? 64 : t;
}

static void *run_ex(void *arg) {
    ex_job *job = arg;
    ex_tiles *tl = job->tiles;
    const gck_case *c = tl->p->c;
    gck_exact_ws *w = gck_exact_ws_new(tl->p);
    job->ok = w != NULL;
    if (!w) return NULL;
    int64_t drs, dcs;
    gck_case_op_strides(c, GCK_D, &drs, &dcs);
    gck_format td = gck_case_type(c, GCK_D);
    int64_t sd = gck_case_stride(c, GCK_D);
    for (int64_t t; (t = atomic_fetch_add(&tl->next, 1)) < tl->g.count;) {
        int64_t bi, i0, i1, j0, j1;
        gck_tile_range(&tl->g, c, t, &bi, &i0, &i1, &j0, &j1);
        for (int64_t j = j0; j < j1; j++)
            for (int64_t i = i0; i < i1; i++) {
                gck_oracle_eval ev;
                gck_exact_eval(tl->p, w, bi, i, j, false, NULL, &ev);
                gck_fmt_store(tl->D, td, bi * sd + i * drs + j * dcs, ev.value);
            }
    }
    gck_exact_ws_free(w);
    return NULL;
}

static gck_status exact_oracle(const gck_case *c, const void *A, const void *B, const void *C,
                               void *D, int threads, char *msg, size_t msg_len) {
    int64_t total;
    gck_status s = gck_oracle_check_args(c, A, B, C, D, &total, msg, msg_len);
    if (s != GCK_OK || total == 0) return s;
    gck_exact_plan *p = gck_exact_plan_new(c, A, B, C);
    if (!p) {
        snprintf(msg, msg_len, "out of memory decoding the operands");
        return GCK_ENOMEM;
    }
    ex_tiles tl = {p, D, gck_tiles_of(c, gck_exact_plan_tile(p)), 0};
    atomic_init(&tl.next, 0);
    threads = gck_thread_count(threads, tl.g.count);
    ex_job *jobs = calloc((size_t)threads, sizeof *jobs);
    bool ok = jobs != NULL;
    for (int t = 0; ok && t < threads; t++) jobs[t] = (ex_job){&tl, false};
    ok = ok && gck_parallel(jobs, (size_t)threads, sizeof *jobs, run_ex);
    for (int t = 0; ok && t < threads; t++) ok = jobs[t].ok;
    free(jobs);
    gck_exact_plan_free(p);
    if (!ok) {
        snprintf(msg, msg_len, "out of memory");
        return GCK_ENOMEM;
    }
    return GCK_OK;
}

/* ---- the public functions, in gemmcheck's floating-point environment (fpenv.h) ------------ */

GCK_GUARDED(gck_status, gck_oracle_exact, exact_oracle,
            (const gck_case *c, const void *A, const void *B, const void *C, void *D, int threads,
             char *msg, size_t msg_len),
            (c, A, B, C, D, threads, msg, msg_len))
