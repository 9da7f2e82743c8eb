/* x86-64 micro-kernels with intrinsics, each compiled for its instruction set by a target
 * attribute and run only where CPUID (and the OS's saved state) says the set is usable. Each
 * keeps one accumulator per element of the tile and adds the products of k ascending with one
 * fused multiply-add each: the declared model, so the bits equal the portable path's.
 *
 * The tile is column-major: MR rows as whole vectors (two per column), NR columns, each B value
 * broadcast (the register blocking of BLIS's Haswell and SkylakeX kernels). */
#include "kernels_internal.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX2   __attribute__((target("avx2,fma")))
#define AVX512 __attribute__((target("avx512f")))

/* ---- AVX2 + FMA: 16 x 6 floats, 8 x 6 doubles (12 of 16 ymm registers accumulate) ------- */

enum { A2_MR32 = 16, A2_MR64 = 8, A2_NR = 6 };

AVX2 static void avx2_f32(int64_t kc, const float *a, const float *b, float *w, int64_t ldw,
                          bool first) {
    __m256 c0[A2_NR], c1[A2_NR];
    for (int j = 0; j < A2_NR; j++) {
        c0[j] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(w + j * ldw);
        c1[j] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(w + j * ldw + 8);
    }
    for (int64_t k = 0; k < kc; k++, a += A2_MR32, b += A2_NR) {
        __m256 a0 = _mm256_loadu_ps(a), a1 = _mm256_loadu_ps(a + 8);
        for (int j = 0; j < A2_NR; j++) {
            __m256 bj = _mm256_broadcast_ss(b + j);
            c0[j] = _mm256_fmadd_ps(a0, bj, c0[j]);
            c1[j] = _mm256_fmadd_ps(a1, bj, c1[j]);
        }
    }
    for (int j = 0; j < A2_NR; j++) {
        _mm256_storeu_ps(w + j * ldw, c0[j]);
        _mm256_storeu_ps(w + j * ldw + 8, c1[j]);
    }
}

AVX2 static void avx2_f64(int64_t kc, const double *a, const double *b, double *w, int64_t ldw,
                          bool first) {
    __m256d c0[A2_NR], c1[A2_NR];
    for (int j = 0; j < A2_NR; j++) {
        c0[j] = first ? _mm256_setzero_pd() : _mm256_loadu_pd(w + j * ldw);
        c1[j] = first ? _mm256_setzero_pd() : _mm256_loadu_pd(w + j * ldw + 4);
    }
    for (int64_t k = 0; k < kc; k++, a += A2_MR64, b += A2_NR) {
        __m256d a0 = _mm256_loadu_pd(a), a1 = _mm256_loadu_pd(a + 4);
        for (int j = 0; j < A2_NR; j++) {
            __m256d bj = _mm256_broadcast_sd(b + j);
            c0[j] = _mm256_fmadd_pd(a0, bj, c0[j]);
            c1[j] = _mm256_fmadd_pd(a1, bj, c1[j]);
        }
    }
    for (int j = 0; j < A2_NR; j++) {
        _mm256_storeu_pd(w + j * ldw, c0[j]);
        _mm256_storeu_pd(w + j * ldw + 4, c1[j]);
    }
}

/* ---- AVX-512F: 32 x 12 floats, 16 x 12 doubles (24 of 32 zmm registers accumulate) ------ */

enum { A5_MR32 = 32, A5_MR64 = 16, A5_NR = 12 };

AVX512 static void avx512_f32(int64_t kc, const float *a, const float *b, float *w, int64_t ldw,
                              bool first) {
    __m512 c0[A5_NR], c1[A5_NR];
    for (int j = 0; j < A5_NR; j++) {
        c0[j] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(w + j * ldw);
        c1[j] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(w + j * ldw + 16);
    }
    for (int64_t k = 0; k < kc; k++, a += A5_MR32, b += A5_NR) {
        __m512 a0 = _mm512_loadu_ps(a), a1 = _mm512_loadu_ps(a + 16);
        for (int j = 0; j < A5_NR; j++) {
            __m512 bj = _mm512_set1_ps(b[j]);
            c0[j] = _mm512_fmadd_ps(a0, bj, c0[j]);
            c1[j] = _mm512_fmadd_ps(a1, bj, c1[j]);
        }
    }
    for (int j = 0; j < A5_NR; j++) {
        _mm512_storeu_ps(w + j * ldw, c0[j]);
        _mm512_storeu_ps(w + j * ldw + 16, c1[j]);
    }
}

AVX512 static void avx512_f64(int64_t kc, const double *a, const double *b, double *w, int64_t ldw,
                              bool first) {
    __m512d c0[A5_NR], c1[A5_NR];
    for (int j = 0; j < A5_NR; j++) {
        c0[j] = first ? _mm512_setzero_pd() : _mm512_loadu_pd(w + j * ldw);
        c1[j] = first ? _mm512_setzero_pd() : _mm512_loadu_pd(w + j * ldw + 8);
    }
    for (int64_t k = 0; k < kc; k++, a += A5_MR64, b += A5_NR) {
        __m512d a0 = _mm512_loadu_pd(a), a1 = _mm512_loadu_pd(a + 8);
        for (int j = 0; j < A5_NR; j++) {
            __m512d bj = _mm512_set1_pd(b[j]);
            c0[j] = _mm512_fmadd_pd(a0, bj, c0[j]);
            c1[j] = _mm512_fmadd_pd(a1, bj, c1[j]);
        }
    }
    for (int j = 0; j < A5_NR; j++) {
        _mm512_storeu_pd(w + j * ldw, c0[j]);
        _mm512_storeu_pd(w + j * ldw + 8, c1[j]);
    }
}

const gck_kpath_ops gck_kpath_avx2_ops = {A2_MR32, A2_NR, A2_MR64, A2_NR, avx2_f32, avx2_f64};
const gck_kpath_ops gck_kpath_avx512_ops = {A5_MR32, A5_NR, A5_MR64, A5_NR, avx512_f32, avx512_f64};

bool gck_kpath_cpu_has(gck_kpath p, const char **missing) {
    __builtin_cpu_init();
    switch (p) {
    case GCK_KPATH_AVX2:
        *missing = !__builtin_cpu_supports("avx2")  ? "AVX2"
                   : !__builtin_cpu_supports("fma") ? "FMA"
                                                    : NULL;
        return !*missing;
    case GCK_KPATH_AVX512:
        *missing = !__builtin_cpu_supports("avx512f") ? "AVX-512F" : NULL;
        return !*missing;
    default: *missing = "an instruction set this build knows"; return false;
    }
}

#else

const gck_kpath_ops gck_kpath_avx2_ops = {0, 0, 0, 0, NULL, NULL};
const gck_kpath_ops gck_kpath_avx512_ops = {0, 0, 0, 0, NULL, NULL};

bool gck_kpath_cpu_has(gck_kpath p, const char **missing) {
    (void)p;
    *missing = "x86-64 with a GCC-compatible compiler (this build has neither)";
    return false;
}

#endif
