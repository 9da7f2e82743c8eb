/* Reference GEMMs: the arithmetic model of refgemm.h, one rounding per named operation.
 *
 * f64 and f32 operations use the machine's IEEE arithmetic (this file is built with
 * -ffp-contract=off, so a*b+c is never fused behind our back). For f16, bf16 and tf32 every
 * operation is computed exactly in double (or as an exact double-double for the fused case)
 * and rounded once with gck_round_to/gck_round2_to: products of inputs of at most 24 bits are
 * exact in double, and TwoSum gives the exact sum of two doubles. */
#include "gemmcheck/refgemm.h"

#include <math.h>
#include <stdio.h>

#include "format_internal.h"
#include "fpenv.h"

gck_ref_model gck_ref_model_default(gck_format compute) {
    return (gck_ref_model){
        .compute = compute,
        .fma = false,
        .round_inputs = true,
        .scale_compute = compute == GCK_F64 ? GCK_F64 : GCK_F32,
    };
}

gck_model gck_ref_model_declared(const gck_ref_model *m) {
    static const unsigned alpha_bits[] = {GCK_ORDER_ALPHA_ON_SUM, GCK_ORDER_ALPHA_ON_PRODUCT,
                                          GCK_ORDER_ALPHA_ON_OPERAND};
    static const unsigned beta_bits[] = {GCK_ORDER_BETA_LAST, GCK_ORDER_BETA_FIRST,
                                         GCK_ORDER_BETA_OVER_ALPHA};
    unsigned orders = ((unsigned)m->alpha_at < 3 ? alpha_bits[m->alpha_at] : 0) |
                      ((unsigned)m->beta_at < 3 ? beta_bits[m->beta_at] : 0);
    return (gck_model){.compute = m->compute,
                       .inputs_rounded = m->round_inputs,
                       .input_format = m->compute,
                       .acc = GCK_ACC_SCALAR,
                       .block = 0,
                       .epilogue = m->scale_compute,
                       .ftz = false,
                       .daz = false,
                       .orders = orders};
}

static bool default_order(const gck_ref_model *m);

static void model_describe(const gck_ref_model *m, char *buf, size_t len) {
    static const char *const alpha_at[] = {"sum", "product", "b"};
    static const char *const beta_at[] = {"last", "first", "over-alpha"};
    static const char *const sums[] = {"sequential", "blocked", "pairwise", "split"};
    static const char *const skips[] = {"none", "zero-a", "zero-b"};
    int n = snprintf(buf, len, "compute=%s fma=%s round_inputs=%s scale=%s",
                     gck_format_get(m->compute)->name, m->fma ? "yes" : "no",
                     m->round_inputs ? "yes" : "no", gck_format_get(m->scale_compute)->name);
    if (n >= 0 && (size_t)n < len && (!default_order(m) || m->skip != GCK_REF_SKIP_NONE) &&
        (unsigned)m->alpha_at < 3 && (unsigned)m->beta_at < 3 && (unsigned)m->sum < 4 &&
        (unsigned)m->skip < 3)
        snprintf(buf + n, len - (size_t)n, " alpha=%s beta=%s sum=%s/%d skip=%s",
                 alpha_at[m->alpha_at], beta_at[m->beta_at], sums[m->sum], m->group,
                 skips[m->skip]);
}

/* round_c(a * b); a and b are values of at most 24 bits unless fmt is f64. */
static double mul_c(double a, double b, gck_format fmt) {
    if (fmt == GCK_F64) return a * b;
    return gck_fmt_round_to(a * b, fmt); /* the double product is exact */
}

/* Exact x + y as hi + lo (Knuth's TwoSum), then one rounding. */
static double add_exact_round(double x, double y, gck_format fmt) {
    double s = x + y;
    if (!isfinite(s)) return gck_fmt_round_to(s, fmt);
    double yy = s - x;
    double e = (x - (s - yy)) + (y - yy);
    return gck_fmt_round2_to(s, e, fmt);
}

static double add_c(double x, double y, gck_format fmt) {
    if (fmt == GCK_F64) return x + y;
    if (fmt == GCK_F32) return (double)((float)x + (float)y);
    return add_exact_round(x, y, fmt);
}

/* round_c(a * b + acc) with one rounding. */
static double fma_c(double a, double b, double acc, gck_format fmt) {
    if (fmt == GCK_F64) return fma(a, b, acc);
    if (fmt == GCK_F32) return (double)fmaf((float)a, (float)b, (float)acc);
    return add_exact_round(a * b, acc, fmt); /* a*b exact in double */
}

