/* The verdicts beyond the hard bound (docs/TOLERANCE.md): the output interval, exhaustively
 * over f16 against MPFR's roundings; the sign test's p-value bound against the exact tails of
 * its sign-flip null; and the faults that hide under the hard bound of earlier releases
 * (truncation, flushing, a one-ulp lean, a 1e-4 error at K = 300), each found with the verdict
 * meant for it while the reference GEMM passes the same cases. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemmcheck/gemmcheck.h"
#include "testutil.h"

/* ---- the output interval, every finite f16 ------------------------------------------------ */

/* Which candidate of an element is checked: D rounded to nearest, its neighbours, or 0. */
enum { CAND_RN, CAND_UP, CAND_DOWN, CAND_ZERO, NCAND };

/* The row of a K = 1 product of f16 values into an f16 D, computed exactly (f64 products of
 * f16 values are exact), so that the arithmetic's own part of the bound is negligible and the
 * verdict is the output interval's. */
static gck_support_row f16_row(gck_rounding rounding, bool ftz) {
    gck_support_row r = {.a = GCK_F16, .b = GCK_F16, .c = GCK_F16, .d = GCK_F16};
    r.compute = r.model.compute = r.model.input_format = r.model.epilogue = GCK_F64;
    r.model.acc = GCK_ACC_SCALAR;
    r.model.ftz = ftz;
    r.model.orders = GCK_ORDERS_ANY;
    r.model.rounding = rounding;
    r.promises =
        GCK_PROMISE_ALPHA0_NO_READ_AB | GCK_PROMISE_BETA0_NO_READ_C | GCK_PROMISE_D_SEPARATE;
    r.entry = "test";
    return r;
}

/* Whether candidate d may be D for the exact x (independent truth from MPFR's roundings):
 * nearest: d is RN(x), or x lies exactly halfway between d and RN(x) (a tie is admitted either
 * way); faithful: d is RD(x) or RU(x) (x is not a value of f16 here); FTZ: a zero may also
 * stand for an x whose RN is subnormal. */
static bool may_be(double d, mpfr_srcptr x, gck_rounding rounding, bool ftz) {
    double rn = mpfr_round_exact(x, GCK_F16, MPFR_RNDN);
    double rd = mpfr_round_exact(x, GCK_F16, MPFR_RNDD);
    double ru = mpfr_round_exact(x, GCK_F16, MPFR_RNDU);
    const gck_format_info *f = gck_format_get(GCK_F16);
    if (ftz && d == 0 && mpfr_cmpabs_ui(x, 0) >= 0 &&
        fabs(mpfr_get_d(x, MPFR_RNDN)) <= f->min_normal - f->min_subnormal / 2)
        return true; /* below the largest subnormal's upper edge (its tie admitted) */
    if (rounding == GCK_ROUND_FAITHFUL) return d == rd || d == ru;
    if (d == rn) return true;
    mpfr_t mid;
    mpfr_init2(mid, 64);
    mpfr_set_d(mid, d, MPFR_RNDN);
    mpfr_add_d(mid, mid, rn, MPFR_RNDN); /* exact: two f16 values */
    mpfr_div_2ui(mid, mid, 1, MPFR_RNDN);
    bool tie = mpfr_equal_p(mid, x) && fabs(d - rn) == gck_ulp(fmin(fabs(d), fabs(rn)), GCK_F16);
    mpfr_clear(mid);
    return tie;
}

/* One a against every finite f16 b whose product stays finite: each candidate set checked in
 * one call; the failing count must be the number of candidates the truth rejects. */
