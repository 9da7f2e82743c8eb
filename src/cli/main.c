/* gemmcheck command-line entry point: dispatches to the subcommands. */
#define _DEFAULT_SOURCE 1
#include <gmp.h>
#include <limits.h>
#include <mpfr.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cuda_probe.h"
#include "gemmcheck/backend.h"
#include "gemmcheck/version.h"
#include "worker.h"

static const char main_help[] =
    "usage: gemmcheck <command> [options]\n"
    "\n"
    "gemmcheck tells whether a GEMM D = alpha*op(A)*op(B) + beta*C is right, against an\n"
    "exact oracle that rounds once to the output type.\n"
    "\n"
    "commands:\n"
    "  fuzz       run a fuzz campaign against backends (see gemmcheck fuzz --help)\n"
    "  oracle     compute D exactly from .npy files (see gemmcheck oracle --help)\n"
    "  backends   list the backends, whether they can run, their versions and support tables\n"
    "  repro      run one case (a reproducer string) on one backend and print the verdict\n"
    "  shrink     minimise a failing case while it keeps failing the same way\n"
    "  merge      merge the JSON reports of campaign shards\n"
    "\n"
    "options:\n"
    "  --help     this text\n"
    "  --version  versions of gemmcheck and of the libraries it uses\n"
    "\n"
    "Exit status: 0 success, 1 findings, 2 usage or set-up error, 3 internal error.\n";

static void print_version(void) {
    printf("gemmcheck %s\n", GEMMCHECK_VERSION);
    printf("MPFR %s (thread-local state: %s), GMP %s\n", mpfr_get_version(),
           mpfr_buildopt_tls_p() ? "yes" : "no", gmp_version);
    /* the BLAS libraries the built-in backends load, and what they say of themselves */
    static const char *const blas[] = {"openblas", "blis"};
    for (size_t i = 0; i < sizeof blas / sizeof blas[0]; i++) {
        gck_backend be;
        char msg[512], ver[512] = "";
        if (gck_backend_open(&be, blas[i], msg, sizeof msg) != GCK_OK) {
            printf("%s: not available (%s)\n", blas[i], msg);
            continue;
        }
        if (be.ops->version) be.ops->version(be.state, ver, sizeof ver);
        printf("%s: %s\n", blas[i], ver);
        gck_backend_close(&be);
    }
    char reason[512];
    gck_cuda_probe(reason, sizeof reason);
    printf("CUDA: %s\n", reason);
}

/* Levenshtein distance of two short words (for "did you mean"); large when either is long. */
static int distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 31 || lb > 31) return 99;
    int d[32][32];
    for (size_t i = 0; i <= la; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int sub = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            int del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
            d[i][j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
    return d[la][lb];
}

static int unknown_command(const char *cmd) {
    static const char *const commands[] = {"fuzz",  "oracle", "backends",
                                           "repro", "shrink", "merge"};
    const char *best = NULL;
    /* suggest within one edit (two for words of five letters or more), or a command the word
     * begins */
    int bestd = strlen(cmd) >= 5 ? 3 : 2;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        int dd = distance(cmd, commands[i]);
        if (strncmp(cmd, commands[i], strlen(cmd)) == 0 && strlen(cmd) >= 2) dd = 1;
        if (dd < bestd) bestd = dd, best = commands[i];
    }
    if (best)
        fprintf(stderr,
                "gemmcheck: unknown command '%s'; did you mean '%s'? (see gemmcheck --help)\n", cmd,
                best);
    else
        fprintf(stderr, "gemmcheck: unknown command '%s' (see gemmcheck --help)\n", cmd);
    return GCK_EXIT_USAGE;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fputs(main_help, stderr);
        return GCK_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    /* workers are started from this very binary (fork+exec of `gemmcheck __worker`) */
    static char exe[4096];
    ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (l > 0) {
        exe[l] = '\0';
        gck_worker_set_exe(exe);
    }
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        fputs(main_help, stdout);
        return GCK_EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0) {
        print_version();
        return GCK_EXIT_OK;
    }
    if (strcmp(cmd, "oracle") == 0) return gck_cmd_oracle(argc - 1, argv + 1);
    if (strcmp(cmd, "repro") == 0) return gck_cmd_repro(argc - 1, argv + 1);
    if (strcmp(cmd, "backends") == 0) return gck_cmd_backends(argc - 1, argv + 1);
    if (strcmp(cmd, "fuzz") == 0) return gck_cmd_fuzz(argc - 1, argv + 1);
    if (strcmp(cmd, "merge") == 0) return gck_cmd_merge(argc - 1, argv + 1);
    if (strcmp(cmd, "shrink") == 0) return gck_cmd_shrink(argc - 1, argv + 1);
    if (strcmp(cmd, "__worker") == 0) return gck_worker_main(argc - 1, argv + 1);
    return unknown_command(cmd);
}
