/* The exact oracle with the Ozaki splitting forced (oracles/oracle_ozaki.c): every MPFR-oracle
 * test again (the file is included with gck_oracle_mpfr renamed to the exact oracle in that
 * mode), a property test of over 10^6 elements whose values and exact errors are compared bit for
 * bit with MPFR across every type tuple, value distribution, layout and batch kind, cases that
 * need many slices or cannot be split, and a wrong slice product caught by the check. */
#include "gemmcheck/oracle.h"
#include "oracle_ozaki.h"

static gck_status ozaki_as_mpfr(const gck_case *c, const void *A, const void *B, const void *C,
                                void *D, int threads, char *msg, size_t msg_len) {
    gck_ozaki_set_mode(GCK_OZAKI_ALWAYS);
    return gck_oracle_exact(c, A, B, C, D, threads, msg, msg_len);
}
#define gck_oracle_mpfr ozaki_as_mpfr
#include "test_oracle.c"
#undef gck_oracle_mpfr

#include "oracle_exact.h"
#include "ozaki_internal.h"

static bool last_had_tails;            /* the last case compare_case split had values with a tail */
static long lane_elements;             /* evaluations the exact oracle made by its 128-bit lane */
static long lane256_elements;          /* and by its 256-bit lane */
static long lane_double_elements;      /* of the 128-bit lane's, those finished in doubles */
static int64_t tails_met, tails_ahead; /* elements meeting a tail; those summed ahead */

static bool same_bits(double a, double b) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    return a == b && signbit(a) == signbit(b);
}

/* Every element of every batch member by the exact oracle's plan (in the current mode) and by
 * MPFR, the value and the exact errors of two nearby wrong results identical (one off by a
 * relative 2^-30 plus 2^-1000, whose low bits lie below most sums' frames, and one off by 2^-20
 * alone); returns the plan's path name into path (static storage of the oracle) and counts
 * elements. */
static const char *compare_case_with(const gck_spec *s, const void *A, const void *B, const void *C,
                                     long *elements, const gck_ozaki_options *opt) {
    const gck_case *c = &s->c;
    gck_exact_plan *p = gck_exact_plan_new_with(c, A, B, C, opt);
    cr_assert(p);
    const char *path = gck_exact_plan_path(p);
    char d[256];
    gck_exact_plan_describe(p, d, sizeof d);
    last_had_tails = strstr(d, "; 0 + 0 values") == NULL && !strcmp(path, "ozaki");
    gck_exact_ws *w = gck_exact_ws_new(p), *wv = gck_exact_ws_new(p);
    gck_oracle_ws *mw = gck_oracle_ws_new(c->k);
    cr_assert(w && wv && mw);
    for (int64_t b = 0; b < c->batch; b++)
        for (int64_t i = 0; i < c->m; i++)
            for (int64_t j = 0; j < c->n; j++) {
                gck_oracle_eval ex, mp;
                gck_exact_eval(p, wv, b, i, j, false, NULL, &ex); /* the value, to be wrong by */
                double wrong[2] = {ex.value * (1 + 0x1p-30) + 0x1p-1000, ex.value * (1 + 0x1p-20)};
                for (int g = 0; g < 2; g++) {
                    gck_exact_eval(p, w, b, i, j, false, &wrong[g], &ex);
                    if (g == 0) /* MPFR's terms once, the error of each wrong value */
                        gck_oracle_eval_element(mw, c, A, B, C, b, i, j, false, &wrong[g], &mp);
                    else
                        gck_oracle_eval_again(mw, &wrong[g], &mp);
                    if (same_bits(ex.value, mp.value) && same_bits(ex.abs_error, mp.abs_error))
                        continue;
                    char rs[2048];
                    gck_spec_format(s, rs, sizeof rs);
                    cr_assert_fail("%s, [%lld](%lld,%lld) got %a: exact %a err %a, MPFR %a err "
                                   "%a; %s",
                                   path, (long long)b, (long long)i, (long long)j, wrong[g],
                                   ex.value, ex.abs_error, mp.value, mp.abs_error, rs);
                }
                (*elements)++;
            }
    /* the same elements a run down a column at a time (runs of 1 to 64 rows): every value,
     * error and sign as one by one */
    gck_exact_ws *wr = gck_exact_ws_new(p), *wo = gck_exact_ws_new(p);
    cr_assert(wr && wo);
    for (int64_t b = 0; b < c->batch; b++)
        for (int64_t j = 0; j < c->n; j++)
            for (int64_t i0 = 0, len = 1 + (j * 7 + b) % 64; i0 < c->m; i0 += len) {
                int64_t i1 = c->m - i0 < len ? c->m : i0 + len;
                gck_oracle_eval one[64], run[64];
                double wrong[64];
                for (int g = 0; g < 3; g++) { /* no result, then the two wrong ones */
                    for (int64_t i = i0; i < i1; i++) {
                        gck_exact_eval(p, wo, b, i, j, false, NULL, &one[i - i0]);
                        double v = one[i - i0].value;
                        wrong[i - i0] = g == 1 ? v * (1 + 0x1p-30) + 0x1p-1000 : v * (1 + 0x1p-20);
                        if (g) gck_exact_eval(p, wo, b, i, j, false, &wrong[i - i0], &one[i - i0]);
                    }
                    gck_exact_eval_run(p, wr, b, i0, i1, j, g ? wrong : NULL, run);
                    for (int64_t i = i0; i < i1; i++) {
                        const gck_oracle_eval *x = &one[i - i0], *y = &run[i - i0];
                        cr_assert(same_bits(x->value, y->value) &&
                                      same_bits(x->abs_error, y->abs_error) &&
                                      x->err_sign == y->err_sign &&
                                      x->special_input == y->special_input,
                                  "%s, [%lld](%lld,%lld), run %lld..%lld, result %d: one by one "
                                  "%a err %a, the run %a err %a",
                                  path, (long long)b, (long long)i, (long long)j, (long long)i0,
                                  (long long)i1, g, x->value, x->abs_error, y->value, y->abs_error);
                    }
                }
            }
    gck_exact_ws_free(wr);
    gck_exact_ws_free(wo);
    lane_elements += gck_exact_ws_lane(w);
    lane256_elements += gck_exact_ws_lane256(w);
    lane_double_elements += gck_exact_ws_lane_double(w);
    int64_t met, ahead; /* wv evaluated each element once */
    gck_exact_ws_tails(wv, &met, &ahead);
    tails_met += met, tails_ahead += ahead;
    gck_oracle_ws_free(mw);
    gck_exact_ws_free(w);
    gck_exact_ws_free(wv);
    gck_exact_plan_free(p);
    return path;
}

/* compare_case_with under the process's options (the mode the test set) */
static const char *compare_case(const gck_spec *s, const void *A, const void *B, const void *C,
                                long *elements) {
    gck_ozaki_options o = gck_ozaki_defaults();
    return compare_case_with(s, A, B, C, elements, &o);
}

/* A random case of the property test: any type tuple, layout, transposes, batch kind (shared A or
 * B, or one per member), K up to 700, every value distribution, specials in a quarter. */