static long interval_for(double a, gck_rounding rounding, bool ftz, long *checked) {
    enum { NB = 1 << 16 };
    uint16_t *bb = malloc(NB * sizeof *bb), *dd = malloc(NB * sizeof *dd);
    double *xs = malloc(NB * sizeof *xs);
    int n = 0;
    for (uint32_t bits = 0; bits < NB; bits++) {
        double b = gck_f16_to_double((uint16_t)bits);
        if (!isfinite(b) || fabs(a * b) >= 65504) continue; /* a*b is exact in double */
        bb[n] = (uint16_t)bits;
        xs[n++] = a * b;
    }
    gck_case c;
    gck_case_init(&c, 1, n, 1);
    c.type_a = c.type_b = c.type_c = c.type_d = GCK_F16;
    c.compute = GCK_F64;
    c.scale_type = GCK_F64;
    c.ldb = 1;
    c.ldc = c.ldd = 1;
    uint16_t abits = gck_f16_from_double(a);
    gck_support_row row = f16_row(rounding, ftz);
    gck_check_options opt = {.threads = 2, .stat_data = GCK_STAT_OFF};
    mpfr_t x;
    mpfr_init2(x, 64);
    long mismatched = 0;
    for (int cand = 0; cand < NCAND; cand++) {
        long expect_fail = 0;
        for (int j = 0; j < n; j++) {
            double rn = gck_round_to(xs[j], GCK_F16);
            double d = cand == CAND_RN     ? rn
                       : cand == CAND_UP   ? gck_next_up(rn, GCK_F16)
                       : cand == CAND_DOWN ? gck_next_down(rn, GCK_F16)
                                           : copysign(0.0, xs[j]);
            if (!isfinite(d)) d = rn; /* past the largest finite value: the RN value again */
            /* faithful: an x that is a value of f16 may be exact by the certificate (then only x
             * passes) or not (then, the bound being above 0, a neighbour may): not judged */
            if (rounding == GCK_ROUND_FAITHFUL && rn == xs[j]) d = rn;
            dd[j] = gck_f16_from_double(d);
            mpfr_set_d(x, xs[j], MPFR_RNDN); /* exact */
            expect_fail += !may_be(d, x, rounding, ftz);
        }
        gck_check_result r;
        char msg[256];
        cr_assert_eq(gck_check_values(&c, &row, &opt, &abits, bb, NULL, dd, &r, msg, sizeof msg),
                     GCK_OK, "%s", msg);
        for (int k = 0; k < GCK_KIND_COUNT; k++)
            if (k != GCK_KIND_OUT_OF_TOLERANCE)
                cr_assert_eq(r.count[k], 0, "a = %a: %s", a, gck_kind_name((gck_kind)k));
        if (r.count[GCK_KIND_OUT_OF_TOLERANCE] != expect_fail) {
            mismatched++;
            fprintf(stderr, "a = %a, candidate %d, %s%s: %lld failing, the truth rejects %ld\n", a,
                    cand, gck_rounding_name(rounding), ftz ? " FTZ" : "",
                    (long long)r.count[GCK_KIND_OUT_OF_TOLERANCE], expect_fail);
        }
        *checked += n;
    }
    mpfr_clear(x);
    free(bb);
    free(dd);
    free(xs);
    return mismatched;
}

Test(tiers, the_output_interval_is_exactly_the_results_of_the_declared_rounding, .timeout = 600) {
    /* 1: every f16 value; 1.5 and 0.7998: products between the values, ties included;
     * 2^-10 and 3e-5: products among the subnormals; 2^14: near the largest binade */
    static const double as[] = {1.0, 1.5, 0x1.998p-1, 0x1p-10, 3.0517578125e-05, 0x1p14, -1.25};
    long checked = 0, bad = 0;
    for (size_t i = 0; i < sizeof as / sizeof as[0]; i++) {
        bad += interval_for(as[i], GCK_ROUND_NEAREST, false, &checked);
        bad += interval_for(as[i], GCK_ROUND_NEAREST, true, &checked);
        bad += interval_for(as[i], GCK_ROUND_FAITHFUL, false, &checked);
    }
    fprintf(stderr,
            "[tiers] %ld f16 results (every finite b, 7 values of a, the RN result, its two "
            "neighbours and zero; nearest, nearest+FTZ, faithful) judged as MPFR's roundings "
            "say\n",
            checked);
    cr_expect_eq(bad, 0);
}

/* ---- the sign test ------------------------------------------------------------------------- */