/* Epilogue arithmetic in the scale-compute format (f32 or f64): operands are first rounded
 * to it, then multiplied / added with one rounding each. */
static double scale_mul(double x, double y, gck_format s) {
    if (s == GCK_F64) return x * y;
    return (double)((float)x * (float)y);
}

static double scale_add(double x, double y, gck_format s) {
    if (s == GCK_F64) return x + y;
    return (double)((float)x + (float)y);
}

static double div_c(double x, double y, gck_format fmt) {
    if (fmt == GCK_F64) return x / y;
    if (fmt == GCK_F32) return (double)((float)x / (float)y);
    return gck_fmt_round_to(x / y, fmt); /* 53 >= 2p + 2: rounding twice is rounding once */
}

static const void *member(const void *base, gck_format f, int64_t stride, int64_t bi) {
    return (const char *)base + (size_t)(bi * stride) * (size_t)gck_format_get(f)->storage_bytes;
}

static bool default_order(const gck_ref_model *m) {
    return m->alpha_at == GCK_REF_ALPHA_ON_SUM && m->beta_at == GCK_REF_BETA_LAST &&
           m->sum == GCK_REF_SUM_SEQUENTIAL;
}

/* One element's operands and model. */
typedef struct elem {
    const gck_case *c;
    const gck_ref_model *m;
    const void *Ab, *Bb;
    int64_t ars, acs, brs, bcs, i, j;
} elem;

/* The factors x, y of term k (the term is x*y, rounded or fused as the model says); false
 * when the model skips the term. ta and tb: the storage formats of A and B, constants where
 * sum_range instantiates it. */
static inline __attribute__((always_inline)) bool factors(const elem *e, const gck_ref_model *m,
                                                          int64_t k, double *x, double *y,
                                                          gck_format ta, gck_format tb) {
    double a = gck_fmt_load_as(e->Ab, ta, e->i * e->ars + k * e->acs);
    double b = gck_fmt_load_as(e->Bb, tb, k * e->brs + e->j * e->bcs);
    if ((m->skip == GCK_REF_SKIP_ZERO_A && a == 0) || (m->skip == GCK_REF_SKIP_ZERO_B && b == 0))
        return false;
    if (m->round_inputs) {
        a = gck_fmt_round_to(a, m->compute);
        b = gck_fmt_round_to(b, m->compute);
    }
    switch (m->alpha_at) {
    case GCK_REF_ALPHA_ON_PRODUCT:
        *x = e->c->alpha;
        *y = mul_c(a, b, m->compute);
        break;
    case GCK_REF_ALPHA_ON_B:
        *x = mul_c(e->c->alpha, b, m->compute);
        *y = a;
        break;
    default: *x = a; *y = b;
    }
    return true;
}

/* acc plus the terms k0 <= k < k1, one at a time, A and B stored as ta and tb. The element and
 * the model are copied first: the loop then keeps their fields in registers. */
static inline __attribute__((always_inline)) double
sum_range_as(const elem *ep, int64_t k0, int64_t k1, double acc, gck_format ta, gck_format tb) {
    const elem e = *ep;
    const gck_ref_model m = *ep->m;
    gck_format cf = m.compute;
    double x, y;
    if (cf == GCK_F32) {
        /* add_c and fma_c round the accumulator to f32 before they use it and return an f32
         * value, so it is held as a float: the same operations, one conversion fewer on the
         * chain from one term to the next. (float)mul_c(x, y, f32) is (float)(x * y). */
        float f = (float)acc;
        bool any = false;
        for (int64_t k = k0; k < k1; k++) {
            if (!factors(&e, &m, k, &x, &y, ta, tb)) continue;
            f = m.fma ? fmaf((float)x, (float)y, f) : (float)(x * y) + f;
            any = true;
        }
        return any ? (double)f : acc; /* no term: acc as it came */
    }
    if (cf == GCK_F64) { /* fma_c, add_c and mul_c are these operations in f64 */
        for (int64_t k = k0; k < k1; k++) {
            if (!factors(&e, &m, k, &x, &y, ta, tb)) continue;
            acc = m.fma ? fma(x, y, acc) : x * y + acc;
        }
        return acc;
    }
    for (int64_t k = k0; k < k1; k++) {
        if (!factors(&e, &m, k, &x, &y, ta, tb)) continue;
        acc = m.fma ? fma_c(x, y, acc, cf) : add_c(mul_c(x, y, cf), acc, cf);
    }
    return acc;
}