static void random_case(test_rng *r, gck_spec *s) {
    static const gck_format st[] = {GCK_F16, GCK_BF16, GCK_F32, GCK_F64};
    static const double sc[] = {1, -1, 0.5, 2, 0.75, -3, 0x1p-60, 0x1p70};
    gck_case c;
    gck_case_init(&c, rng_range(r, 1, 20), rng_range(r, 1, 20), rng_range(r, 1, 700));
    c.type_a = st[rng_range(r, 0, 3)];
    c.type_b = st[rng_range(r, 0, 3)];
    c.type_c = st[rng_range(r, 0, 3)];
    c.type_d = st[rng_range(r, 0, 3)];
    c.d_is_c = false;
    c.alpha = sc[rng_range(r, 0, 7)];
    c.beta = rng_next(r) & 1 ? sc[rng_range(r, 0, 7)] : 0;
    c.order = (rng_next(r) & 1) ? GCK_ROW_MAJOR : GCK_COL_MAJOR;
    c.transa = (rng_next(r) & 1) ? GCK_OP_T : GCK_OP_N;
    c.transb = (rng_next(r) & 1) ? GCK_OP_T : GCK_OP_N;
    int64_t *lds[] = {&c.lda, &c.ldb, &c.ldc, &c.ldd};
    for (int x = 0; x < 4; x++) {
        int64_t rows, cols;
        gck_case_stored_shape(&c, (gck_operand)x, &rows, &cols);
        int64_t need = c.order == GCK_COL_MAJOR ? rows : cols;
        *lds[x] = (need > 1 ? need : 1) + rng_range(r, 0, 2);
    }
    if (rng_next(r) % 3 == 0) { /* a batch: A or B shared by the members, or neither */
        c.batch = rng_range(r, 2, 3);
        int kind = (int)rng_range(r, 0, 2);
        c.stride_a = kind == 0 ? 0 : gck_case_footprint(&c, GCK_A);
        c.stride_b = kind == 1 ? 0 : gck_case_footprint(&c, GCK_B);
        c.stride_c = gck_case_footprint(&c, GCK_C);
        c.stride_d = gck_case_footprint(&c, GCK_D);
    }
    gck_spec_init(s, &c);
    s->dist_ab = (gck_dist)rng_range(r, 0, GCK_DIST_COUNT - 1);
    s->dist_c = (gck_dist)rng_range(r, 0, GCK_DIST_COUNT - 1);
    s->special_pm = (rng_next(r) % 4 == 0) ? 20 : 0;
    s->seed = rng_next(r);
}

#ifdef GCK_TEST_SANITIZED
#define PROPERTY_ELEMENTS 150000 /* the sanitizers look for memory errors: CI stays short */
#else
#define PROPERTY_ELEMENTS 1000000
#endif

/* A, B and C of a spec, allocated and filled. */
static void filled_operands(const gck_spec *s, void *X[3]) {
    for (int x = 0; x < 3; x++) {
        X[x] = alloc_elems(gck_case_type(&s->c, (gck_operand)x),
                           gck_case_extent(&s->c, (gck_operand)x));
        gck_spec_fill(s, (gck_operand)x, X[x]);
    }
}

Test(ozaki, splitting_equals_mpfr_bit_for_bit_on_a_million_elements, .timeout = 900) {
    gck_ozaki_set_mode(GCK_OZAKI_ALWAYS);
    test_rng r = {test_seed("oracle_ozaki.property", 2026)};
    long elements = 0, split = 0, not_split = 0, cases = 0, tails = 0, lane_before = lane_elements,
         lane256_before = lane256_elements, double_before = lane_double_elements;
    int64_t met_before = tails_met, ahead_before = tails_ahead;
    while (elements < PROPERTY_ELEMENTS) {
        gck_spec s;
        random_case(&r, &s);
        void *X[3];
        filled_operands(&s, X);
        long before = elements;
        const char *path = compare_case(&s, X[0], X[1], X[2], &elements);
        tails += last_had_tails ? elements - before : 0;
        if (!strcmp(path, "ozaki"))
            split += elements - before;
        else
            not_split += elements - before;
        cases++;
        for (int x = 0; x < 3; x++) free(X[x]);
    }
    long lane = lane_elements - lane_before, lane256 = lane256_elements - lane256_before,
         dbl = lane_double_elements - double_before;
    fprintf(stderr,
            "[ozaki vs MPFR] %ld cases, %ld elements identical in value and exact errors: %ld by "
            "splitting (%ld of them with tails), %ld summed one by one (no product); %ld of the "
            "%ld evaluations by the 128-bit lane (%ld of them finished in doubles), %ld by the "
            "256-bit lane\n",
            cases, elements, split, tails, not_split, lane, 2 * elements, dbl, lane256);
    long met = (long)(tails_met - met_before), ahead = (long)(tails_ahead - ahead_before);
    fprintf(stderr,
            "[ozaki vs MPFR] of the %ld elements meeting a tail, %ld had their tail "
            "products summed ahead in doubles and %ld added them one by one\n",
            met, ahead, met - ahead);
    cr_expect_geq(ahead, PROPERTY_ELEMENTS / 200, "only %ld elements summed their tails ahead",
                  ahead);
    cr_expect_geq(met - ahead, PROPERTY_ELEMENTS / 1000,
                  "only %ld elements added their tail products one by one", met - ahead);
    cr_expect_geq(lane, PROPERTY_ELEMENTS / 2, "only %ld evaluations took the 128-bit lane", lane);
    cr_expect_geq(dbl, PROPERTY_ELEMENTS / 4, "only %ld evaluations finished in doubles", dbl);
    cr_expect_geq(lane - dbl, PROPERTY_ELEMENTS / 4, "only %ld finished in integers", lane - dbl);
    cr_expect_geq(lane256, PROPERTY_ELEMENTS / 20, "only %ld evaluations took the 256-bit lane",
                  lane256);
    cr_expect_geq(tails, PROPERTY_ELEMENTS / 10, "only %ld elements had tails", tails);
    cr_expect_geq(split, PROPERTY_ELEMENTS * 8 / 10, "only %ld elements were split", split);
}

/* One element's results far from its exact value v (a double, D being f64): 0.3·v, -1.7·v, v
 * moved by a relative 3·2^-60 either way, 1.5·2^-1000; each one's value, exact error and its
 * sign against MPFR's; counted in *same (*other) when TwoSum(v, -g) leaves a residue of the
 * difference's sign (of the other sign), which the double lane rounds up past. False on a
 * mismatch (reported). */