Test(tiers, the_sign_test_bounds_the_exact_two_sided_binomial_tail) {
    /* units of one element each (ss = n): the sign-flip distribution is the binomial */
    long pairs = 0;
    for (int n = 1; n <= 120; n++) {
        mpq_t tail, term;
        mpq_inits(tail, term, NULL);
        for (int k = 0; k <= n / 2; k++) {
            /* the exact tail P(X <= k) for n fair tosses, doubled (two-sided) */
            mpz_t binom;
            mpz_init(binom);
            mpz_bin_uiui(binom, (unsigned long)n, (unsigned long)k);
            mpq_set_z(term, binom);
            mpz_clear(binom);
            mpq_add(tail, tail, term);
            mpq_t p;
            mpq_init(p);
            mpq_set(p, tail);
            mpq_div_2exp(p, p, (mp_bitcnt_t)(n - 1));
            double exact = fmin(1.0, mpq_get_d(p));
            mpq_clear(p);
            double bound = gck_sign_test(k, n - k, n), mirror = gck_sign_test(n - k, k, n);
            cr_assert(bound >= exact * (1 - 1e-12) && bound == mirror,
                      "n = %d, k = %d: bound %g below the exact %g", n, k, bound, exact);
            pairs++;
        }
        mpq_clears(tail, term, NULL);
    }
    /* 57 elements on distinct rows all one way fail the 1e-12 test; 56 do not */
    cr_expect_leq(gck_sign_test(57, 0, 57), 1e-12);
    cr_expect_gt(gck_sign_test(56, 0, 56), 1e-12);
    cr_expect_eq(gck_sign_test(500, 500, 1000), 1.0);
    cr_expect_eq(gck_sign_test(900, 100, 0), 1.0, "no units: no test");
    fprintf(stderr, "[tiers] the sign test's bound at or above the exact tail for %ld (n, k)\n",
            pairs);
}

Test(tiers, the_sign_test_bounds_the_exact_tail_of_units_of_any_size) {
    /* units of several elements (a row's errors move together): given the units' sums R_u,
     * their signs are fair coins under the null, so the exact p-value of an observed total t is
     * the share of the 2^u sign patterns whose total is at least |t| from 0 (counted here by
     * the totals' distribution, one unit at a time); the bound must never be below it */
    enum { UNITS = 40, MAXR = 9, SPAN = UNITS * MAXR };
    uint64_t h = 12345;
    long checked = 0;
    double tightest = 0;
    for (int trial = 0; trial < 400; trial++) {
        int u = 1 + trial % UNITS, R[UNITS], N = 0;
        double ss = 0;
        for (int x = 0; x < u; x++) {
            h = h * 6364136223846793005ull + 1442695040888963407ull;
            R[x] = 1 + (int)((h >> 33) % MAXR); /* |R_u|: 1 .. 9 elements, all one way */
            N += R[x];
            ss += (double)R[x] * R[x];
        }
        /* ways[v + SPAN]: sign patterns of the units with total v (doubles: exact to 2^53) */
        static double ways[2 * SPAN + 1], next[2 * SPAN + 1];
        memset(ways, 0, sizeof ways);
        ways[SPAN] = 1;
        for (int x = 0; x < u; x++) {
            memset(next, 0, sizeof next);
            for (int v = -N; v <= N; v++) {
                if (ways[v + SPAN] == 0) continue;
                next[v + R[x] + SPAN] += ways[v + SPAN];
                next[v - R[x] + SPAN] += ways[v + SPAN];
            }
            memcpy(ways, next, sizeof ways);
        }
        double all = ldexp(1.0, u);
        for (int t = 0; t <= N; t++) {
            if (ways[t + SPAN] == 0) continue;
            double at_least = 0;
            for (int v = -N; v <= N; v++) at_least += abs(v) >= t ? ways[v + SPAN] : 0;
            double exact = at_least / all;
            double bound = gck_sign_test((N + t) / 2, (N - t) / 2, ss);
            cr_assert(bound >= exact * (1 - 1e-12),
                      "units %d, total %d of %d: bound %g below the exact %g", u, t, N, bound,
                      exact);
            if (exact < 1 && exact / bound > tightest) tightest = exact / bound;
            checked++;
        }
    }
    fprintf(stderr,
            "[tiers] the sign test's bound at or above the exact sign-flip tail for %ld totals "
            "of up to %d units (the closest at %.2f of the bound)\n",
            checked, UNITS, tightest);
}

