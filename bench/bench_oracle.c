/* Oracle benchmark: nanoseconds per product of the fast exact oracle, the MPFR oracle, a plain
 * double loop and OpenBLAS dgemm, all measured in the same run on one core, for M = N = 64,
 * K in {64, 1024, 16384}, each input type and one mixed tuple, on narrow exponents (uniform in
 * [-1, 1]) and on exponents spread over +-20 binades.
 *
 * Each contender is timed five times, interleaved, and its fastest round is kept.
 *
 * usage: bench_oracle [--only f16|bf16|f32|f64|mixed] [--k K...]   (prints a Markdown table) */
#define _POSIX_C_SOURCE 200809L
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gemmcheck/gemmcheck.h"

void openblas_set_num_threads(int);

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct tuple {
    const char *name;
    gck_format a, b, c, d;
} tuple;

typedef struct job {
    const gck_case *c;
    const void *A, *B, *C;
    void *D;
    const double *Ar, *Bd;
    double *Dd;
    int m, n;
    int64_t k;
} job;

static volatile double sink;

static void run_exact(const job *j) {
    char msg[256];
    gck_oracle_exact(j->c, j->A, j->B, j->C, j->D, 1, msg, sizeof msg);
}

static void run_mpfr(const job *j) {
    char msg[256];
    gck_oracle_mpfr(j->c, j->A, j->B, j->C, j->D, 1, msg, sizeof msg);
}

/* the plain loop: one double accumulator per element, k ascending, contiguous operands */
static void run_loop(const job *j) {
    for (int jj = 0; jj < j->n; jj++)
        for (int i = 0; i < j->m; i++) {
            const double *a = j->Ar + (int64_t)i * j->k, *b = j->Bd + (int64_t)jj * j->k;
            double acc = 0;
            for (int64_t k = 0; k < j->k; k++) acc += a[k] * b[k];
            j->Dd[i + jj * j->m] = acc;
        }
    sink = j->Dd[0];
}

static void run_dgemm(const job *j) {
    cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, j->m, j->n, (int)j->k, 1.0, j->Ar,
                (int)j->k, j->Bd, (int)j->k, 0.0, j->Dd, j->m);
}

/* Seconds per call, repeated until at least `min_time` has passed. */
static double time_it(void (*fn)(const job *), const job *j, double min_time) {
    double t0 = now(), el;
    int reps = 0;
    do {
        fn(j);
        reps++;
        el = now() - t0;
    } while (el < min_time);
    return el / reps;
}

/* The fastest of `rounds` interleaved timings of each function: a neighbour stealing the core
 * for a while slows one round of one contender, not the ratio. */
static void time_rounds(void (*const fn[])(const job *), const job *const jobs[], int nfn,
                        int rounds, double min_time, double *best) {
    for (int f = 0; f < nfn; f++) best[f] = INFINITY;
    for (int r = 0; r < rounds; r++)
        for (int f = 0; f < nfn; f++) {
            double t = time_it(fn[f], jobs[f], min_time);
            if (t < best[f]) best[f] = t;
        }
}

static int usage(void) {
    fprintf(stderr, "usage: bench_oracle [--only INPUTS] [--k K...]   (INPUTS: f16, bf16, f32, "
                    "f64 or mixed)\n");
    return 2;
}

