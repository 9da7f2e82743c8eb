/* Reference GEMMs: the f32 model equals a naive float loop bit for bit, the 16-bit and tf32
 * models equal an MPFR emulation of the same operations, and the f64 model stays within the
 * checker's hard bound (gck_bound, docs/TOLERANCE.md) of the oracle. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemmcheck/gemmcheck.h"
#include "testutil.h"

static void random_layout(gck_case *c, test_rng *r) {
    c->order = (rng_next(r) & 1) ? GCK_ROW_MAJOR : GCK_COL_MAJOR;
    c->transa = (rng_next(r) & 1) ? GCK_OP_T : GCK_OP_N;
    c->transb = (rng_next(r) & 1) ? GCK_OP_T : GCK_OP_N;
    int64_t *lds[] = {&c->lda, &c->ldb, &c->ldc, &c->ldd};
    for (int x = 0; x < 4; x++) {
        int64_t rows, cols;
        gck_case_stored_shape(c, (gck_operand)x, &rows, &cols);
        int64_t need = c->order == GCK_COL_MAJOR ? rows : cols;
        *lds[x] = (need > 1 ? need : 1) + rng_range(r, 0, 3);
    }
    if (c->d_is_c) c->ldd = c->ldc;
}

static void fill_all(const gck_case *c, gck_operand x, void *buf, test_rng *r, int dist) {
    int64_t n = gck_case_extent(c, x);
    gck_format f = gck_case_type(c, x);
    for (int64_t e = 0; e < n; e++) gck_store(buf, f, e, random_value(r, f, dist));
}

Test(refgemm, f32_model_equals_a_naive_float_loop_bit_for_bit) {
    test_rng r = {test_seed("refgemm.f32", 5)};
    long elements = 0;
    for (int t = 0; t < 300; t++) {
        gck_case c;
        gck_case_init(&c, rng_range(&r, 1, 12), rng_range(&r, 1, 12), rng_range(&r, 0, 64));
        c.type_a = c.type_b = c.type_c = c.type_d = c.compute = GCK_F32;
        c.scale_type = GCK_F32;
        c.alpha = (float)(rng_unit(&r) * 4 - 2);
        c.beta = (t % 3 == 0) ? 0.0 : (float)(rng_unit(&r) * 2 - 1);
        random_layout(&c, &r);
        float *A = alloc_elems(GCK_F32, gck_case_extent(&c, GCK_A));
        float *B = alloc_elems(GCK_F32, gck_case_extent(&c, GCK_B));
        float *C = alloc_elems(GCK_F32, gck_case_extent(&c, GCK_C));
        int dist = (int)rng_range(&r, 0, 2);
        fill_all(&c, GCK_A, A, &r, dist);
        fill_all(&c, GCK_B, B, &r, dist);
        fill_all(&c, GCK_C, C, &r, dist);
        int64_t nc = gck_case_extent(&c, GCK_C);
        float *want = malloc(sizeof(float) * (size_t)nc);
        memcpy(want, C, sizeof(float) * (size_t)nc);
        int64_t ars, acs, brs, bcs, crs, ccs;
        gck_case_op_strides(&c, GCK_A, &ars, &acs);
        gck_case_op_strides(&c, GCK_B, &brs, &bcs);
        gck_case_op_strides(&c, GCK_C, &crs, &ccs);
        float alpha = (float)c.alpha, beta = (float)c.beta;
        for (int64_t i = 0; i < c.m; i++)
            for (int64_t j = 0; j < c.n; j++) {
                float acc = 0.0f;
                for (int64_t k = 0; k < c.k; k++)
                    acc += A[i * ars + k * acs] * B[k * brs + j * bcs];
                float *d = &want[i * crs + j * ccs];
                if (c.k == 0)
                    *d = beta != 0 ? beta * *d : 0.0f;
                else
                    *d = beta != 0 ? alpha * acc + beta * *d : alpha * acc;
            }
        gck_ref_model model = gck_ref_model_default(GCK_F32);
        char msg[256];
        cr_assert_eq(gck_ref_gemm(&c, &model, A, B, C, C, msg, sizeof msg), GCK_OK, "%s", msg);
        cr_assert_eq(memcmp(C, want, sizeof(float) * (size_t)nc), 0, "case %d differs", t);
        elements += c.m * c.n;
        free(A);
        free(B);
        free(C);
        free(want);
    }
    fprintf(stderr, "[refgemm f32] 300 cases, %ld elements bit-identical to the float loop\n",
            elements);
}

Test(refgemm, f32_fma_model_equals_an_fmaf_loop) {
    test_rng r = {test_seed("refgemm.fma", 6)};
    for (int t = 0; t < 100; t++) {
        gck_case c;
        gck_case_init(&c, rng_range(&r, 1, 8), rng_range(&r, 1, 8), rng_range(&r, 1, 40));
        c.type_a = c.type_b = GCK_F16;
        c.type_c = c.type_d = GCK_F32;
        c.scale_type = GCK_F32;
        c.beta = 1.0;
        c.ldd = c.ldc;
        uint16_t *A = alloc_elems(GCK_F16, c.m * c.k), *B = alloc_elems(GCK_F16, c.k * c.n);
        float *C = alloc_elems(GCK_F32, c.m * c.n), *want = alloc_elems(GCK_F32, c.m * c.n);
        fill_all(&c, GCK_A, A, &r, 1);
        fill_all(&c, GCK_B, B, &r, 1);
        fill_all(&c, GCK_C, C, &r, 1);
        for (int64_t i = 0; i < c.m; i++)
            for (int64_t j = 0; j < c.n; j++) {
                float acc = 0.0f;
                for (int64_t k = 0; k < c.k; k++)
                    acc = fmaf(gck_f16_to_float(A[i + k * c.m]), gck_f16_to_float(B[k + j * c.k]),
                               acc);
                want[i + j * c.m] = acc + C[i + j * c.m];
            }
        gck_ref_model model = gck_ref_model_default(GCK_F32);
        model.fma = true;
        char msg[256];
        cr_assert_eq(gck_ref_gemm(&c, &model, A, B, C, C, msg, sizeof msg), GCK_OK, "%s", msg);
        cr_assert_eq(memcmp(C, want, sizeof(float) * (size_t)(c.m * c.n)), 0, "case %d", t);
        free(A);
        free(B);
        free(C);
        free(want);
    }
}

/* The same model computed with MPFR: every operation exact, then rounded by MPFR's IEEE
 * emulation of the compute format. */
