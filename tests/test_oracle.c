/* The MPFR oracle against independent truths: exact integer results, IEEE double evaluation of
 * special values, hand-derived double-rounding traps, overflow and subnormal boundaries, and
 * exact GMP rationals rounded by integer arithmetic. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static const gck_format storage[] = {GCK_F16, GCK_BF16, GCK_F32, GCK_F64};

/* Fill the used elements of operand x (all batch members) with values from `gen`. */
typedef double (*gen_fn)(test_rng *r, gck_format fmt, void *ctx);

static void fill(const gck_case *c, gck_operand x, void *buf, test_rng *r, gen_fn gen, void *ctx) {
    int64_t rows, cols;
    gck_case_stored_shape(c, x, &rows, &cols);
    int64_t ld = gck_case_ld(c, x), st = gck_case_stride(c, x);
    gck_format f = gck_case_type(c, x);
    for (int64_t b = 0; b < c->batch; b++)
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < cols; j++) {
                int64_t off = b * st + (c->order == GCK_COL_MAJOR ? i + j * ld : i * ld + j);
                gck_store(buf, f, off, gen(r, f, ctx));
            }
}

static double gen_dist(test_rng *r, gck_format f, void *ctx) {
    return random_value(r, f, *(int *)ctx);
}

/* The exact value as a GMP rational, rounded by integer arithmetic; the sign of an exact zero
 * by IEEE evaluation of the signed zeros (docs/SEMANTICS.md). Finite inputs only. */
static double truth(const gck_case *c, const void *A, const void *B, const void *C, int64_t bi,
                    int64_t i, int64_t j) {
    int64_t ars, acs, brs, bcs, crs, ccs;
    gck_case_op_strides(c, GCK_A, &ars, &acs);
    gck_case_op_strides(c, GCK_B, &brs, &bcs);
    gck_case_op_strides(c, GCK_C, &crs, &ccs);
    mpq_t s, t, u, total;
    mpq_inits(s, t, u, total, NULL);
    bool rab = c->alpha != 0 && c->k > 0, rc = c->beta != 0;
    bool all_zero_products = true;
    double zero_sum = 0.0; /* IEEE sum of the products when they are all zeros */
    for (int64_t k = 0; rab && k < c->k; k++) {
        double a = gck_load(A, c->type_a, bi * c->stride_a + i * ars + k * acs);
        double b = gck_load(B, c->type_b, bi * c->stride_b + k * brs + j * bcs);
        mpq_set_d(t, a);
        mpq_set_d(u, b);
        mpq_mul(t, t, u);
        mpq_add(s, s, t);
        if (a != 0 && b != 0)
            all_zero_products = false;
        else
            zero_sum = k == 0 ? a * b : zero_sum + a * b;
    }
    mpq_set_d(t, c->alpha);
    mpq_mul(total, s, t);
    double cv = 0;
    if (rc) {
        cv = gck_load(C, c->type_c, bi * c->stride_c + i * crs + j * ccs);
        mpq_set_d(t, c->beta);
        mpq_set_d(u, cv);
        mpq_mul(t, t, u);
        mpq_add(total, total, t);
    }
    double r = mpq_round_format(total, gck_case_type(c, GCK_D));
    if (r == 0.0 && mpq_sgn(total) < 0) r = -0.0; /* underflow keeps the sign */
    if (mpq_sgn(total) == 0) {
        bool s_zero = mpq_sgn(s) == 0;
        double s_ieee = all_zero_products ? zero_sum : 0.0;
        bool as_nonzero = !s_zero;
        bool bc_nonzero = rc && cv != 0;
        if (as_nonzero || bc_nonzero)
            r = 0.0;   /* exact cancellation: +0 */
        else if (!rab) /* no product term (alpha = 0 or K = 0): beta*c, +0 when beta = 0 */
            r = rc ? c->beta * cv : 0.0;
        else
            r = rc ? c->alpha * s_ieee + c->beta * cv : c->alpha * s_ieee;
    }
    mpq_clears(s, t, u, total, NULL);
    return r;
}

