/* The AVX2 + FMA path (ukernel_x86.h): 16 x 6 floats and 8 x 6 doubles, the skinny shapes for
 * jobs read in place, the F16C conversion of f16 runs and the F16C lane probes; it ends in the
 * path's table. Each tile keeps one accumulator per element and adds the products of k
 * ascending with one fused multiply-add each: the declared model, so the bits equal the
 * portable path's. */
#include "ukernel_x86.h"

#if defined(__x86_64__) && defined(__GNUC__)

/* ---- AVX2 + FMA: 16 x 6 floats, 8 x 6 doubles (12 of 16 ymm registers accumulate) ------- */

/* The default tile and the shapes for jobs of few columns: 24 x 4, 48 x 2, 96 x 1 floats (half
 * as many rows of doubles). No shape for few rows: a wider tile reads more columns of B at once,
 * and 12 streams at a leading dimension of a power of two overflow a cache set (measured on a
 * Zen 3: 1 x 2048 x 1024 f32 went from 4.1 to 2.5 GFLOP/s). */
AVX2_TILE(gck_kavx2_s32_2x6, float, __m256, ps, 2, 6)
AVX2_TILE(gck_kavx2_s32_3x4, float, __m256, ps, 3, 4)
AVX2_TILE(gck_kavx2_s32_6x2, float, __m256, ps, 6, 2)
AVX2_TILE(gck_kavx2_s32_12x1, float, __m256, ps, 12, 1)
AVX2_TILE(gck_kavx2_s64_2x6, double, __m256d, pd, 2, 6)
AVX2_TILE(gck_kavx2_s64_3x4, double, __m256d, pd, 3, 4)
AVX2_TILE(gck_kavx2_s64_6x2, double, __m256d, pd, 6, 2)
AVX2_TILE(gck_kavx2_s64_12x1, double, __m256d, pd, 12, 1)

/* Tiles for jobs of one to four rows that read op(B) in place: eight columns in the lanes, R
 * accumulators (one per row), a[k*as + r] broadcast. Stored along k (bs = 1, as column-major B
 * is), eight steps of eight columns are loaded as they lie and transposed in registers (unpack,
 * shuffle, permute: BLIS's and OpenBLAS's usual 8 x 8 transposition), so that no FMA computes a
 * padding row: a 16 x 6 tile spends 15 of its 16 lanes on padding at M = 1. Stored along the
 * columns (bj = 1: packed edge slivers, row-major B) the eight values are one load; otherwise
 * they are gathered one by one. Each element still takes one FMA per step, k ascending, into its
 * one accumulator: the same tree. W's tile (column-major) goes through a buffer to and from the
 * lanes, once per call. */
