/* Sum_k |a_ik|·|b_kj| by one GEMM (gemmcheck's kernels) on the absolute values.
 *
 * The GEMM's model (docs/KERNELS.md) is one accumulator per element, k ascending, a fused
 * multiply-add each, rounded to nearest: with non-negative terms every step multiplies the
 * partial sum by at most (1 + u)^-1 ... (1 + u), u = 2^-53, and adds at most 2^-1075 where the
 * result is subnormal. So the exact sum T and the computed T^ satisfy
 *     T <= T^ / (1 - u)^K + K·2^-1075 <= T^·(1 + K·2^-52) + K·2^-1074    (K·u <= 1/2),
 * which is what gck_absprod_bound returns, evaluated rounding upward (the same relative slack
 * bounds any summation order of depth K: the bound does not depend on the kernel's blocking).
 *
 * The f32 road: when neither input type is f64, every |a| and |b| is a float, K <= 2^13, every
 * non-zero product is at least 2^-126 and K times the largest one stays below 2^126, the GEMM
 * runs in f32, twice as fast. Then no product or partial sum is subnormal or overflows, each of
 * the K roundings is relative (u = 2^-24, a product exact inside its FMA, or rounded once where
 * a path multiplies apart: still at most K roundings on any term), and
 *     T <= T^ / (1 - u)^K <= T^·(1 + K·2^-23)    (K·u <= 2^-11),
 * a slack of at most 2^-10 relative (K·1.2e-7), again far below the bound's own factors.
 *
 * On that road, when every |a| and |b| is moreover a normal bf16 value (at least 2^-126, 8
 * significant bits), the GEMM takes them as bf16 with f32 accumulation: VDPBF16PS on a path
 * that has it (twice the f32 rate), whose declared model is a fused multiply-add per step in
 * f32, rounded to nearest, odd step of a pair first, with denormal inputs read as zero and
 * denormal results flushed; no input is denormal and, as above, no product or partial sum is,
 * so the same K relative roundings and the same bound hold (other paths convert to f32 and run
 * the f32 road's arithmetic).
 *
 * The rounded road: when a large product's values are floats on the f32 road but not all bf16
 * values, and the kernels multiply bf16 measurably faster than f32 (their calibrated rates), every
 * |a| and |b| is rounded up to bf16 (toward +Inf: at most 2^-7 relative above it) and the GEMM
 * runs on those, when they still meet the bf16 road's conditions. Each product then lies at most
 * (1 + 2^-7)^2 above the exact one, so T^ bounds T from above as before, with that much more
 * slack: the checker re-sums an element itself wherever the looser T could change its verdict
 * (facts.c, checker.c: GCK_ABSPROD_BAND).
 *
 * As the kernels are under test themselves, every row of T^ is compared with bounds of its
 * exact row sum, sum_k |a_ik|·(sum_j |b_kj|), computed in directed rounding; a GEMM that
 * contradicts them is not used. */
#include "absprod.h"

#include <fenv.h>
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bigmem.h"
#include "gemmcheck/kernels.h"
#include "parallel.h"
#include "stash.h"

#define ABS_MIN_PRODUCTS (INT64_C(1) << 22)
#define ABS_MAX_BYTES    (2.0 * 1073741824.0)
#define NARROW_MAX_K     (INT64_C(1) << 13)
#define UP_MIN_PRODUCTS  (INT64_C(1) << 30) /* the rounded road: from 1024^3 multiply-adds */

struct gck_absprod {
    int64_t m, n, k, pairs;
    bool a_batched, b_batched;
    bool narrow; /* every pair's T^ from an f32 GEMM (on bf16 inputs or f32 ones) */
    bool bf16;   /* every pair's on bf16 inputs */
    bool up;     /* ... some of them rounded up to bf16 (the rounded road) */
    double *t;   /* [pair][j][i] */
    bool src_f;  /* the operands given as floats (else doubles) */
};

/* What the f32 road needs to know of an operand's absolute values. */
typedef struct abs_range {
    int emin, emax; /* of the non-zero ones: INT_MAX, INT_MIN when there are none */
    bool floats;    /* every one is a float */
    bool bf16s;     /* every one is a bf16 value (a float whose low 16 bits are zero) */
} abs_range;