static bool distant_results(gck_exact_plan *p, gck_exact_ws *w, gck_oracle_ws *mw,
                            const gck_case *c, void *X[3], int64_t b, int64_t i, int64_t j,
                            long *same, long *other) {
    gck_oracle_eval ex, mp;
    gck_exact_eval(p, w, b, i, j, false, NULL, &ex);
    double v = ex.value;
    if (!isfinite(v) || v == 0) return true;
    gck_exact_eval(p, w, b, i, j, false, &v, &ex);
    if (ex.abs_error != 0) return true; /* v is not the exact value */
    const double gs[] = {0.3 * v, -1.7 * v, v * (1 + 0x3p-60), v * (1 - 0x3p-60),
                         copysign(0x1.8p-1000, v)};
    for (int q = 0; q < 5; q++) {
        double g = gs[q], d = v - g, bd = d - v, e = (v - (d - bd)) + (-g - bd);
        *same += e != 0 && (e > 0) == (d > 0);
        *other += e != 0 && (e > 0) != (d > 0);
        gck_exact_eval(p, w, b, i, j, false, &g, &ex);
        gck_oracle_eval_element(mw, c, X[0], X[1], X[2], b, i, j, false, &g, &mp);
        if (same_bits(ex.value, mp.value) && same_bits(ex.abs_error, mp.abs_error) &&
            ex.err_sign == mp.err_sign)
            continue;
        cr_expect_fail("[%lld](%lld,%lld) v %a, result %a: exact err %a sign %d, MPFR err %a "
                       "sign %d",
                       (long long)b, (long long)i, (long long)j, v, g, ex.abs_error, ex.err_sign,
                       mp.abs_error, mp.err_sign);
        return false;
    }
    return true;
}

/* The 128-bit lane's elements finished in doubles (a value that is a double, its error by
 * TwoSum rounded up): results far from the exact value, whose differences from it are not
 * doubles, with residues of both signs, equal MPFR's errors and their signs bit for bit. */
Test(ozaki, the_double_lanes_errors_of_distant_results_equal_mpfr, .timeout = 600) {
    gck_ozaki_set_mode(GCK_OZAKI_ALWAYS);
    test_rng r = {test_seed("oracle_ozaki.double_lane", 7)};
    long elements = 0, same = 0, other = 0, dbl = 0;
    bool ok = true;
    while (ok && elements < 20000) {
        gck_spec s;
        random_case(&r, &s);
        s.c.type_d = GCK_F64;
        void *X[3];
        filled_operands(&s, X);
        gck_exact_plan *p = gck_exact_plan_new(&s.c, X[0], X[1], X[2]);
        gck_exact_ws *w = gck_exact_ws_new(p);
        gck_oracle_ws *mw = gck_oracle_ws_new(s.c.k);
        cr_assert(p && w && mw);
        for (int64_t b = 0; ok && b < s.c.batch; b++)
            for (int64_t i = 0; ok && i < s.c.m; i++)
                for (int64_t j = 0; ok && j < s.c.n; j++, elements++)
                    ok = distant_results(p, w, mw, &s.c, X, b, i, j, &same, &other);
        dbl += gck_exact_ws_lane_double(w);
        gck_oracle_ws_free(mw);
        gck_exact_ws_free(w);
        gck_exact_plan_free(p);
        for (int x = 0; x < 3; x++) free(X[x]);
    }
    fprintf(stderr,
            "[ozaki vs MPFR] %ld elements with distant results: %ld evaluations finished in "
            "doubles; TwoSum residues of the difference's sign %ld, of the other sign %ld\n",
            elements, dbl, same, other);
    cr_expect_geq(dbl, elements, "only %ld evaluations finished in doubles", dbl);
    cr_expect_geq(same, 1000);
    cr_expect_geq(other, 1000);
}

/* One f64 slice product's term and the tails' products summed ahead, both doubles whose exact
 * sum is not one: f16 values of 11 bits over 2^5 .. 2^16 in both operands (one slice of 22 bits
 * each at K = 256: terms from 2^-10 to about 2^40) and, in every row of op(A), a tail 2^-24 (its
 * products down to 2^-29): the element's exact value spans about 70 bits. Its value, and its exact
 * error at its own double (0 for a few), equal MPFR's bit for bit; the double lane takes the
 * elements whose sum is a double and leaves these to the integers. */
Test(ozaki, a_term_and_its_tails_whose_sum_is_not_a_double_equal_mpfr) {
    gck_ozaki_set_mode(GCK_OZAKI_ALWAYS);
    enum { M = 8, N = 8, K = 256 };
    gck_case c;
    gck_case_init(&c, M, N, K);
    c.type_a = c.type_b = GCK_F16;
    c.type_c = c.type_d = c.compute = c.scale_type = GCK_F64;
    c.d_is_c = false;
    test_rng r = {test_seed("oracle_ozaki.term_and_tails", 5)};
    uint16_t A[M * K], B[K * N]; /* column-major, as gck_case_init sets the leading dimensions */
    for (int x = 0; x < M * K; x++)
        A[x] = gck_f16_from_double(
            ldexp(1 + (double)(rng_next(&r) % 1024) / 1024, 5 + (int)(rng_next(&r) % 11)));
    for (int x = 0; x < K * N; x++)
        B[x] = gck_f16_from_double(
            ldexp(1 + (double)(rng_next(&r) % 1024) / 1024, 5 + (int)(rng_next(&r) % 11)));
    for (int i = 0; i < M; i++) A[i + M * (int)(rng_next(&r) % K)] = gck_f16_from_double(0x1p-24);
    gck_exact_plan *p = gck_exact_plan_new(&c, A, B, NULL);
    gck_exact_ws *w = gck_exact_ws_new(p);
    gck_oracle_ws *mw = gck_oracle_ws_new(K);
    cr_assert(p && w && mw);
    char d[256];
    gck_exact_plan_describe(p, d, sizeof d);
    cr_assert(strstr(d, "1 x 1 slices of 22 bits") && strstr(d, "8 + 0 values with a tail"), "%s",
              d);
    long inexact = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            gck_oracle_eval ex, mp;
            gck_exact_eval(p, w, 0, i, j, false, NULL, &ex);
            double v = ex.value;
            gck_exact_eval(p, w, 0, i, j, false, &v, &ex);
            gck_oracle_eval_element(mw, &c, A, B, NULL, 0, i, j, false, &v, &mp);
            cr_expect(same_bits(ex.value, mp.value) && same_bits(ex.abs_error, mp.abs_error) &&
                          ex.err_sign == mp.err_sign,
                      "(%d,%d): value %a err %a sign %d, MPFR %a err %a sign %d", i, j, ex.value,
                      ex.abs_error, ex.err_sign, mp.value, mp.abs_error, mp.err_sign);
            inexact += mp.abs_error != 0;
        }
    int64_t met, ahead;
    gck_exact_ws_tails(w, &met, &ahead);
    fprintf(stderr,
            "[ozaki vs MPFR] a term and its tails: %s; %ld of %d elements not doubles, %lld "
            "evaluations met a tail\n",
            d, inexact, M * N, (long long)met);
    cr_expect_geq(inexact, M * N / 2, "only %ld of the elements were not doubles", inexact);
    cr_expect_geq(met, 2 * M * N);
    gck_oracle_ws_free(mw);
    gck_exact_ws_free(w);
    gck_exact_plan_free(p);
}

/* A 1 x 1 x K dot product whose A values span `span` bits (a big value, a tiny one and values of
 * two bits between), against normally distributed B values: the plan splits it into enough
 * slices, or tails, or falls back when over the limit, and equals MPFR either way; *slices: the
 * plan's slices of op(A), *tails: its values with a tail (each when not NULL). */
