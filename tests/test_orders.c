/* Evaluation orders: every order of the zoo (tests/order_zoo.c) is a correct GEMM, so the
 * grid gives zero findings on each; each order really differs from the default somewhere;
 * a backend that uses an order it does not declare is caught; zero-skipping in op(A) or in
 * op(B) passes by the declared leniency and is reported under --strict-ieee. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemmcheck/refgemm.h"
#include "gemmcheck/runner.h"
#include "grid.h"
#include "testutil.h"
#include "wire.h"

#define ZOO_CASES 700

typedef struct zoo_counts {
    long cases, findings, elements, exact, lenient, kinds[GCK_KIND_COUNT];
} zoo_counts;

static zoo_counts run_zoo(const char *name, bool strict) {
    char spec[1024], msg[1024];
    snprintf(spec, sizeof spec, "plugin:%s:%s", GCK_ZOO_PLUGIN, name);
    gck_backend be;
    cr_assert_eq(gck_backend_open(&be, spec, msg, sizeof msg), GCK_OK, "%s", msg);
    const gck_support_row *rows;
    size_t nrows = be.ops->table(be.state, &rows);
    gck_run_options o = {.check = {.threads = 1, .strict_ieee = strict}, .determinism = true};
    gck_run_result *r = malloc(sizeof *r);
    zoo_counts z = {0};
    for (uint64_t i = 0; i < ZOO_CASES; i++) {
        gck_spec s;
        grid_spec(i, rows, nrows, &s);
        cr_assert_eq(gck_run_spec(&be, &s, &o, r, msg, sizeof msg), GCK_OK, "%s", msg);
        z.cases++;
        z.elements += r->check.elements;
        z.exact += r->check.exact_elements;
        z.lenient += r->check.lenient;
        if (r->outcome != GCK_OUTCOME_FINDINGS) continue;
        z.findings++;
        for (int f = 0; f < r->nfindings; f++) {
            z.kinds[r->findings[f].kind]++;
            if (!strict && strcmp(name, "beta-over-alpha-undeclared") != 0) {
                char repro[2048];
                gck_spec_format(&s, repro, sizeof repro);
                char cmd[3000];
                gck_repro_command(cmd, sizeof cmd, spec, "", repro);
                fprintf(stderr, "[zoo %s] %s: %s\n  repro: %s\n", name,
                        gck_kind_name(r->findings[f].kind), r->findings[f].detail, cmd);
            }
        }
    }
    fprintf(stderr,
            "[zoo %s%s] %ld cases, %ld with findings; %ld elements (%ld exact-case bitwise, "
            "%ld by leniency)\n",
            name, strict ? " --strict-ieee" : "", z.cases, z.findings, z.elements, z.exact,
            z.lenient);
    free(r);
    gck_backend_close(&be);
    return z;
}

static const char *const correct[] = {"netlib",   "beta-over-alpha", "alpha-each", "blocked",
                                      "pairwise", "split-k",         "skip0-a",    "skip0-b"};

Test(orders, every_order_in_the_zoo_gives_zero_findings_on_the_grid, .timeout = 900) {
    for (size_t q = 0; q < sizeof correct / sizeof correct[0]; q++) {
        zoo_counts z = run_zoo(correct[q], false);
        cr_expect_eq(z.findings, 0, "%s: %ld cases with findings", correct[q], z.findings);
        cr_expect_gt(z.exact, 10000, "%s: the bitwise checks did not run", correct[q]);
    }
}

Test(orders, an_order_the_backend_does_not_declare_is_caught, .timeout = 300) {
    zoo_counts z = run_zoo("beta-over-alpha-undeclared", false);
    cr_expect_gt(z.kinds[GCK_KIND_OUT_OF_TOLERANCE], 0,
                 "beta/alpha folded into the sum passed as the default order");
}

Test(orders, zero_skipping_in_either_operand_passes_by_leniency_and_fails_strict, .timeout = 300) {
    const char *names[] = {"skip0-a", "skip0-b", "netlib"};
    for (size_t q = 0; q < 3; q++) {
        zoo_counts lax = run_zoo(names[q], false);
        cr_expect_eq(lax.findings, 0, "%s", names[q]);
        cr_expect_gt(lax.lenient, 0, "%s: no dropped Inf*0 or NaN*0 was met", names[q]);
        zoo_counts strict = run_zoo(names[q], true);
        cr_expect_gt(strict.kinds[GCK_KIND_NONFINITE_MISMATCH], 0,
                     "%s: --strict-ieee must report the dropped NaN", names[q]);
    }
}

/* Each order computes something else than the default on ordinary data (else the zoo would
 * prove nothing): random f32 values, K = 300, alpha = -3, beta = 0.75 (beta/alpha inexact). */