static double mpfr_model_element(const gck_case *c, const gck_ref_model *m, const float *A,
                                 const float *B, int64_t i, int64_t j) {
    mpfr_t acc, p, x;
    mpfr_inits2(400, acc, p, x, (mpfr_ptr)0);
    mpfr_set_zero(acc, 1);
    for (int64_t k = 0; k < c->k; k++) {
        double a = A[i + k * c->lda], b = B[k + j * c->ldb];
        if (m->round_inputs) {
            a = mpfr_round_format(a, m->compute);
            b = mpfr_round_format(b, m->compute);
        }
        mpfr_set_d(p, a, MPFR_RNDN);
        mpfr_set_d(x, b, MPFR_RNDN);
        mpfr_mul(p, p, x, MPFR_RNDN); /* exact */
        if (!m->fma) mpfr_set_d(p, mpfr_round_exact(p, m->compute, MPFR_RNDN), MPFR_RNDN);
        mpfr_add(acc, acc, p, MPFR_RNDN); /* exact at 400 bits for these ranges */
        mpfr_set_d(acc, mpfr_round_exact(acc, m->compute, MPFR_RNDN), MPFR_RNDN);
    }
    double d = mpfr_get_d(acc, MPFR_RNDN);
    mpfr_clears(acc, p, x, (mpfr_ptr)0);
    return (double)(float)((float)c->alpha * (float)d);
}

