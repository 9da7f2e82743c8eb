/* The AVX512-FP16 path (ukernel_x86.h): the AVX-512 path plus the f16-arithmetic kernel (f16 x f16
 * in f16, one VFMADDPH per 32 rows and column) and the instruction's lane for its probe; it ends
 * in the path's table. VFMADDPH rounds a*b + c once to f16, to nearest even under gemmcheck's
 * floating-point environment, and keeps subnormal inputs and results (Intel's AVX512-FP16
 * architecture specification: the FP16 instructions ignore MXCSR.DAZ and MXCSR.FTZ); the probe
 * (gck_kprobe_fma16) checks that against the emulation before the path is used. */
#include "ukernel_x86.h"

#if defined(__x86_64__) && defined(__GNUC__)

#define AVX512FP16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512fp16")))

/* 64 rows (two vectors of 32 f16) by 12 columns: 24 accumulators, as the f32 tile's 32 x 12 */
enum { AH_MR = 64, AH_NR = 12 };

/* 32 floats of W (f16 values, so exactly) as one vector of f16 */
AVX512FP16 static inline __attribute__((always_inline)) __m512h w_to_h(const float *w) {
    __m256i lo = _mm512_cvtps_ph(_mm512_loadu_ps(w), _MM_FROUND_TO_NEAREST_INT);
    __m256i hi = _mm512_cvtps_ph(_mm512_loadu_ps(w + 16), _MM_FROUND_TO_NEAREST_INT);
    return _mm512_castsi512_ph(_mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1));
}

AVX512FP16 static inline __attribute__((always_inline)) void h_to_w(float *w, __m512h v) {
    __m512i x = _mm512_castph_si512(v);
    _mm512_storeu_ps(w, _mm512_cvtph_ps(_mm512_castsi512_si256(x)));
    _mm512_storeu_ps(w + 16, _mm512_cvtph_ps(_mm512_extracti64x4_epi64(x, 1)));
}

AVX512FP16 static void avx512fp16_h16(int64_t kc, const uint16_t *a, const uint16_t *b, float *w,
                                      int64_t ldw, bool first) {
    /* Planted bugs, built only with -DGCK_PLANT_H16=1 or 2, for showing that the tests and a
     * campaign find them: 1, every KC block starts from zero, as a driver that loses its partial
     * sums; 2, the tile's last column multiplies by the column before it, as an edge tile indexed
     * off by one. */
#if defined(GCK_PLANT_H16) && GCK_PLANT_H16 == 1
    first = true;
#endif
    __m512h c0[AH_NR], c1[AH_NR];
#pragma GCC unroll 16
    for (int j = 0; j < AH_NR; j++) {
        c0[j] = first ? _mm512_setzero_ph() : w_to_h(w + j * ldw);
        c1[j] = first ? _mm512_setzero_ph() : w_to_h(w + j * ldw + 32);
    }
    prefetch_tile(w, ldw * 4, AH_MR * 4, AH_NR, 4);
    for (int64_t k = 0; k < kc; k++, a += AH_MR, b += AH_NR) {
        PREFETCH(a, PF_STEPS * AH_MR * 2);
        PREFETCH(a, PF_STEPS * AH_MR * 2 + 64);
        __m512h a0 = _mm512_castsi512_ph(_mm512_loadu_si512(a));
        __m512h a1 = _mm512_castsi512_ph(_mm512_loadu_si512(a + 32));
#pragma GCC unroll 16
        for (int j = 0; j < AH_NR; j++) {
            /* a VPBROADCASTW per column; VFMADDPH's embedded broadcast {1to32} instead (inline
             * assembly: GCC does not fold a broadcast two FMAs use) measured the same, 2048^3 on
             * one core of the Intel Xeon with AMX 304-340 against 334-342 GFLOP/s */
#if defined(GCK_PLANT_H16) && GCK_PLANT_H16 == 2
            __m512h bj = _mm512_castsi512_ph(_mm512_set1_epi16((short)b[j - (j == AH_NR - 1)]));
#else
            __m512h bj = _mm512_castsi512_ph(_mm512_set1_epi16((short)b[j]));
#endif
            c0[j] = _mm512_fmadd_ph(a0, bj, c0[j]);
            c1[j] = _mm512_fmadd_ph(a1, bj, c1[j]);
        }
    }
#pragma GCC unroll 16
    for (int j = 0; j < AH_NR; j++) {
        h_to_w(w + j * ldw, c0[j]);
        h_to_w(w + j * ldw + 32, c1[j]);
    }
}

/* ---- the instruction on one lane, for the conformance probe -------------------------------- */

AVX512FP16 static uint16_t fma16_hw(uint16_t a, uint16_t b, uint16_t c) {
    __m512h r = _mm512_fmadd_ph(_mm512_castsi512_ph(_mm512_set1_epi16((short)a)),
                                _mm512_castsi512_ph(_mm512_set1_epi16((short)b)),
                                _mm512_castsi512_ph(_mm512_set1_epi16((short)c)));
    return (uint16_t)_mm_extract_epi16(_mm512_castsi512_si128(_mm512_castph_si512(r)), 0);
}

const gck_kfma16_fn gck_kfma16_hw = fma16_hw;

// clang-format off
const gck_kpath_ops gck_kpath_avx512fp16_ops = {A5_OPS, .mrh = AH_MR, .nrh = AH_NR,
                                                .h16 = avx512fp16_h16};
// clang-format on

#endif
