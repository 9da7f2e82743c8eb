/* bench_igemm: GOPS of gemmcheck's int8 GEMM (gck_igemm_s8, kernels/igemm.c) beside oneDNN's
 * dnnl_gemm_s8s8s32 on the same square shapes, in one run, with VPDPBUSD's peak calibrated at
 * the start (2 operations per multiply-add).
 *
 *   bench_igemm [--sizes 512,2048] [--threads 1,2]
 *
 * oneDNN (libdnnl.so.2, Debian's 2.6) is opened with dlopen; its OpenMP team is sized with
 * omp_set_num_threads for each line. Both compute the same C (checked on every element), every
 * figure the best of three timed calls after a warm-up call. The peak: 12 independent chains of
 * 512-bit VPDPBUSD, 100,000 deep, on one core for about 0.2 s, the best of five. */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_time.h"
#include "gemmcheck/gemmcheck.h"

#define CHAINS 12
__attribute__((target("avx512f,avx512vnni"))) static double peak_dpbusd(void) {
    __m512i acc[CHAINS], x = _mm512_set1_epi32(0x01010101), y = _mm512_set1_epi32(0x01ff01ff);
    for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_set1_epi32(c);
    long iters = 0;
    double t0 = bench_now(), t;
    do {
        for (int r = 0; r < 100000; r++)
            _Pragma("GCC unroll 12") for (int c = 0; c < CHAINS; c++) acc[c] =
                _mm512_dpbusd_epi32(acc[c], x, y);
        iters += 100000;
    } while ((t = bench_now() - t0) < 0.2);
    long long sink = 0;
    for (int c = 0; c < CHAINS; c++) sink += _mm512_reduce_add_epi32(acc[c]);
    if (sink == 12345) puts("");
    return (double)iters * CHAINS * 64 * 2 / t / 1e9;
}

typedef int (*s8s8s32_fn)(char, char, char, int64_t, int64_t, int64_t, float, const int8_t *,
                          int64_t, int8_t, const int8_t *, int64_t, int8_t, float, int32_t *,
                          int64_t, const int32_t *);
static s8s8s32_fn dnnl_s8;
static void (*omp_threads)(int);

static void parse_list(const char *s, int *out, int *n, int max) {
    *n = 0;
    for (char *end; *s && *n < max; s = *end ? end + 1 : end)
        out[(*n)++] = (int)strtol(s, &end, 10);
}

/* One line: n³ at `threads`, ours and oneDNN's, the same C. */
static void line(int n, int threads, double peak) {
    int8_t *A = malloc((size_t)n * n), *B = malloc((size_t)n * n);
    int32_t *C = malloc(sizeof(int32_t) * (size_t)n * n),
            *D = malloc(sizeof(int32_t) * (size_t)n * n);
    uint64_t z = 88172645463325252ull;
    for (size_t e = 0; e < (size_t)n * n; e++) {
        z ^= z << 13, z ^= z >> 7, z ^= z << 17;
        A[e] = (int8_t)z, B[e] = (int8_t)(z >> 8);
    }
    double ops = 2.0 * n * n * (double)n, ours = 0, theirs = 0;
    gck_igemm_args g = {n, n, n, A, n, B, n, C, n, false, threads, false};
    for (int r = 0; r < 4; r++) {
        double t0 = bench_now();
        gck_igemm_s8(&g);
        double t = bench_now() - t0;
        if (r && ops / t / 1e9 > ours) ours = ops / t / 1e9;
    }
    bool same = true;
    if (dnnl_s8) {
        if (omp_threads) omp_threads(threads);
        int32_t co = 0;
        for (int r = 0; r < 4; r++) { /* row-major: C(i,j) = Σ A(i,k)·B'(k,j), B' = Bᵀ */
            double t0 = bench_now();
            dnnl_s8('N', 'T', 'F', n, n, n, 1.0f, A, n, 0, B, n, 0, 0.0f, D, n, &co);
            double t = bench_now() - t0;
            if (r && ops / t / 1e9 > theirs) theirs = ops / t / 1e9;
        }
        same = memcmp(C, D, sizeof(int32_t) * (size_t)n * n) == 0; /* both row-major */
    }
    printf("| %dx%dx%d | %d | %.1f | %.0f%% | ", n, n, n, threads, ours,
           peak > 0 ? 100 * ours / (peak * threads) : 0);
    if (dnnl_s8)
        printf("%.1f | %.2fx | %s |\n", theirs, ours / theirs, same ? "equal" : "DIFFERENT");
    else
        printf("— | — | — |\n");
    free(A), free(B), free(C), free(D);
}

int main(int argc, char **argv) {
    int sizes[8] = {512, 2048}, nsizes = 2, threads[8] = {1, 2}, nthreads = 2;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sizes") && i + 1 < argc)
            parse_list(argv[++i], sizes, &nsizes, 8);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            parse_list(argv[++i], threads, &nthreads, 8);
        else {
            fprintf(stderr, "bench_igemm: unknown argument '%s' (--sizes L, --threads L)\n",
                    argv[i]);
            return 2;
        }
    }
    __builtin_cpu_init();
    bool vnni = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vnni");
    double peak = 0;
    for (int r = 0; vnni && r < 5; r++) {
        double p = peak_dpbusd();
        peak = p > peak ? p : peak;
    }
    void *lib = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_GLOBAL);
    dnnl_s8 = lib ? (s8s8s32_fn)dlsym(lib, "dnnl_gemm_s8s8s32") : NULL;
    omp_threads = lib ? (void (*)(int))dlsym(RTLD_DEFAULT, "omp_set_num_threads") : NULL;
    printf("int8 GEMM path: %s; calibrated VPDPBUSD peak per core: %.1f GOPS (0: absent); "
           "oneDNN: %s\n\n",
           gck_igemm_path(false), peak, dnnl_s8 ? "libdnnl.so.2 dnnl_gemm_s8s8s32" : "not found");
    printf("| M x N x K | threads | gemmcheck GOPS | of peak | oneDNN GOPS | vs oneDNN | C |\n"
           "|---|---|---|---|---|---|---|\n");
    for (int t = 0; t < nthreads; t++)
        for (int s = 0; s < nsizes; s++) line(sizes[s], threads[t], peak);
    return 0;
}
