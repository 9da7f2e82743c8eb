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

/* The element type of an input file: from its dtype, checked against --X-type. */
static int input_type(const char *path, const gck_npy *a, const char *opt, const char *given,
                      gck_format *out) {
    gck_format from_dtype = gck_npy_format_of(a->dtype);
    if (given) {
        gck_format t;
        if (!gck_format_parse(given, &t) || !gck_format_get(t)->is_storage)
            return gck_cli_usage_error(cmd,
                                       "unknown type '%s' for %s (expected f16, bf16, f32, "
                                       "f64)",
                                       given, opt);
        if (t != from_dtype)
            return gck_cli_usage_error(cmd,
                                       "%s %s contradicts %s's dtype %s (%s is stored as "
                                       "%s)",
                                       opt, given, path, gck_npy_descr(a->dtype), given,
                                       gck_npy_descr(gck_npy_dtype_of(t)));
        *out = t;
        return GCK_EXIT_OK;
    }
    if (a->dtype == GCK_NPY_U2)
        return gck_cli_usage_error(cmd,
                                   "%s has dtype <u2: pass %s bf16 if it holds bfloat16 "
                                   "bits",
                                   path, opt);
    *out = from_dtype;
    return GCK_EXIT_OK;
}

/* "(2, 3)" or "(4, 2, 3)" */
static void shape_text(const gck_npy *a, char *buf, size_t len) {
    size_t n = (size_t)snprintf(buf, len, "(");
    for (int d = 0; d < a->ndim && n < len; d++)
        n += (size_t)snprintf(buf + n, len - n, "%s%" PRId64, d ? ", " : "", a->shape[d]);
    if (n < len) snprintf(buf + n, len - n, "%s)", a->ndim == 1 ? "," : "");
}

/* A matrix (2-D) or a strided batch of them (3-D: batch, rows, cols), as repro --dump writes. */
static int load_matrix(const char *what, const char *path, gck_npy *a) {
    char msg[512];
    gck_status s = gck_npy_read(path, a, msg, sizeof msg);
    if (s != GCK_OK) return gck_cli_usage_error(cmd, "%s", msg);
    if (a->ndim != 2 && a->ndim != 3) {
        char shape[160];
        shape_text(a, shape, sizeof shape);
        return gck_cli_usage_error(
            cmd, "%s (%s): expected a 2-D array or a 3-D batch, got shape %s", path, what, shape);
    }
    return GCK_EXIT_OK;
}

/* Rows and columns of the matrices of a (its last two dimensions; common_batch has the batch). */
static void matrix_dims(const gck_npy *a, int64_t *rows, int64_t *cols) {
    *rows = a->shape[a->ndim - 2];
    *cols = a->shape[a->ndim - 1];
}

static int parse_trans(const char *opt, const char *v, gck_op *out) {
    if (!v || strcmp(v, "N") == 0 || strcmp(v, "n") == 0)
        *out = GCK_OP_N;
    else if (strcmp(v, "T") == 0 || strcmp(v, "t") == 0)
        *out = GCK_OP_T;
    else
        return gck_cli_usage_error(cmd, "%s '%s' must be N or T", opt, v);
    return GCK_EXIT_OK;
}

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
    double alpha, beta;
    long long threads;
    gck_oracle_kind kind;
    gck_op ta, tb;
} oracle_args;