int main(int argc, char **argv) {
    int64_t ks[8] = {64, 1024, 16384};
    int nk = 3;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i];
        else if (!strcmp(argv[i], "--k") && i + 1 < argc) {
            nk = 0;
            while (i + 1 < argc && argv[i + 1][0] != '-' && nk < 8) {
                long long k = atoll(argv[++i]);
                if (k < 1 || k > (1 << 24)) return usage();
                ks[nk++] = k;
            }
        } else
            return usage();
    }
    openblas_set_num_threads(1);
    const tuple tuples[] = {
        {"f16", GCK_F16, GCK_F16, GCK_F32, GCK_F32},
        {"bf16", GCK_BF16, GCK_BF16, GCK_F32, GCK_F32},
        {"f32", GCK_F32, GCK_F32, GCK_F32, GCK_F32},
        {"f64", GCK_F64, GCK_F64, GCK_F64, GCK_F64},
        {"bf16 x f16 -> f32", GCK_BF16, GCK_F16, GCK_F32, GCK_F32},
    };
    const char *const short_names[] = {"f16", "bf16", "f32", "f64", "mixed"};
    const gck_dist dists[] = {GCK_DIST_UNIFORM, GCK_DIST_LOGU};
    const int M = 64, N = 64, M_MPFR = 8; /* MPFR is timed on the first 8 rows */
    printf("| inputs | values | K | MPFR ns/prod | exact ns/prod | double loop ns/prod | "
           "dgemm ns/prod | exact vs MPFR | exact / double loop | exact / dgemm |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t ti = 0; ti < sizeof tuples / sizeof tuples[0]; ti++)
        for (size_t di = 0; di < 2 && (!only || !strcmp(only, short_names[ti])); di++)
            for (int kk = 0; kk < nk; kk++) {
                int64_t K = ks[kk];
                const tuple *t = &tuples[ti];
                gck_case c;
                gck_case_init(&c, M, N, K);
                c.type_a = t->a;
                c.type_b = t->b;
                c.type_c = t->c;
                c.type_d = t->d;
                c.d_is_c = false;
                c.beta = 0;
                gck_spec s;
                gck_spec_init(&s, &c);
                s.dist_ab = dists[di];
                s.seed = 42;
                size_t es_a = (size_t)gck_format_get(t->a)->storage_bytes,
                       es_b = (size_t)gck_format_get(t->b)->storage_bytes;
                void *A = malloc((size_t)(M * K) * es_a), *B = malloc((size_t)(K * N) * es_b);
                void *C = calloc((size_t)(M * N), 8), *D = calloc((size_t)(M * N), 8);
                double *Ar = malloc(sizeof(double) * (size_t)(M * K)); /* row i of A, along k */
                double *Bd = malloc(sizeof(double) * (size_t)(K * N));
                double *Dd = malloc(sizeof(double) * (size_t)(M * N));
                gck_spec_fill(&s, GCK_A, A);
                gck_spec_fill(&s, GCK_B, B);
                for (int i = 0; i < M; i++)
                    for (int64_t k = 0; k < K; k++) Ar[i * K + k] = gck_load(A, t->a, i + k * M);
                for (int64_t e = 0; e < K * N; e++) Bd[e] = gck_load(B, t->b, e);
                double prods = (double)M * N * K;
                gck_case cm = c; /* MPFR: the first M_MPFR rows, same leading dimensions */
                cm.m = M_MPFR;
                cm.ldd = M_MPFR;
                job jb = {&c, A, B, C, D, Ar, Bd, Dd, M, N, K};
                job jm = jb;
                jm.c = &cm;
                void (*const fns[])(const job *) = {run_exact, run_mpfr, run_loop, run_dgemm};
                const job *const jobs[] = {&jb, &jm, &jb, &jb};
                double tm[4];
                time_rounds(fns, jobs, 4, 5, 0.06, tm);
                double t_exact = tm[0], t_mpfr = tm[1], t_loop = tm[2], t_dgemm = tm[3];
                double ns_exact = t_exact / prods * 1e9;
                double ns_mpfr = t_mpfr / ((double)M_MPFR * N * K) * 1e9;
                double ns_loop = t_loop / prods * 1e9, ns_dgemm = t_dgemm / prods * 1e9;
                printf("| %s | %s | %lld | %.2f | %.2f | %.2f | %.3f | %.0fx | %.2fx | %.1fx |\n",
                       t->name, di ? "exponents +-20 binades" : "uniform [-1,1]", (long long)K,
                       ns_mpfr, ns_exact, ns_loop, ns_dgemm, ns_mpfr / ns_exact, ns_exact / ns_loop,
                       ns_exact / ns_dgemm);
                fflush(stdout);
                free(A);
                free(B);
                free(C);
                free(D);
                free(Ar);
                free(Bd);
                free(Dd);
            }
    return 0;
}
