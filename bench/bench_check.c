/* bench_check: the time of a complete check of a large GEMM (the exact value of every element,
 * its exact error and its hard bound) against OpenBLAS computing the same product, in one run.
 *
 *   bench_check [--sizes 1024,2048,4096] [--types f16,bf16,f32,f64] [--sample-lines N]
 *
 * For M = N = K = n and each input type (C and D: f32, or f64 for f64 inputs; alpha = 1,
 * beta = 0; values uniform in [-1, 1]), D is computed by gemmcheck's kernels and then:
 *   - gemm:      OpenBLAS cblas_sgemm (cblas_dgemm for f64) on the same shape, all cores;
 *   - dgemm:     OpenBLAS cblas_dgemm on the same shape, all cores (the unit of the ratios);
 *   - check:     gck_check_values, every element (the exact sums by splitting where it applies,
 *                the bound's sums of |a||b| from a GEMM), all cores, and the path its sums took;
 *   - again:     the same check once more in the same process (its large scratch arrays are
 *                kept between calls: the memory is not fresh; a first call pays for fresh
 *                pages, which on some virtual machines cost seconds per GB);
 *   - oracle:    gck_oracle_exact alone (splitting as GEMMCHECK_OZAKI said when the benchmark
 *                started: auto, its default, always, or int8), all cores;
 *   - one by one: the exact oracle with splitting off (GEMMCHECK_OZAKI=never), all cores, for
 *                n <= 2048 (at 4096 it is scaled from 2048 by 8, and marked so);
 *   - today:     the check as it was before splitting and the GEMM bound (no operand copy, hence
 *                per-element sums, splitting off), on a sample of rows and columns, scaled to
 *                every element;
 *   - MPFR:      the check with the MPFR oracle on the same kind of sample, scaled.
 * Every time is one run after the operands are ready (these calls take seconds). */
#define _POSIX_C_SOURCE 200809L
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gemmcheck/gemmcheck.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct operands {
    gck_case c;
    void *a, *b, *d;
    const gck_support_row *row;
} operands;

static void *alloc_or_die(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "bench_check: out of memory\n");
        exit(2);
    }
    return p;
}

/* The case, its values and D computed by the kernels backend's GEMM; the row it declares. */
static void prepare(operands *o, gck_backend *be, gck_format t, int n) {
    gck_case *c = &o->c;
    gck_case_init(c, n, n, n);
    gck_format out = t == GCK_F64 ? GCK_F64 : GCK_F32;
    c->type_a = c->type_b = t;
    c->type_c = c->type_d = c->compute = c->scale_type = out;
    c->d_is_c = false; /* beta = 0: C is not read */
    gck_spec s;
    gck_spec_init(&s, c);
    size_t es = (size_t)gck_format_get(t)->storage_bytes, eo = out == GCK_F64 ? 8 : 4;
    o->a = alloc_or_die((size_t)n * (size_t)n * es);
    o->b = alloc_or_die((size_t)n * (size_t)n * es);
    o->d = alloc_or_die((size_t)n * (size_t)n * eo);
    gck_spec_fill(&s, GCK_A, o->a);
    gck_spec_fill(&s, GCK_B, o->b);
    char msg[256];
    if (gck_gemm(c, o->a, o->b, NULL, o->d, NULL, msg, sizeof msg) != GCK_GEMM_OK) {
        fprintf(stderr, "bench_check: gck_gemm: %s\n", msg);
        exit(2);
    }
    o->row = gck_backend_find_row(be, c, NULL, 0);
    if (!o->row) {
        fprintf(stderr, "bench_check: the kernels backend has no row for %s\n",
                gck_format_get(t)->name);
        exit(2);
    }
}

/* OpenBLAS on the same shape: sgemm or dgemm (T, fn), on operands filled once, timed after a
 * warm-up call. */
