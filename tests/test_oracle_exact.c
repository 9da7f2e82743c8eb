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
#include "oracle_exact.h"

/* the paths that sum the products one by one (the Ozaki splitting has its own test file) */
static const char *const paths[] = {"zero", "fix64", "fix128", "bucket64", "bucket128"};

static int path_index(const gck_case *c, const void *A, const void *B, const void *C) {
    gck_exact_plan *p = gck_exact_plan_new(c, A, B, C);
    cr_assert(p);
    const char *name = gck_exact_plan_path(p);
    gck_exact_plan_free(p);
    for (int t = 0; t < 5; t++)
        if (!strcmp(name, paths[t])) return t;
    cr_assert_fail("unknown path %s", name);
    return -1;
}

static bool bits_equal(double a, double b) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    return a == b && signbit(a) == signbit(b);
}

Test(oracle_exact, equals_mpfr_bit_for_bit_on_a_million_elements) {
    test_rng r = {test_seed("oracle_exact.property", 2026)};
    long elements = 0, cases = 0, specials = 0, infs = 0, subnormal = 0, zeros = 0;
    long per_path[5] = {0};
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
        per_path[path_index(&c, A, B, C)] += c.m * c.n;
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
    fprintf(stderr, "[exact vs MPFR] elements per accumulation path:");
    for (int t = 0; t < 5; t++) fprintf(stderr, " %s %ld", paths[t], per_path[t]);
    fprintf(stderr, "\n");
    for (int t = 0; t < 5; t++) /* every way of summing is compared with MPFR */
        cr_expect_geq(per_path[t], 10000, "path %s: %ld elements", paths[t], per_path[t]);
}

/* Element (i, j) of a case by the exact oracle (with `block` products per bucket copy between
 * folds, 0: the plan's own) and by MPFR, value and exact error of `got` both identical. */
static void compare_elements(const gck_case *c, const void *A, const void *B, const void *C,
                             int64_t block, const char *what, long *checked) {
    gck_exact_plan *p = gck_exact_plan_new(c, A, B, C);
    cr_assert(p);
    if (block) gck_exact_plan_limit_block(p, block);
    gck_exact_ws *w = gck_exact_ws_new(p);
    gck_oracle_ws *mw = gck_oracle_ws_new(c->k);
    cr_assert(w && mw);
    for (int64_t i = 0; i < c->m; i++)
        for (int64_t j = 0; j < c->n; j++) {
            gck_oracle_eval ex, mp;
            gck_oracle_eval_element(mw, c, A, B, C, 0, i, j, false, NULL, &mp);
            /* a nearby wrong result, so that the error is a long exact difference */
            double got = mp.value * (1 + 0x1p-30) + 0x1p-1000;
            gck_exact_eval(p, w, 0, i, j, false, &got, &ex);
            gck_oracle_eval_element(mw, c, A, B, C, 0, i, j, false, &got, &mp);
            cr_assert(bits_equal(ex.value, mp.value) && bits_equal(ex.abs_error, mp.abs_error),
                      "%s, block %lld, (%lld,%lld): exact %a err %a, MPFR %a err %a", what,
                      (long long)block, (long long)i, (long long)j, ex.value, ex.abs_error,
                      mp.value, mp.abs_error);
            (*checked)++;
        }
    gck_oracle_ws_free(mw);
    gck_exact_ws_free(w);
    gck_exact_plan_free(p);
}

/* A dot product of K terms at the buckets' worst case: every significand all ones and shifted
 * by 3 inside its bucket, every product of one sign, so that each fold happens with the bucket
 * a hair below 2^63 (2^124); one tiny value forces the bucket path. */