static int parse_args(const char **o, oracle_args *g) {
    if (!o[OPT_A]) return gck_cli_usage_error(cmd, "missing --a (see gemmcheck oracle --help)");
    if (!o[OPT_B]) return gck_cli_usage_error(cmd, "missing --b (see gemmcheck oracle --help)");
    if (!o[OPT_OUTTYPE])
        return gck_cli_usage_error(cmd, "missing --out-type (see gemmcheck oracle --help)");
    if (!o[OPT_OUT]) return gck_cli_usage_error(cmd, "missing --out (see gemmcheck oracle --help)");
    if (!gck_format_parse(o[OPT_OUTTYPE], &g->out_type) || !gck_format_get(g->out_type)->is_storage)
        return gck_cli_usage_error(cmd,
                                   "unknown type '%s' for --out-type (expected f16, bf16, "
                                   "f32, f64)",
                                   o[OPT_OUTTYPE]);
    g->alpha = 1.0;
    g->beta = 0.0;
    if (o[OPT_ALPHA] && !gck_parse_double(o[OPT_ALPHA], &g->alpha))
        return gck_cli_usage_error(cmd, "--alpha '%s' is not a finite decimal number",
                                   o[OPT_ALPHA]);
    if (o[OPT_BETA] && !gck_parse_double(o[OPT_BETA], &g->beta))
        return gck_cli_usage_error(cmd, "--beta '%s' is not a finite decimal number", o[OPT_BETA]);
    if (g->beta != 0.0 && !o[OPT_C])
        return gck_cli_usage_error(cmd, "--beta %s needs --c", o[OPT_BETA]);
    if (o[OPT_CTYPE] && !o[OPT_C]) return gck_cli_usage_error(cmd, "--c-type given without --c");
    g->threads = 0;
    g->kind = GCK_ORACLE_EXACT;
    if (o[OPT_ORACLE] && !gck_oracle_kind_parse(o[OPT_ORACLE], &g->kind))
        return gck_cli_usage_error(cmd, "--oracle '%s' must be exact, mpfr or both", o[OPT_ORACLE]);
    if (o[OPT_THREADS] && (!gck_parse_count(o[OPT_THREADS], &g->threads) || g->threads > 4096))
        return gck_cli_usage_error(cmd, "--threads '%s' is not a count from 0 to 4096",
                                   o[OPT_THREADS]);
    int rc;
    if ((rc = parse_trans("--transa", o[OPT_TRANSA], &g->ta)) ||
        (rc = parse_trans("--transb", o[OPT_TRANSB], &g->tb)))
        return rc;
    return GCK_EXIT_OK;
}

/* The batch of the files: that of the 3-D ones (equal), 2-D ones shared (stride 0). */
static int common_batch(const char **o, const gck_npy *a, const gck_npy *b, const gck_npy *c,
                        int64_t *batch) {
    const gck_npy *x[3] = {a, b, o[OPT_C] ? c : NULL};
    const char *names[3] = {o[OPT_A], o[OPT_B], o[OPT_C]};
    *batch = 1;
    const char *first = NULL;
    for (int i = 0; i < 3; i++) {
        if (!x[i] || x[i]->ndim != 3) continue;
        if (first && x[i]->shape[0] != *batch)
            return gck_cli_usage_error(
                cmd, "batch sizes differ: %s holds %" PRId64 " matrices, %s %" PRId64, first,
                *batch, names[i], x[i]->shape[0]);
        first = names[i];
        *batch = x[i]->shape[0];
    }
    return GCK_EXIT_OK;
}

/* The row-major case the files describe (a strided batch when some are 3-D), or a usage error
 * naming the mismatch. */