#define BLAS_SECONDS(T, fn)                                                                        \
    do {                                                                                           \
        T *a = alloc_or_die(nn * sizeof(T)), *b = alloc_or_die(nn * sizeof(T)),                    \
          *d = alloc_or_die(nn * sizeof(T));                                                       \
        for (size_t x = 0; x < nn; x++) a[x] = b[x] = (T)(x % 7) - 3;                              \
        for (int r = 0; r < 2; r++) {                                                              \
            t = now();                                                                             \
            fn(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, d, n);        \
            t = now() - t;                                                                         \
        }                                                                                          \
        free(a), free(b), free(d);                                                                 \
    } while (0)

static double blas_seconds(int n, bool dbl) {
    size_t nn = (size_t)n * (size_t)n;
    double t = 0;
    if (dbl)
        BLAS_SECONDS(double, cblas_dgemm);
    else
        BLAS_SECONDS(float, cblas_sgemm);
    return t;
}

/* One check; the seconds it took, scaled to every element when sampled; *r its result. */
static double check_seconds(const operands *o, const gck_check_options *opt, gck_check_result *r) {
    char msg[512];
    double t = now();
    if (gck_check_values(&o->c, o->row, opt, o->a, o->b, NULL, o->d, r, msg, sizeof msg) !=
        GCK_OK) {
        fprintf(stderr, "bench_check: %s\n", msg);
        exit(2);
    }
    t = now() - t;
    if (r->count[GCK_KIND_OUT_OF_TOLERANCE] || r->count[GCK_KIND_NONFINITE_MISMATCH]) {
        fprintf(stderr, "bench_check: the kernels' result failed its check\n");
        exit(2);
    }
    return r->elements < r->total_elements ? t * (double)r->total_elements / (double)r->elements
                                           : t;
}

/* The run's splitting mode: GEMMCHECK_OZAKI as the benchmark started (auto, always, int8). */
static char run_mode[16] = "auto";

static void restore_mode(void) { setenv("GEMMCHECK_OZAKI", run_mode, 1); }

static double oracle_seconds(const operands *o, const char *ozaki) {
    setenv("GEMMCHECK_OZAKI", ozaki, 1);
    size_t bytes = (size_t)o->c.m * (size_t)o->c.n * (o->c.type_d == GCK_F64 ? 8 : 4);
    void *d = alloc_or_die(bytes);
    char msg[256];
    double t = now();
    gck_status s = gck_oracle_exact(&o->c, o->a, o->b, NULL, d, 0, msg, sizeof msg);
    t = now() - t;
    free(d);
    restore_mode();
    if (s != GCK_OK) {
        fprintf(stderr, "bench_check: %s\n", msg);
        exit(2);
    }
    return t;
}

static int parse_list(const char *s, int *out, int max) {
    int n = 0;
    for (char *end; *s && n < max; s = *end ? end + 1 : end) {
        long v = strtol(s, &end, 10);
        if (end == s || v < 16 || v > 16384 || (*end && *end != ',')) {
            fprintf(stderr, "bench_check: bad size list '%s'\n", s);
            exit(2);
        }
        out[n++] = (int)v;
    }
    return n;
}