static atomic_long built, built_narrow, built_bf16, built_up;
static atomic_int up_mode = -1;      /* the rounded road: -1 where it pays, 0 never, 1 always */
static _Atomic int64_t planted = -1; /* tests: the element of T^ made wrong (gck_absprod_plant) */
static _Atomic double planted_factor = 1;

void gck_absprod_plant(int64_t element, double factor) {
    atomic_store(&planted_factor, factor);
    atomic_store(&planted, element);
}

long gck_absprod_built(void) { return atomic_load(&built); }
long gck_absprod_built_f32(void) { return atomic_load(&built_narrow); }
long gck_absprod_built_bf16(void) { return atomic_load(&built_bf16); }
long gck_absprod_built_rounded(void) { return atomic_load(&built_up); }
int gck_absprod_round_up(int mode) { return atomic_exchange(&up_mode, mode < 0 ? -1 : mode > 0); }

bool gck_absprod_f32(const gck_absprod *p) { return p->narrow; }
bool gck_absprod_bf16(const gck_absprod *p) { return p->bf16; }
bool gck_absprod_rounded(const gck_absprod *p) { return p->up; }

void gck_absprod_free(gck_absprod *p) {
    if (!p) return;
    gck_big_free(p->t);
    free(p);
}

double gck_absprod_bound(const gck_absprod *p, int64_t bi, int64_t i, int64_t j) {
    return p->t[((p->pairs == 1 ? 0 : bi) * p->n + j) * p->m + i];
}

/* The passes below are cut among the cores (parallel.h); each part sets the rounding mode its
 * sums need in its own thread, and every sum keeps its order, so the bits do not depend on the
 * number of parts. An operand copy holds doubles on the f64 road, floats on the f32 one, bf16
 * values on the bf16 one: what the GEMM multiplies. */
typedef enum copy_kind { AS_DOUBLES, AS_FLOATS, AS_BF16 } copy_kind;
typedef struct abs_job {
    const double *src, *u, *nu;
    const float *srcf; /* the source as floats instead (then src is NULL) */
    const void *xa;
    void *dst;
    double *s, *n_s;
    int64_t m, n, k;
    bool narrow;
    copy_kind kind;   /* of xa (row_sums, dot_part) */
    abs_range *range; /* one per part (abs_up: two, the rounded ones from range[parts] on) */
    int parts;        /* abs_up: how many */
} abs_job;

static inline double src_at(const abs_job *x, int64_t i) {
    return x->srcf ? (double)x->srcf[i] : x->src[i];
}

static inline double at(const void *x, copy_kind kind, int64_t i) {
    if (kind == AS_BF16) {
        uint32_t bits = (uint32_t)((const uint16_t *)x)[i] << 16;
        float v;
        memcpy(&v, &bits, sizeof v);
        return v;
    }
    return kind == AS_FLOATS ? ((const float *)x)[i] : ((const double *)x)[i];
}

/* dst = |src| as floats, a NaN or Inf as 0, and the part's range: whether every value is a
 * float, the exponents of the smallest and largest non-zero ones. */
static void abs_narrow_part(void *arg, int part, int64_t lo, int64_t hi) {
    const abs_job *x = arg;
    float *dst = x->dst;
    abs_range r = {INT_MAX, INT_MIN, true, true};
    for (int64_t i = lo; i < hi; i++) {
        double y = src_at(x, i), v = isfinite(y) ? fabs(y) : 0.0;
        dst[i] = (float)v;
        if (v != 0) {
            uint64_t vb;
            memcpy(&vb, &v, sizeof vb);
            int e = vb >> 52 ? (int)(vb >> 52) - 1023 : ilogb(v); /* v >= 0: no sign bit */
            r.emin = e < r.emin ? e : r.emin;
            r.emax = e > r.emax ? e : r.emax;
            r.floats &= (double)dst[i] == v;
            uint32_t bits;
            memcpy(&bits, &dst[i], sizeof bits);
            r.bf16s &= (bits & 0xffffu) == 0;
        }
    }
    x->range[part] = r;
}