static double pick_scale(test_rng *r, gck_format st) {
    static const double fixed[] = {0.0, 1.0, -1.0, 0.5, 2.0, -0.0};
    uint64_t k = rng_next(r) % 8;
    if (k < sizeof fixed / sizeof fixed[0]) return fixed[k];
    return gck_round_to((rng_unit(r) * 4 - 2), st);
}

Test(oracle, matches_gmp_rationals_on_random_cases_of_every_type_tuple) {
    test_rng r = {test_seed("oracle.gmp", 42)};
    long cases = 0, elements = 0, bits = 0;
    for (int rep = 0; rep < 40; rep++) {
        for (int ta = 0; ta < 4; ta++)
            for (int tb = 0; tb < 4; tb++)
                for (int tc = 0; tc < 4; tc++)
                    for (int td = 0; td < 4; td++) {
                        gck_case c;
                        gck_case_init(&c, rng_range(&r, 0, 6), rng_range(&r, 0, 6),
                                      rng_range(&r, 0, 9));
                        c.type_a = storage[ta];
                        c.type_b = storage[tb];
                        c.type_c = storage[tc];
                        c.type_d = storage[td];
                        c.d_is_c = false;
                        c.order = (rng_next(&r) & 1) ? GCK_ROW_MAJOR : GCK_COL_MAJOR;
                        c.transa = (rng_next(&r) & 1) ? GCK_OP_T : GCK_OP_N;
                        c.transb = (rng_next(&r) & 1) ? GCK_OP_T : GCK_OP_N;
                        c.scale_type = (rng_next(&r) & 1) ? GCK_F32 : GCK_F64;
                        c.alpha = pick_scale(&r, c.scale_type);
                        c.beta = pick_scale(&r, c.scale_type);
                        c.batch = rng_range(&r, 1, 2);
                        int64_t rows, cols;
                        int64_t *lds[] = {&c.lda, &c.ldb, &c.ldc, &c.ldd};
                        for (int x = 0; x < 4; x++) {
                            gck_case_stored_shape(&c, (gck_operand)x, &rows, &cols);
                            int64_t need = c.order == GCK_COL_MAJOR ? rows : cols;
                            *lds[x] = (need > 1 ? need : 1) + rng_range(&r, 0, 2);
                        }
                        c.stride_a = gck_case_footprint(&c, GCK_A) + rng_range(&r, 0, 3);
                        c.stride_b = (rng_next(&r) & 3) ? gck_case_footprint(&c, GCK_B) : 0;
                        c.stride_c = gck_case_footprint(&c, GCK_C) + 1;
                        c.stride_d = gck_case_footprint(&c, GCK_D) + 2;
                        char msg[256];
                        cr_assert_eq(gck_case_validate(&c, msg, sizeof msg), GCK_OK, "%s", msg);
                        void *A = alloc_elems(c.type_a, gck_case_extent(&c, GCK_A));
                        void *B = alloc_elems(c.type_b, gck_case_extent(&c, GCK_B));
                        void *C = alloc_elems(c.type_c, gck_case_extent(&c, GCK_C));
                        void *D = alloc_elems(c.type_d, gck_case_extent(&c, GCK_D));
                        int dist_ab = (int)rng_range(&r, 0, RANDOM_DISTS - 1);
                        int dist_c = (int)rng_range(&r, 0, RANDOM_DISTS - 1);
                        fill(&c, GCK_A, A, &r, gen_dist, &dist_ab);
                        fill(&c, GCK_B, B, &r, gen_dist, &dist_ab);
                        fill(&c, GCK_C, C, &r, gen_dist, &dist_c);
                        cr_assert_eq(gck_oracle_mpfr(&c, A, B, C, D, 2, msg, sizeof msg), GCK_OK,
                                     "%s", msg);
                        int64_t drs, dcs;
                        gck_case_op_strides(&c, GCK_D, &drs, &dcs);
                        for (int64_t b = 0; b < c.batch; b++)
                            for (int64_t i = 0; i < c.m; i++)
                                for (int64_t j = 0; j < c.n; j++) {
                                    double got =
                                        gck_load(D, c.type_d, b * c.stride_d + i * drs + j * dcs);
                                    double want = truth(&c, A, B, C, b, i, j);
                                    if (!same_value(got, want)) {
                                        char desc[512];
                                        gck_case_describe(&c, desc, sizeof desc);
                                        cr_assert_fail("D[%ld](%ld,%ld) = %a, GMP says %a; %s",
                                                       (long)b, (long)i, (long)j, got, want, desc);
                                    }
                                    elements++;
                                    bits += 8 * gck_format_get(c.type_d)->storage_bytes;
                                }
                        cases++;
                        free(A);
                        free(B);
                        free(C);
                        free(D);
                    }
    }
    fprintf(stderr, "[oracle vs GMP] %ld cases, %ld elements, %ld bits compared, 0 differences\n",
            cases, elements, bits);
}

