/* The fast exact oracle: the same result as the MPFR oracle (SPEC §2), computed with integers.
 *
 * A and B are decoded once per GEMM into sign, integer significand and exponent (x = m·2^e,
 * m < 2^p), laid out densely along k. Each product m_a·m_b is an exact integer (64 bits when
 * both significands have at most 32 bits: f16, bf16, f32; 106 bits with f64) and is added at
 * bit position e_a + e_b into a fixed-point superaccumulator: 32-bit digits held in int64 limbs,
 * so that carries are deferred (K < 2^31 terms) and resolved once per element. The sum S is
 * then multiplied by alpha's significand (exact), beta·c and, for the checker, -D̂ are added,
 * and the integer is rounded once to D's format: round to nearest even on the output grid
 * (2^(max(E, emin) - p + 1) for the leading bit 2^E), gradual underflow, overflow to ±Inf.
 * No floating-point operation touches the value on the way. Special values and the sign of
 * exact zeros come from the pass shared with the MPFR oracle. */
#include "oracle_exact.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/parallel.h"
#include "oracle_common.h"

typedef struct dec {
    uint64_t m;  /* significand (0 for zero) */
    int32_t e;   /* exponent of its last bit */
    int32_t neg; /* 1 for negative */
} dec;

struct gck_exact_plan {
    const gck_case *c;
    const void *A, *B, *C;
    int64_t members_a, members_b;       /* stored batch members (1 when broadcast) */
    dec *a, *b;                         /* op(A)[member][i][k], op(B)[member][j][k] */
    uint8_t *row_special, *col_special; /* a NaN/Inf in row i of op(A) / column j of op(B) */
    bool narrow;                        /* every significand has at most 32 bits */
    bool no_products;     /* A or B holds no non-zero finite value: every product is 0 */
    int64_t *afix, *bfix; /* fixed point: a = afix·2^emin_a (NULL: not applicable) */
    int32_t base_s;       /* exponent of bit 0 of the accumulator of S */
    int nlimbs_s;
    int32_t base_f; /* exponent of bit 0 of the final frame */
    int nlimbs_f;
    dec alpha, beta;
};

static dec decode(double x, int p) {
    dec d = {0, 0, signbit(x) ? 1 : 0};
    if (x == 0.0 || !isfinite(x)) return d;
    int e;
    double f = frexp(fabs(x), &e); /* x = f·2^e, f in [0.5, 1) */
    d.m = (uint64_t)ldexp(f, p);   /* exact: x has at most p significant bits */
    d.e = e - p;
    while (d.m && !(d.m & 1)) { /* shortest form keeps products small */
        d.m >>= 1;
        d.e++;
    }
    return d;
}

static int bits_of(uint64_t m) { return m ? 64 - __builtin_clzll(m) : 0; }

void gck_exact_plan_free(gck_exact_plan *p) {
    if (!p) return;
    free(p->a);
    free(p->b);
    free(p->afix);
    free(p->bfix);
    free(p->row_special);
    free(p->col_special);
    free(p);
}

