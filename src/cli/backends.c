/* gemmcheck backends: each backend, whether it can run (and if not why), its version and its
 * support table (the support matrix of reports). */
#include <stdio.h>
#include <string.h>

#include "backends.h"
#include "cli.h"
#include "gemmcheck/backend.h"
#include "worker.h"

static const char backends_help[] =
    "usage: gemmcheck backends [--rows] [SPEC ...]\n"
    "\n"
    "Without SPEC: the built-in backends (ref, openblas, blis, cublas, cublaslt). With SPECs\n"
    "(e.g. cblas:/usr/lib/x86_64-linux-gnu/blas/libblas.so.3): those. For each: available or\n"
    "why not, the library version, and the support table, one row per type tuple:\n"
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
    gck_worker_options wo = {spec, false, NULL, stderr, 50};
    if (!gck_worker_spawn(&w, &wo, msg, sizeof msg)) {
        printf("%s: %s\n", spec, msg);
        return GCK_EXIT_INTERNAL;
    }
    size_t n = 0;
    int hs = gck_worker_handshake(&w, gck_wire_now() + 120.0, rows, entries, GCK_MAX_ROWS, &n, msg,
                                  sizeof msg);
    if (hs != 1) {
        /* unavailable here (no device) is a fact, not an error; a backend that cannot be
         * opened or misbehaves while opening is one when named */
        printf("%s: %s%s\n", spec, hs == 2 ? "" : "cannot be opened: ", msg);
        gck_worker_kill(&w);
        return hs == 2 ? GCK_EXIT_OK : GCK_EXIT_USAGE;
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
    bool all_rows = false;
    int named = 0, rc = GCK_EXIT_OK;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(backends_help, stdout);
            return GCK_EXIT_OK;
        }
        if (!strcmp(argv[i], "--rows"))
            all_rows = true;
        else if (argv[i][0] == '-')
            return gck_cli_usage_error("backends", "unknown option '%s'", argv[i]);
    }
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-') continue;
        named++;
        int r = show(argv[i], true);
        if (r != GCK_EXIT_OK) rc = GCK_EXIT_USAGE;
    }
    if (named == 0) {
        for (const char *const *b = gck_backend_names(); *b; b++) /* those that need no argument */
            if (!strchr(*b, ':')) show(*b, all_rows);
    }
    return rc;
}