/* dst = |src| as doubles, a NaN or Inf as 0. */
static void abs_part(void *arg, int part, int64_t lo, int64_t hi) {
    (void)part;
    const abs_job *x = arg;
    double *dst = x->dst;
    for (int64_t i = lo; i < hi; i++) {
        double y = src_at(x, i);
        dst[i] = isfinite(y) ? fabs(y) : 0.0;
    }
}

/* The range of a pass's parts together. */
static abs_range merged(const abs_range *ranges, int parts) {
    abs_range all = {INT_MAX, INT_MIN, true, true};
    for (int q = 0; q < parts; q++) {
        all.emin = ranges[q].emin < all.emin ? ranges[q].emin : all.emin;
        all.emax = ranges[q].emax > all.emax ? ranges[q].emax : all.emax;
        all.floats &= ranges[q].floats;
        all.bf16s &= ranges[q].bf16s;
    }
    return all;
}

/* |src| (n floats when src_f, else doubles) into dst: as floats with their range when `narrow`
 * (range.floats false: dst unusable), else as doubles. */
static abs_range abs_copy(void *dst, const void *src, bool src_f, int64_t n, bool narrow) {
    int parts = gck_parallel_parts(n, 1);
    abs_range ranges[parts];
    abs_job x = {
        .src = src_f ? NULL : src, .srcf = src_f ? src : NULL, .dst = dst, .range = ranges};
    gck_parallel_for(parts, n, &x, narrow ? abs_narrow_part : abs_part);
    return merged(ranges, narrow ? parts : 0); /* abs_part leaves no range */
}

/* The floats [lo, hi) (non-negative) rounded up to bf16 in place, and the part's range of the
 * results (a subnormal one counts as exponent -127; an Inf, from rounding up the largest floats,
 * as 128). */
static void up_part(void *arg, int part, int64_t lo, int64_t hi) {
    const abs_job *x = arg;
    uint32_t *v = x->dst;
    abs_range r = {INT_MAX, INT_MIN, true, true};
    for (int64_t i = lo; i < hi; i++) {
        uint32_t u = (v[i] + 0xffffu) & 0xffff0000u; /* no carry out: v[i] < 2^31 */
        v[i] = u;
        if (u == 0) continue;
        int e = (int)(u >> 23) - 127;
        r.emin = e < r.emin ? e : r.emin;
        r.emax = e > r.emax ? e : r.emax;
    }
    x->range[part] = r;
}

static abs_range round_up(float *v, int64_t n) {
    int parts = gck_parallel_parts(n, 1);
    abs_range ranges[parts];
    abs_job x = {.dst = v, .range = ranges};
    gck_parallel_for(parts, n, &x, up_part);
    return merged(ranges, parts);
}

/* Whether the rounded road pays for a product of `products` multiply-adds: the kernels' bf16
 * GEMM (the path they choose for it) measured GCK_KPATH_MARGIN times as fast as their f32 one
 * (Zen 4: VDPBF16PS at twice f32 FMA's rate; an Intel Emerald Rapids core runs it at half). */
static bool up_pays(int64_t products) {
    int mode = atomic_load(&up_mode);
    if (mode >= 0) return mode == 1;
    if (products < UP_MIN_PRODUCTS) return false;
    double bf = gck_kpath_rate(gck_kpath_auto_class(GCK_KCLASS_BF16), GCK_KCLASS_BF16),
           f32 = gck_kpath_rate(gck_kpath_auto_class(GCK_KCLASS_F32), GCK_KCLASS_F32);
    return f32 > 0 && bf >= GCK_KPATH_MARGIN * f32;
}

/* The high halves of n floats (bf16 values: the low halves are zero) into dst. */
static void to_bf16_part(void *arg, int part, int64_t lo, int64_t hi) {
    (void)part;
    const abs_job *x = arg;
    const float *src = x->xa;
    uint16_t *dst = x->dst;
    for (int64_t i = lo; i < hi; i++) {
        uint32_t bits;
        memcpy(&bits, &src[i], sizeof bits);
        dst[i] = (uint16_t)(bits >> 16);
    }
}

static void to_bf16(uint16_t *dst, const float *src, int64_t n) {
    abs_job x = {.xa = src, .dst = dst};
    gck_parallel_for(gck_parallel_parts(n, 1), n, &x, to_bf16_part);
}