static void span_case(gck_format t, int span, int64_t K, const char *want, int *slices,
                      long *tails) {
    gck_case c;
    gck_case_init(&c, 1, 1, K);
    c.type_a = c.type_b = c.type_c = c.type_d = c.compute = t;
    c.d_is_c = false;
    gck_spec s;
    gck_spec_init(&s, &c);
    s.dist_ab = GCK_DIST_NORMAL;
    void *A = alloc_elems(t, K), *B = alloc_elems(t, K), *C = alloc_elems(t, 1);
    gck_spec_fill(&s, GCK_B, B);
    gck_spec_fill(&s, GCK_C, C);
    int p = gck_format_get(t)->precision;
    for (int64_t k = 0; k < K; k++) gck_store(A, t, k, k % 3 ? 1.5 : -0.75);
    gck_store(A, t, 0, ldexp(1, span - p - 1)); /* its top bit 2^(span - p - 1) ... */
    gck_store(A, t, K - 1, -ldexp(1, -p));      /* ... over a lowest set bit 2^-p */
    long n = 0;
    cr_assert_str_eq(compare_case(&s, A, B, C, &n), want, "%s, span %d", gck_format_get(t)->name,
                     span);
    gck_exact_plan *pl = gck_exact_plan_new(&c, A, B, C);
    char d[256];
    gck_exact_plan_describe(pl, d, sizeof d);
    fprintf(stderr, "[ozaki] %s, K = %lld, A spans %d bits: %s\n", gck_format_get(t)->name,
            (long long)K, span, d);
    if (slices) *slices = atoi(strchr(d, ':') ? strchr(d, ':') + 1 : "0");
    const char *last = strrchr(d, ';');
    long ta = 0, tb = 0; /* "; A + B values with a tail" */
    if (tails) *tails = last && sscanf(last + 1, "%ld + %ld", &ta, &tb) == 2 ? ta + tb : 0;
    gck_exact_plan_free(pl);
    free(A);
    free(B);
    free(C);
}

Test(ozaki, wide_rows_take_more_slices_or_tails) {
    gck_ozaki_set_mode(GCK_OZAKI_ALWAYS);
    int few = 0, many = 0;
    long tails = 0;
    span_case(GCK_F32, 30, 64, "ozaki", &few, NULL);     /* beta = 23 at K = 64 */
    span_case(GCK_F32, 110, 64, "ozaki", &many, &tails); /* more slices, or tails */
    cr_expect(few < many || tails > 0, "%d slices for 30 bits, %d for 110 (%ld tails)", few, many,
              tails);
    span_case(GCK_F64, 118, 4096, "ozaki", NULL, NULL);
    span_case(GCK_F64, 400, 4096, "ozaki", NULL, NULL); /* beyond 120 bits: the tiny value's tail */
    span_case(GCK_F32, 150, 4096, "ozaki", NULL, NULL);
    span_case(GCK_F16, 27, 5000, "ozaki", NULL, NULL); /* f16 from 2^15 down to 2^-11 */
    gck_ozaki_set_mode(GCK_OZAKI_NEVER);
    span_case(GCK_F64, 400, 4096, "bucket128", NULL, NULL);
    span_case(GCK_F32, 150, 4096, "bucket64", NULL, NULL);
}

/* Tails in both operands, summed ahead of the elements (the splitting forced): values of 11
 * significant bits (f16's, stored as f64 or f32), most within 8 binades of 1 and one in 150 from
 * 2^-12 down to 2^-15, so that a plan of one slice each leaves those a tail whose products with
 * the partner lines stay exact in doubles: tail·b, a·tail and tail·tail products all meet, every
 * element's tails are summed ahead, and every value and exact error equals MPFR's. The tails' pass
 * over whole columns reads op(A) at op(B)'s tails' steps: f64 operands transposed as doubles, f32
 * ones with A transposed (op(A)'s columns strided) as floats, f32 and f16 ones (F16C) with
 * op(A)'s columns adjacent from A itself (dropping any of the three parts fails it). */
static void both_tails_case(gck_format t, gck_op transa) {
    gck_case c;
    gck_case_init(&c, 40, 37, 600);
    c.type_a = c.type_b = c.type_c = c.type_d = c.compute = t;
    c.transa = transa;
    c.lda = gck_case_min_ld(&c, GCK_A);
    c.transb = GCK_OP_T;
    c.ldb = gck_case_min_ld(&c, GCK_B);
    c.d_is_c = false;
    gck_spec s;
    gck_spec_init(&s, &c);
    void *A = alloc_elems(t, 40 * 600), *B = alloc_elems(t, 37 * 600), *C = alloc_elems(t, 40 * 37);
    uint64_t st = 0x2545f4914f6cdd1du;
    for (int64_t x = 0; x < 40 * 600 + 37 * 600; x++) {
        st ^= st << 13, st ^= st >> 7, st ^= st << 17;
        int e = st % 150 ? -(int)(st >> 8 & 7) : -12 - (int)(st >> 8 & 3);
        double v = ldexp((st >> 20 & 1 ? -1 : 1) * (1024 + (double)(st >> 24 & 1023)), e - 10);
        if (x < 40 * 600)
            gck_store(A, t, x, v);
        else
            gck_store(B, t, x - 40 * 600, v);
    }
    long n = 0;
    int64_t ahead0 = tails_ahead;
    cr_assert_str_eq(compare_case(&s, A, B, C, &n), "ozaki", "%s", gck_format_get(t)->name);
    gck_exact_plan *pl = gck_exact_plan_new(&c, A, B, C);
    char d[256];
    gck_exact_plan_describe(pl, d, sizeof d);
    gck_exact_plan_free(pl);
    fprintf(stderr, "[ozaki] tails of both operands, %s: %s; %lld of %ld elements summed ahead\n",
            gck_format_get(t)->name, d, (long long)(tails_ahead - ahead0), n);
    const char *last = strrchr(d, ';');
    long ta = 0, tb = 0; /* "; A + B values with a tail" */
    cr_assert(last && sscanf(last + 1, "%ld + %ld", &ta, &tb) == 2 && ta > 0 && tb > 0, "%s", d);
    cr_assert(last_had_tails && tails_ahead - ahead0 >= 40 * 37 * 9 / 10,
              "%s: %lld of %ld summed ahead", gck_format_get(t)->name,
              (long long)(tails_ahead - ahead0), n);
    free(A);
    free(B);
    free(C);
}

Test(ozaki, tails_of_both_operands_summed_ahead_equal_mpfr) {
    gck_ozaki_set_mode(GCK_OZAKI_ALWAYS);
    both_tails_case(GCK_F64, GCK_OP_N);
    both_tails_case(GCK_F32, GCK_OP_T);
    both_tails_case(GCK_F32, GCK_OP_N);
    both_tails_case(GCK_F16, GCK_OP_N);
    gck_ozaki_set_mode(GCK_OZAKI_NEVER);
}