Test(orders, each_order_differs_from_the_default_somewhere) {
    uint64_t seed = test_seed("orders", 11);
    test_rng rng = {seed};
    gck_case c;
    gck_case_init(&c, 6, 5, 300);
    c.type_a = c.type_b = c.type_c = c.type_d = c.compute = c.scale_type = GCK_F32;
    c.alpha = -3;
    c.beta = 0.75;
    float *A = malloc(6 * 300 * sizeof *A), *B = malloc(300 * 5 * sizeof *B);
    float C[30], D0[30], D1[30];
    for (int i = 0; i < 6 * 300; i++) A[i] = (float)(2 * rng_unit(&rng) - 1);
    for (int i = 0; i < 300 * 5; i++) B[i] = (float)(2 * rng_unit(&rng) - 1);
    for (int i = 0; i < 30; i++) C[i] = (float)(2 * rng_unit(&rng) - 1);
    char msg[256];
    gck_ref_model base = gck_ref_model_default(GCK_F32);
    base.round_inputs = false;
    memcpy(D0, C, sizeof C);
    cr_assert_eq(gck_ref_gemm(&c, &base, A, B, D0, D0, msg, sizeof msg), GCK_OK, "%s", msg);
    const struct {
        gck_ref_alpha a;
        gck_ref_beta b;
        gck_ref_sum s;
        int g;
        bool fma;
    } orders[] = {{GCK_REF_ALPHA_ON_B, GCK_REF_BETA_FIRST, GCK_REF_SUM_SEQUENTIAL, 1, false},
                  {GCK_REF_ALPHA_ON_SUM, GCK_REF_BETA_OVER_ALPHA, GCK_REF_SUM_SEQUENTIAL, 1, false},
                  {GCK_REF_ALPHA_ON_PRODUCT, GCK_REF_BETA_LAST, GCK_REF_SUM_BLOCKED, 8, false},
                  {GCK_REF_ALPHA_ON_SUM, GCK_REF_BETA_FIRST, GCK_REF_SUM_BLOCKED, 16, false},
                  {GCK_REF_ALPHA_ON_SUM, GCK_REF_BETA_LAST, GCK_REF_SUM_PAIRWISE, 4, false},
                  {GCK_REF_ALPHA_ON_SUM, GCK_REF_BETA_FIRST, GCK_REF_SUM_SPLIT, 3, true}};
    for (size_t q = 0; q < sizeof orders / sizeof orders[0]; q++) {
        gck_ref_model m = base;
        m.alpha_at = orders[q].a;
        m.beta_at = orders[q].b;
        m.sum = orders[q].s;
        m.group = orders[q].g;
        m.fma = orders[q].fma;
        memcpy(D1, C, sizeof C);
        cr_assert_eq(gck_ref_gemm(&c, &m, A, B, D1, D1, msg, sizeof msg), GCK_OK, "%s", msg);
        int differ = 0;
        for (int e = 0; e < 30; e++) differ += D0[e] != D1[e];
        gck_ref_model_describe(&m, msg, sizeof msg);
        cr_expect_gt(differ, 0, "order %s gives the default's bits everywhere", msg);
    }
    /* a non-default order needs its alpha and beta in the compute format */
    gck_ref_model m = base;
    m.beta_at = GCK_REF_BETA_OVER_ALPHA;
    m.scale_compute = GCK_F64;
    cr_expect_eq(gck_ref_gemm(&c, &m, A, B, D1, D1, msg, sizeof msg), GCK_EINVAL);
    free(A);
    free(B);
}

/* What each built-in backend declares: ref its one order; OpenBLAS, built in or loaded through
 * cblas: (a library of known make), every order but beta/alpha and no alpha = 0 or
 * zero-skipping promise; a CBLAS of unknown make (netlib here) every order and both. */
static void expect_rows(const char *spec, unsigned orders, unsigned with, unsigned without) {
    gck_backend be;
    char msg[1024];
    cr_assert_eq(gck_backend_open(&be, spec, msg, sizeof msg), GCK_OK, "%s", msg);
    const gck_support_row *rows;
    size_t n = be.ops->table(be.state, &rows);
    cr_assert_gt(n, 0);
    for (size_t r = 0; r < n; r++) {
        cr_expect_eq(gck_model_orders(&rows[r].model), orders, "%s row %zu orders %#x", spec, r,
                     gck_model_orders(&rows[r].model));
        cr_expect_eq(rows[r].promises & with, with, "%s row %zu", spec, r);
        cr_expect_eq(rows[r].promises & without, 0, "%s row %zu", spec, r);
    }
    gck_backend_close(&be);
}

Test(orders, each_backend_declares_its_orders_and_promises) {
    const unsigned no_over = GCK_ORDERS_ANY & ~GCK_ORDER_BETA_OVER_ALPHA;
    const unsigned lenient = GCK_PROMISE_ALPHA0_NO_READ_AB | GCK_PROMISE_MAY_SKIP_ZERO;
    expect_rows("ref", GCK_ORDER_ALPHA_ON_SUM | GCK_ORDER_BETA_LAST, GCK_PROMISE_ALPHA0_NO_READ_AB,
                GCK_PROMISE_MAY_SKIP_ZERO);
    expect_rows("openblas", no_over, 0, lenient);
    expect_rows("cblas:/usr/lib/x86_64-linux-gnu/openblas-serial/libblas.so.3", no_over, 0,
                lenient);
    expect_rows("cblas64:/usr/lib/x86_64-linux-gnu/openblas64-serial/libblas64.so.3", no_over, 0,
                lenient);
    expect_rows("cblas:/usr/lib/x86_64-linux-gnu/blas/libblas.so.3", GCK_ORDERS_ANY, lenient, 0);
    expect_rows("blis", no_over, GCK_PROMISE_ALPHA0_NO_READ_AB, GCK_PROMISE_MAY_SKIP_ZERO);
}

/* OpenBLAS says whether it takes 64-bit integers: the interface of the other width is refused
 * with a message naming the right one, instead of passing it garbage dimensions. */
Test(orders, openblas_through_the_interface_of_the_wrong_integer_width_is_refused) {
    static const struct {
        const char *spec, *want;
    } cases[] = {
        {"cblas:/usr/lib/x86_64-linux-gnu/openblas64-serial/libblas64.so.3", "use cblas64:"},
        {"cblas64:/usr/lib/x86_64-linux-gnu/openblas-serial/libblas.so.3", "use cblas:"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gck_backend be;
        char msg[1024];
        cr_expect_eq(gck_backend_open(&be, cases[i].spec, msg, sizeof msg), GCK_EINVAL, "%s",
                     cases[i].spec);
        cr_expect(strstr(msg, cases[i].want) != NULL, "%s: %s", cases[i].spec, msg);
    }
}
