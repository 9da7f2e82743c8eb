/* gemmcheck oracle: D = alpha*op(A)*op(B) + beta*C from .npy files, rounded once to the
 * output type by the MPFR oracle (docs/SEMANTICS.md). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "gemmcheck/gemmcheck.h"
#include "inputs.h"
#include "npy.h"
#include "parallel.h"
#include "text.h"

static const char oracle_help[] =
    "usage: gemmcheck oracle --a A.npy --b B.npy [--c C.npy] --out-type T --out D.npy\n"
    "                        [--alpha X] [--beta Y] [--transa N|T] [--transb N|T]\n"
    "                        [--a-type T] [--b-type T] [--c-type T] [--threads N] [--oracle K]\n"
    "\n"
    "Computes D = alpha*op(A)*op(B) + beta*C exactly and rounds it once to the output type\n"
    "(round to nearest even, subnormals, overflow to +-Inf), with BLAS/IEEE special-value\n"
    "semantics (beta = 0 does not read C).\n"
    "\n"
    "  --a, --b, --c FILE   .npy arrays (C or Fortran order): <f2 (f16), <f4 (f32), <f8\n"
    "                       (f64), or <u2 holding bfloat16 bits together with --X-type bf16;\n"
    "                       2-D, or 3-D for a batch (batch, rows, cols): a 2-D input is then\n"
    "                       shared by every member, and D is written 3-D (repro --dump's\n"
    "                       files are read as written: pass the case's ta/tb, alpha, beta)\n"
    "  --X-type T           element type of an input: f16, bf16, f32, f64; must agree with\n"
    "                       the file's dtype (needed only for bf16)\n"
    "  --transa, --transb   N (default) or T: op(A) = A or A^T\n"
    "  --alpha, --beta      decimal numbers, parsed to the nearest binary64 (default 1 and 0);\n"
    "                       --beta other than 0 needs --c\n"
    "  --out-type T         f16, bf16, f32 or f64; bf16 output is written as <u2\n"
    "  --out FILE           the (M, N) result\n"
    "  --threads N          worker threads (default: one per core)\n"
    "  --oracle KIND        exact (default: integer superaccumulator), mpfr, or both (compared;\n"
    "                       a difference is an internal error, exit 3)\n"
    "\n"
    "Exit status: 0 success, 2 bad arguments or input files, 3 internal error.\n";

static const char *const cmd = "oracle";

/* The options, in the order of gck_cmd_oracle's names[]. */
enum {
    OPT_A,
    OPT_B,
    OPT_C,
    OPT_ATYPE,
    OPT_BTYPE,
    OPT_CTYPE,
    OPT_OUTTYPE,
    OPT_OUT,
    OPT_ALPHA,
    OPT_BETA,
    OPT_TRANSA,
    OPT_TRANSB,
    OPT_THREADS,
    OPT_ORACLE
};

/* What the options ask for, before any file is read. */
typedef struct oracle_args {
    gck_format out_type;
    long long threads;
    gck_oracle_kind kind;
    gck_inputs ops;
} oracle_args;

static int parse_args(const char **o, oracle_args *g) {
    gck_inputs_options io = {o[OPT_A],      o[OPT_B],      o[OPT_C],       o[OPT_ATYPE],
                             o[OPT_BTYPE],  o[OPT_CTYPE],  o[OPT_ALPHA],   o[OPT_BETA],
                             o[OPT_TRANSA], o[OPT_TRANSB], o[OPT_THREADS], o[OPT_ORACLE]};
    int rc = gck_inputs_parse(cmd, &io, &g->ops, &g->threads, &g->kind);
    if (rc) return rc;
    if (!o[OPT_OUTTYPE])
        return gck_cli_usage_error(cmd, "missing --out-type (see gemmcheck oracle --help)");
    if (!o[OPT_OUT]) return gck_cli_usage_error(cmd, "missing --out (see gemmcheck oracle --help)");
    if (!gck_format_parse(o[OPT_OUTTYPE], &g->out_type) || !gck_format_get(g->out_type)->is_storage)
        return gck_cli_usage_error(cmd,
                                   "unknown type '%s' for --out-type (expected f16, bf16, "
                                   "f32, f64)",
                                   o[OPT_OUTTYPE]);
    return GCK_EXIT_OK;
}

/* A zeroed buffer for the m x n result, refused (exit 2) beyond this machine's memory. */
static int alloc_result(const gck_case *gc, void **d, size_t *dbytes) {
    int64_t m = gc->m, n = gc->n * gc->batch;
    size_t esz = (size_t)gck_format_get(gc->type_d)->storage_bytes;
    if (m != 0 && n > INT64_MAX / 16 / m)
        return gck_cli_usage_error(cmd, "the %" PRId64 "x%" PRId64 " result is too large", m, n);
    *dbytes = (size_t)(m * n) * esz;
    /* Linux overcommits: a calloc far beyond memory can succeed and the process be killed
     * later while writing D, so compare with the physical memory first. */
    double phys = gck_physical_memory();
    if (phys > 0 && (double)*dbytes > phys)
        return gck_cli_usage_error(cmd,
                                   "the %" PRId64 "x%" PRId64 " %s result needs %.1f GiB, more "
                                   "than this machine's %.1f GiB of memory",
                                   m, n, gck_format_get(gc->type_d)->name, (double)*dbytes / 0x1p30,
                                   phys / 0x1p30);
    *d = calloc(*dbytes ? *dbytes : 1, 1);
    if (!*d)
        return gck_cli_usage_error(
            cmd, "cannot allocate %zu bytes for the %" PRId64 "x%" PRId64 " result", *dbytes, m, n);
    return GCK_EXIT_OK;
}