/* The rounded road's copy of floats in one pass, elements [lo, hi): |x| rounded up to bf16
 * (toward +Inf) into dst (bf16), a NaN or Inf as 0; the range of the values as abs_narrow_part
 * takes it into range[part], that of the rounded ones as up_part into range[parts + part].
 * Vectorised: the exponent fields' minima only are carried (a maximum as 511 less a minimum; 511
 * for none), and a part that holds a subnormal float takes both ranges again value by value
 * (its exponent lies below the field's). */
static void abs_up_part(void *arg, int part, int64_t lo, int64_t hi) {
    const abs_job *x = arg;
    const uint32_t *restrict src = (const uint32_t *)(const void *)x->srcf;
    uint16_t *restrict dst = x->dst;
    uint32_t emin = 511, emax_c = 511, umin = 511, umax_c = 511, low = 0, sub = 0;
    for (int64_t i = lo; i < hi; i++) {
        uint32_t b = src[i] & 0x7fffffffu;
        b = b >= 0x7f800000u ? 0 : b;             /* NaN and Inf as 0 */
        uint32_t u = (b + 0xffffu) & 0xffff0000u; /* no carry out: b < 2^31 */
        dst[i] = (uint16_t)(u >> 16);
        uint32_t e = b >> 23, eu = u >> 23, nz = -(uint32_t)(b != 0), unz = -(uint32_t)(u != 0);
        uint32_t e0 = (e & nz) | (511 & ~nz), u0 = (eu & unz) | (511 & ~unz);
        uint32_t e1 = 511 - e, u1 = 511 - eu; /* 511 for a zero */
        low |= b & 0xffffu;
        sub |= (uint32_t)(b - 1 < 0x007fffffu); /* 0 < b < 2^-126 */
        emin = e0 < emin ? e0 : emin;
        emax_c = e1 < emax_c ? e1 : emax_c;
        umin = u0 < umin ? u0 : umin;
        umax_c = u1 < umax_c ? u1 : umax_c;
    }
    abs_range r = {emin == 511 ? INT_MAX : (int)emin - 127,
                   emin == 511 ? INT_MIN : 384 - (int)emax_c, true, low == 0},
              ru = {umin == 511 ? INT_MAX : (int)umin - 127,
                    umin == 511 ? INT_MIN : 384 - (int)umax_c, true, true};
    if (sub) { /* as abs_narrow_part and up_part */
        r.emin = ru.emin = INT_MAX, r.emax = ru.emax = INT_MIN;
        for (int64_t i = lo; i < hi; i++) {
            uint32_t b = src[i] & 0x7fffffffu;
            if (b == 0 || b >= 0x7f800000u) continue;
            int e = b >= 0x00800000u ? (int)(b >> 23) - 127 : 31 - __builtin_clz(b) - 149,
                eu = (int)(((b + 0xffffu) & 0xffff0000u) >> 23) - 127;
            r.emin = e < r.emin ? e : r.emin;
            r.emax = e > r.emax ? e : r.emax;
            ru.emin = eu < ru.emin ? eu : ru.emin;
            ru.emax = eu > ru.emax ? eu : ru.emax;
        }
    }
    x->range[part] = r;
    x->range[x->parts + part] = ru;
}

/* abs_up_part over n floats: *r, *u the two ranges. */
static void abs_up(uint16_t *dst, const float *src, int64_t n, abs_range *r, abs_range *u) {
    int parts = gck_parallel_parts(n, 1);
    abs_range ranges[2 * parts];
    abs_job x = {.srcf = src, .dst = dst, .range = ranges, .parts = parts};
    gck_parallel_for(parts, n, &x, abs_up_part);
    *r = merged(ranges, parts);
    *u = merged(ranges + parts, parts);
}

/* Both directed roundings of a sum in one pass, in upward rounding: the sum rounded up in s, and
 * the negated sum rounded down in n, since RD(a + x) = -RU(-a - x) (and RD(a·x) = -RU(a·(-x))):
 * the same bits as a pass rounding downward, for half the reads. */

/* Rows [lo, hi) of the sums of the rows of an M x N column-major matrix, j ascending: rounded
 * up into s, rounded down and negated into n. */