/* ---- faults under the hard bound ----------------------------------------------------------- */

static void run_on(const char *backend, const char *text, int threads, gck_run_result *r) {
    gck_backend be;
    char msg[1024];
    cr_assert_eq(gck_backend_open(&be, backend, msg, sizeof msg), GCK_OK, "%s", msg);
    gck_spec s;
    cr_assert_eq(gck_spec_parse(text, &s, msg, sizeof msg), GCK_OK, "%s", msg);
    gck_run_options o = {.check = {.threads = threads}};
    cr_assert_eq(gck_run_spec(&be, &s, &o, r, msg, sizeof msg), GCK_OK, "%s", msg);
    gck_backend_close(&be);
}

static void run(const char *backend, const char *text, gck_run_result *r) {
    run_on(backend, text, 2, r);
}

/* The fault's finding is of kind `want` (with `rule` in its text), no other value finding is
 * made, and the reference GEMM passes the same case with the statistical tier applied. */
static void found_as(const char *fault, const char *text, gck_kind want, const char *rule,
                     unsigned also) {
    char spec[1024];
    snprintf(spec, sizeof spec, "plugin:%s:%s", GCK_FAULTY_PLUGIN, fault);
    gck_run_result *r = malloc(sizeof *r);
    run(spec, text, r);
    const gck_check_result *c = &r->check;
    cr_expect_gt(c->count[want], 0, "%s: no %s", fault, gck_kind_name(want));
    cr_expect(strstr(c->worst[want].rule, rule) != NULL, "%s: rule '%s'", fault,
              c->worst[want].rule);
    for (int k = 0; k < GCK_KIND_COUNT; k++)
        if (k != (int)want && !(also & 1u << k))
            cr_expect_eq(c->count[k], 0, "%s: %s too", fault, gck_kind_name((gck_kind)k));
    char st[400];
    gck_stat_describe(c, st, sizeof st);
    fprintf(stderr, "[tiers] %s: %lld %s (%s); stat: %s\n", fault, (long long)c->count[want],
            gck_kind_name(want), c->worst[want].rule, st);
    run("ref", text, r);
    cr_expect_eq(r->nfindings, 0, "ref fails the case of %s", fault);
    cr_expect(r->check.stat_elements > 0 || want == GCK_KIND_OUT_OF_TOLERANCE,
              "ref: the statistical tier did not apply (%s)", r->check.stat_note);
    free(r);
}

#define CASE(shape, types, rest)                                                                   \
    "gck1 " shape " order=col ta=N tb=N types=" types " " rest                                     \
    " d=sep batch=1 sa=0 sb=0 sc=0 sd=0 off=0,0,0,0"

Test(tiers, faults_under_the_old_hard_bound_are_found_by_the_verdict_meant_for_them,
     .timeout = 300) {
    /* a bf16 D truncated from the f32 accumulator: the output interval */
    found_as("trunc",
             CASE("m=32 n=32 k=64", "bf16,bf16,bf16,bf16 compute=f32 scale=f32",
                  "alpha=1 beta=0 lda=32 ldb=64 ldc=32 ldd=32") " vab=unif vc=unif sp=0 cnan=0 "
                                                                "seed=3",
             GCK_KIND_OUT_OF_TOLERANCE, "rounded interval",
             1u << GCK_KIND_IMPROBABLE_ERROR); /* all toward zero: the sign test too */
    /* subnormal f16 results flushed without a declared FTZ: the output interval */
    found_as("flush",
             CASE("m=16 n=16 k=8", "f16,f16,f16,f16 compute=f32 scale=f32",
                  "alpha=64 beta=0 lda=16 ldb=8 ldc=16 ldd=16") " vab=sub vc=unif sp=0 cnan=0 "
                                                                "seed=5",
             GCK_KIND_OUT_OF_TOLERANCE, "rounded interval", 0);
    /* every f32 result one ulp high, far inside both bounds: the sign test (at K = 64 the
     * errors lean 68 : 32; 96 rows of such leans are needed) */
    found_as("ulpup",
             CASE("m=96 n=96 k=64", "f32,f32,f32,f32 compute=f32 scale=f32",
                  "alpha=1 beta=0 lda=96 ldb=64 ldc=96 ldd=96") " vab=unif vc=unif sp=0 cnan=0 "
                                                                "seed=7",
             GCK_KIND_IMPROBABLE_ERROR, "sign test", 0);
    /* the largest of 64 x 64 f32 elements off by 1e-4 at K = 300: the element tier */
    found_as("e4",
             CASE("m=64 n=64 k=300", "f32,f32,f32,f32 compute=f32 scale=f32",
                  "alpha=1 beta=0 lda=64 ldb=300 ldc=64 ldd=64") " vab=unif vc=unif sp=0 cnan=0 "
                                                                 "seed=11",
             GCK_KIND_IMPROBABLE_ERROR, "improbable under round to nearest", 0);
}