Test(refgemm, low_precision_models_equal_an_mpfr_emulation) {
    test_rng r = {test_seed("refgemm.lowp", 8)};
    const gck_format computes[] = {GCK_F16, GCK_BF16, GCK_TF32};
    long elements = 0;
    for (int t = 0; t < 240; t++) {
        gck_ref_model model = gck_ref_model_default(computes[t % 3]);
        model.fma = (t / 3) % 2;
        model.round_inputs = (t / 6) % 2;
        gck_case c;
        gck_case_init(&c, rng_range(&r, 1, 6), rng_range(&r, 1, 6), rng_range(&r, 1, 50));
        c.type_a = c.type_b = c.type_c = c.type_d = GCK_F32;
        c.scale_type = GCK_F32;
        c.alpha = t % 4 ? 1.0 : -0.5;
        float *A = alloc_elems(GCK_F32, c.m * c.k), *B = alloc_elems(GCK_F32, c.k * c.n);
        float *D = alloc_elems(GCK_F32, c.m * c.n);
        int dist = 1 + (t % 2); /* uniform, or exponents spread over +-40 binades */
        for (int64_t e = 0; e < c.m * c.k; e++) A[e] = (float)random_value(&r, GCK_BF16, dist);
        for (int64_t e = 0; e < c.k * c.n; e++) B[e] = (float)random_value(&r, GCK_F16, dist);
        char msg[256];
        cr_assert_eq(gck_ref_gemm(&c, &model, A, B, D, D, msg, sizeof msg), GCK_OK, "%s", msg);
        for (int64_t i = 0; i < c.m; i++)
            for (int64_t j = 0; j < c.n; j++) {
                double want = mpfr_model_element(&c, &model, A, B, i, j);
                char md[128];
                gck_ref_model_describe(&model, md, sizeof md);
                cr_assert(same_value((double)D[i + j * c.m], want), "%s: (%ld,%ld) %a vs %a", md,
                          (long)i, (long)j, (double)D[i + j * c.m], want);
                elements++;
            }
        free(A);
        free(B);
        free(D);
    }
    fprintf(stderr, "[refgemm f16/bf16/tf32] 240 cases, %ld elements equal to MPFR\n", elements);
}