static int build_case(const char **o, const oracle_args *g, const gck_npy *a, const gck_npy *b,
                      const gck_npy *c, gck_case *gc) {
    gck_format tA, tB, tC = g->out_type;
    int rc;
    if ((rc = input_type(o[OPT_A], a, "--a-type", o[OPT_ATYPE], &tA)) ||
        (rc = input_type(o[OPT_B], b, "--b-type", o[OPT_BTYPE], &tB)) ||
        (o[OPT_C] && (rc = input_type(o[OPT_C], c, "--c-type", o[OPT_CTYPE], &tC))))
        return rc;
    int64_t ra, ca, rb, cb, rc_ = 0, cc = 0, batch;
    matrix_dims(a, &ra, &ca);
    matrix_dims(b, &rb, &cb);
    if (o[OPT_C]) matrix_dims(c, &rc_, &cc);
    if ((rc = common_batch(o, a, b, c, &batch))) return rc;
    int64_t m = g->ta == GCK_OP_N ? ra : ca, ka = g->ta == GCK_OP_N ? ca : ra;
    int64_t kb = g->tb == GCK_OP_N ? rb : cb, n = g->tb == GCK_OP_N ? cb : rb;
    char sa[160], sb[160], sc[160];
    shape_text(a, sa, sizeof sa);
    shape_text(b, sb, sizeof sb);
    if (ka != kb)
        return gck_cli_usage_error(cmd,
                                   "shapes do not match: op(A) is %" PRId64 "x%" PRId64
                                   " (%s has shape %s, --transa %c) but op(B) is %" PRId64
                                   "x%" PRId64 " (%s has shape %s, --transb %c)",
                                   m, ka, o[OPT_A], sa, g->ta == GCK_OP_N ? 'N' : 'T', kb, n,
                                   o[OPT_B], sb, g->tb == GCK_OP_N ? 'N' : 'T');
    if (o[OPT_C] && (rc_ != m || cc != n)) {
        shape_text(c, sc, sizeof sc);
        return gck_cli_usage_error(
            cmd,
            "shapes do not match: %s has shape %s but op(A)*op(B) is (%" PRId64 ", %" PRId64 ")",
            o[OPT_C], sc, m, n);
    }
    gck_case_init(gc, m, n, ka);
    gc->order = GCK_ROW_MAJOR;
    gc->transa = g->ta;
    gc->transb = g->tb;
    gc->lda = gck_case_min_ld(gc, GCK_A);
    gc->ldb = gck_case_min_ld(gc, GCK_B);
    gc->ldc = gc->ldd = gck_case_min_ld(gc, GCK_C);
    gc->d_is_c = false;
    gc->alpha = g->alpha;
    gc->beta = g->beta;
    gc->scale_type = GCK_F64;
    gc->type_a = tA;
    gc->type_b = tB;
    gc->type_c = tC;
    gc->type_d = g->out_type;
    gc->compute = GCK_F64;
    gc->batch = batch;
    gc->stride_a = a->ndim == 3 ? ra * ca : 0;
    gc->stride_b = b->ndim == 3 ? rb * cb : 0;
    gc->stride_c = o[OPT_C] && c->ndim == 3 ? m * n : 0;
    gc->stride_d = m * n;
    char msg[512];
    if (gck_case_validate(gc, msg, sizeof msg) != GCK_OK)
        return gck_cli_usage_error(cmd, "%s", msg);
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
    gck_npy a = {0}, b = {0}, c = {0};
    void *d = NULL;
    size_t dbytes = 0;
    gck_case gc;
    char msg[512];
    if ((rc = load_matrix("A", o[OPT_A], &a)) || (rc = load_matrix("B", o[OPT_B], &b)) ||
        (o[OPT_C] && (rc = load_matrix("C", o[OPT_C], &c))) ||
        (rc = build_case(o, &g, &a, &b, &c, &gc)) || (rc = alloc_result(&gc, &d, &dbytes)))
        goto done;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    gck_status s =
        compute(&gc, &g, a.data, b.data, o[OPT_C] ? c.data : NULL, d, dbytes, msg, sizeof msg);
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
    bool batched = a.ndim == 3 || b.ndim == 3 || (o[OPT_C] && c.ndim == 3);
    int64_t shape[3] = {gc.batch, gc.m, gc.n};
    if (gck_npy_write(o[OPT_OUT], gck_npy_dtype_of(gc.type_d), batched ? 3 : 2,
                      batched ? shape : shape + 1, d, msg, sizeof msg) != GCK_OK) {
        rc = gck_cli_usage_error(cmd, "%s", msg);
        goto done;
    }
    double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    printf("gemmcheck oracle: D(%" PRId64 "x%" PRId64 ") = %.17g*op(A)*op(B)%s%s, K=%" PRId64
           ", %s x %s%s%s -> %s, %" PRId64 " elements rounded once (%s oracle) in %.3f s -> %s\n",
           gc.m, gc.n, g.alpha, o[OPT_C] ? " + beta*C, beta=" : "",
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
    gck_npy_free(&a);
    gck_npy_free(&b);
    gck_npy_free(&c);
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