Test(tiers, round_to_nearest_leans_toward_zero_and_the_sign_test_does_not_cry_wolf) {
    /* A campaign's case on which the sign test of earlier releases (errors above/below and
     * nearer to/farther from zero of all elements, counted as independent) failed the
     * reference GEMM: bf16 accumulation of log-uniform data, two columns of B shared by 1717
     * rows. Round to nearest errs toward zero more often than not here (a term absorbed by a
     * larger partial sum shares its sign more often than not), and the rows sharing B err
     * alike; the test now tests above/below only, over units of rows. */
    gck_run_result *r = malloc(sizeof *r);
    run("ref",
        "gck1 m=1717 n=2 k=9 order=col ta=T tb=T types=bf16,bf16,bf16,bf16 compute=bf16 "
        "scale=f64 alpha=1 beta=1 lda=11 ldb=2 ldc=1717 ldd=1717 d=c batch=1 sa=0 sb=0 sc=0 "
        "sd=0 off=3,7,0,0 vab=logu vc=unif sp=0 cnan=0 seed=2586837433036511375",
        r);
    cr_expect_eq(r->nfindings, 0);
    cr_expect_gt(r->check.stat_elements, 3000);
    const gck_check_result *k = &r->check;
    cr_expect_eq(k->bias_up + k->bias_down, 3434);
    cr_expect_gt(k->bias_toward0, k->bias_away + 400, "toward %lld, away %lld",
                 (long long)k->bias_toward0, (long long)k->bias_away);
    cr_expect_gt(k->bias_p, 1e-3);
    cr_expect_gt(k->bias_ss, 0, "the units' sums");
    free(r);
}

Test(tiers, the_sign_tests_unit_sums_do_not_depend_on_the_thread_count) {
    /* each thread keeps its own unit sums and adds them once at the end: the sums of squares
     * (and so the p-value) must be those of one thread, on units of rows that every thread's
     * tiles meet */
    const char *text = "gck1 m=300 n=40 k=64 order=col ta=N tb=N types=f32,f32,f32,f32 "
                       "compute=f32 scale=f32 alpha=1 beta=0 lda=300 ldb=64 ldc=300 ldd=300 "
                       "d=c batch=1 sa=0 sb=0 sc=0 sd=0 off=0,0,0,0 vab=normal vc=unif sp=0 "
                       "cnan=0 seed=5";
    gck_run_result *one = malloc(sizeof *one), *many = malloc(sizeof *many);
    run_on("ref", text, 1, one);
    for (int t = 2; t <= 5; t += 3) {
        run_on("ref", text, t, many);
        cr_expect_gt(one->check.bias_ss, 0);
        cr_expect_eq(many->check.bias_ss, one->check.bias_ss, "%d threads: %g against %g", t,
                     many->check.bias_ss, one->check.bias_ss);
        cr_expect_eq(many->check.bias_up, one->check.bias_up);
        cr_expect_eq(many->check.bias_down, one->check.bias_down);
        cr_expect_eq(many->check.bias_p, one->check.bias_p);
    }
    free(one);
    free(many);
}

