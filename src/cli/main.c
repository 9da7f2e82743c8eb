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
    char reason[256];
    gck_cuda_probe(reason, sizeof reason);
    printf("CUDA: %s\n", reason);
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
    fprintf(stderr, "gemmcheck: unknown command '%s' (see gemmcheck --help)\n", cmd);
    return GCK_EXIT_USAGE;
}