/* One line of the table. */
static void line(gck_backend *be, gck_format t, int n, int sample_lines, double *one_by_one) {
    operands o;
    prepare(&o, be, t, n);
    double gemm = blas_seconds(n, t == GCK_F64), dgemm = t == GCK_F64 ? gemm : blas_seconds(n, 1);
    gck_check_options opt = {.oracle = GCK_ORACLE_EXACT, .sample_above = 1e300};
    gck_check_result *r = alloc_or_die(sizeof *r);
    double check = check_seconds(&o, &opt, r), again = check_seconds(&o, &opt, r);
    char path[192];
    snprintf(path, sizeof path, "%s", r->oracle_path);
    double oracle = oracle_seconds(&o, run_mode);
    bool scaled = n > 2048;
    double obo = scaled ? (one_by_one ? *one_by_one * 8 : NAN) : oracle_seconds(&o, "never");
    if (one_by_one && !scaled) *one_by_one = obo;
    /* before: no copy (per-element sums), no splitting, a sample */
    setenv("GEMMCHECK_OZAKI", "never", 1);
    gck_check_options old = {.oracle = GCK_ORACLE_EXACT,
                             .sample_above = 1,
                             .sample_lines = sample_lines,
                             .copy_limit = 1};
    double today = check_seconds(&o, &old, r);
    restore_mode();
    gck_check_options mp = {.oracle = GCK_ORACLE_MPFR, .sample_above = 1, .sample_lines = 2};
    double mpfr = check_seconds(&o, &mp, r);
    char obo_s[48] = "- (2048 not in --sizes)", gain_s[16] = "-";
    if (!isnan(obo)) { /* at 4096, scaled from 2048 when that size ran before it */
        snprintf(obo_s, sizeof obo_s, "%.2f%s", obo, scaled ? " (x8)" : "");
        snprintf(gain_s, sizeof gain_s, "%.1fx", obo / oracle);
    }
    printf("| %s | %d | %.2f | %.2f | %.2f | %.1fx | %.2f | %.2f | %.1fx | %s | %s | %.1f | %.0f | "
           "%s |\n",
           gck_format_get(t)->name, n, gemm, dgemm, check, check / dgemm, again, oracle,
           oracle / dgemm, obo_s, gain_s, today, mpfr, path);
    fflush(stdout);
    free(r);
    free(o.a);
    free(o.b);
    free(o.d);
}

int main(int argc, char **argv) {
    int sizes[8] = {1024, 2048, 4096}, nsizes = 3, sample_lines = 4;
    const char *types = "f16,bf16,f32,f64", *env = getenv("GEMMCHECK_OZAKI");
    if (env && *env) snprintf(run_mode, sizeof run_mode, "%s", env);
    restore_mode();
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sizes") && i + 1 < argc)
            nsizes = parse_list(argv[++i], sizes, 8);
        else if (!strcmp(argv[i], "--types") && i + 1 < argc)
            types = argv[++i];
        else if (!strcmp(argv[i], "--sample-lines") && i + 1 < argc)
            sample_lines = atoi(argv[++i]);
        else {
            fprintf(stderr,
                    "bench_check: unknown argument '%s' (--sizes L, --types L, "
                    "--sample-lines N)\n",
                    argv[i]);
            return 2;
        }
    }
    gck_backend be;
    char msg[256];
    if (gck_backend_open(&be, "kernels", msg, sizeof msg) != GCK_OK) {
        fprintf(stderr, "bench_check: %s\n", msg);
        return 2;
    }
    printf("seconds on all cores (%s: the kernels' default path; splitting: %s); ratios to "
           "OpenBLAS dgemm of the "
           "same "
           "shape; 'today' and MPFR: checks of a sample of rows and columns, scaled to every "
           "element\n\n| inputs | n | OpenBLAS gemm | OpenBLAS dgemm | complete check | vs dgemm "
           "| again | exact oracle | vs dgemm | one by one | splitting's gain | today's check | "
           "MPFR check | how the sums were made |\n|---|---|---|---|---|---|---|---|---|---|---|"
           "---|---|---|\n",
           gck_kpath_name(gck_kpath_auto()), run_mode);
    const gck_format all[] = {GCK_F16, GCK_BF16, GCK_F32, GCK_F64};
    for (int f = 0; f < 4; f++) {
        char list[64], *save = NULL;
        bool wanted = false;
        snprintf(list, sizeof list, "%s", types);
        for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save))
            wanted = wanted || !strcmp(t, gck_format_get(all[f])->name);
        if (!wanted) continue;
        double obo = NAN;
        for (int s = 0; s < nsizes; s++) line(&be, all[f], sizes[s], sample_lines, &obo);
    }
    gck_backend_close(&be);
    return 0;
}