/* sum_range_as with B's storage format a constant (TF32 is stored as f32) */
static inline __attribute__((always_inline)) double
sum_range_a(const elem *e, int64_t k0, int64_t k1, double acc, gck_format ta) {
    switch (e->c->type_b) {
    case GCK_F16: return sum_range_as(e, k0, k1, acc, ta, GCK_F16);
    case GCK_BF16: return sum_range_as(e, k0, k1, acc, ta, GCK_BF16);
    case GCK_F64: return sum_range_as(e, k0, k1, acc, ta, GCK_F64);
    default: return sum_range_as(e, k0, k1, acc, ta, GCK_F32);
    }
}

/* acc plus the terms k0 <= k < k1, one at a time: one loop per pair of storage formats, whose
 * loads are then a few instructions each, not a call and a switch per factor. */
static double sum_range(const elem *e, int64_t k0, int64_t k1, double acc) {
    switch (e->c->type_a) {
    case GCK_F16: return sum_range_a(e, k0, k1, acc, GCK_F16);
    case GCK_BF16: return sum_range_a(e, k0, k1, acc, GCK_BF16);
    case GCK_F64: return sum_range_a(e, k0, k1, acc, GCK_F64);
    default: return sum_range_a(e, k0, k1, acc, GCK_F32);
    }
}

/* A balanced tree over the terms k0 <= k < k1 with leaves of at most `leaf` terms. */
static double sum_tree(const elem *e, int64_t k0, int64_t k1, int64_t leaf) {
    if (k1 - k0 <= leaf) return sum_range(e, k0, k1, 0.0);
    int64_t mid = k0 + (k1 - k0) / 2;
    return add_c(sum_tree(e, k0, mid, leaf), sum_tree(e, mid, k1, leaf), e->m->compute);
}

/* alpha*op(A)op(B) (+ beta*c where the order puts it into the accumulator) for one element,
 * before the epilogue of GCK_REF_BETA_LAST. */
static double product_term(const elem *e, double cv, bool rc) {
    const gck_case *c = e->c;
    const gck_ref_model *m = e->m;
    gck_format cf = m->compute, sf = m->scale_compute;
    int64_t K = c->k, group = m->group > 0 ? m->group : 1;
    bool have = m->beta_at != GCK_REF_BETA_LAST; /* the accumulator holds its start value */
    double acc = 0.0;
    if (m->beta_at == GCK_REF_BETA_FIRST && rc) acc = mul_c(c->beta, cv, cf);
    if (m->beta_at == GCK_REF_BETA_OVER_ALPHA && rc)
        acc = mul_c(div_c(c->beta, c->alpha, cf), cv, cf);
    /* alpha applied to each group's sum (it is in the terms, or applied once at the end,
     * otherwise) */
    bool scale_groups =
        m->alpha_at == GCK_REF_ALPHA_ON_SUM && m->beta_at != GCK_REF_BETA_OVER_ALPHA;
    if (m->sum == GCK_REF_SUM_SEQUENTIAL && !scale_groups) {
        acc = sum_range(e, 0, K, acc);
    } else {
        int64_t parts = m->sum == GCK_REF_SUM_SPLIT ? (group < K ? group : K) : 1;
        int64_t step = m->sum == GCK_REF_SUM_BLOCKED ? group : (K + parts - 1) / parts;
        if (m->sum == GCK_REF_SUM_SEQUENTIAL || m->sum == GCK_REF_SUM_PAIRWISE) step = K;
        for (int64_t k0 = 0; k0 < K; k0 += step) {
            int64_t k1 = k0 + step < K ? k0 + step : K;
            double g = m->sum == GCK_REF_SUM_PAIRWISE ? sum_tree(e, k0, k1, group)
                                                      : sum_range(e, k0, k1, 0.0);
            if (scale_groups)
                g = default_order(m) ? scale_mul(c->alpha, g, sf) : mul_c(c->alpha, g, cf);
            acc = have ? add_c(acc, g, cf) : g;
            have = true;
        }
    }
    if (m->beta_at == GCK_REF_BETA_OVER_ALPHA) acc = mul_c(c->alpha, acc, cf);
    return acc;
}