static void row_sums_part(void *arg, int part, int64_t lo, int64_t hi) {
    (void)part;
    const abs_job *x = arg;
    int old = fegetround();
    fesetround(FE_UPWARD);
    for (int64_t i = lo; i < hi; i++) x->s[i] = x->n_s[i] = 0;
    for (int64_t j = 0; j < x->n; j++)
        for (int64_t i = lo; i < hi; i++) {
            double v = at(x->xa, x->kind, i + j * x->m);
            x->s[i] += v;
            x->n_s[i] -= v;
        }
    fesetround(old);
}

/* s[i] = sum_k |a_ik|·u[k] rounded up and n[i] = -(sum_k |a_ik|·d[k] rounded down), given
 * nu[k] = -d[k]; k ascending, for i in [lo, hi). */
static void dot_part(void *arg, int part, int64_t lo, int64_t hi) {
    (void)part;
    const abs_job *x = arg;
    int old = fegetround();
    fesetround(FE_UPWARD);
    for (int64_t i = lo; i < hi; i++) {
        double r = 0, nr = 0;
        for (int64_t k = 0; k < x->k; k++) {
            double a = at(x->xa, x->kind, i * x->k + k);
            r += a * x->u[k];
            nr += a * x->nu[k];
        }
        x->s[i] = r;
        x->n_s[i] = nr;
    }
    fesetround(old);
}

/* Sums of the rows of an M x N column-major matrix (T^ in doubles, or |op(B)| as the road
 * holds it): rounded up into s, rounded down and negated into ns. */
static void row_sums(const void *t, copy_kind kind, int64_t M, int64_t N, double *s, double *ns) {
    abs_job x = {.xa = t, .kind = kind, .s = s, .n_s = ns, .m = M, .n = N};
    gck_parallel_for(gck_parallel_parts(M, N), M, &x, row_sums_part);
}

/* Bounds of the exact row sums, sum_k |a_ik| (sum_j |b_kj|): rounded up into s, rounded down and
 * negated into ns (u, nu: K values each of room). */
static void exact_row_sums(const void *xa, const void *xb, copy_kind kind, int64_t M, int64_t N,
                           int64_t K, double *u, double *nu, double *s, double *ns) {
    row_sums(xb, kind, K, N, u, nu); /* u[k] = sum_j |b_kj|: |op(B)| is K x N, column-major */
    abs_job x = {.xa = xa, .kind = kind, .u = u, .nu = nu, .s = s, .n_s = ns, .k = K};
    gck_parallel_for(gck_parallel_parts(M, K), M, &x, dot_part);
}

/* Whether every row sum of T^ lies within what its rounding allows around the exact one, from
 * the values the GEMM multiplied (xa, xb, of that kind). */
static bool rows_agree(const void *xa, const void *xb, copy_kind kind, const double *t, int64_t M,
                       int64_t N, int64_t K) {
    double *w = malloc((size_t)(4 * M + 2 * K) * sizeof *w);
    if (!w) return false;
    double *th = w, *ntl = w + M, *eh = w + 2 * M, *nel = w + 3 * M, *u = w + 4 * M,
           *nu = w + 4 * M + K;
    row_sums(t, AS_DOUBLES, M, N, th, ntl);
    exact_row_sums(xa, xb, kind, M, N, K, u, nu, eh, nel);
    double slack = (double)K * (kind != AS_DOUBLES ? 0x1p-23 : 0x1p-52),
           tiny = (double)N * (double)K * 0x1p-1074;
    bool ok = true;
    int old = fegetround();
    for (int64_t i = 0; ok && i < M; i++) {
        fesetround(FE_DOWNWARD);
        double lo = -nel[i] * (1 - slack) - tiny;
        fesetround(FE_UPWARD);
        double hi = eh[i] * (1 + slack) + tiny;
        ok = !(th[i] < lo) && !(-ntl[i] > hi); /* an overflow to Inf passes: it is not used */
    }
    fesetround(old);
    free(w);
    return ok;
}

/* T^ rounded up to a bound of T (see the top of the file), elements [lo, hi). */
static void round_up_part(void *arg, int part, int64_t lo, int64_t hi) {
    (void)part;
    const abs_job *x = arg;
    double *t = x->dst;
    int old = fegetround();
    fesetround(FE_UPWARD);
    double up = 1 + (double)x->k * (x->narrow ? 0x1p-23 : 0x1p-52),
           tiny = x->narrow ? 0 : (double)x->k * 0x1p-1074;
    for (int64_t i = lo; i < hi; i++) t[i] = t[i] * up + tiny;
    fesetround(old);
}