Test(oracle, exact_integer_products_are_reproduced_bit_for_bit) {
    test_rng r = {test_seed("oracle.exact", 3)};
    for (int t = 0; t < 40; t++) {
        int64_t m = rng_range(&r, 1, 9), n = rng_range(&r, 1, 9), k = rng_range(&r, 1, 120);
        gck_case c;
        gck_case_init(&c, m, n, k);
        gck_format tf = storage[t % 4];
        c.type_a = c.type_b = c.type_c = c.type_d = tf;
        c.beta = 1.0;
        double *A = malloc(sizeof(double) * (size_t)(m * k));
        double *B = malloc(sizeof(double) * (size_t)(k * n));
        void *Ae = alloc_elems(tf, m * k), *Be = alloc_elems(tf, k * n),
             *Ce = alloc_elems(tf, m * n);
        long long *want = calloc((size_t)(m * n), sizeof *want);
        for (int64_t x = 0; x < m * k; x++) {
            A[x] = (double)rng_range(&r, -3, 3);
            gck_store(Ae, tf, x, A[x]);
        }
        for (int64_t x = 0; x < k * n; x++) {
            B[x] = (double)rng_range(&r, -3, 3);
            gck_store(Be, tf, x, B[x]);
        }
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                long long s = rng_range(&r, -5, 5);
                gck_store(Ce, tf, i + j * m, (double)s);
                for (int64_t q = 0; q < k; q++)
                    s += (long long)A[i + q * m] * (long long)B[q + j * k];
                want[i + j * m] = s; /* |s| <= 9*120+5 < 2^8 * 2^3: exact in every format */
            }
        char msg[256];
        cr_assert_eq(gck_oracle_mpfr(&c, Ae, Be, Ce, Ce, 0, msg, sizeof msg), GCK_OK, "%s", msg);
        for (int64_t x = 0; x < m * n; x++)
            cr_assert_eq(gck_load(Ce, tf, x), (double)want[x], "%s element %ld",
                         gck_format_get(tf)->name, (long)x);
        free(A);
        free(B);
        free(Ae);
        free(Be);
        free(Ce);
        free(want);
    }
}

/* Every combination of special values for K = 2, checked against IEEE double evaluation with
 * the BLAS rules of docs/SEMANTICS.md (the values are small, so double arithmetic is exact). */