gck_exact_plan *gck_exact_plan_new(const gck_case *c, const void *A, const void *B, const void *C) {
    gck_exact_plan *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->c = c;
    p->A = A;
    p->B = B;
    p->C = C;
    bool rab = gck_case_reads_ab(c);
    p->members_a = c->stride_a == 0 ? 1 : c->batch;
    p->members_b = c->stride_b == 0 ? 1 : c->batch;
    int64_t na = rab ? p->members_a * c->m * c->k : 0, nb = rab ? p->members_b * c->n * c->k : 0;
    p->a = malloc((size_t)(na ? na : 1) * sizeof *p->a);
    p->b = malloc((size_t)(nb ? nb : 1) * sizeof *p->b);
    p->row_special = calloc((size_t)(p->members_a * c->m + 1), 1);
    p->col_special = calloc((size_t)(p->members_b * c->n + 1), 1);
    if (!p->a || !p->b || !p->row_special || !p->col_special) {
        gck_exact_plan_free(p);
        return NULL;
    }
    int pa = gck_format_get(c->type_a)->precision, pb = gck_format_get(c->type_b)->precision;
    int32_t emin_a = INT32_MAX, emax_a = INT32_MIN, emin_b = INT32_MAX, emax_b = INT32_MIN;
    int mbits = 0;
    int64_t ars, acs, brs, bcs;
    gck_case_op_strides(c, GCK_A, &ars, &acs);
    gck_case_op_strides(c, GCK_B, &brs, &bcs);
    for (int64_t b = 0; rab && b < p->members_a; b++) {
        const void *Ab = gck_oracle_member(A, c->type_a, c->stride_a, b);
        for (int64_t i = 0; i < c->m; i++)
            for (int64_t k = 0; k < c->k; k++) {
                double x = gck_load(Ab, c->type_a, i * ars + k * acs);
                dec d = decode(x, pa);
                if (!isfinite(x)) p->row_special[b * c->m + i] = 1;
                if (d.m) {
                    if (d.e < emin_a) emin_a = d.e;
                    if (d.e + bits_of(d.m) > emax_a) emax_a = d.e + bits_of(d.m);
                    if (bits_of(d.m) > mbits) mbits = bits_of(d.m);
                }
                p->a[(b * c->m + i) * c->k + k] = d;
            }
    }
    for (int64_t b = 0; rab && b < p->members_b; b++) {
        const void *Bb = gck_oracle_member(B, c->type_b, c->stride_b, b);
        for (int64_t j = 0; j < c->n; j++)
            for (int64_t k = 0; k < c->k; k++) {
                double x = gck_load(Bb, c->type_b, k * brs + j * bcs);
                dec d = decode(x, pb);
                if (!isfinite(x)) p->col_special[b * c->n + j] = 1;
                if (d.m) {
                    if (d.e < emin_b) emin_b = d.e;
                    if (d.e + bits_of(d.m) > emax_b) emax_b = d.e + bits_of(d.m);
                    if (bits_of(d.m) > mbits) mbits = bits_of(d.m);
                }
                p->b[(b * c->n + j) * c->k + k] = d;
            }
    }
    p->narrow = mbits <= 32;
    bool any = emin_a != INT32_MAX && emin_b != INT32_MAX;
    if (!any) emin_a = emin_b = emax_a = emax_b = 0;
    p->no_products = !any;
    /* zeros get the frame's base exponent, so that adding their 0 stays inside the frame */
    p->base_s = emin_a + emin_b;
    int growth = 2 + bits_of((uint64_t)c->k + 1);
    int32_t top_s = emax_a + emax_b + growth;
    p->nlimbs_s = (top_s - p->base_s) / 32 + 6; /* at least the 5 a 128-bit sum needs */
    for (int64_t t = 0; t < na; t++)
        if (!p->a[t].m) p->a[t].e = emin_a;
    for (int64_t t = 0; t < nb; t++)
        if (!p->b[t].m) p->b[t].e = emin_b;
    /* Fixed point: when every value of A is an integer multiple of 2^emin_a below 2^62 in
     * units of it (and the same for B), and the products plus K of headroom fit 126 bits, the
     * whole sum is one signed 128-bit integer: a multiply and an add per product. (f16 always,
     * bf16 and f32 with exponents that do not spread too far.) */
    int wa = emax_a - emin_a, wb = emax_b - emin_b;
    if (any && wa <= 62 && wb <= 62 && wa + wb + growth <= 125 && na > 0) {
        p->afix = malloc((size_t)na * sizeof *p->afix);
        p->bfix = malloc((size_t)nb * sizeof *p->bfix);
        if (p->afix && p->bfix) {
            for (int64_t t = 0; t < na; t++) {
                int64_t v = (int64_t)(p->a[t].m << (p->a[t].e - emin_a));
                p->afix[t] = p->a[t].neg ? -v : v;
            }
            for (int64_t t = 0; t < nb; t++) {
                int64_t v = (int64_t)(p->b[t].m << (p->b[t].e - emin_b));
                p->bfix[t] = p->b[t].neg ? -v : v;
            }
        } else {
            free(p->afix);
            free(p->bfix);
            p->afix = p->bfix = NULL;
        }
    }
    /* the final frame: alpha·S, beta·c, -D̂ and the output grid all fit */
    const gck_format_info *fc = gck_format_get(c->type_c);
    const gck_format_info *fo = gck_format_get(gck_case_type(c, GCK_D));
    p->alpha = decode(c->alpha, 53);
    p->beta = decode(c->beta, 53);
    int32_t lo = p->base_s + p->alpha.e;
    int32_t hi = top_s + p->alpha.e + bits_of(p->alpha.m);
    int32_t c_lo = fc->emin - fc->precision + 1 + p->beta.e, c_hi = fc->emax + 1 + p->beta.e + 54;
    int32_t o_lo = fo->emin - fo->precision + 1, o_hi = fo->emax + 2;
    if (c_lo < lo) lo = c_lo;
    if (o_lo < lo) lo = o_lo;
    if (c_hi > hi) hi = c_hi;
    if (o_hi > hi) hi = o_hi;
    p->base_f = lo - 64; /* room below for the rounding bits */
    p->nlimbs_f = (hi + 64 - p->base_f) / 32 + 6;
    /* alpha·S writes up to four limbs past each limb of S (negative S: all of them) */
    int need = (int)(((int64_t)p->base_s + p->alpha.e - p->base_f) >> 5) + p->nlimbs_s + 4;
    if (need > p->nlimbs_f) p->nlimbs_f = need;
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

static inline int bit_at(const uint32_t *mag, int n, int b) {
    if (b < 0 || b >= n * 32) return 0;
    return (mag[b >> 5] >> (b & 31)) & 1;
}

/* Bits [lo, lo+count) of mag (count <= 64; bits below 0 are 0). */
static uint64_t bits(const uint32_t *mag, int n, int lo, int count) {
    uint64_t v = 0;
    for (int k = count - 1; k >= 0; k--) v = (v << 1) | (uint64_t)bit_at(mag, n, lo + k);
    return v;
}

static bool any_below(const uint32_t *mag, int n, int b) {
    if (b <= 0) return false;
    int full = b >> 5;
    for (int i = 0; i < full && i < n; i++)
        if (mag[i]) return true;
    if (full < n && (b & 31) && (mag[full] & ((1u << (b & 31)) - 1u))) return true;
    return false;
}

/* Round the value (limbs, bit 0 at 2^base) once to `fmt`. *zero says the value was exactly 0. */
static double round_to(const int64_t *l, int n, int32_t base, gck_format fmt, uint32_t *mag,
                       bool *zero) {
    const gck_format_info *f = gck_format_get(fmt);
    int neg = magnitude(l, n, mag);
    int t = top_bit(mag, n);
    *zero = t < 0;
    if (t < 0) return 0.0;
    int32_t E = base + t;                                       /* 2^E <= |x| < 2^(E+1) */
    int32_t q = (E > f->emin ? E : f->emin) - f->precision + 1; /* the output grid */
    int lo = q - base;                                          /* bit index of 2^q */
    uint64_t N = lo > t ? 0 : bits(mag, n, lo, t - lo + 1);
    int round = bit_at(mag, n, lo - 1);
    bool sticky = any_below(mag, n, lo - 1);
    if (round && (sticky || (N & 1))) N++;
    double v = ldexp((double)N, q); /* exact: N <= 2^p, q on the grid of the format */
    if (v > f->max) v = INFINITY;
    return neg ? -v : v;
}

/* |value| rounded up to a double. */
static double magnitude_up(const int64_t *l, int n, int32_t base, uint32_t *mag) {
    magnitude(l, n, mag);
    int t = top_bit(mag, n);
    if (t < 0) return 0.0;
    int lo = t - 52;
    if (base + lo < -1074) lo = -1074 - base; /* double's subnormals keep fewer bits */
    uint64_t N = lo > t ? 0 : bits(mag, n, lo, t - lo + 1);
    if (any_below(mag, n, lo)) N++;
    return ldexp((double)N, base + lo); /* exact: N <= 2^53 on double's grid */
}

/* ---- per element ------------------------------------------------------------------------- */

struct gck_exact_ws {
    int64_t *s, *s4, *f;
    uint32_t *mag;
    int ns, nf;
};

gck_exact_ws *gck_exact_ws_new(const gck_exact_plan *p) {
    gck_exact_ws *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->ns = p->nlimbs_s;
    w->nf = p->nlimbs_f;
    w->s = malloc((size_t)w->ns * sizeof *w->s);
    w->s4 = malloc((size_t)(4 * w->ns) * sizeof *w->s4);
    w->f = malloc((size_t)w->nf * sizeof *w->f);
    w->mag = malloc((size_t)(w->nf > w->ns ? w->nf : w->ns) * sizeof *w->mag);
    if (!w->s || !w->s4 || !w->f || !w->mag) {
        gck_exact_ws_free(w);
        return NULL;
    }
    return w;
}

void gck_exact_ws_free(gck_exact_ws *w) {
    if (!w) return;
    free(w->s);
    free(w->s4);
    free(w->f);
    free(w->mag);
    free(w);
}

/* S = sum_k a_ik b_kj into w->s (limbs, bit 0 at 2^base_s). Four accumulators, used in turn,
 * keep consecutive products from waiting on each other's additions. */
static void accumulate(const gck_exact_plan *p, gck_exact_ws *w, int64_t ma, int64_t mb, int64_t i,
                       int64_t j) {
    const gck_case *c = p->c;
    int64_t *l = w->s;
    int n = w->ns;
    int64_t K = c->k;
    if (p->no_products) {
        memset(l, 0, (size_t)n * sizeof *l);
        return;
    }
    if (p->afix) {
        const int64_t *a = p->afix + (ma * c->m + i) * K, *b = p->bfix + (mb * c->n + j) * K;
        __int128 s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        int64_t k = 0;
        for (; k + 4 <= K; k += 4) {
            s0 += (__int128)a[k] * b[k];
            s1 += (__int128)a[k + 1] * b[k + 1];
            s2 += (__int128)a[k + 2] * b[k + 2];
            s3 += (__int128)a[k + 3] * b[k + 3];
        }
        for (; k < K; k++) s0 += (__int128)a[k] * b[k];
        __int128 sum = (s0 + s1) + (s2 + s3);
        memset(l, 0, (size_t)n * sizeof *l);
        unsigned __int128 u = (unsigned __int128)sum;
        for (int q = 0; q < 4; q++) l[q] = (int64_t)(uint32_t)(u >> (32 * q));
        if (sum < 0) l[4] = -1; /* two's complement: the limbs above are all ones */
        normalize(l, n);
        return;
    }
    const dec *ar = p->a + (ma * c->m + i) * K, *bc = p->b + (mb * c->n + j) * K;
    int64_t *acc[4] = {w->s4, w->s4 + n, w->s4 + 2 * n, w->s4 + 3 * n};
    memset(w->s4, 0, (size_t)(4 * n) * sizeof *w->s4);
    int32_t base = p->base_s;
    if (p->narrow) {
        for (int64_t k = 0; k < K; k++)
            add64(acc[k & 3], ar[k].e + bc[k].e - base, ar[k].m * bc[k].m, ar[k].neg ^ bc[k].neg);
    } else {
        for (int64_t k = 0; k < K; k++)
            add128(acc[k & 3], ar[k].e + bc[k].e - base, (unsigned __int128)ar[k].m * bc[k].m,
                   ar[k].neg ^ bc[k].neg);
    }
    for (int q = 0; q < n; q++) l[q] = acc[0][q] + acc[1][q] + acc[2][q] + acc[3][q];
    normalize(l, n);
}

/* The final frame: alpha·S + beta·c (- got). */
static void finish(const gck_exact_plan *p, gck_exact_ws *w, bool with_s, double cv,
                   const double *got) {
    int64_t *f = w->f;
    memset(f, 0, (size_t)w->nf * sizeof *f);
    if (with_s && p->alpha.m) {
        /* alpha·S: each 32-bit digit times alpha's significand, shifted into place */
        int64_t off = (int64_t)p->base_s + p->alpha.e - p->base_f;
        int sh = (int)(off & 31);
        int64_t *dst = f + (off >> 5);
        unsigned __int128 am = (unsigned __int128)p->alpha.m << sh;
        int sign = p->alpha.neg ? -1 : 1;
        for (int i = 0; i < w->ns; i++) {
            if (!w->s[i]) continue;
            __int128 prod = (__int128)w->s[i] * (__int128)am * sign;
            unsigned __int128 u = (unsigned __int128)prod;
            dst[i] += (int64_t)(uint32_t)u;
            dst[i + 1] += (int64_t)(uint32_t)(u >> 32);
            dst[i + 2] += (int64_t)(uint32_t)(u >> 64);
            dst[i + 3] += (int64_t)(prod >> 96); /* sign-carrying top */
        }
    }
    if (cv != 0.0) {
        dec d = decode(cv, 53);
        add128(f, (int64_t)d.e + p->beta.e - p->base_f, (unsigned __int128)d.m * p->beta.m,
               d.neg ^ p->beta.neg);
    }
    if (got) {
        dec g = decode(*got, 53);
        if (g.m) add64(f, (int64_t)g.e - p->base_f, g.m, !g.neg);
    }
    normalize(f, w->nf);
}

void gck_exact_eval(const gck_exact_plan *p, gck_exact_ws *w, int64_t bi, int64_t i, int64_t j,
                    bool skip_zero, const double *got, gck_oracle_eval *out) {
    const gck_case *c = p->c;
    gck_format td = gck_case_type(c, GCK_D);
    bool rab = gck_case_reads_ab(c), rc = gck_case_reads_c(c);
    int64_t ma = c->stride_a == 0 ? 0 : bi, mb = c->stride_b == 0 ? 0 : bi;
    double cv = 0.0;
    if (rc) {
        int64_t crs, ccs;
        gck_case_op_strides(c, GCK_C, &crs, &ccs);
        cv = gck_load(gck_oracle_member(p->C, c->type_c, c->stride_c, bi), c->type_c,
                      i * crs + j * ccs);
    }
    out->special_input = false;
    out->abs_error = NAN;
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
    if (rab) accumulate(p, w, ma, mb, i, j);
    finish(p, w, rab, cv, NULL);
    bool zero;
    double v = round_to(w->f, w->nf, p->base_f, td, w->mag, &zero);
    if (zero) {
        gck_oracle_pass1(c, p->A, p->B, p->C, bi, i, j, skip_zero, &pre);
        v = gck_oracle_exact_zero(c, &pre);
    }
    out->value = v;
    if (got && isfinite(*got)) {
        finish(p, w, rab, cv, got);
        out->abs_error = magnitude_up(w->f, w->nf, p->base_f, w->mag);
    }
}

/* ---- the whole GEMM ---------------------------------------------------------------------- */

typedef struct ex_job {
    const gck_exact_plan *p;
    void *D;
    int64_t first, last;
    bool ok;
} ex_job;

static void *run_ex(void *arg) {
    ex_job *job = arg;
    const gck_case *c = job->p->c;
    gck_exact_ws *w = gck_exact_ws_new(job->p);
    job->ok = w != NULL;
    if (!w) return NULL;
    int64_t drs, dcs;
    gck_case_op_strides(c, GCK_D, &drs, &dcs);
    gck_format td = gck_case_type(c, GCK_D);
    int64_t sd = gck_case_stride(c, GCK_D);
    for (int64_t t = job->first; t < job->last; t++) {
        int64_t i = t % c->m, j = (t / c->m) % c->n, bi = t / (c->m * c->n);
        gck_oracle_eval ev;
        gck_exact_eval(job->p, w, bi, i, j, false, NULL, &ev);
        gck_store(job->D, td, bi * sd + i * drs + j * dcs, ev.value);
    }
    gck_exact_ws_free(w);
    return NULL;
}

gck_status gck_oracle_exact(const gck_case *c, const void *A, const void *B, const void *C, void *D,
                            int threads, char *msg, size_t msg_len) {
    int64_t total;
    gck_status s = gck_oracle_check_args(c, A, B, C, D, &total, msg, msg_len);
    if (s != GCK_OK || total == 0) return s;
    gck_exact_plan *p = gck_exact_plan_new(c, A, B, C);
    if (!p) {
        snprintf(msg, msg_len, "out of memory decoding the operands");
        return GCK_ENOMEM;
    }
    threads = gck_thread_count(threads, total);
    ex_job *jobs = calloc((size_t)threads, sizeof *jobs);
    bool ok = jobs != NULL;
    for (int t = 0; ok && t < threads; t++)
        jobs[t] = (ex_job){p, D, total * t / threads, total * (t + 1) / threads, false};
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