/* The f32 road's guard (see the top of the file), K at most NARROW_MAX_K already: every |a| and
 * |b| a float, every non-zero product at least 2^-126, every sum (with its rounding) below
 * 2^127. */
static bool narrow_fits(abs_range a, abs_range b, int64_t K) {
    if (!a.floats || !b.floats) return false;
    if (a.emax == INT_MIN || b.emax == INT_MIN) return true; /* an operand of zeros */
    int logk = 0;
    while ((INT64_C(1) << logk) < K) logk++;
    return a.emin + b.emin >= -126 && a.emax + b.emax + 2 + logk + 1 <= 127;
}

/* Whether the f32 road's terms may go to the GEMM as bf16: every one a normal bf16 value (none
 * below 2^-126, which VDPBF16PS would read as zero). */
static bool bf16_fits(abs_range a, abs_range b) {
    return a.bf16s && b.bf16s && (a.emax == INT_MIN || a.emin >= -126) &&
           (b.emax == INT_MIN || b.emin >= -126);
}

/* The f32 road's test on floats a and b where the rounded road pays, with the bf16 copies made in
 * the same pass (abs_up): the same roads as one_pair's tests one after the other. Returns whether
 * ha and hb hold the GEMM's inputs (the bf16 road, rounded or not); on the f32 road the float
 * copies are made into xa and xb. */
static bool rounded_road(const float *a, const float *b, void *xa, void *xb, uint16_t *ha,
                         uint16_t *hb, int64_t M, int64_t N, int64_t K, bool *narrow, bool *bf16,
                         bool *up) {
    abs_range ra, ua, rb, ub;
    abs_up(ha, a, M * K, &ra, &ua);
    abs_up(hb, b, N * K, &rb, &ub);
    if (!(*narrow = narrow_fits(ra, rb, K))) return false;
    if ((*bf16 = bf16_fits(ra, rb))) return true; /* the values are bf16s: ha, hb hold them */
    if ((*up = *bf16 = narrow_fits(ua, ub, K) && bf16_fits(ua, ub))) return true;
    abs_copy(xa, a, true, M * K, true);
    abs_copy(xb, b, true, N * K, true);
    return false;
}

/* T^ of one pair of members into t, checked and rounded up; *narrow: on the f32 road, *bf16:
 * with bf16 inputs (their copies after the floats' in xa and xb), *up: those rounded up from
 * floats (the rounded road). The float copy of op(B) is made only when op(A)'s values are all
 * floats. */