Test(oracle, special_value_combinations_follow_ieee_and_blas_rules) {
    const double sv[] = {0.0, -0.0, 1.0, -1.0, 2.0, INFINITY, -INFINITY, NAN};
    enum { S = sizeof sv / sizeof sv[0] };
    const double alphas[] = {1.0, -1.0, 0.0, -0.0, 2.0};
    const double betas[] = {0.0, 1.0, -1.0, -0.0};
    const gck_format outs[] = {GCK_F32, GCK_F16};
    long checked = 0;
    gck_case c;
    gck_case_init(&c, S * S, S * S * S, 2);
    c.d_is_c = false;
    c.ldd = c.m;
    c.ldc = c.m;
    /* A(i, k): row i = (a0, a1); B(k, j), C(i, j): column j = (b0, b1, c) */
    double *A = malloc(sizeof(double) * (size_t)(c.m * 2));
    double *B = malloc(sizeof(double) * (size_t)(2 * c.n));
    double *C = malloc(sizeof(double) * (size_t)(c.m * c.n));
    for (int i = 0; i < S * S; i++) {
        A[i] = sv[i / S];
        A[i + c.m] = sv[i % S];
    }
    for (int j = 0; j < S * S * S; j++) {
        B[2 * j] = sv[j / (S * S)];
        B[2 * j + 1] = sv[(j / S) % S];
        for (int i = 0; i < S * S; i++) C[i + j * c.m] = sv[j % S];
    }
    for (size_t o = 0; o < sizeof outs / sizeof outs[0]; o++) {
        c.type_d = outs[o];
        void *D = alloc_elems(c.type_d, c.m * c.n);
        for (size_t ai = 0; ai < sizeof alphas / sizeof alphas[0]; ai++)
            for (size_t bi = 0; bi < sizeof betas / sizeof betas[0]; bi++) {
                c.alpha = alphas[ai];
                c.beta = betas[bi];
                char msg[256];
                cr_assert_eq(gck_oracle_mpfr(&c, A, B, C, D, 0, msg, sizeof msg), GCK_OK);
                for (int64_t j = 0; j < c.n; j++)
                    for (int64_t i = 0; i < c.m; i++) {
                        double a0 = A[i], a1 = A[i + c.m], b0 = B[2 * j], b1 = B[2 * j + 1];
                        double cv = C[i + j * c.m];
                        bool rab = c.alpha != 0;
                        double s = rab ? a0 * b0 + a1 * b1 : 0.0;
                        double as = c.alpha * s;
                        double want = c.beta != 0 ? as + c.beta * cv : as;
                        /* alpha = 0: no product term, D = beta*c (+0 when beta = 0 too) */
                        if (!rab) want = c.beta != 0 ? c.beta * cv : 0.0;
                        double got = gck_load(D, c.type_d, i + j * c.m);
                        cr_assert(same_value(got, want),
                                  "%s: alpha=%g beta=%g a=(%g,%g) b=(%g,%g) c=%g: got %g want %g",
                                  gck_format_get(c.type_d)->name, c.alpha, c.beta, a0, a1, b0, b1,
                                  cv, got, want);
                        checked++;
                    }
            }
        free(D);
    }
    free(A);
    free(B);
    free(C);
    fprintf(stderr, "[specials] %ld special-value elements checked\n", checked);
}

/* One element, alpha = 1, beta = 0, f64 inputs: D = sum_k a_k * b_k (b = 1 when NULL). */
static double dot_to(gck_format out, const double *a, const double *b, int64_t k) {
    gck_case c;
    gck_case_init(&c, 1, 1, k);
    c.d_is_c = false;
    c.type_d = out;
    double ones[64];
    for (int64_t q = 0; q < k; q++) ones[q] = b ? b[q] : 1.0;
    unsigned char d[8];
    char msg[256];
    cr_assert_eq(gck_oracle_mpfr(&c, a, ones, NULL, d, 1, msg, sizeof msg), GCK_OK, "%s", msg);
    return gck_load(d, out, 0);
}
#define SUM(out, ...)                                                                              \
    dot_to(out, (double[]){__VA_ARGS__}, NULL, sizeof((double[]){__VA_ARGS__}) / sizeof(double))