Test(tiers, the_statistical_tier_says_where_it_does_not_apply) {
    gck_run_result *r = malloc(sizeof *r);
    /* integers: structured data */
    run("ref",
        CASE("m=8 n=8 k=16", "f32,f32,f32,f32 compute=f32 scale=f32",
             "alpha=1 beta=0 lda=8 ldb=16 ldc=8 ldd=8") " vab=int vc=unif sp=0 cnan=0 seed=1",
        r);
    cr_expect_eq(r->check.stat_elements, 0);
    cr_expect(strstr(r->check.stat_note, "structured") != NULL, "%s", r->check.stat_note);
    char st[400];
    gck_stat_describe(&r->check, st, sizeof st);
    cr_expect(strstr(st, "not applied") != NULL, "%s", st);
    /* random data: applied, with the sign test's counts */
    run("ref",
        CASE("m=8 n=8 k=16", "f32,f32,f32,f32 compute=f32 scale=f32",
             "alpha=1 beta=0 lda=8 ldb=16 ldc=8 ldd=8") " vab=normal vc=unif sp=0 cnan=0 seed=1",
        r);
    cr_expect_eq(r->check.stat_elements, 64);
    cr_expect_eq(r->check.bias_up + r->check.bias_down, r->check.bias_toward0 + r->check.bias_away);
    cr_expect_gt(r->check.bias_up + r->check.bias_down, 32);
    free(r);
}

/* ---- overflow under input rounding --------------------------------------------------------- */

/* cuBLAS's FAST_16BF row (f32 operands rounded to bf16, f32 accumulation), as its backend
 * declares it: an f32 operand between bf16's largest value and f32's rounds to Inf, so a
 * correct result may be Inf where the exact one is finite. On an H100 the checker called such
 * results "overflow impossible" until the overflow rules took the input rounding's growth. */
static int inf_verdict(float a, float b) {
    gck_case c;
    gck_case_init(&c, 1, 1, 1);
    c.type_a = c.type_b = c.type_c = c.type_d = GCK_F32;
    c.compute = GCK_BF16;
    c.scale_type = GCK_F32;
    gck_support_row row = {.a = GCK_F32,
                           .b = GCK_F32,
                           .c = GCK_F32,
                           .d = GCK_F32,
                           .compute = GCK_BF16,
                           .entry = "test"};
    row.model.compute = row.model.epilogue = GCK_F32;
    row.model.inputs_rounded = true;
    row.model.input_format = GCK_BF16;
    row.model.acc = GCK_ACC_BLOCK_FMA;
    row.model.ftz = true;
    row.model.orders = GCK_ORDERS_ANY;
    row.promises = GCK_PROMISE_BETA0_NO_READ_C | GCK_PROMISE_D_SEPARATE;
    float d = INFINITY;
    gck_check_options opt = {.threads = 1, .stat_data = GCK_STAT_OFF};
    gck_check_result r;
    char msg[256];
    cr_assert_eq(gck_check_values(&c, &row, &opt, &a, &b, NULL, &d, &r, msg, sizeof msg), GCK_OK,
                 "%s", msg);
    return (int)r.count[GCK_KIND_NONFINITE_MISMATCH];
}

Test(tiers, an_overflow_that_input_rounding_causes_is_possible_one_it_cannot_is_not) {
    /* x*x is below f32's largest value, but x rounds up to 2^64 in bf16 and 2^128 overflows */
    const float x = 1.8439e19f;
    cr_expect_lt((double)x * x, 0x1.fffffep127);
    cr_expect_eq(gck_round_to(x, GCK_BF16), 0x1p64);
    cr_expect_eq(inf_verdict(x, x), 0, "Inf from bf16-rounded operands is possible");
    /* 3.4e38 itself rounds to Inf in bf16 (above its largest value by more than half an ulp) */
    cr_expect_eq(gck_round_to(3.4e38, GCK_BF16), INFINITY);
    cr_expect_eq(inf_verdict(3.4e38f, 1.0f), 0, "Inf from a bf16-rounded operand is possible");
    cr_expect_eq(inf_verdict(3.0e38f, 1.0f), 1, "3e38 rounds to a finite bf16: Inf is wrong");
    cr_expect_eq(inf_verdict(1.0e19f, 1.0e19f), 1, "a product of 1e38: Inf is wrong");
}