AVX2 static inline __attribute__((always_inline)) void transpose8(__m256 *c) {
    __m256 t[8], u[8];
    TRANSPOSE_IN_LANES(256, 8, c, t, u);
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        c[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
        c[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
}

#define LANE_TILE(NAME, R)                                                                         \
    AVX2 void NAME(int64_t kc, const float *a, int64_t as, int64_t pf, const float *b, int64_t bs, \
                   int64_t bj, float *w, int64_t ldw, bool first) {                                \
        float buf[R][8] __attribute__((aligned(32)));                                              \
        __m256 acc[R];                                                                             \
        LANE_W_IN(256, ps, 8, R, buf, acc, w, ldw, first);                                         \
        int64_t k = 0;                                                                             \
        if (bs == 1)                                                                               \
            for (; k + 8 <= kc; k += 8) {                                                          \
                __m256 c[8];                                                                       \
                _Pragma("GCC unroll 8") for (int j = 0; j < 8; j++) c[j] =                         \
                    _mm256_loadu_ps(b + k + j * bj);                                               \
                transpose8(c);                                                                     \
                _Pragma("GCC unroll 8") for (int q = 0; q < 8; q++) {                              \
                    PREFETCH(a + (k + q) * as, pf ? pf : PF_STEPS * as * (int64_t)sizeof(float));  \
                    _Pragma("GCC unroll 4") for (int r = 0; r < (R); r++) acc[r] =                 \
                        _mm256_fmadd_ps(_mm256_broadcast_ss(a + (k + q) * as + r), c[q], acc[r]);  \
                }                                                                                  \
            }                                                                                      \
        for (; k < kc; k++) {                                                                      \
            const float *bk = b + k * bs;                                                          \
            __m256 v = bj == 1 ? _mm256_loadu_ps(bk)                                               \
                               : _mm256_setr_ps(bk[0], bk[bj], bk[2 * bj], bk[3 * bj], bk[4 * bj], \
                                                bk[5 * bj], bk[6 * bj], bk[7 * bj]);               \
            _Pragma("GCC unroll 4") for (int r = 0; r < (R); r++) acc[r] =                         \
                _mm256_fmadd_ps(_mm256_broadcast_ss(a + k * as + r), v, acc[r]);                   \
        }                                                                                          \
        LANE_W_OUT(256, ps, 8, R, buf, acc, w, ldw);                                               \
    }

LANE_TILE(gck_kavx2_l32_4x8, 4)
LANE_TILE(gck_kavx2_l32_1x8, 1)

AVX2 static void avx2_f32(int64_t kc, const float *a, const float *b, float *w, int64_t ldw,
                          bool first) {
    gck_kavx2_s32_2x6_body(kc, a, A2_MR32, 0, b, A2_NR, 1, w, ldw, first);
}

AVX2 static void avx2_f64(int64_t kc, const double *a, const double *b, double *w, int64_t ldw,
                          bool first) {
    gck_kavx2_s64_2x6_body(kc, a, A2_MR64, 0, b, A2_NR, 1, w, ldw, first);
}

/* ---- f16 x f16 in f16 without VFMADDPH: the emulation, 8 lanes at a time ----------------- */

#define AVX2F16C __attribute__((target("avx2,fma,f16c")))

/* 16 rows (two vectors) by 4 columns: 8 accumulators and the step's temporaries in 16 ymm */
enum { A2_MRH = 16, A2_NRH = 4 };

/* a*b + c rounded once to f16, per lane (c an f16 value as a float): gck_kfma16_step's
 * arithmetic. The product is exact in f32; the sum s is rounded to nearest and TwoSum gives its
 * error e exactly; where e != 0 the sum is rounded to odd instead (toward zero by one ulp where e
 * points below |s|, then the last bit set), and F16C rounds that once to f16, nearest even
 * (kernels_internal.h says why the result is the correctly rounded one). A NaN or infinite s
 * makes e a NaN, which compares unordered, so s goes on unchanged. */
AVX2F16C static inline __attribute__((always_inline)) __m256 fma16_avx2(__m256 a, __m256 b,
                                                                        __m256 c) {
    __m256 s, e;
    FMA16_SUM(256, a, b, c, s, e);
    __m256i inexact = _mm256_castps_si256(_mm256_cmp_ps(e, _mm256_setzero_ps(), _CMP_NEQ_OQ));
    __m256i below = _mm256_srai_epi32(_mm256_castps_si256(_mm256_xor_ps(e, s)), 31);
    __m256i r = _mm256_add_epi32(_mm256_castps_si256(s), _mm256_and_si256(below, inexact));
    r = _mm256_or_si256(r, _mm256_srli_epi32(inexact, 31));
    return _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_castsi256_ps(r), _MM_FROUND_TO_NEAREST_INT));
}

H16_TILE(gck_kavx2_h16, AVX2F16C, 256, __m256, __m128i, _mm_loadu_si128, fma16_avx2, A2_NRH)

const gck_kfma16_fn gck_kfma16_avx2 = gck_kavx2_h16_lane;

/* ---- F16C: f16 runs into f32 while packing ----------------------------------------------------
 */

F16C void gck_kf16c_to_f32(float *dst, int64_t ds, const void *src, int64_t ss, int64_t n) {
    const uint16_t *s = src;
    int64_t i = 0;
    if (ds == 1 && ss == 1)
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + i))));
    for (; i < n; i++) dst[i * ds] = _cvtsh_ss(s[i * ss]);
}

F16C void gck_kf16c_from_f32(void *dst, int64_t ds, const float *src, int64_t n) {
    uint16_t *d = dst;
    int64_t i = 0;
    if (ds == 1)
        for (; i + 8 <= n; i += 8)
            _mm_storeu_si128((__m128i *)(d + i),
                             _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++)
        d[i * ds] = (uint16_t)_mm_extract_epi16(
            _mm_cvtps_ph(_mm_set_ss(src[i]), _MM_FROUND_TO_NEAREST_INT), 0);
}

/* ---- the instructions one lane at a time, for the conformance probes ---------------------- */

F16C static float f16_to_f32_hw(uint16_t h) { return _cvtsh_ss(h); }

F16C static uint16_t f16_from_f32_hw(float x) {
    return (uint16_t)_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(x), _MM_FROUND_TO_NEAREST_INT), 0);
}

const gck_kf16_to_f32_fn gck_kf16_to_f32_hw = f16_to_f32_hw;
const gck_kf16_from_f32_fn gck_kf16_from_f32_hw = f16_from_f32_hw;

// clang-format off
const gck_kpath_ops gck_kpath_avx2_ops = {
    .mr32 = A2_MR32, .nr32 = A2_NR, .mr64 = A2_MR64, .nr64 = A2_NR, .f16c = true,
    .mrh = A2_MRH, .nrh = A2_NRH, .f32 = avx2_f32, .f64 = avx2_f64, .h16 = gck_kavx2_h16,
    .s32 = {A2_S32}, .s64 = {A2_S64}};
// clang-format on

#endif
