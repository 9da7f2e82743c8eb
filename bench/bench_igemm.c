/* bench_igemm: GOPS of gemmcheck's int8 GEMM (gck_igemm_s8, kernels/igemm.c) beside oneDNN's
 * dnnl_gemm_s8s8s32 on the same square shapes, in one run, with VPDPBUSD's peak calibrated
 * before each line (2 operations per multiply-add). Where the default is AMX tiles (TDPBSSD), the
 * VPDPBUSD kernel is timed beside it on the same operands.
 *
 *   bench_igemm [--sizes 512,2048] [--threads 1,2] [--rounds 3]
 *
 * oneDNN (libdnnl.so.2, Debian's 2.6) is opened with dlopen; its OpenMP team is sized with
 * omp_set_num_threads for each line and sleeps between calls (OMP_WAIT_POLICY=PASSIVE unless set).
 * Both compute the same C (checked on every element), every figure the best of R timed calls
 * (--rounds, 3 unless given) after a warm-up call, ours and oneDNN's taking turns so that both meet
 * the same moments of a shared machine. The peak, measured again before each line (the clock of
 * a shared machine moves by 10% over minutes): 12 independent chains of 512-bit VPDPBUSD,
 * 100,000 deep, on one core for about 0.2 s, the best of three. */
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
#include "kernels_internal.h" /* gck_igemm_s8_on: VPDPBUSD beside AMX where AMX runs */

/* VPDPBUSD written as an instruction with its accumulator tied, as the kernel writes it: through
 * GCC 12's intrinsic each accumulator is copied to a fresh register and back on every step, and
 * the rate measured moved with the code's placement (580-620 against 850-900 GOPS per core on
 * the same Zen 5). */
