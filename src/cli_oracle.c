/* gemmcheck oracle: D = alpha*op(A)*op(B) + beta*C from .npy files, rounded once to the
 * output type by the MPFR oracle (SPEC §7). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "gemmcheck/gemmcheck.h"
#include "npy.h"

static const char oracle_help[] =
    "usage: gemmcheck oracle --a A.npy --b B.npy [--c C.npy] --out-type T --out D.npy\n"
    "                        [--alpha X] [--beta Y] [--transa N|T] [--transb N|T]\n"
    "                        [--a-type T] [--b-type T] [--c-type T] [--threads N] [--oracle K]\n"
    "\n"
    "Computes D = alpha*op(A)*op(B) + beta*C exactly and rounds it once to the output type\n"
    "(round to nearest even, subnormals, overflow to +-Inf), with BLAS/IEEE special-value\n"
    "semantics (beta = 0 does not read C).\n"
    "\n"
    "  --a, --b, --c FILE   2-D C-order .npy arrays: <f2 (f16), <f4 (f32), <f8 (f64), or\n"
    "                       <u2 holding bfloat16 bits together with --X-type bf16\n"
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
static int input_type(const char *what, const char *path, const gck_npy *a, const char *opt,
                      const char *given, gck_format *out) {
    gck_format from_dtype;
    switch (a->dtype) {
    case GCK_NPY_F2: from_dtype = GCK_F16; break;
    case GCK_NPY_F4: from_dtype = GCK_F32; break;
    case GCK_NPY_F8: from_dtype = GCK_F64; break;
    default: from_dtype = GCK_BF16; break;
    }
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
                                       t == GCK_BF16  ? "<u2"
                                       : t == GCK_F16 ? "<f2"
                                       : t == GCK_F32 ? "<f4"
                                                      : "<f8");
        *out = t;
        return GCK_EXIT_OK;
    }
    if (a->dtype == GCK_NPY_U2)
        return gck_cli_usage_error(cmd,
                                   "%s has dtype <u2: pass %s bf16 if it holds bfloat16 "
                                   "bits",
                                   path, opt);
    (void)what;
    *out = from_dtype;
    return GCK_EXIT_OK;
}

static int load_matrix(const char *what, const char *path, gck_npy *a) {
    char msg[512];
    gck_status s = gck_npy_read(path, a, msg, sizeof msg);
    if (s != GCK_OK) return gck_cli_usage_error(cmd, "%s", msg);
    if (a->ndim != 2) {
        char shape[128] = "";
        size_t n = 0;
        for (int d = 0; d < a->ndim; d++)
            n += (size_t)snprintf(shape + n, sizeof shape - n, "%s%" PRId64, d ? ", " : "",
                                  a->shape[d]);
        return gck_cli_usage_error(cmd, "%s (%s): expected a 2-D array, got shape (%s%s)", path,
                                   what, shape, a->ndim == 1 ? "," : "");
    }
    return GCK_EXIT_OK;
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

static int run(const char **o) {
    enum {
        A,
        B,
        C,
        ATYPE,
        BTYPE,
        CTYPE,
        OUTTYPE,
        OUT,
        ALPHA,
        BETA,
        TRANSA,
        TRANSB,
        THREADS,
        ORACLE
    };
    if (!o[A]) return gck_cli_usage_error(cmd, "missing --a (see gemmcheck oracle --help)");
    if (!o[B]) return gck_cli_usage_error(cmd, "missing --b (see gemmcheck oracle --help)");
    if (!o[OUTTYPE])
        return gck_cli_usage_error(cmd, "missing --out-type (see gemmcheck oracle --help)");
    if (!o[OUT]) return gck_cli_usage_error(cmd, "missing --out (see gemmcheck oracle --help)");
    gck_format out_type;
    if (!gck_format_parse(o[OUTTYPE], &out_type) || !gck_format_get(out_type)->is_storage)
        return gck_cli_usage_error(cmd,
                                   "unknown type '%s' for --out-type (expected f16, bf16, "
                                   "f32, f64)",
                                   o[OUTTYPE]);
    double alpha = 1.0, beta = 0.0;
    if (o[ALPHA] && !gck_parse_double(o[ALPHA], &alpha))
        return gck_cli_usage_error(cmd, "--alpha '%s' is not a finite decimal number", o[ALPHA]);
    if (o[BETA] && !gck_parse_double(o[BETA], &beta))
        return gck_cli_usage_error(cmd, "--beta '%s' is not a finite decimal number", o[BETA]);
    if (beta != 0.0 && !o[C]) return gck_cli_usage_error(cmd, "--beta %s needs --c", o[BETA]);
    if (o[CTYPE] && !o[C]) return gck_cli_usage_error(cmd, "--c-type given without --c");
    long long threads = 0;
    gck_oracle_kind okind = GCK_ORACLE_EXACT;
    if (o[ORACLE] && !gck_oracle_kind_parse(o[ORACLE], &okind))
        return gck_cli_usage_error(cmd, "--oracle '%s' must be exact, mpfr or both", o[ORACLE]);
    if (o[THREADS] && (!gck_parse_count(o[THREADS], &threads) || threads > 4096))
        return gck_cli_usage_error(cmd, "--threads '%s' is not a count from 0 to 4096", o[THREADS]);
    gck_op ta = GCK_OP_N, tb = GCK_OP_N;
    int rc;
    if ((rc = parse_trans("--transa", o[TRANSA], &ta)) ||
        (rc = parse_trans("--transb", o[TRANSB], &tb)))
        return rc;

    gck_npy a = {0}, b = {0}, c = {0};
    void *d = NULL;
    gck_case gc;
    if ((rc = load_matrix("A", o[A], &a)) || (rc = load_matrix("B", o[B], &b)) ||
        (o[C] && (rc = load_matrix("C", o[C], &c))))
        goto done;
    gck_format tA, tB, tC = out_type;
    if ((rc = input_type("A", o[A], &a, "--a-type", o[ATYPE], &tA)) ||
        (rc = input_type("B", o[B], &b, "--b-type", o[BTYPE], &tB)) ||
        (o[C] && (rc = input_type("C", o[C], &c, "--c-type", o[CTYPE], &tC))))
        goto done;
    int64_t m = ta == GCK_OP_N ? a.shape[0] : a.shape[1];
    int64_t ka = ta == GCK_OP_N ? a.shape[1] : a.shape[0];
    int64_t kb = tb == GCK_OP_N ? b.shape[0] : b.shape[1];
    int64_t n = tb == GCK_OP_N ? b.shape[1] : b.shape[0];
    if (ka != kb) {
        rc = gck_cli_usage_error(cmd,
                                 "shapes do not match: op(A) is %" PRId64 "x%" PRId64
                                 " (%s has shape (%" PRId64 ", %" PRId64 "), --transa %c) but "
                                 "op(B) is %" PRId64 "x%" PRId64 " (%s has shape (%" PRId64
                                 ", %" PRId64 "), --transb %c)",
                                 m, ka, o[A], a.shape[0], a.shape[1], ta == GCK_OP_N ? 'N' : 'T',
                                 kb, n, o[B], b.shape[0], b.shape[1], tb == GCK_OP_N ? 'N' : 'T');
        goto done;
    }
    if (o[C] && (c.shape[0] != m || c.shape[1] != n)) {
        rc = gck_cli_usage_error(cmd,
                                 "shapes do not match: %s has shape (%" PRId64 ", %" PRId64
                                 ") but op(A)*op(B) is (%" PRId64 ", %" PRId64 ")",
                                 o[C], c.shape[0], c.shape[1], m, n);
        goto done;
    }
    gck_case_init(&gc, m, n, ka);
    gc.order = GCK_ROW_MAJOR;
    gc.transa = ta;
    gc.transb = tb;
    gc.lda = a.shape[1] > 1 ? a.shape[1] : 1;
    gc.ldb = b.shape[1] > 1 ? b.shape[1] : 1;
    gc.ldc = gc.ldd = n > 1 ? n : 1;
    gc.d_is_c = false;
    gc.alpha = alpha;
    gc.beta = beta;
    gc.scale_type = GCK_F64;
    gc.type_a = tA;
    gc.type_b = tB;
    gc.type_c = tC;
    gc.type_d = out_type;
    gc.compute = GCK_F64;
    char msg[512];
    if (gck_case_validate(&gc, msg, sizeof msg) != GCK_OK) {
        rc = gck_cli_usage_error(cmd, "%s", msg);
        goto done;
    }
    size_t esz = (size_t)gck_format_get(out_type)->storage_bytes;
    if (m != 0 && n > INT64_MAX / 16 / m) {
        rc = gck_cli_usage_error(cmd, "the %" PRId64 "x%" PRId64 " result is too large", m, n);
        goto done;
    }
    size_t dbytes = (size_t)(m * n) * esz;
    /* Linux overcommits: a calloc far beyond memory can succeed and the process be killed
     * later while writing D, so compare with the physical memory first. */
    double phys = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    if (phys > 0 && (double)dbytes > phys) {
        rc = gck_cli_usage_error(cmd,
                                 "the %" PRId64 "x%" PRId64 " %s result needs %.1f GiB, more "
                                 "than this machine's %.1f GiB of memory",
                                 m, n, gck_format_get(out_type)->name, (double)dbytes / 0x1p30,
                                 phys / 0x1p30);
        goto done;
    }
    d = calloc(dbytes ? dbytes : 1, 1);
    if (!d) {
        rc = gck_cli_usage_error(
            cmd, "cannot allocate %zu bytes for the %" PRId64 "x%" PRId64 " result", dbytes, m, n);
        goto done;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    const void *cdata = o[C] ? c.data : NULL;
    gck_status s =
        okind == GCK_ORACLE_MPFR
            ? gck_oracle_mpfr(&gc, a.data, b.data, cdata, d, (int)threads, msg, sizeof msg)
            : gck_oracle_exact(&gc, a.data, b.data, cdata, d, (int)threads, msg, sizeof msg);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (s == GCK_OK && okind == GCK_ORACLE_BOTH) {
        /* every element by both oracles: a difference is a bug in gemmcheck */
        void *d2 = calloc(dbytes ? dbytes : 1, 1);
        if (!d2) {
            rc = gck_cli_usage_error(cmd, "cannot allocate a second %zu-byte result", dbytes);
            goto done;
        }
        s = gck_oracle_mpfr(&gc, a.data, b.data, cdata, d2, (int)threads, msg, sizeof msg);
        if (s == GCK_OK && memcmp(d, d2, dbytes) != 0) {
            size_t e = 0;
            while (e + esz <= dbytes && !memcmp((char *)d + e, (char *)d2 + e, esz)) e += esz;
            snprintf(msg, sizeof msg, "the exact and MPFR oracles disagree at element %zu of D",
                     e / esz);
            s = GCK_EINTERNAL;
        }
        free(d2);
    }
    if (s == GCK_ENOMEM) {
        rc = gck_cli_usage_error(cmd, "%s", msg);
        goto done;
    }
    if (s != GCK_OK) {
        fprintf(stderr, "gemmcheck oracle: internal error: %s\n", msg);
        rc = GCK_EXIT_INTERNAL;
        goto done;
    }
    static const gck_npy_dtype out_dtype[] = {[GCK_F16] = GCK_NPY_F2,
                                              [GCK_BF16] = GCK_NPY_U2,
                                              [GCK_F32] = GCK_NPY_F4,
                                              [GCK_F64] = GCK_NPY_F8};
    int64_t shape[2] = {m, n};
    if (gck_npy_write(o[OUT], out_dtype[out_type], 2, shape, d, msg, sizeof msg) != GCK_OK) {
        rc = gck_cli_usage_error(cmd, "%s", msg);
        goto done;
    }
    double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    printf("gemmcheck oracle: D(%" PRId64 "x%" PRId64 ") = %.17g*op(A)*op(B)%s%s, K=%" PRId64
           ", %s x %s%s%s -> %s, %" PRId64 " elements rounded once (%s oracle) in %.3f s -> %s\n",
           m, n, alpha, o[C] ? " + beta*C, beta=" : "", o[C] ? o[BETA] ? o[BETA] : "0" : "", ka,
           gck_format_get(tA)->name, gck_format_get(tB)->name, o[C] ? " + " : "",
           o[C] ? gck_format_get(tC)->name : "", gck_format_get(out_type)->name, m * n,
           okind == GCK_ORACLE_MPFR   ? "MPFR"
           : okind == GCK_ORACLE_BOTH ? "exact and MPFR"
                                      : "exact",
           secs, o[OUT]);
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
    gck_opt_scan s = {cmd, argc, argv, 1, false};
    for (; s.i < argc; s.i++) {
        const char *arg = argv[s.i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            fputs(oracle_help, stdout);
            return GCK_EXIT_OK;
        }
        bool matched = false;
        for (int k = 0; k < NOPT && !matched; k++) matched = gck_opt_value(&s, names[k], &vals[k]);
        if (s.error) return GCK_EXIT_USAGE;
        if (!matched)
            return gck_cli_usage_error(cmd, "unknown argument '%s' (see gemmcheck oracle --help)",
                                       arg);
    }
    return run(vals);
}