Test(ozaki, auto_mode_splits_large_products_only) {
    gck_ozaki_set_mode(GCK_OZAKI_AUTO);
    gck_case c;
    gck_case_init(&c, 16, 16, 16);
    c.type_a = c.type_b = c.type_c = c.type_d = c.compute = GCK_F32;
    void *A = alloc_elems(GCK_F32, 256 * 256), *B = alloc_elems(GCK_F32, 256 * 256),
         *C = alloc_elems(GCK_F32, 256 * 256);
    gck_spec s;
    gck_spec_init(&s, &c);
    gck_spec_fill(&s, GCK_A, A);
    gck_spec_fill(&s, GCK_B, B);
    gck_exact_plan *p = gck_exact_plan_new(&c, A, B, C);
    cr_expect_str_neq(gck_exact_plan_path(p), "ozaki");
    char d[256];
    gck_exact_plan_describe(p, d, sizeof d);
    cr_expect(strstr(d, "too few products") != NULL, "%s", d);
    gck_exact_plan_free(p);
    gck_case_init(&c, 256, 256, 256);
    c.type_a = c.type_b = c.type_c = c.type_d = c.compute = GCK_F32;
    gck_spec_init(&s, &c);
    gck_spec_fill(&s, GCK_A, A);
    gck_spec_fill(&s, GCK_B, B);
    p = gck_exact_plan_new(&c, A, B, C);
    cr_expect_str_eq(gck_exact_plan_path(p), "ozaki");
    gck_exact_plan_free(p);
    gck_ozaki_set_mode(GCK_OZAKI_NEVER);
    p = gck_exact_plan_new(&c, A, B, C);
    cr_expect_str_neq(gck_exact_plan_path(p), "ozaki");
    gck_exact_plan_free(p);
    free(A);
    free(B);
    free(C);
}

Test(ozaki, a_wrong_slice_product_is_caught_and_the_products_summed_one_by_one) {
    gck_ozaki_set_mode(GCK_OZAKI_ALWAYS);
    test_rng r = {test_seed("oracle_ozaki.corrupt", 5)};
    long elements = 0;
    for (int n = 0; n < 20; n++) {
        gck_spec s;
        random_case(&r, &s);
        s.special_pm = 0;
        const gck_case *c = &s.c;
        void *X[3];
        filled_operands(&s, X);
        gck_exact_plan *p = gck_exact_plan_new(c, X[0], X[1], X[2]);
        bool splits = !strcmp(gck_exact_plan_path(p), "ozaki");
        gck_exact_plan_free(p);
        /* one element of one slice product off by one unit: the check must refuse it */
        gck_ozaki_options planted = {GCK_OZAKI_ALWAYS, n * 7919, 0, 0, 0, false};
        const char *path = compare_case_with(&s, X[0], X[1], X[2], &elements, &planted);
        if (splits) cr_expect_str_neq(path, "ozaki", "a corrupted product was accepted");
        for (int x = 0; x < 3; x++) free(X[x]);
    }
    cr_expect_gt(elements, 0);
}

/* ---- the int8 slices (GCK_OZAKI_INT8) -------------------------------------------------------- */

/* The property test in an int8 mode, a quarter of its elements, every element equal to MPFR in
 * value and exact error, and at least 80% of them split. */
static void int8_property(gck_ozaki_mode md, const char *seed_name, uint64_t seed,
                          const char *what) {
    gck_ozaki_set_mode(md);
    test_rng r = {test_seed(seed_name, seed)};
    long elements = 0, split = 0, cases = 0;
    while (elements < PROPERTY_ELEMENTS / 4) {
        gck_spec s;
        random_case(&r, &s);
        void *X[3];
        filled_operands(&s, X);
        long before = elements;
        if (!strcmp(compare_case(&s, X[0], X[1], X[2], &elements), "ozaki"))
            split += elements - before;
        cases++;
        for (int x = 0; x < 3; x++) free(X[x]);
    }
    fprintf(stderr,
            "[ozaki %s vs MPFR] %ld cases, %ld elements identical in value and exact errors, "
            "%ld of them by %s\n",
            md == GCK_OZAKI_INT8 ? "int8" : "residues", cases, elements, split, what);
    cr_expect_geq(split, elements * 8 / 10, "only %ld of %ld elements were split", split, elements);
    gck_ozaki_set_mode(GCK_OZAKI_ALWAYS);
}

/* Slices of 7 bits multiplied by the exact int8 GEMM (kernels/igemm.c). */
Test(ozaki, int8_slices_equal_mpfr_bit_for_bit, .timeout = 900) {
    int8_property(GCK_OZAKI_INT8, "oracle_ozaki.int8", 2027, "int8 slices");
}

/* The int8 digits multiplied as residues (GCK_OZAKI_RESIDUES: a GEMM per modulus, each sum
 * rebuilt by the Chinese remainder theorem). */
Test(ozaki, int8_residues_equal_mpfr_bit_for_bit, .timeout = 900) {
    int8_property(GCK_OZAKI_RESIDUES, "oracle_ozaki.residues", 2028, "int8 residues");
}

/* The residues' parts against independent arithmetic: every digit integer of up to 16 digits, cut
 * into pieces and reduced modulo each modulus, equals the % operator's symmetric remainder, every
 * int32 sum's reduction equals (sum mod p)·inv mod p, and integers up to the largest the moduli
 * allow, negative and positive, come back from their reductions, cut into terms whose weighted sum
 * is the integer. */