Test(refgemm, f64_model_stays_within_the_spec_bound_of_the_oracle) {
    test_rng r = {test_seed("refgemm.f64", 9)};
    const gck_format outs[] = {GCK_F16, GCK_BF16, GCK_F32, GCK_F64};
    mpfr_t err, x;
    mpfr_inits2(2200, err, x, (mpfr_ptr)0);
    long elements = 0;
    double worst = 0;
    /* the bound is the checker's own (gck_bound) under the model ref's f64 row declares */
    gck_backend ref;
    char msg[256];
    cr_assert_eq(gck_backend_open(&ref, "ref", msg, sizeof msg), GCK_OK, "%s", msg);
    for (int t = 0; t < 400; t++) {
        gck_case c;
        gck_case_init(&c, rng_range(&r, 1, 8), rng_range(&r, 1, 8), rng_range(&r, 1, 200));
        c.type_a = outs[rng_range(&r, 0, 3)];
        c.type_b = outs[rng_range(&r, 0, 3)];
        c.type_c = outs[rng_range(&r, 0, 3)];
        c.type_d = outs[t % 4];
        c.d_is_c = false;
        c.alpha = (t % 5 == 0) ? -3.0 : 1.0;
        c.beta = (t % 3 == 0) ? 0.0 : 0.75;
        c.compute = GCK_F64;
        c.scale_type = GCK_F64;
        random_layout(&c, &r);
        const gck_support_row *row = gck_backend_find_row(&ref, &c, msg, sizeof msg);
        cr_assert_not_null(row, "%s", msg);
        void *A = alloc_elems(c.type_a, gck_case_extent(&c, GCK_A));
        void *B = alloc_elems(c.type_b, gck_case_extent(&c, GCK_B));
        void *C = alloc_elems(c.type_c, gck_case_extent(&c, GCK_C));
        void *Dr = alloc_elems(c.type_d, gck_case_extent(&c, GCK_D));
        void *Do = alloc_elems(c.type_d, gck_case_extent(&c, GCK_D));
        int dist = (int)rng_range(&r, 1, 2);
        fill_all(&c, GCK_A, A, &r, dist);
        fill_all(&c, GCK_B, B, &r, dist);
        fill_all(&c, GCK_C, C, &r, dist);
        gck_ref_model model = gck_ref_model_default(GCK_F64);
        cr_assert_eq(gck_ref_gemm(&c, &model, A, B, C, Dr, msg, sizeof msg), GCK_OK, "%s", msg);
        cr_assert_eq(gck_oracle_mpfr(&c, A, B, C, Do, 1, msg, sizeof msg), GCK_OK, "%s", msg);
        const gck_format_info *fo = gck_format_get(c.type_d);
        int64_t ars, acs, brs, bcs, crs, ccs, drs, dcs;
        gck_case_op_strides(&c, GCK_A, &ars, &acs);
        gck_case_op_strides(&c, GCK_B, &brs, &bcs);
        gck_case_op_strides(&c, GCK_C, &crs, &ccs);
        gck_case_op_strides(&c, GCK_D, &drs, &dcs);
        for (int64_t i = 0; i < c.m; i++)
            for (int64_t j = 0; j < c.n; j++) {
                double T = 0, sumab = 0;
                for (int64_t k = 0; k < c.k; k++) {
                    double a = gck_load(A, c.type_a, i * ars + k * acs);
                    double b = gck_load(B, c.type_b, k * brs + j * bcs);
                    T += fabs(a * b);
                    sumab += fabs(a) + fabs(b);
                }
                double cv = c.beta != 0 ? gck_load(C, c.type_c, i * crs + j * ccs) : 0;
                double got = gck_load(Dr, c.type_d, i * drs + j * dcs);
                double want = gck_load(Do, c.type_d, i * drs + j * dcs);
                if (isinf(want)) { /* overflow: same-signed Inf or the largest finite value */
                    cr_assert(got == want || got == copysign(fo->max, want), "%a vs %a", got, want);
                    elements++;
                    continue;
                }
                gck_bound_terms terms = {fabs(want), T, sumab, fabs(cv), c.k};
                bool degenerate;
                /* T and sum_ab are summed here rounding to nearest: 2^-40 covers their error */
                double bound = gck_bound(&c, &row->model, &terms, &degenerate) * (1 + 0x1p-40);
                cr_assert(!degenerate, "gamma is infinite for K = %ld", (long)c.k);
                mpfr_set_d(err, got, MPFR_RNDN);
                mpfr_set_d(x, want, MPFR_RNDN);
                mpfr_sub(err, err, x, MPFR_RNDN); /* exact */
                double e = fabs(mpfr_get_d(err, MPFR_RNDU));
                cr_assert(e <= bound, "error %a > bound %a at (%ld,%ld), got %a want %a", e, bound,
                          (long)i, (long)j, got, want);
                if (bound > 0 && e / bound > worst) worst = e / bound;
                elements++;
            }
        free(A);
        free(B);
        free(C);
        free(Dr);
        free(Do);
    }
    mpfr_clears(err, x, (mpfr_ptr)0);
    gck_backend_close(&ref);
    fprintf(stderr,
            "[refgemm f64] 400 cases, %ld elements within the hard bound (worst "
            "error/bound %.3g)\n",
            elements, worst);
}

