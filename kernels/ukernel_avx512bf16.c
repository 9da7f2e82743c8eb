/* The AVX512-BF16 path (ukernel_x86.h): the AVX-512 path plus the bf16 pair kernel (one
 * VDPBF16PS per column and 16 rows) and the instruction's lane probes; it ends in the path's
 * table. */
#include "ukernel_x86.h"

#if defined(__x86_64__) && defined(__GNUC__)

/* ---- AVX512-BF16: 32 x 12 floats from bf16 pairs, one VDPBF16PS per column and 16 rows ----- */

AVX512BF16 static void avx512_bf16dot(int64_t kp, const uint16_t *a, const uint16_t *b, float *w,
                                      int64_t ldw, bool first) {
    __m512 c0[A5_NR], c1[A5_NR];
    tile_f32_load(c0, c1, w, ldw, first);
    for (int64_t g = 0; g < kp; g++, a += 2 * A5_MR32, b += 2 * A5_NR) {
        PREFETCH(a, PF_STEPS * 2 * A5_MR32 * 2);
        PREFETCH(a, PF_STEPS * 2 * A5_MR32 * 2 + 64);
        __m512bh a0 = (__m512bh)_mm512_loadu_si512(a), a1 = (__m512bh)_mm512_loadu_si512(a + 32);
#pragma GCC unroll 16
        for (int j = 0; j < A5_NR; j++) {
            int32_t pair;
            memcpy(&pair, b + 2 * j, sizeof pair);
            __m512bh bj = (__m512bh)_mm512_set1_epi32(pair);
            c0[j] = _mm512_dpbf16_ps(c0[j], a0, bj);
            c1[j] = _mm512_dpbf16_ps(c1[j], a1, bj);
        }
    }
    tile_f32_store(c0, c1, w, ldw);
}

/* ---- the instructions one lane at a time, for the conformance probes ---------------------- */

AVX512BF16 static float dot2_hw(float acc, uint16_t a0, uint16_t b0, uint16_t a1, uint16_t b1) {
    __m512i a = _mm512_set1_epi32((int32_t)((uint32_t)a1 << 16 | a0));
    __m512i b = _mm512_set1_epi32((int32_t)((uint32_t)b1 << 16 | b0));
    return _mm512_cvtss_f32(_mm512_dpbf16_ps(_mm512_set1_ps(acc), (__m512bh)a, (__m512bh)b));
}

AVX512BF16 static uint16_t cvtbf16_hw(float x) {
    __m256bh r = _mm512_cvtneps_pbh(_mm512_set1_ps(x));
    uint16_t out;
    memcpy(&out, &r, sizeof out);
    return out;
}

const gck_kdot2_fn gck_kdot2_hw = dot2_hw;
const gck_kcvt_bf16_fn gck_kcvtbf16_hw = cvtbf16_hw;

// clang-format off
const gck_kpath_ops gck_kpath_avx512bf16_ops = {A5_OPS, A5_H16, .mrbf = A5_MR32, .nrbf = A5_NR,
                                                .bf16dot = avx512_bf16dot};
// clang-format on

#endif
