/* The fast exact oracle: every MPFR-oracle test again with the exact oracle (the file is
 * included with gck_oracle_mpfr renamed), a property test of over 10^6 elements compared bit for
 * bit with MPFR across all type tuples and value distributions, and the checker's `both` mode
 * on the grid (values and exact errors identical). */
#include "gemmcheck/oracle.h"

static gck_status exact_as_mpfr(const gck_case *c, const void *A, const void *B, const void *C,
                                void *D, int threads, char *msg, size_t msg_len) {
    return gck_oracle_exact(c, A, B, C, D, threads, msg, msg_len);
}
#define gck_oracle_mpfr exact_as_mpfr
#include "test_oracle.c"
#undef gck_oracle_mpfr

#include "gemmcheck/runner.h"
#include "grid.h"

static bool bits_equal(double a, double b) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    return a == b && signbit(a) == signbit(b);
}

Test(oracle_exact, equals_mpfr_bit_for_bit_on_a_million_elements) {
    test_rng r = {test_seed("oracle_exact.property", 2026)};
    long elements = 0, cases = 0, specials = 0, infs = 0, subnormal = 0, zeros = 0;
    const gck_format st[] = {GCK_F16, GCK_BF16, GCK_F32, GCK_F64};
    while (elements < 1000000) {
        gck_case c;
        gck_case_init(&c, rng_range(&r, 1, 24), rng_range(&r, 1, 24), rng_range(&r, 0, 40));
        c.type_a = st[rng_range(&r, 0, 3)];
        c.type_b = st[rng_range(&r, 0, 3)];
        c.type_c = st[rng_range(&r, 0, 3)];
        c.type_d = st[rng_range(&r, 0, 3)];
        c.d_is_c = false;
        c.scale_type = GCK_F64;
        static const double sc[] = {1, -1, 0.5, 2, 0, 0.75, -3, 0x1p-60, 0x1p70};
        c.alpha = sc[rng_range(&r, 0, 8)];
        c.beta = sc[rng_range(&r, 0, 8)];
        c.order = (rng_next(&r) & 1) ? GCK_ROW_MAJOR : GCK_COL_MAJOR;
        c.transa = (rng_next(&r) & 1) ? GCK_OP_T : GCK_OP_N;
        c.transb = (rng_next(&r) & 1) ? GCK_OP_T : GCK_OP_N;
        int64_t *lds[] = {&c.lda, &c.ldb, &c.ldc, &c.ldd};
        for (int x = 0; x < 4; x++) {
            int64_t rows, cols;
            gck_case_stored_shape(&c, (gck_operand)x, &rows, &cols);
            int64_t need = c.order == GCK_COL_MAJOR ? rows : cols;
            *lds[x] = need > 1 ? need : 1;
        }
        gck_spec s;
        gck_spec_init(&s, &c);
        s.dist_ab = (gck_dist)rng_range(&r, 0, GCK_DIST_COUNT - 1);
        s.dist_c = (gck_dist)rng_range(&r, 0, GCK_DIST_COUNT - 1);
        s.special_pm = (rng_next(&r) % 4 == 0) ? 40 : 0;
        s.c_nan = c.beta == 0 && (rng_next(&r) & 1);
        s.seed = rng_next(&r);
        int64_t na = gck_case_extent(&c, GCK_A), nb = gck_case_extent(&c, GCK_B),
                nc = gck_case_extent(&c, GCK_C), nd = gck_case_extent(&c, GCK_D);
        void *A = alloc_elems(c.type_a, na), *B = alloc_elems(c.type_b, nb),
             *C = alloc_elems(c.type_c, nc), *D1 = alloc_elems(c.type_d, nd),
             *D2 = alloc_elems(c.type_d, nd);
        gck_spec_fill(&s, GCK_A, A);
        gck_spec_fill(&s, GCK_B, B);
        gck_spec_fill(&s, GCK_C, C);
        char msg[256];
        cr_assert_eq(gck_oracle_exact(&c, A, B, C, D1, 2, msg, sizeof msg), GCK_OK, "%s", msg);
        /* the real MPFR oracle (the name is not remapped here) */
        cr_assert_eq((gck_oracle_mpfr)(&c, A, B, C, D2, 2, msg, sizeof msg), GCK_OK, "%s", msg);
        int64_t drs, dcs;
        gck_case_op_strides(&c, GCK_D, &drs, &dcs);
        for (int64_t i = 0; i < c.m; i++)
            for (int64_t j = 0; j < c.n; j++) {
                double x = gck_load(D1, c.type_d, i * drs + j * dcs);
                double y = gck_load(D2, c.type_d, i * drs + j * dcs);
                if (!bits_equal(x, y)) {
                    char rs[2048];
                    gck_spec_format(&s, rs, sizeof rs);
                    cr_assert_fail("(%lld,%lld): exact %a, MPFR %a; %s", (long long)i, (long long)j,
                                   x, y, rs);
                }
                elements++;
                specials += isnan(x);
                infs += isinf(x);
                zeros += x == 0;
                subnormal +=
                    x != 0 && isfinite(x) && fabs(x) < gck_format_get(c.type_d)->min_normal;
            }
        cases++;
        free(A);
        free(B);
        free(C);
        free(D1);
        free(D2);
    }
    fprintf(stderr,
            "[exact vs MPFR] %ld cases, %ld elements bit-identical (%ld NaN, %ld Inf, %ld "
            "zero, %ld subnormal results)\n",
            cases, elements, specials, infs, zeros, subnormal);
}