Test(oracle, rounds_once_where_double_rounding_would_be_wrong) {
    /* 1 + 2^-24 + 2^-120 must round to 1 + 2^-23 in f32 (via double it would give 1). */
    cr_expect_eq(SUM(GCK_F32, 1.0, 0x1p-24, 0x1p-120), 1.0 + 0x1p-23);
    cr_expect_eq(SUM(GCK_F32, 1.0, 0x1p-24, -0x1p-120), 1.0);
    cr_expect_eq(SUM(GCK_F16, 1.0, 0x1p-11, 0x1p-70), 1.0 + 0x1p-10);
    cr_expect_eq(SUM(GCK_BF16, 1.0, 0x1p-8, 0x1p-90), 1.0 + 0x1p-7);
    cr_expect_eq(SUM(GCK_F64, 1.0, 0x1p-53, 0x1p-200), 1.0 + 0x1p-52);
    cr_expect_eq(SUM(GCK_F64, 1.0, 0x1p-53, -0x1p-200), 1.0);
    /* subnormal results: a tie on the subnormal grid plus a tail below it (rounding to p bits
     * first and then to the subnormal grid would round the tie the wrong way) */
    cr_expect_eq(SUM(GCK_F16, 0x1.8p-24, -0x1p-70), 0x1p-24);
    cr_expect_eq(SUM(GCK_F16, 0x1.8p-24, 0x1p-70), 0x1p-23);
    cr_expect_eq(SUM(GCK_F16, 0x1p-25, 0x1p-80), 0x1p-24);
    cr_expect_eq(SUM(GCK_F32, 0x1p-150, 0x1p-200), 0x1p-149);
    cr_expect_eq(SUM(GCK_F32, 0x1.8p-149, -0x1p-200), 0x1p-149);
    const double sub64 = 0x1p-1074;
    cr_expect_eq(dot_to(GCK_F64, (double[]){3 * sub64, sub64}, (double[]){0.5, 0x1p-100}, 2),
                 2 * sub64);
    cr_expect_eq(dot_to(GCK_F64, (double[]){3 * sub64, -sub64}, (double[]){0.5, 0x1p-100}, 2),
                 sub64);
    cr_expect_eq(dot_to(GCK_F64, (double[]){sub64, sub64}, (double[]){0.5, 0.5}, 2), sub64);
    /* huge cancellation: the small term alone survives */
    cr_expect_eq(SUM(GCK_F32, 0x1p100, 0x1p-100, -0x1p100), 0x1p-100);
    cr_expect_eq(SUM(GCK_F64, 0x1p1000, 0x1p-1000, -0x1p1000), 0x1p-1000);
}

Test(oracle, overflow_and_underflow_boundaries_of_every_output_type) {
    for (size_t o = 0; o < 4; o++) {
        gck_format out = storage[o];
        const gck_format_info *f = gck_format_get(out);
        double hu = 0.5 * gck_ulp(f->max, out), sub = f->min_subnormal, mn = f->min_normal;
        if (out != GCK_F64) {
            cr_expect(isinf(SUM(out, f->max, hu)), "%s max+ulp/2", f->name);
            cr_expect_eq(SUM(out, f->max, hu, -0x1p-900), f->max, "%s below max+ulp/2", f->name);
            double neg = SUM(out, -f->max, -hu);
            cr_expect(isinf(neg) && neg < 0);
            cr_expect(isinf(SUM(out, f->max, f->max)));
        } else {
            cr_expect(isinf(SUM(out, f->max, 0x1p970)), "f64 max+ulp/2");
            cr_expect_eq(SUM(out, f->max, 0x1p970, -1.0), f->max);
            cr_expect(isinf(SUM(out, f->max, f->max, -f->max, f->max)));
            cr_expect_eq(SUM(out, f->max, f->max, -f->max), f->max);
        }
        /* products with a factor 1/2 or 1/4 reach below the subnormal grid of every type */
        const double half[] = {0.5, 0.5}, quarter[] = {0.25};
        cr_expect_eq(dot_to(out, (double[]){sub}, half, 1), 0.0, "%s sub/2 ties to 0", f->name);
        cr_expect(signbit(dot_to(out, (double[]){-sub}, half, 1)), "%s -sub/2 is -0", f->name);
        cr_expect_eq(dot_to(out, (double[]){sub}, quarter, 1), 0.0);
        cr_expect_eq(dot_to(out, (double[]){sub, sub}, (double[]){0.5, 0x1p-60}, 2), sub,
                     "%s sub/2 + tiny", f->name);
        cr_expect_eq(dot_to(out, (double[]){3 * sub}, half, 1), 2 * sub, "%s 1.5 sub", f->name);
        cr_expect_eq(dot_to(out, (double[]){5 * sub}, half, 1), 2 * sub, "%s 2.5 sub", f->name);
        cr_expect_eq(dot_to(out, (double[]){mn, -sub}, half, 2), 0.5 * mn, "%s", f->name);
        cr_expect_eq(dot_to(out, (double[]){mn, -sub}, (double[]){1.0, 0.5}, 2), mn,
                     "%s min_normal - sub/2 ties up", f->name);
        cr_expect_eq(SUM(out, mn, -sub), mn - sub);
    }
}