static bool one_pair(const gck_absprod *p, const void *a, const void *b, void *xa, void *xb,
                     double *t, bool *narrow, bool *bf16, bool *up) {
    bool f = p->src_f;
    int64_t M = p->m, N = p->n, K = p->k;
    *narrow = *bf16 = *up = false;
    /* bf16 copies in the second half of each buffer (doubles' room, floats used) */
    uint16_t *ha = (uint16_t *)((float *)xa + M * K), *hb = (uint16_t *)((float *)xb + N * K);
    bool made = false; /* ha and hb made already */
    if (p->narrow && K <= NARROW_MAX_K && f && up_pays(M * N * K))
        made = rounded_road(a, b, xa, xb, ha, hb, M, N, K, narrow, bf16, up);
    else if (p->narrow && K <= NARROW_MAX_K) {
        abs_range ra = abs_copy(xa, a, f, M * K, true);
        if (ra.floats) {
            abs_range rb = abs_copy(xb, b, f, N * K, true);
            *narrow = narrow_fits(ra, rb, K);
            *bf16 = *narrow && bf16_fits(ra, rb);
            if (*narrow && !*bf16 && up_pays(M * N * K)) { /* the rounded road */
                abs_range ua = round_up(xa, M * K), ub = round_up(xb, N * K);
                *up = *bf16 = narrow_fits(ua, ub, K) && bf16_fits(ua, ub);
                if (!*up) { /* the values again, for the f32 road */
                    abs_copy(xa, a, f, M * K, true);
                    abs_copy(xb, b, f, N * K, true);
                }
            }
        }
    }
    if (!*narrow) {
        abs_copy(xa, a, f, M * K, false);
        abs_copy(xb, b, f, N * K, false);
    }
    gck_case g; /* |op(A)| stored along k: transposed, column-major K x M; T^ in f64 */
    gck_case_init(&g, M, N, K);
    g.transa = GCK_OP_T;
    g.lda = K;
    if (*narrow) g.type_a = g.type_b = g.compute = g.scale_type = GCK_F32;
    const void *ga = xa, *gb = xb;
    copy_kind kind = *narrow ? AS_FLOATS : AS_DOUBLES;
    if (*bf16) {
        if (!made) {
            to_bf16(ha, xa, M * K);
            to_bf16(hb, xb, N * K);
        }
        ga = ha, gb = hb, kind = AS_BF16;
        g.type_a = g.type_b = GCK_BF16;
    }
    char msg[256];
    if (gck_gemm(&g, ga, gb, t, t, NULL, msg, sizeof msg) != GCK_GEMM_OK) return false;
    int64_t bad = atomic_load(&planted);
    if (bad >= 0 && bad < M * N) t[bad] *= atomic_load(&planted_factor);
    if (!rows_agree(ga, gb, kind, t, M, N, K)) {
        fprintf(stderr,
                "gemmcheck: warning: the %s GEMM of |A|·|B| for the bound contradicts "
                "its row sums; the checker sums every element itself\n",
                *up       ? "bf16 (rounded up) x bf16 -> f32"
                : *bf16   ? "bf16 x bf16 -> f32"
                : *narrow ? "f32"
                          : "f64");
        return false;
    }
    abs_job x = {.dst = t, .k = K, .narrow = *narrow};
    gck_parallel_for(gck_parallel_parts(M * N, 1), M * N, &x, round_up_part);
    return true;
}

gck_absprod *gck_absprod_new(const gck_case *c, const void *a, const void *b, bool floats) {
    if (!a || !b || !gck_case_reads_ab(c)) return NULL;
    int64_t M = c->m, N = c->n, K = c->k, pairs = c->stride_a || c->stride_b ? c->batch : 1;
    double bytes = 8.0 * ((double)pairs * (double)M * (double)N + (double)(M + N) * (double)K);
    if (pairs * M * N * K < ABS_MIN_PRODUCTS || bytes > ABS_MAX_BYTES || K > (INT64_C(1) << 40))
        return NULL;
    gck_absprod *p = calloc(1, sizeof *p);
    double *xa = gck_big_alloc((size_t)(M * K) * sizeof *xa),
           *xb = gck_big_alloc((size_t)(N * K) * sizeof *xb);
    bool ok = p && xa && xb && (p->t = gck_big_alloc((size_t)(pairs * M * N) * sizeof *p->t));
    if (ok) {
        /* f64 inputs are seldom all floats: not tried */
        bool f32 = c->type_a != GCK_F64 && c->type_b != GCK_F64;
        *p = (gck_absprod){M,   N,     K,    pairs, c->stride_a != 0, c->stride_b != 0, f32,
                           f32, false, p->t, floats};
        size_t es = floats ? sizeof(float) : sizeof(double);
        for (int64_t q = 0; ok && q < pairs; q++) {
            bool narrow, bf16, up;
            ok = one_pair(p, (const char *)a + (size_t)((p->a_batched ? q : 0) * M * K) * es,
                          (const char *)b + (size_t)((p->b_batched ? q : 0) * N * K) * es, xa, xb,
                          p->t + q * M * N, &narrow, &bf16, &up);
            p->narrow &= narrow;
            p->bf16 &= bf16;
            p->up |= up;
        }
    }
    gck_stash_put(xa, (size_t)(M * K) * sizeof *xa); /* for the exact oracle's slices */
    gck_stash_put(xb, (size_t)(N * K) * sizeof *xb);
    if (!ok) {
        gck_absprod_free(p);
        return NULL;
    }
    atomic_fetch_add(&built, 1);
    if (p->narrow) atomic_fetch_add(&built_narrow, 1);
    if (p->bf16) atomic_fetch_add(&built_bf16, 1);
    if (p->up) atomic_fetch_add(&built_up, 1);
    return p;
}