Test(ozaki, residues_rebuild_every_integer_from_its_reductions) {
    test_rng r = {test_seed("oracle_ozaki.crt", 17)};
    gck_oz_crt c;
    cr_assert(gck_oz_crt_init(&c, 127));
    cr_expect_eq(c.count, 17, "%d moduli for 127 bits", c.count);
    cr_expect_not(gck_oz_crt_init(&c, 128));
    enum { E = 4099 };
    int8_t *d = malloc(16 * E), *out = malloc(E), *out2 = malloc(E);
    int32_t *sums = malloc(E * sizeof *sums), *ch = malloc(4 * E * sizeof *ch);
    uint8_t *t = malloc(E), *t2 = malloc(E);
    for (int S = 1; S <= 16; S++) {
        for (int64_t e = 0; e < 16 * E; e++) d[e] = (int8_t)((int)(rng_next(&r) % 255) - 127);
        for (int e = 0; e < 6; e++) /* the extremes */
            for (int s = 0; s < S; s++) d[s * E + e] = (int8_t)(e % 2 ? 127 : -127);
        cr_assert(gck_oz_crt_init(&c, 127));
        gck_oz_chunks(d, S, E, 0, E, ch);
        for (int u = 0; u < c.count; u++) {
            int p = c.p[u];
            for (int simd = 0; simd < 2; simd++) {
                if (simd && !gck_ozaki_simd_slices()) continue;
                gck_oz_residues8(ch, (S + 3) / 4, E, 0, E, p, simd, simd ? out2 : out);
            }
            for (int64_t e = 0; e < E; e++) {
                __int128 x = 0;
                for (int s = 0; s < S; s++) x = x * 128 + d[s * E + e];
                int want = (int)(x % p);
                if (want > p / 2) want -= p;
                if (want < -(p / 2)) want += p;
                cr_assert_eq(out[e], want, "digits %d, modulus %d, element %lld", S, p,
                             (long long)e);
                if (gck_ozaki_simd_slices()) cr_assert_eq(out2[e], want);
            }
        }
    }
    for (int64_t e = 0; e < E; e++)
        sums[e] = e < 2 ? (e ? INT32_MAX : INT32_MIN + 1) : (int32_t)(rng_next(&r) >> 32);
    for (int u = 0; u < c.count; u++)
        for (int simd = 0; simd < 2; simd++) {
            if (simd && !gck_ozaki_simd_slices()) continue;
            gck_oz_reduce_sums(&c, u, sums, 0, E, simd, simd ? t2 : t);
            for (int64_t e = 0; e < E; e++) {
                int64_t m = ((int64_t)sums[e] % c.p[u] + c.p[u]) % c.p[u];
                cr_assert_eq((simd ? t2 : t)[e], m * c.inv[u] % c.p[u]);
            }
        }
    /* integers below 2^125 = P/4 at most (17 moduli make more than 2^127), as planes of
     * reductions: each rebuilt alone, then cut into terms over a range that starts off the
     * blocks' edge, 3 pieces 35 bits apart shifted by 14 (and 1 piece for the small ones) */
    enum { NV = 20000, NS = 1000 };
    __int128 *xs = malloc(NV * sizeof *xs);
    uint8_t *res = malloc((size_t)OZ_MODULI * NV), *small = malloc((size_t)OZ_MODULI * NS);
    int64_t *q = malloc(3 * NV * sizeof *q);
    for (int n = 0; n < NV; n++) {
        int bits = n < NS ? 1 + n % 40 : 1 + n % 125;
        unsigned __int128 mag =
            ((unsigned __int128)rng_next(&r) << 64 | rng_next(&r)) >> (128 - bits);
        if (n >= NS && n < NS + 4) mag = (((unsigned __int128)1) << 125) - 1 - (unsigned)n % 2;
        xs[n] = n % 2 ? -(__int128)mag : (__int128)mag;
        for (int u = 0; u < c.count; u++) {
            int64_t m = (int64_t)(xs[n] % c.p[u]);
            m = (m + c.p[u]) % c.p[u];
            res[u * NV + n] = (uint8_t)(m * c.inv[u] % c.p[u]);
            if (n < NS) small[u * NS + n] = res[u * NV + n];
        }
        cr_assert(gck_oz_crt_value(&c, res + n, NV) == xs[n], "%d bits, case %d", bits, n);
    }
    for (int simd = 0; simd < 2; simd++) {
        if (simd && !gck_ozaki_simd_slices()) continue;
        gck_oz_crt_terms(&c, res, NV, 7, NV, 3, 35, 14, simd, q);
        for (int64_t e = 7; e < NV; e++) {
            __int128 x = xs[e];
            if (x >= ((__int128)1 << 100) || x <= -((__int128)1 << 100)) continue;
            const int64_t *qe = q + 3 * e;
            __int128 back =
                ((__int128)qe[0] * ((__int128)1 << 35) + qe[1]) * ((__int128)1 << 35) + qe[2];
            cr_assert(back == x * (1 << 14), "terms of element %lld", (long long)e);
            cr_assert(qe[1] >= 0 && qe[1] < INT64_C(1) << 35 && qe[2] >= 0 &&
                      qe[2] < INT64_C(1) << 35);
        }
        gck_oz_crt_terms(&c, small, NS, 0, NS, 1, 35, 14, simd, q);
        for (int64_t e = 0; e < NS; e++) cr_assert(q[e] == (int64_t)xs[e] * (1 << 14));
    }
    free(xs), free(res), free(small), free(q);
    free(d), free(out), free(out2), free(sums), free(t), free(t2), free(ch);
}

/* Wide rows on int8 slices and on int8 residues: many 7-bit slices or tails (residues: as many
 * as keep the sums within 127 bits, the rest tails), and MPFR's bits either way; the plan names
 * its GEMM. */
Test(ozaki, int8_slices_cover_wide_rows) {
    for (int md = 0; md < 2; md++) {
        gck_ozaki_set_mode(md ? GCK_OZAKI_RESIDUES : GCK_OZAKI_INT8);
        int few = 0, many = 0;
        long tails = 0;
        span_case(GCK_F32, 30, 64, "ozaki", &few, NULL);
        span_case(GCK_F32, 110, 64, "ozaki", &many, &tails);
        cr_expect(few < many || tails > 0, "%d slices for 30 bits, %d for 110 (%ld tails)", few,
                  many, tails);
        span_case(GCK_F64, 118, 4096, "ozaki", NULL, NULL);
        span_case(GCK_F64, 400, 4096, "ozaki", NULL, NULL);
        span_case(GCK_F16, 27, 5000, "ozaki", NULL, NULL);
        /* K = 60,000: an int32 sum holds two slice products (each up to K·127²), so a term of up to
         * four products is added in two sums */
        span_case(GCK_F32, 60, 60000, "ozaki", NULL, NULL);
        gck_case c;
        gck_case_init(&c, 8, 8, 64);
        c.type_a = c.type_b = c.type_c = c.type_d = c.compute = GCK_BF16;
        void *A = alloc_elems(GCK_BF16, 512), *B = alloc_elems(GCK_BF16, 512),
             *C = alloc_elems(GCK_BF16, 64);
        gck_spec s;
        gck_spec_init(&s, &c);
        gck_spec_fill(&s, GCK_A, A);
        gck_spec_fill(&s, GCK_B, B);
        gck_exact_plan *p = gck_exact_plan_new(&c, A, B, C);
        char d[256];
        gck_exact_plan_describe(p, d, sizeof d);
        cr_expect(strstr(d, "slices of 7 bits") &&
                      strstr(d, md ? "int8 residue GEMMs" : "int8 GEMMs"),
                  "%s", d);
        gck_exact_plan_free(p);
        free(A), free(B), free(C);
    }
    gck_ozaki_set_mode(GCK_OZAKI_ALWAYS);
}

/* An f32 case of normal values (D apart from C), its operands filled. */
static void normal_f32_case(gck_case *c, gck_spec *s, void *X[3], int64_t m, int64_t n, int64_t k) {
    gck_case_init(c, m, n, k);
    c->type_a = c->type_b = c->type_c = c->type_d = c->compute = GCK_F32;
    c->d_is_c = false;
    gck_spec_init(s, c);
    s->dist_ab = GCK_DIST_NORMAL;
    filled_operands(s, X);
}

/* On int8 slices the terms are kept several to an int64: f32 at K = 4096 has 8 terms below
 * 2^29 each, kept as two integers 35 bits apart (five terms and a partial group of three), every
 * one below 2^62, and every element still equals MPFR. */
