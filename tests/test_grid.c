/* The fixed grid of at least 2,000 cases per backend gives zero findings on correct libraries:
 * ref, OpenBLAS, BLIS, and netlib through cblas:. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "gemmcheck/runner.h"
#include "grid.h"

#define GRID_CASES 2000

static void run_grid(const char *spec) {
    gck_backend be;
    char msg[1024];
    gck_status st = gck_backend_open(&be, spec, msg, sizeof msg);
    if (st == GCK_EIO) cr_skip_test("%s not loadable here: %s", spec, msg);
    cr_assert_eq(st, GCK_OK, "%s", msg);
    const gck_support_row *rows;
    size_t nrows = be.ops->table(be.state, &rows);
    gck_run_options o = {.check = {.threads = 1}, .determinism = true};
    long pass = 0, unsupported = 0, findings = 0, exact = 0, elements = 0, lenient = 0;
    double max_tight = 0;
    for (uint64_t i = 0; i < GRID_CASES; i++) {
        gck_spec s;
        grid_spec(i, rows, nrows, &s);
        gck_run_result r;
        char repro[2048];
        gck_spec_format(&s, repro, sizeof repro);
        if (getenv("GRID_TRACE")) fprintf(stderr, "[grid %s] %s\n", spec, repro);
        cr_assert_eq(gck_run_spec(&be, &s, &o, &r, msg, sizeof msg), GCK_OK, "%s: %s", repro, msg);
        if (r.outcome == GCK_OUTCOME_UNSUPPORTED) unsupported++;
        else if (r.outcome == GCK_OUTCOME_PASS) pass++;
        else {
            findings++;
            for (int f = 0; f < r.nfindings; f++)
                fprintf(stderr, "[grid %s] %s: %s\n  repro: gemmcheck repro --backend %s '%s'\n",
                        spec, gck_kind_name(r.findings[f].kind), r.findings[f].detail, spec, repro);
        }
        elements += r.check.elements;
        exact += r.check.exact_elements;
        lenient += r.check.lenient;
        if (r.check.max_tight > max_tight) max_tight = r.check.max_tight;
    }
    fprintf(stderr, "[grid %s] %d cases: %ld pass, %ld unsupported, %ld with findings; %ld elements "
            "checked (%ld exact-case bitwise, %ld by zero-skipping leniency), max tight ratio %.3g\n",
            spec, GRID_CASES, pass, unsupported, findings, elements, exact, lenient, max_tight);
    cr_expect_eq(findings, 0, "%s: %ld cases with findings", spec, findings);
    cr_expect_gt(pass, GRID_CASES * 9 / 10, "%s: too few cases ran", spec);
    gck_backend_close(&be);
}

Test(grid, ref_gives_zero_findings, .timeout = 900) { run_grid("ref"); }
Test(grid, openblas_gives_zero_findings, .timeout = 900) { run_grid("openblas"); }
Test(grid, blis_gives_zero_findings, .timeout = 900) { run_grid("blis"); }
Test(grid, netlib_cblas_gives_zero_findings, .timeout = 900) {
    run_grid("cblas:/usr/lib/x86_64-linux-gnu/blas/libblas.so.3");
}