static void headroom_case(gck_format t, int64_t K, double sign, long *checked) {
    gck_case c;
    gck_case_init(&c, 1, 1, K);
    c.type_a = c.type_b = c.type_c = c.type_d = c.compute = t;
    c.scale_type = GCK_F64;
    c.beta = 0;
    c.d_is_c = false;
    c.lda = 1;
    c.ldb = K;
    c.ldc = c.ldd = 1;
    int p = gck_format_get(t)->precision;
    /* Every significand is p ones (odd: stored and shortest forms agree). Last-bit exponents:
     * A's big values 3 and its tiny one -T, B's big values 3 and its small one 0; T is a
     * multiple of 4 above 100 + p, so that the big products sit at 3 mod 4 in A's and in B's
     * frame: shifted by 3 + 3 inside their bucket. */
    void *A = alloc_elems(t, K), *B = alloc_elems(t, K), *C = alloc_elems(t, 1);
    double allones = ldexp(1, p) - 1;
    int T = (100 + p + 3) / 4 * 4;
    for (int64_t k = 0; k < K - 1; k++) {
        gck_store(A, t, k, sign * ldexp(allones, 3));
        gck_store(B, t, k, ldexp(allones, 3));
    }
    gck_store(A, t, K - 1, ldexp(allones, -T));
    gck_store(B, t, K - 1, allones);
    gck_store(C, t, 0, 0.0);
    c.type_d = GCK_F64;
    const char *want = t == GCK_F64 ? "bucket128" : "bucket64";
    gck_exact_plan *pl = gck_exact_plan_new(&c, A, B, C);
    cr_assert_str_eq(gck_exact_plan_path(pl), want);
    gck_exact_plan_free(pl);
    compare_elements(&c, A, B, C, 0, "headroom", checked);
    free(A);
    free(B);
    free(C);
}

Test(oracle_exact, buckets_fold_exactly_at_every_block_size_and_at_full_headroom) {
    long checked = 0;
    /* f32: 2^9 products per bucket copy fit; f64: 2^12 (four copies: 2048 and 16384 a round) */
    headroom_case(GCK_F32, 5000, 1.0, &checked);
    headroom_case(GCK_F32, 5000, -1.0, &checked);
    headroom_case(GCK_BF16, 5000, -1.0, &checked);
    headroom_case(GCK_F64, 40000, 1.0, &checked);
    headroom_case(GCK_F64, 40000, -1.0, &checked);
    headroom_case(GCK_F32, 200, -1.0, &checked); /* K < 256: one copy, folded once */
    long headroom = checked;
    /* wide exponents and cancellation with folds after 1, 2, 3 and 7 products per copy */
    test_rng r = {test_seed("oracle_exact.buckets", 77)};
    const gck_format ts[] = {GCK_F32, GCK_F64, GCK_BF16, GCK_F16};
    const gck_dist ds[] = {GCK_DIST_LOGU, GCK_DIST_CANCEL, GCK_DIST_NORMAL};
    long per_path[5] = {0};
    for (int n = 0; n < 120; n++) {
        gck_case c;
        gck_case_init(&c, rng_range(&r, 1, 6), rng_range(&r, 1, 6), rng_range(&r, 1, 600));
        c.type_a = ts[rng_range(&r, 0, 1)];
        c.type_b = ts[rng_range(&r, 0, 3)];
        c.type_c = ts[rng_range(&r, 0, 3)];
        c.type_d = ts[rng_range(&r, 0, 3)];
        c.d_is_c = false;
        c.scale_type = GCK_F64;
        c.alpha = (rng_next(&r) & 1) ? -0.75 : 0x1p-40;
        c.beta = (rng_next(&r) & 1) ? 0.5 : 0;
        c.lda = c.m;
        c.ldb = c.k;
        c.ldc = c.ldd = c.m;
        gck_spec s;
        gck_spec_init(&s, &c);
        s.dist_ab = ds[rng_range(&r, 0, 2)];
        s.dist_c = GCK_DIST_UNIFORM;
        s.seed = rng_next(&r);
        void *A = alloc_elems(c.type_a, c.m * c.k), *B = alloc_elems(c.type_b, c.k * c.n),
             *C = alloc_elems(c.type_c, c.m * c.n);
        gck_spec_fill(&s, GCK_A, A);
        gck_spec_fill(&s, GCK_B, B);
        gck_spec_fill(&s, GCK_C, C);
        if (rng_next(&r) & 1) /* a tiny value spreads the exponents past any fixed point */
            gck_store(A, c.type_a, rng_range(&r, 0, c.m * c.k - 1), -0x1p-120);
        int path = path_index(&c, A, B, C);
        per_path[path] += c.m * c.n;
        const int64_t blocks[] = {1, 2, 3, 7, 0};
        for (int b = 0; b < 5; b++) compare_elements(&c, A, B, C, blocks[b], "random", &checked);
        free(A);
        free(B);
        free(C);
    }
    fprintf(stderr,
            "[buckets] %ld headroom elements and %ld elements at 5 fold intervals equal to MPFR "
            "(value and exact error); bucket64 %ld, bucket128 %ld elements\n",
            headroom, checked - headroom, per_path[3], per_path[4]);
    cr_expect_geq(per_path[3], 200);
    cr_expect_geq(per_path[4], 200);
}

