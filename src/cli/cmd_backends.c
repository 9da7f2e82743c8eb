/* gemmcheck backends: each backend, whether it can run (and if not why), its version and its
 * support table (the support matrix of reports). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends.h"
#include "cli.h"
#include "gemmcheck/backend.h"
#include "worker.h"

static const char backends_help[] =
    "usage: gemmcheck backends [--rows] [SPEC ...]\n"
    "\n"
    "Without SPEC: the built-in backends (ref, kernels, openblas, blis, cublas, cublaslt).\n"
    "With SPECs (e.g. cblas:/usr/lib/x86_64-linux-gnu/blas/libblas.so.3): those. For each:\n"
    "available or why not, the library version, and the support table, one row per type tuple:\n"
    "  A B C D | compute | model (inputs, accumulation, epilogue, FTZ/DAZ) | promises | entry\n"
    "promises: a0 = alpha 0 does not read A/B, b0 = beta 0 does not read C, skip0 = may skip\n"
    "terms with a zero factor, row = row-major, batch = strided batches, Dsep / Dinpl = D\n"
    "separate from / in place of C.\n"
    "Tables longer than 24 rows are summarised unless --rows is given or the backend is named.\n"
    "\n"
    "Exit status: 0, or 2 when a named SPEC cannot be loaded.\n";

/* Each backend is opened in a worker process, as a campaign does: an `init` or a table that
 * crashes, hangs or lies takes the worker down, not this listing. */
static int show(const char *spec, bool all_rows) {
    static gck_support_row rows[GCK_MAX_ROWS];
    static char entries[GCK_MAX_ROWS][96];
    gck_worker w;
    char msg[1024];
    gck_worker_options wo = {spec, false, GCK_ORACLE_EXACT, stderr, 50, false};
    if (!gck_worker_spawn(&w, &wo, msg, sizeof msg)) {
        printf("%s: %s\n", spec, msg);
        return GCK_EXIT_INTERNAL;
    }
    size_t n = 0;
    gck_handshake hs = gck_worker_handshake(&w, gck_wire_now() + 120.0, rows, entries, GCK_MAX_ROWS,
                                            &n, msg, sizeof msg);
    if (hs != GCK_HANDSHAKE_READY) {
        /* unavailable here (no device) is a fact, not an error; a backend that cannot be
         * opened or misbehaves while opening is one when named */
        printf("%s: %s%s\n", spec,
               hs == GCK_HANDSHAKE_UNAVAILABLE ? "" : "cannot be opened: ", msg);
        gck_worker_kill(&w);
        return hs == GCK_HANDSHAKE_UNAVAILABLE ? GCK_EXIT_OK : GCK_EXIT_USAGE;
    }
    printf("%s: available, %s\n", spec, w.note);
    printf("  version: %s\n", w.version);
    printf("  support table: %zu row%s\n", n, n == 1 ? "" : "s");
    if (n <= 24 || all_rows) {
        for (size_t r = 0; r < n; r++) {
            char line[512];
            gck_row_describe(&rows[r], line, sizeof line);
            printf("    %s\n", line);
        }
    } else {
        char line[512];
        gck_row_describe(&rows[0], line, sizeof line);
        printf("    %s\n    ... (%zu more; gemmcheck backends --rows %s)\n", line, n - 1, spec);
    }
    gck_worker_kill(&w);
    return GCK_EXIT_OK;
}

int gck_cmd_backends(int argc, char **argv) {
    bool all_rows = false, help;
    const gck_opt opts[] = {{"--rows", .flag = &all_rows, .flag_value = true}};
    const char **named = calloc((size_t)(argc > 0 ? argc : 1), sizeof *named);
    if (!named) return gck_cli_usage_error("backends", "out of memory");
    gck_opt_spec spec = {"backends", opts, 1, named, argc, NULL};
    int nnamed, rc = gck_opt_parse(&spec, argc, argv, &nnamed, &help);
    if (rc == GCK_EXIT_OK && help) fputs(backends_help, stdout);
    for (int i = 0; rc == GCK_EXIT_OK && !help && i < nnamed; i++)
        if (show(named[i], true) != GCK_EXIT_OK) rc = GCK_EXIT_USAGE;
    if (rc == GCK_EXIT_OK && !help && nnamed == 0)
        for (const char *const *b = gck_backend_names(); *b; b++) /* those that need no argument */
            if (!strchr(*b, ':')) show(*b, all_rows);
    free(named);
    return rc;
}
