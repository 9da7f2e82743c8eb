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

gck_ref_model gck_ref_model_default(gck_format compute) {
    return (gck_ref_model){
        .compute = compute,
        .fma = false,
        .round_inputs = true,
        .scale_compute = compute == GCK_F64 ? GCK_F64 : GCK_F32,
    };
}

void gck_ref_model_describe(const gck_ref_model *m, char *buf, size_t len) {
    snprintf(buf, len, "compute=%s fma=%s round_inputs=%s scale=%s",
             gck_format_get(m->compute)->name, m->fma ? "yes" : "no",
             m->round_inputs ? "yes" : "no", gck_format_get(m->scale_compute)->name);
}

/* round_c(a * b); a and b are values of at most 24 bits unless fmt is f64. */
static double mul_c(double a, double b, gck_format fmt) {
    if (fmt == GCK_F64) return a * b;
    return gck_round_to(a * b, fmt); /* the double product is exact */
}

/* Exact x + y as hi + lo (Knuth's TwoSum), then one rounding. */
static double add_exact_round(double x, double y, gck_format fmt) {
    double s = x + y;
    if (!isfinite(s)) return gck_round_to(s, fmt);
    double yy = s - x;
    double e = (x - (s - yy)) + (y - yy);
    return gck_round2_to(s, e, fmt);
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

static const void *member(const void *base, gck_format f, int64_t stride, int64_t bi) {
    return (const char *)base + (size_t)(bi * stride) * (size_t)gck_format_get(f)->storage_bytes;
}

gck_status gck_ref_gemm(const gck_case *c, const gck_ref_model *model, const void *A, const void *B,
                        const void *C, void *D, char *msg, size_t msg_len) {
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
    double alpha = c->alpha, beta = c->beta;

    for (int64_t bi = 0; bi < c->batch; bi++) {
        const void *Ab = rab ? member(A, c->type_a, c->stride_a, bi) : NULL;
        const void *Bb = rab ? member(B, c->type_b, c->stride_b, bi) : NULL;
        const void *Cb = rc ? member(C, c->type_c, c->stride_c, bi) : NULL;
        void *Db = (char *)D + (size_t)(bi * sd) * (size_t)gck_format_get(td)->storage_bytes;
        for (int64_t j = 0; j < c->n; j++) {
            for (int64_t i = 0; i < c->m; i++) {
                double t = 0.0;
                if (rab) {
                    double acc = 0.0;
                    for (int64_t k = 0; k < c->k; k++) {
                        double a = gck_load(Ab, c->type_a, i * ars + k * acs);
                        double b = gck_load(Bb, c->type_b, k * brs + j * bcs);
                        if (model->round_inputs) {
                            a = gck_round_to(a, cf);
                            b = gck_round_to(b, cf);
                        }
                        acc = model->fma ? fma_c(a, b, acc, cf) : add_c(mul_c(a, b, cf), acc, cf);
                    }
                    t = scale_mul(alpha, acc, sf);
                }
                if (rc) {
                    double bc = scale_mul(beta, gck_load(Cb, c->type_c, i * crs + j * ccs), sf);
                    t = rab ? scale_add(t, bc, sf) : bc;
                }
                gck_store(Db, td, i * drs + j * dcs, t);
            }
        }
    }
    return GCK_OK;
}