Test(oracle, blas_semantics_quick_return_and_unread_operands) {
    gck_case c;
    gck_case_init(&c, 3, 2, 4);
    c.ldc = 5; /* padding rows that must stay untouched */
    c.ldd = 5;
    double A[12], B[8], C[10];
    for (int x = 0; x < 12; x++) A[x] = NAN;
    for (int x = 0; x < 8; x++) B[x] = 1.0;
    for (int x = 0; x < 10; x++) C[x] = NAN;
    char msg[256];
    /* alpha = 0: A is not read, D = beta*C; beta = 0: C is not read */
    c.alpha = 0.0;
    c.beta = 0.0;
    cr_assert_eq(gck_oracle_mpfr(&c, A, B, C, C, 0, msg, sizeof msg), GCK_OK);
    for (int j = 0; j < 2; j++)
        for (int i = 0; i < 5; i++)
            cr_expect(i < 3 ? (C[i + 5 * j] == 0 && !signbit(C[i + 5 * j])) : isnan(C[i + 5 * j]),
                      "C(%d,%d) = %g", i, j, C[i + 5 * j]);
    /* beta = 0 with NaN in C and finite A: the NaN must not propagate */
    for (int x = 0; x < 10; x++) C[x] = NAN;
    for (int x = 0; x < 12; x++) A[x] = 0.5;
    c.alpha = 2.0;
    cr_assert_eq(gck_oracle_mpfr(&c, A, B, C, C, 0, msg, sizeof msg), GCK_OK);
    cr_expect_eq(C[0], 4.0);
    cr_expect(isnan(C[3]) && isnan(C[9]), "padding written");
    /* M = 0 and N = 0: nothing is written at all */
    double canary[4] = {7, 7, 7, 7};
    gck_case z;
    gck_case_init(&z, 0, 3, 2);
    cr_assert_eq(gck_oracle_mpfr(&z, NULL, NULL, canary, canary, 0, msg, sizeof msg), GCK_OK);
    gck_case_init(&z, 2, 0, 2);
    cr_assert_eq(gck_oracle_mpfr(&z, NULL, NULL, canary, canary, 0, msg, sizeof msg), GCK_OK);
    for (int x = 0; x < 4; x++) cr_expect_eq(canary[x], 7.0);
    /* K = 0: D = beta*C, A and B not read */
    gck_case_init(&z, 2, 2, 0);
    z.beta = -2.0;
    double c4[4] = {1, -0.0, 3, INFINITY};
    cr_assert_eq(gck_oracle_mpfr(&z, NULL, NULL, c4, c4, 0, msg, sizeof msg), GCK_OK);
    cr_expect_eq(c4[0], -2.0);
    cr_expect(c4[1] == 0 && !signbit(c4[1]), "alpha*(+0) + (-2)*(-0) = +0 + +0");
    cr_expect(isinf(c4[3]) && c4[3] < 0);
}

/* With alpha = 0 or K = 0 the product term is absent, as in BLAS: D = beta*c rounded once,
 * its zero sign included (c = -0 and beta > 0 give -0), and +0 when beta = 0 as well; both
 * oracles, whatever alpha's sign. */