Test(refgemm, blas_special_cases_do_not_read_unused_operands) {
    gck_case c;
    gck_case_init(&c, 2, 2, 3);
    double A[6], B[6], C[4];
    for (int x = 0; x < 6; x++) A[x] = NAN, B[x] = 1.0;
    for (int x = 0; x < 4; x++) C[x] = 2.0;
    gck_ref_model model = gck_ref_model_default(GCK_F64);
    char msg[256];
    c.alpha = 0.0;
    c.beta = 3.0;
    cr_assert_eq(gck_ref_gemm(&c, &model, A, B, C, C, msg, sizeof msg), GCK_OK);
    for (int x = 0; x < 4; x++) cr_expect_eq(C[x], 6.0);
    for (int x = 0; x < 6; x++) A[x] = 1.0;
    for (int x = 0; x < 4; x++) C[x] = NAN;
    c.alpha = 1.0;
    c.beta = 0.0;
    cr_assert_eq(gck_ref_gemm(&c, &model, A, B, C, C, msg, sizeof msg), GCK_OK);
    for (int x = 0; x < 4; x++) cr_expect_eq(C[x], 3.0);
    model.compute = GCK_F16;
    model.round_inputs = false;
    cr_expect_eq(gck_ref_gemm(&c, &model, A, B, C, C, msg, sizeof msg), GCK_EINVAL);
    cr_expect(strstr(msg, "round_inputs=no cannot take f64 inputs") != NULL, "%s", msg);
    model = gck_ref_model_default(GCK_F64);
    model.scale_compute = GCK_F16;
    cr_expect_eq(gck_ref_gemm(&c, &model, A, B, C, C, msg, sizeof msg), GCK_EINVAL);
}

/* gck_ref_model_declared: each place alpha and beta can enter maps to its order bit, and the
 * formats and input rounding carry over. */
Test(refgemm, a_reference_evaluation_maps_to_the_model_that_covers_it) {
    static const unsigned alpha_bits[] = {GCK_ORDER_ALPHA_ON_SUM, GCK_ORDER_ALPHA_ON_PRODUCT,
                                          GCK_ORDER_ALPHA_ON_OPERAND};
    static const unsigned beta_bits[] = {GCK_ORDER_BETA_LAST, GCK_ORDER_BETA_FIRST,
                                         GCK_ORDER_BETA_OVER_ALPHA};
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) {
            gck_ref_model r = gck_ref_model_default(GCK_BF16);
            r.alpha_at = (gck_ref_alpha)a;
            r.beta_at = (gck_ref_beta)b;
            r.round_inputs = a == 1;
            r.fma = b == 2;
            gck_model m = gck_ref_model_declared(&r);
            cr_expect_eq(m.orders, alpha_bits[a] | beta_bits[b], "alpha %d beta %d", a, b);
            cr_expect_eq(m.compute, GCK_BF16);
            cr_expect_eq(m.epilogue, GCK_F32);
            cr_expect_eq(m.inputs_rounded, a == 1);
            cr_expect_eq(m.input_format, GCK_BF16);
            cr_expect_eq(m.acc, GCK_ACC_SCALAR);
            cr_expect(!m.ftz && !m.daz);
        }
}

/* The ref backend's table (static data) declares, row by row, the model of the evaluation it
 * runs: the declared model of gck_ref_model_default for the row's compute type. */
Test(refgemm, the_ref_backend_declares_what_it_computes) {
    gck_backend be;
    char msg[256];
    cr_assert_eq(gck_backend_open(&be, "ref", msg, sizeof msg), GCK_OK, "%s", msg);
    const gck_support_row *rows;
    size_t n = be.ops->table(be.state, &rows);
    cr_expect_eq(n, 560); /* 4^4 tuples x {f32, f64} + 16 each for f16, bf16, tf32 */
    size_t narrow = 0;
    for (size_t r = 0; r < n; r++) {
        gck_ref_model rm = gck_ref_model_default(rows[r].compute);
        gck_model want = gck_ref_model_declared(&rm);
        const gck_model *got = &rows[r].model;
        cr_expect(got->compute == want.compute && got->inputs_rounded == want.inputs_rounded &&
                      got->input_format == want.input_format && got->acc == want.acc &&
                      got->block == want.block && got->epilogue == want.epilogue &&
                      got->ftz == want.ftz && got->daz == want.daz && got->orders == want.orders,
                  "row %zu", r);
        if (rows[r].compute != GCK_F32 && rows[r].compute != GCK_F64) {
            narrow++;
            gck_format in = rows[r].compute == GCK_TF32 ? GCK_F32 : rows[r].compute;
            cr_expect(rows[r].a == in && rows[r].b == in, "row %zu", r);
        }
    }
    cr_expect_eq(narrow, 48);
    gck_backend_close(&be);
}