Test(oracle_exact, both_mode_agrees_on_values_and_exact_errors_over_the_grid) {
    const char *backends[] = {"ref", "openblas", "blis"};
    long checked = 0;
    for (size_t b = 0; b < 3; b++) {
        gck_backend be;
        char msg[1024];
        cr_assert_eq(gck_backend_open(&be, backends[b], msg, sizeof msg), GCK_OK, "%s", msg);
        const gck_support_row *rows;
        size_t n = be.ops->table(be.state, &rows);
        gck_run_options o = {.check = {.threads = 2, .oracle = GCK_ORACLE_BOTH},
                             .no_guard_page = true};
        gck_run_result *res = malloc(sizeof *res);
        for (uint64_t i = 0; i < 300; i++) {
            gck_spec s;
            grid_spec(i, rows, n, &s);
            char repro[2048];
            gck_spec_format(&s, repro, sizeof repro);
            gck_status st = gck_run_spec(&be, &s, &o, res, msg, sizeof msg);
            if (st != GCK_OK) fprintf(stderr, "[oracle both] %s\n  %s\n", msg, repro);
            cr_assert_eq(st, GCK_OK, "%.300s", msg);
            checked += res->check.elements;
        }
        free(res);
        gck_backend_close(&be);
    }
    fprintf(stderr, "[oracle both] %ld elements: exact and MPFR values and errors identical\n",
            checked);
}

Test(oracle_exact, large_gemms_check_a_sample_including_every_edge_row_and_column) {
    gck_case c;
    gck_case_init(&c, 60, 50, 30);
    c.type_a = c.type_b = c.type_c = c.type_d = c.compute = GCK_F32;
    c.scale_type = GCK_F32;
    c.beta = 1;
    gck_spec s;
    gck_spec_init(&s, &c);
    float *A = alloc_elems(GCK_F32, 60 * 30), *B = alloc_elems(GCK_F32, 30 * 50),
          *C = alloc_elems(GCK_F32, 60 * 50), *D = alloc_elems(GCK_F32, 60 * 50);
    gck_spec_fill(&s, GCK_A, A);
    gck_spec_fill(&s, GCK_B, B);
    gck_spec_fill(&s, GCK_C, C);
    memcpy(D, C, sizeof(float) * 60 * 50);
    gck_ref_model m = gck_ref_model_default(GCK_F32);
    char msg[256];
    cr_assert_eq(gck_ref_gemm(&c, &m, A, B, D, D, msg, sizeof msg), GCK_OK);
    gck_support_row row = {
        GCK_F32,
        GCK_F32,
        GCK_F32,
        GCK_F32,
        GCK_F32,
        {.compute = GCK_F32, .inputs_rounded = true, .input_format = GCK_F32, .epilogue = GCK_F32},
        GCK_PROMISE_BETA0_NO_READ_C,
        "test"};
    gck_check_options o = {.threads = 2, .sample_above = 1000, .sample_lines = 4};
    gck_check_result r;
    D[59 + 49 * 60] *= 1.5f; /* the last element: on the last row and column, always checked */
    cr_assert_eq(gck_check_values(&c, &row, &o, A, B, C, D, &r, msg, sizeof msg), GCK_OK, "%s",
                 msg);
    cr_expect(r.sampled);
    cr_expect_eq(r.total_elements, 3000);
    cr_expect(r.elements < 3000 && r.elements >= 60 * 2 + 50 * 2 - 4, "%lld",
              (long long)r.elements);
    cr_expect_eq(r.count[GCK_KIND_OUT_OF_TOLERANCE], 1);
    o.sample_above = 0; /* default threshold: this case is checked in full */
    cr_assert_eq(gck_check_values(&c, &row, &o, A, B, C, D, &r, msg, sizeof msg), GCK_OK);
    cr_expect(!r.sampled);
    cr_expect_eq(r.elements, 3000);
    free(A);
    free(B);
    free(C);
    free(D);
}