/* A GEMM large enough to be cut into several tiles per dimension (with ragged edges) and two
 * batch members: every element of D is written once, where it belongs, with the value the
 * per-element evaluation (and, on a sample, MPFR) gives; D's padding is not touched. */
Test(oracle_exact, tiles_cover_every_element_once_in_the_right_place) {
    gck_case c;
    gck_case_init(&c, 70, 45, 2000); /* tiles of 32 x 32 for K = 2000 */
    c.type_a = GCK_F32;
    c.type_b = GCK_F32;
    c.type_c = c.type_d = GCK_F64;
    c.d_is_c = false;
    c.beta = 0.5;
    c.batch = 2;
    c.lda = 70;
    c.ldb = 2000;
    c.ldc = 70;
    c.ldd = 73; /* three padding rows per column */
    c.stride_a = 70 * 2000;
    c.stride_b = 0; /* broadcast */
    c.stride_c = 70 * 45;
    c.stride_d = 73 * 45;
    char msg[256];
    cr_assert_eq(gck_case_validate(&c, msg, sizeof msg), GCK_OK, "%s", msg);
    gck_spec s;
    gck_spec_init(&s, &c);
    s.dist_ab = GCK_DIST_LOGU;
    s.seed = 99;
    int64_t nd = gck_case_extent(&c, GCK_D);
    void *A = alloc_elems(c.type_a, gck_case_extent(&c, GCK_A)),
         *B = alloc_elems(c.type_b, gck_case_extent(&c, GCK_B)),
         *C = alloc_elems(c.type_c, gck_case_extent(&c, GCK_C));
    double *D = alloc_elems(GCK_F64, nd), *pad = alloc_elems(GCK_F64, 1);
    gck_spec_fill(&s, GCK_A, A);
    gck_spec_fill(&s, GCK_B, B);
    gck_spec_fill(&s, GCK_C, C);
    cr_assert_eq(gck_oracle_exact(&c, A, B, C, D, 2, msg, sizeof msg), GCK_OK, "%s", msg);
    gck_exact_plan *p = gck_exact_plan_new(&c, A, B, C);
    gck_exact_ws *w = gck_exact_ws_new(p);
    gck_oracle_ws *mw = gck_oracle_ws_new(c.k);
    long checked = 0, mpfr = 0;
    for (int64_t b = 0; b < c.batch; b++)
        for (int64_t j = 0; j < c.n; j++)
            for (int64_t i = 0; i < c.ldd && b * c.stride_d + j * c.ldd + i < nd; i++) {
                double got = D[b * c.stride_d + j * c.ldd + i];
                if (i >= c.m) { /* padding: the 0xA5 fill, untouched */
                    cr_assert(!memcmp(&got, pad, sizeof got), "padding (%lld,%lld) written",
                              (long long)i, (long long)j);
                    continue;
                }
                gck_oracle_eval ev;
                gck_exact_eval(p, w, b, i, j, false, NULL, &ev);
                cr_assert(bits_equal(got, ev.value), "D[%lld](%lld,%lld): %a, element %a",
                          (long long)b, (long long)i, (long long)j, got, ev.value);
                checked++;
                if ((i * 7 + j * 3 + b) % 41 == 0) {
                    gck_oracle_eval_element(mw, &c, A, B, C, b, i, j, false, NULL, &ev);
                    cr_assert(bits_equal(got, ev.value), "MPFR D[%lld](%lld,%lld): %a vs %a",
                              (long long)b, (long long)i, (long long)j, got, ev.value);
                    mpfr++;
                }
            }
    cr_expect_eq(checked, 2 * 70 * 45);
    fprintf(stderr, "[tiles] %ld elements in place and equal (%ld also to MPFR)\n", checked, mpfr);
    gck_oracle_ws_free(mw);
    gck_exact_ws_free(w);
    gck_exact_plan_free(p);
    free(A);
    free(B);
    free(C);
    free(D);
    free(pad);
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