Test(ozaki, int8_terms_are_kept_in_groups) {
    gck_case c;
    gck_spec s;
    void *X[3];
    normal_f32_case(&c, &s, X, 24, 20, 4096);
    gck_ozaki_options o = {GCK_OZAKI_INT8, -1, 0, 0, 0, false};
    char why[256];
    gck_ozaki *oz = gck_ozaki_new(&c, X[0], X[1], &o, why, sizeof why);
    cr_assert(oz, "%s", why);
    int sa, sb, beta, count = 0, step = 0;
    gck_ozaki_shape(oz, &sa, &sb, &beta);
    int least = sa < sb ? sa : sb, nd = sa + sb - 1;
    /* a term's bound: least·K·127², here below 2^29; five of them 7 bits apart stay below 2^62 */
    cr_assert_lt((double)least * 4096 * 127 * 127, 0x1p29, "%d x %d slices", sa, sb);
    for (int64_t i = 0; i < c.m; i++)
        for (int64_t j = 0; j < c.n; j++) {
            int32_t w0;
            const int64_t *t = gck_ozaki_terms(oz, 0, i, j, &w0, &count, &step);
            for (int d = 0; d < count; d++)
                cr_assert(t[d] < INT64_C(1) << 62 && t[d] > -(INT64_C(1) << 62));
        }
    cr_expect_eq(step, 35, "terms %d bits apart", step);
    cr_expect_eq(count, (nd + 4) / 5, "%d terms kept for %d", count, nd);
    cr_expect_gt(nd % 5, 0, "%d terms: no partial group", nd);
    gck_ozaki_free(oz);
    long n = 0;
    cr_expect_str_eq(compare_case_with(&s, X[0], X[1], X[2], &n, &o), "ozaki");
    cr_expect_eq(n, c.m * c.n);
    for (int x = 0; x < 3; x++) free(X[x]);
}

/* AUTO weighs splitting against summing one by one at the one-by-one rate it is given: an f64
 * case whose splitting costs about 9 f64 multiply-adds a product is split when one by one costs
 * 50 (rates: f64 GEMM 100 GFLOP/s, one by one 1 G products/s), not when it costs 5 (10 G
 * products/s) nor at the fixed price of 10 (no rate); and the measured rates are positive. */
Test(ozaki, auto_mode_weighs_one_by_one_at_its_measured_rate) {
    gck_case c;
    gck_case_init(&c, 128, 128, 256);
    c.type_a = c.type_b = c.type_c = c.type_d = c.compute = GCK_F64;
    c.d_is_c = false;
    gck_spec s;
    gck_spec_init(&s, &c);
    s.dist_ab = GCK_DIST_NORMAL;
    void *X[3];
    filled_operands(&s, X);
    const struct {
        double one_by_one;
        bool split;
    } cases[] = {{1.0, true}, {10.0, false}, {0.0, false}};
    for (int i = 0; i < 3; i++) {
        gck_ozaki_options o = {GCK_OZAKI_AUTO, -1, 100.0, 100.0, cases[i].one_by_one, false};
        char why[256] = "";
        gck_ozaki *oz = gck_ozaki_new(&c, X[0], X[1], &o, why, sizeof why);
        cr_expect_eq(oz != NULL, cases[i].split, "one by one at %g G/s: %s", cases[i].one_by_one,
                     oz ? "split" : why);
        if (!oz && cases[i].one_by_one > 0) cr_expect(strstr(why, "one by one 5.0"), "%s", why);
        gck_ozaki_free(oz);
    }
    for (int x = 0; x < 3; x++) free(X[x]);
    double r64 = gck_exact_one_by_one_rate(GCK_F64, GCK_F64),
           r16 = gck_exact_one_by_one_rate(GCK_F16, GCK_F16);
    cr_expect(r64 > 0 && isfinite(r64) && r16 > 0 && isfinite(r16), "%g, %g G/s", r64, r16);
    cr_expect_eq(gck_exact_one_by_one_rate(GCK_F64, GCK_F64), r64, "measured once");
    fprintf(stderr, "[ozaki] one by one: f64 %.2f, f16 %.2f G products/s on one thread\n", r64,
            r16);
}

/* The slices cut 8 values at a time (AVX-512) hold the same digits as those cut value by value,
 * from the same scales' pass (each line's gaps, their histogram and the lowest bits, also found
 * 8 at a time): every term and tail sum of every element identical, for every input type, in f64
 * and int8 mode, on values of every kind (normal, wide exponents, subnormals, signed zeros, NaN and
 * Inf, whose digits count as 0), with K = 203 so that each line ends in a part of 8 (done value by
 * value). */
Test(ozaki, slices_cut_eight_at_a_time_equal_those_cut_one_by_one) {
    if (!gck_ozaki_simd_slices()) cr_skip_test("this CPU has no AVX-512F/DQ: one way of cutting");
    const gck_format types[] = {GCK_F16, GCK_BF16, GCK_F32, GCK_F64};
    const gck_dist dists[] = {GCK_DIST_NORMAL, GCK_DIST_LOGU, GCK_DIST_SUBNORMAL, GCK_DIST_BIG};
    int compared = 0;
    for (int t = 0; t < 4; t++)
        for (int d = 0; d < 4; d++)
            for (int md = 0; md < 2; md++) {
                gck_case c;
                gck_case_init(&c, 37, 29, 203);
                c.type_a = c.type_b = c.type_c = c.type_d = c.compute = types[t];
                c.d_is_c = false;
                gck_spec s;
                gck_spec_init(&s, &c);
                s.dist_ab = dists[d];
                s.seed = 1000 + 10 * t + d;
                void *X[3];
                filled_operands(&s, X);
                const double specials[] = {NAN, INFINITY, -INFINITY, -0.0, 0.0};
                for (int x = 0; x < 5; x++) { /* in the vector part and in the last part */
                    gck_store(X[0], types[t], 17 * x + 3, specials[x]);
                    gck_store(X[1], types[t], 203 * (x + 1) - 2, specials[x]);
                }
                gck_ozaki_options o = {md ? GCK_OZAKI_INT8 : GCK_OZAKI_ALWAYS, -1, 0, 0, 0, false},
                                  po = o;
                po.portable_slices = true;
                char why[256], pwhy[256];
                gck_ozaki *v = gck_ozaki_new(&c, X[0], X[1], &o, why, sizeof why),
                          *q = gck_ozaki_new(&c, X[0], X[1], &po, pwhy, sizeof pwhy);
                cr_assert_eq(v != NULL, q != NULL, "%s / %s", why, pwhy);
                if (v) { /* the scales' pass: gaps, their histograms (bin 0 aside), lowest bits */
                    cr_assert_arr_eq(v->gap_a, q->gap_a, (size_t)c.m * sizeof *v->gap_a);
                    cr_assert_arr_eq(v->gap_b, q->gap_b, (size_t)c.n * sizeof *v->gap_b);
                    cr_assert_arr_eq(v->hgap_a + 1, q->hgap_a + 1,
                                     (OZ_NEED_TAB - 1) * sizeof *v->hgap_a);
                    cr_assert_arr_eq(v->hgap_b + 1, q->hgap_b + 1,
                                     (OZ_NEED_TAB - 1) * sizeof *v->hgap_b);
                    cr_assert(v->low_a == q->low_a && v->low_b == q->low_b);
                    for (int64_t i = 0; i < c.m; i++)
                        for (int64_t j = 0; j < c.n; j++) {
                            int32_t w0, pw0;
                            int n, pn, st, pst;
                            const int64_t *a = gck_ozaki_terms(v, 0, i, j, &w0, &n, &st),
                                          *b = gck_ozaki_terms(q, 0, i, j, &pw0, &pn, &pst);
                            cr_assert(w0 == pw0 && n == pn && st == pst);
                            cr_assert_arr_eq(a, b, (size_t)n * sizeof *a,
                                             "%s, dist %d, %s mode: (%lld, %lld)",
                                             gck_format_get(types[t])->name, (int)dists[d],
                                             md ? "int8" : "f64", (long long)i, (long long)j);
                            gck_sum128 sa = {0, w0 - 400, false}, sb = sa;
                            int64_t ca[2] = {0, 0}, cb[2] = {0, 0};
                            bool fa = gck_ozaki_tail_sum128(v, 0, i, j, &sa, ca),
                                 fb = gck_ozaki_tail_sum128(q, 0, i, j, &sb, cb);
                            cr_assert(fa == fb && (!fa || (sa.s == sb.s && sa.base == sb.base)));
                        }
                    compared++;
                }
                gck_ozaki_free(v);
                gck_ozaki_free(q);
                for (int x = 0; x < 3; x++) free(X[x]);
            }
    cr_expect_geq(compared, 24, "%d of 32 cases split", compared);
}