static gck_status ref_gemm(const gck_case *c, const gck_ref_model *model, const void *A,
                           const void *B, const void *C, void *D, char *msg, size_t msg_len) {
    gck_status s = gck_case_validate(c, msg, msg_len);
    if (s != GCK_OK) return s;
    gck_format cf = model->compute, sf = model->scale_compute;
    if ((unsigned)cf >= GCK_FORMAT_COUNT) {
        snprintf(msg, msg_len, "model compute (%d) is not a format", (int)cf);
        return GCK_EINVAL;
    }
    if (sf != GCK_F32 && sf != GCK_F64) {
        snprintf(msg, msg_len, "model scale_compute (%s) must be f32 or f64",
                 (unsigned)sf < GCK_FORMAT_COUNT ? gck_format_get(sf)->name : "?");
        return GCK_EINVAL;
    }
    if ((unsigned)model->alpha_at > GCK_REF_ALPHA_ON_B ||
        (unsigned)model->beta_at > GCK_REF_BETA_OVER_ALPHA ||
        (unsigned)model->sum > GCK_REF_SUM_SPLIT || (unsigned)model->skip > GCK_REF_SKIP_ZERO_B ||
        model->group < 0) {
        snprintf(msg, msg_len, "model order fields out of range");
        return GCK_EINVAL;
    }
    if (!default_order(model) && (sf != cf || gck_fmt_round_to(c->alpha, cf) != c->alpha ||
                                  gck_fmt_round_to(c->beta, cf) != c->beta)) {
        snprintf(msg, msg_len,
                 "a model with a non-default evaluation order computes alpha and beta in its "
                 "compute format: scale_compute must be %s and alpha, beta values of it",
                 gck_format_get(cf)->name);
        return GCK_EINVAL;
    }
    if (cf != GCK_F64 && !model->round_inputs && (c->type_a == GCK_F64 || c->type_b == GCK_F64)) {
        snprintf(msg, msg_len,
                 "model compute=%s with round_inputs=no cannot take f64 inputs "
                 "exactly; round the inputs or compute in f64",
                 gck_format_get(cf)->name);
        return GCK_EINVAL;
    }
    if (c->d_is_c && D != C) {
        snprintf(msg, msg_len, "D must be C's buffer when the case computes D in place");
        return GCK_EINVAL;
    }
    if (c->m == 0 || c->n == 0) return GCK_OK;

    int64_t ars, acs, brs, bcs, crs, ccs, drs, dcs;
    gck_case_op_strides(c, GCK_A, &ars, &acs);
    gck_case_op_strides(c, GCK_B, &brs, &bcs);
    gck_case_op_strides(c, GCK_C, &crs, &ccs);
    gck_case_op_strides(c, GCK_D, &drs, &dcs);
    gck_format td = gck_case_type(c, GCK_D);
    int64_t sd = gck_case_stride(c, GCK_D);
    bool rab = gck_case_reads_ab(c), rc = gck_case_reads_c(c);
    double beta = c->beta;

    for (int64_t bi = 0; bi < c->batch; bi++) {
        const void *Ab = rab ? member(A, c->type_a, c->stride_a, bi) : NULL;
        const void *Bb = rab ? member(B, c->type_b, c->stride_b, bi) : NULL;
        const void *Cb = rc ? member(C, c->type_c, c->stride_c, bi) : NULL;
        void *Db = (char *)D + (size_t)(bi * sd) * (size_t)gck_format_get(td)->storage_bytes;
        for (int64_t j = 0; j < c->n; j++) {
            for (int64_t i = 0; i < c->m; i++) {
                double cv = rc ? gck_fmt_load(Cb, c->type_c, i * crs + j * ccs) : 0.0, t;
                if (!rab) { /* no product term: D = beta*c */
                    t = rc ? scale_mul(beta, cv, sf) : 0.0;
                } else {
                    elem e = {c, model, Ab, Bb, ars, acs, brs, bcs, i, j};
                    t = product_term(&e, cv, rc);
                    if (rc && model->beta_at == GCK_REF_BETA_LAST)
                        t = scale_add(t, scale_mul(beta, cv, sf), sf);
                }
                gck_fmt_store(Db, td, i * drs + j * dcs, isnan(t) ? NAN : t); /* refgemm.h */
            }
        }
    }
    return GCK_OK;
}

/* ---- the public functions, in gemmcheck's floating-point environment (fpenv.h) ------------ */

GCK_GUARDED_VOID(gck_ref_model_describe, model_describe,
                 (const gck_ref_model *m, char *buf, size_t len), (m, buf, len))
GCK_GUARDED(gck_status, gck_ref_gemm, ref_gemm,
            (const gck_case *c, const gck_ref_model *model, const void *A, const void *B,
             const void *C, void *D, char *msg, size_t msg_len),
            (c, model, A, B, C, D, msg, msg_len))