#define TIED(a) __asm__("vpdpbusd %2, %1, %0" : "+v"(a) : "v"(x), "v"(y))
__attribute__((target("avx512f,avx512vnni"))) static double peak_dpbusd(void) {
    __m512i x = _mm512_set1_epi32(0x01010101), y = _mm512_set1_epi32(0x01ff01ff);
    __m512i a0 = x, a1 = x, a2 = x, a3 = x, a4 = x, a5 = x, a6 = x, a7 = x, a8 = x, a9 = x, a10 = x,
            a11 = x;
    long iters = 0;
    double t0 = bench_now(), t;
    do {
        for (int r = 0; r < 100000; r++) {
            TIED(a0);
            TIED(a1);
            TIED(a2);
            TIED(a3);
            TIED(a4);
            TIED(a5);
            TIED(a6);
            TIED(a7);
            TIED(a8);
            TIED(a9);
            TIED(a10);
            TIED(a11);
        }
        iters += 100000;
    } while ((t = bench_now() - t0) < 0.2);
    __m512i s = _mm512_add_epi32(_mm512_add_epi32(_mm512_add_epi32(a0, a1), a2),
                                 _mm512_add_epi32(_mm512_add_epi32(a3, a4), a5));
    s = _mm512_add_epi32(s, _mm512_add_epi32(_mm512_add_epi32(_mm512_add_epi32(a6, a7), a8),
                                             _mm512_add_epi32(_mm512_add_epi32(a9, a10), a11)));
    if (_mm512_reduce_add_epi32(s) == 12345) puts("");
    return (double)iters * 12 * 64 * 2 / t / 1e9;
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
static void line(int n, int threads, int rounds, double peak) {
    int8_t *A = malloc((size_t)n * n), *B = malloc((size_t)n * n);
    int32_t *C = malloc(sizeof(int32_t) * (size_t)n * n),
            *D = malloc(sizeof(int32_t) * (size_t)n * n);
    uint64_t z = 88172645463325252ull;
    for (size_t e = 0; e < (size_t)n * n; e++) {
        z ^= z << 13, z ^= z >> 7, z ^= z << 17;
        A[e] = (int8_t)z, B[e] = (int8_t)(z >> 8);
    }
    double ops = 2.0 * n * n * (double)n, ours = 0, theirs = 0, vnni = 0;
    bool amx = !strcmp(gck_igemm_path(false), "amx");
    gck_igemm_args g = {n, n, n, A, n, B, n, C, n, false, threads, false};
    int32_t co = 0;
    if (dnnl_s8 && omp_threads) omp_threads(threads);
    /* round 0 warms both up; then each round times ours, then oneDNN's (row-major: C(i,j) =
     * Σ A(i,k)·B'(k,j), B' = Bᵀ), the best of each kept */
    for (int r = 0; r <= rounds; r++) {
        double t0 = bench_now();
        gck_igemm_s8(&g);
        double t = bench_now() - t0;
        if (r && ops / t / 1e9 > ours) ours = ops / t / 1e9;
        if (amx) { /* the VPDPBUSD kernel on the same operands */
            t0 = bench_now();
            gck_igemm_s8_on(&g, GCK_IPATH_VNNI);
            t = bench_now() - t0;
            if (r && ops / t / 1e9 > vnni) vnni = ops / t / 1e9;
        }
        if (!dnnl_s8) continue;
        t0 = bench_now();
        dnnl_s8('N', 'T', 'F', n, n, n, 1.0f, A, n, 0, B, n, 0, 0.0f, D, n, &co);
        t = bench_now() - t0;
        if (r && ops / t / 1e9 > theirs) theirs = ops / t / 1e9;
    }
    bool same = !dnnl_s8 || memcmp(C, D, sizeof(int32_t) * (size_t)n * n) == 0; /* row-major */
    printf("| %dx%dx%d | %d | %.1f | %.1f | %.0f%% | ", n, n, n, threads, peak, ours,
           peak > 0 ? 100 * ours / (peak * threads) : 0);
    if (amx)
        printf("%.1f | %.0f%% | ", vnni, peak > 0 ? 100 * vnni / (peak * threads) : 0);
    else
        printf("— | — | ");
    if (dnnl_s8)
        printf("%.1f | %.2fx | %s |\n", theirs, ours / theirs, same ? "equal" : "DIFFERENT");
    else
        printf("— | — | — |\n");
    free(A), free(B), free(C), free(D);
}

int main(int argc, char **argv) {
    int sizes[8] = {512, 2048}, nsizes = 2, threads[8] = {1, 2}, nthreads = 2, rounds = 3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sizes") && i + 1 < argc)
            parse_list(argv[++i], sizes, &nsizes, 8);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            parse_list(argv[++i], threads, &nthreads, 8);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = strchr(argv[++i], ',') ? 0 : atoi(argv[i]);
        else {
            fprintf(stderr,
                    "bench_igemm: unknown argument '%s' (--sizes L, --threads L, --rounds R)\n",
                    argv[i]);
            return 2;
        }
    }
    if (rounds < 1 || rounds > 1000) {
        fprintf(stderr, "bench_igemm: --rounds takes one number, 1 to 1000\n");
        return 2;
    }
    __builtin_cpu_init();
    bool vnni = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vnni");
    /* oneDNN's OpenMP threads spin after each call unless told to sleep; spinning, they took the
     * cores from the next call of ours (2048³ on two threads: 57% of the peak after oneDNN's
     * call, 86% after a sleeping team's, on a Zen 5). A setting already given is kept. */
    setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
    void *lib = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_GLOBAL);
    dnnl_s8 = lib ? (s8s8s32_fn)dlsym(lib, "dnnl_gemm_s8s8s32") : NULL;
    omp_threads = lib ? (void (*)(int))dlsym(RTLD_DEFAULT, "omp_set_num_threads") : NULL;
    printf("int8 GEMM path: %s; VPDPBUSD %s; oneDNN: %s\n\n", gck_igemm_path(false),
           vnni ? "present: its peak per core calibrated before each line" : "absent",
           dnnl_s8 ? "libdnnl.so.2 dnnl_gemm_s8s8s32" : "not found");
    printf("| M x N x K | threads | VPDPBUSD peak GOPS per core | gemmcheck GOPS | of peak | "
           "gemmcheck on VPDPBUSD (where AMX is the default) | of peak | oneDNN GOPS | vs oneDNN | "
           "C |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for (int t = 0; t < nthreads; t++)
        for (int s = 0; s < nsizes; s++) {
            double peak = 0; /* the clock moves by 10% over minutes on a shared machine */
            for (int r = 0; vnni && r < 3; r++) {
                double p = peak_dpbusd();
                peak = p > peak ? p : peak;
            }
            line(sizes[s], threads[t], rounds, peak);
        }
    return 0;
}