Test(oracle, no_product_term_gives_beta_c_with_its_zero_sign) {
    static const struct {
        double alpha, beta, c;
        int64_t k;
        double want;
    } rows[] = {
        {0.0, 2.0, -0.0, 3, -0.0},  {0.0, 2.0, 0.0, 3, 0.0},  {0.0, -2.0, 0.0, 3, -0.0},
        {0.0, -2.0, -0.0, 3, 0.0},  {0.0, 0.0, -0.0, 3, 0.0}, {-0.0, 1.0, -0.0, 3, -0.0},
        {1.0, 1.0, -0.0, 0, -0.0},  {-1.0, 1.0, 0.0, 0, 0.0}, {-1.0, 0.0, 5.0, 0, 0.0},
        {-3.0, 0.5, -0.0, 0, -0.0},
    };
    char msg[256];
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        gck_case c;
        gck_case_init(&c, 1, 1, rows[r].k);
        c.type_d = c.type_c = GCK_F32;
        c.alpha = rows[r].alpha;
        c.beta = rows[r].beta;
        double A[3] = {1, 2, 3}, B[3] = {-0.0, -0.0, -0.0};
        for (int o = 0; o < 2; o++) {
            float C[1] = {(float)rows[r].c};
            gck_status st = o ? gck_oracle_exact(&c, A, B, C, C, 1, msg, sizeof msg)
                              : gck_oracle_mpfr(&c, A, B, C, C, 1, msg, sizeof msg);
            cr_assert_eq(st, GCK_OK, "%s", msg);
            cr_expect(C[0] == rows[r].want && !signbit(C[0]) == !signbit(rows[r].want),
                      "%s oracle, alpha %g beta %g c %g K %lld: got %g, want %g",
                      o ? "exact" : "mpfr", rows[r].alpha, rows[r].beta, rows[r].c,
                      (long long)rows[r].k, (double)C[0], rows[r].want);
        }
    }
}

Test(oracle, thread_count_does_not_change_a_bit) {
    test_rng r = {test_seed("oracle.threads", 11)};
    gck_case c;
    gck_case_init(&c, 23, 17, 40);
    c.type_a = GCK_F16;
    c.type_b = GCK_BF16;
    c.type_c = GCK_F32;
    c.type_d = GCK_F16;
    c.d_is_c = false;
    c.beta = 0.5;
    c.batch = 3;
    c.stride_a = c.m * c.k;
    c.stride_b = 0;
    c.stride_c = c.m * c.n;
    c.stride_d = c.m * c.n;
    int dist = 2;
    void *A = alloc_elems(c.type_a, gck_case_extent(&c, GCK_A));
    void *B = alloc_elems(c.type_b, gck_case_extent(&c, GCK_B));
    void *C = alloc_elems(c.type_c, gck_case_extent(&c, GCK_C));
    fill(&c, GCK_A, A, &r, gen_dist, &dist);
    fill(&c, GCK_B, B, &r, gen_dist, &dist);
    fill(&c, GCK_C, C, &r, gen_dist, &dist);
    int64_t nd = gck_case_extent(&c, GCK_D);
    void *D1 = alloc_elems(GCK_F16, nd), *D3 = alloc_elems(GCK_F16, nd);
    char msg[256];
    cr_assert_eq(gck_oracle_mpfr(&c, A, B, C, D1, 1, msg, sizeof msg), GCK_OK);
    cr_assert_eq(gck_oracle_mpfr(&c, A, B, C, D3, 3, msg, sizeof msg), GCK_OK);
    cr_expect_eq(memcmp(D1, D3, (size_t)nd * 2), 0);
    for (int64_t b = 0; b < c.batch; b++)
        cr_expect(same_value(gck_oracle_mpfr_element(&c, A, B, C, b, 5, 7),
                             gck_load(D1, GCK_F16, b * c.stride_d + 5 + 7 * c.m)));
    free(A);
    free(B);
    free(C);
    free(D1);
    free(D3);
}

Test(oracle, invalid_cases_are_refused_with_the_field_named) {
    gck_case c;
    gck_case_init(&c, 4, 4, 4);
    c.lda = 2;
    char msg[256];
    double buf[16] = {0};
    cr_expect_eq(gck_oracle_mpfr(&c, buf, buf, buf, buf, 0, msg, sizeof msg), GCK_EINVAL);
    cr_expect(strstr(msg, "lda (2) < M (4)") != NULL, "%s", msg);
    gck_case_init(&c, 4, 4, 4);
    double other[16];
    cr_expect_eq(gck_oracle_mpfr(&c, buf, buf, buf, other, 0, msg, sizeof msg), GCK_EINVAL);
}