/* A wrong int8 slice product, or a wrong int8 GEMM modulo a residue's modulus (one element off by
 * one), fails Freivalds' test: the products are summed one by one. */
Test(ozaki, a_wrong_int8_slice_product_is_caught) {
    test_rng r = {test_seed("oracle_ozaki.corrupt8", 6)};
    long elements = 0, caught = 0;
    for (int n = 0; n < 20; n++) {
        gck_spec s;
        random_case(&r, &s);
        s.special_pm = 0;
        void *X[3];
        filled_operands(&s, X);
        gck_ozaki_mode md = n % 2 ? GCK_OZAKI_RESIDUES : GCK_OZAKI_INT8;
        gck_ozaki_options clean = {md, -1, 0, 0, 0, false},
                          planted = {md, n * 7919, 0, 0, 0, false};
        long e0 = 0;
        bool splits = !strcmp(compare_case_with(&s, X[0], X[1], X[2], &e0, &clean), "ozaki");
        const char *path = compare_case_with(&s, X[0], X[1], X[2], &elements, &planted);
        if (splits) {
            cr_expect_str_neq(path, "ozaki", "a corrupted int8 product was accepted");
            caught++;
        }
        for (int x = 0; x < 3; x++) free(X[x]);
    }
    cr_expect_gt(caught, 10, "only %ld cases split on int8 slices or residues", caught);
}

/* AUTO weighs the splittings by the GEMMs' rates: an int8 GEMM 100 times the f64 one's rate
 * takes int8 slices or residues, one no faster keeps the f64 slices, and both equal MPFR (a long K,
 * so that the GEMMs, not the passes over each product, make the cost). */
Test(ozaki, auto_mode_chooses_the_slices_gemm_by_rate) {
    gck_case c;
    gck_spec s;
    void *X[3];
    normal_f32_case(&c, &s, X, 64, 64, 4096);
    static const struct {
        double f64, int8;
        const char *gemm;
    } cases[] = {{40, 4000, "int8 GEMMs"}, {40, 40, "f64 GEMMs"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gck_ozaki_options o = {GCK_OZAKI_AUTO, -1, cases[i].f64, cases[i].int8, 0, false};
        char why[256];
        gck_ozaki *oz = gck_ozaki_new(&c, X[0], X[1], &o, why, sizeof why);
        cr_assert(oz, "%s", why);
        const char *want = cases[i].gemm[0] == 'i' ? "int8" : "f64"; /* on slices or residues */
        cr_expect(!strncmp(gck_ozaki_gemm(oz), want, strlen(want)), "%s", gck_ozaki_gemm(oz));
        gck_ozaki_free(oz);
        long n = 0;
        cr_expect_str_eq(compare_case_with(&s, X[0], X[1], X[2], &n, &o), "ozaki");
        cr_expect_gt(n, 0);
    }
    for (int x = 0; x < 3; x++) free(X[x]);
}

/* ---- Freivalds' test on its own (oracles/freivalds.c) ---------------------------------------- */

#include "freivalds.h"

/* The reduction modulo p = 2^61 - 1 against the % operator, at the edges and on random values
 * of every size, signed and unsigned. */
Test(freivalds, reduction_modulo_p_matches_the_remainder) {
    const unsigned __int128 P = GCK_P61, top = ~(unsigned __int128)0;
    const unsigned __int128 edges[] = {
        0,     1,         P - 1, P,         P + 1,
        2 * P, 2 * P - 1, P * P, P * P - 1, (unsigned __int128)1 << 122,
        top,   top - P};
    for (size_t e = 0; e < sizeof edges / sizeof *edges; e++)
        cr_expect_eq(gck_mod_p61(edges[e]), (uint64_t)(edges[e] % P), "edge %zu", e);
    test_rng r = {test_seed("freivalds.mod", 61)};
    for (int t = 0; t < 200000; t++) {
        unsigned __int128 x = ((unsigned __int128)rng_next(&r) << 64) | rng_next(&r);
        x >>= rng_next(&r) % 128; /* every size */
        cr_assert_eq(gck_mod_p61(x), (uint64_t)(x % P));
        __int128 v = (__int128)(x >> 1);
        if (t & 1) v = -v;
        __int128 want = v % (__int128)P;
        if (want < 0) want += (__int128)P;
        cr_assert_eq(gck_mod_p61_signed(v), (uint64_t)want);
    }
}

/* A right product passes for every seed; one element off by one unit, or a product of the
 * transposed operands, fails for every seed (each passes with probability <= 2^-32). */
Test(freivalds, a_wrong_product_fails_and_a_right_one_passes) {
    test_rng r = {test_seed("freivalds.check", 7)};
    for (int t = 0; t < 40; t++) {
        int64_t m = 1 + (int64_t)(rng_next(&r) % 40), n = 1 + (int64_t)(rng_next(&r) % 40),
                k = 1 + (int64_t)(rng_next(&r) % 300);
        double *A = malloc((size_t)(m * k) * sizeof *A), *B = malloc((size_t)(k * n) * sizeof *B),
               *C = calloc((size_t)(m * n), sizeof *C);
        cr_assert(A && B && C);
        for (int64_t i = 0; i < m * k; i++)
            A[i] = (double)((int64_t)(rng_next(&r) % 2000001) - 1000000);
        for (int64_t i = 0; i < k * n; i++)
            B[i] = (double)((int64_t)(rng_next(&r) % 2000001) - 1000000);
        for (int64_t j = 0; j < n; j++) /* exact: |sum| < 300 * 10^12 < 2^53 */
            for (int64_t l = 0; l < k; l++)
                for (int64_t i = 0; i < m; i++) C[i + j * m] += A[i + l * m] * B[l + j * k];
        for (uint64_t seed = 0; seed < 8; seed++)
            cr_expect(gck_freivalds_check(A, B, C, m, n, k, seed), "right product refused");
        int64_t at = (int64_t)(rng_next(&r) % (uint64_t)(m * n));
        C[at] += (t & 1) ? 1 : -1;
        for (uint64_t seed = 0; seed < 8; seed++)
            cr_expect(!gck_freivalds_check(A, B, C, m, n, k, seed),
                      "C[%lld] off by one passed (m %lld n %lld k %lld seed %llu)", (long long)at,
                      (long long)m, (long long)n, (long long)k, (unsigned long long)seed);
        free(A);
        free(B);
        free(C);
    }
}