/* D by the chosen oracle; with `both`, by both, and a difference is an internal error. */
static gck_status compute(const gck_case *gc, const oracle_args *g, const void *A, const void *B,
                          const void *C, void *d, size_t dbytes, char *msg, size_t len) {
    int threads = (int)g->threads;
    gck_status s = g->kind == GCK_ORACLE_MPFR ? gck_oracle_mpfr(gc, A, B, C, d, threads, msg, len)
                                              : gck_oracle_exact(gc, A, B, C, d, threads, msg, len);
    if (s != GCK_OK || g->kind != GCK_ORACLE_BOTH) return s;
    void *d2 = calloc(dbytes ? dbytes : 1, 1);
    if (!d2)
        return gck_fail(GCK_ENOMEM, msg, len, "cannot allocate a second %zu-byte result", dbytes);
    s = gck_oracle_mpfr(gc, A, B, C, d2, threads, msg, len);
    if (s == GCK_OK && memcmp(d, d2, dbytes) != 0) {
        size_t esz = (size_t)gck_format_get(gc->type_d)->storage_bytes, e = 0;
        while (e + esz <= dbytes && !memcmp((char *)d + e, (char *)d2 + e, esz)) e += esz;
        s = gck_fail(GCK_EINTERNAL, msg, len,
                     "the exact and MPFR oracles disagree at element %zu of D", e / esz);
    }
    free(d2);
    return s;
}

static int run(const char **o) {
    oracle_args g;
    int rc = parse_args(o, &g);
    if (rc) return rc;
    void *d = NULL;
    size_t dbytes = 0;
    gck_case gc;
    char msg[512];
    gck_inputs *ops = &g.ops;
    if ((rc = gck_inputs_load(ops)) || (rc = gck_inputs_case(ops, g.out_type, &gc)) ||
        (rc = alloc_result(&gc, &d, &dbytes)))
        goto done;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    gck_status s = compute(&gc, &g, ops->A.data, ops->B.data, ops->c ? ops->C.data : NULL, d,
                           dbytes, msg, sizeof msg);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (s == GCK_ENOMEM) {
        rc = gck_cli_usage_error(cmd, "%s", msg);
        goto done;
    }
    if (s != GCK_OK) {
        fprintf(stderr, "gemmcheck oracle: internal error: %s\n", msg);
        rc = GCK_EXIT_INTERNAL;
        goto done;
    }
    /* a batch when any input is one (a 2-D input is shared by every member) */
    bool batched = gck_inputs_batched(ops);
    int64_t shape[3] = {gc.batch, gc.m, gc.n};
    if (gck_npy_write(o[OPT_OUT], gck_npy_dtype_of(gc.type_d), batched ? 3 : 2,
                      batched ? shape : shape + 1, d, msg, sizeof msg) != GCK_OK) {
        rc = gck_cli_usage_error(cmd, "%s", msg);
        goto done;
    }
    double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    printf("gemmcheck oracle: D(%" PRId64 "x%" PRId64 ") = %.17g*op(A)*op(B)%s%s, K=%" PRId64
           ", %s x %s%s%s -> %s, %" PRId64 " elements rounded once (%s oracle) in %.3f s -> %s\n",
           gc.m, gc.n, ops->alpha, o[OPT_C] ? " + beta*C, beta=" : "",
           o[OPT_C] ? o[OPT_BETA] ? o[OPT_BETA] : "0" : "", gc.k, gck_format_get(gc.type_a)->name,
           gck_format_get(gc.type_b)->name, o[OPT_C] ? " + " : "",
           o[OPT_C] ? gck_format_get(gc.type_c)->name : "", gck_format_get(gc.type_d)->name,
           gc.m * gc.n * gc.batch,
           g.kind == GCK_ORACLE_MPFR   ? "MPFR"
           : g.kind == GCK_ORACLE_BOTH ? "exact and MPFR"
                                       : "exact",
           secs, o[OPT_OUT]);
    rc = GCK_EXIT_OK;
done:
    gck_inputs_free(ops);
    free(d);
    return rc;
}

int gck_cmd_oracle(int argc, char **argv) {
    static const char *const names[] = {
        "--a",   "--b",     "--c",    "--a-type", "--b-type", "--c-type",  "--out-type",
        "--out", "--alpha", "--beta", "--transa", "--transb", "--threads", "--oracle"};
    enum { NOPT = sizeof names / sizeof names[0] };
    const char *vals[NOPT] = {0};
    gck_opt opts[NOPT];
    for (int k = 0; k < NOPT; k++) opts[k] = (gck_opt){.name = names[k], .value = &vals[k]};
    gck_opt_spec spec = {cmd, opts, NOPT, NULL, 0, NULL};
    int nargs;
    bool help;
    if (gck_opt_parse(&spec, argc, argv, &nargs, &help)) return GCK_EXIT_USAGE;
    if (help) {
        fputs(oracle_help, stdout);
        return GCK_EXIT_OK;
    }
    return run(vals);
}
