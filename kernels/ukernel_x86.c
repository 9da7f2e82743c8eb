/* x86-64 micro-kernels with intrinsics, each compiled for its instruction set by a target
 * attribute and run only where CPUID (and the OS's saved state) says the set is usable. Each
 * keeps one accumulator per element of the tile and adds the products of k ascending with one
 * fused multiply-add each: the declared model, so the bits equal the portable path's.
 *
 * The tile is column-major: MR rows as whole vectors (two per column), NR columns, each B value
 * broadcast (the register blocking of BLIS's Haswell and SkylakeX kernels). The loops over the
 * columns are unrolled so that the accumulator arrays live in registers, not on the stack. */
#include "kernels_internal.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include <string.h>

#define AVX2       __attribute__((target("avx2,fma")))
#define AVX512     __attribute__((target("avx512f")))
#define AVX512BF16 __attribute__((target("avx512f,avx512bf16")))
#define F16C       __attribute__((target("avx,f16c")))

/* Software prefetch (as BLIS's SkylakeX and OpenBLAS's kernels do): the A sliver streams from L2
 * and is requested PF_STEPS steps ahead; the next tile of W (the same columns, MR rows on), which
 * the next call loads first, is requested while this call computes. A prefetch never faults, so
 * addresses past the buffers are harmless. */
#ifndef PF_STEPS
#define PF_STEPS 8
#endif

#define PREFETCH(p, bytes)                                                                         \
    _mm_prefetch((const char *)((uintptr_t)(p) + (uintptr_t)(bytes)), _MM_HINT_T0)

/* ---- AVX2 + FMA: 16 x 6 floats, 8 x 6 doubles (12 of 16 ymm registers accumulate) ------- */

enum { A2_MR32 = 16, A2_MR64 = 8, A2_NR = 6 };

/* The body of a tile of NV vectors of rows by NC columns: step k of A at a + k*as, element (k, j)
 * of B at b[k*bs + j*bj]; NV*NC accumulators (at most 12: with a broadcast and an A vector they
 * fill the 16 registers). Inlined into each kernel, so the packed kernels see constant strides.
 * A is requested PF_STEPS steps ahead: on a Zen 3, f32 2048^3 on two threads went from 117-160
 * to 172-175 GFLOP/s, as the two cores stopped waiting on the A slivers. A read in place and
 * streamed down its columns asks for pf bytes on instead (the tile two below, which the driver
 * runs next): on the same machine 2048 x 4 x 1024 went from 26-31 to 40-46 GFLOP/s in f32 and
 * from 6-11 to 17-21 in f64. Either way all the tile's rows, a line per two vectors. */
#define VEC_TILE(NAME, ISA, W, EL, VT, SFX, NV, NC)                                                \
    ISA static inline __attribute__((always_inline)) void NAME##_body(                             \
        int64_t kc, const EL *a, int64_t as, int64_t pf, const EL *b, int64_t bs, int64_t bj,      \
        EL *w, int64_t ldw, bool first) {                                                          \
        enum { L = sizeof(VT) / sizeof(EL) };                                                      \
        VT c[NC][NV];                                                                              \
        _Pragma("GCC unroll 16") for (int j = 0; j < (NC); j++)                                    \
            _Pragma("GCC unroll 16") for (int v = 0; v < (NV); v++) c[j][v] =                      \
                first ? _mm##W##_setzero_##SFX() : _mm##W##_loadu_##SFX(w + j * ldw + v * L);      \
        for (int64_t k = 0; k < kc; k++, a += as, b += bs) {                                       \
            _Pragma("GCC unroll 16") for (int l = 0; l < ((NV)*L * (int)sizeof(EL) + 63) / 64;     \
                                          l++)                                                     \
                PREFETCH(a, (pf ? pf : PF_STEPS * as * (int64_t)sizeof(EL)) + 64 * l);             \
            VT av[NV];                                                                             \
            _Pragma("GCC unroll 16") for (int v = 0; v < (NV); v++) av[v] =                        \
                _mm##W##_loadu_##SFX(a + v * L);                                                   \
            _Pragma("GCC unroll 16") for (int j = 0; j < (NC); j++) {                              \
                VT bv = _mm##W##_set1_##SFX(b[j * bj]);                                            \
                _Pragma("GCC unroll 16") for (int v = 0; v < (NV); v++) c[j][v] =                  \
                    _mm##W##_fmadd_##SFX(av[v], bv, c[j][v]);                                      \
            }                                                                                      \
        }                                                                                          \
        _Pragma("GCC unroll 16") for (int j = 0; j < (NC); j++)                                    \
            _Pragma("GCC unroll 16") for (int v = 0; v < (NV); v++)                                \
                _mm##W##_storeu_##SFX(w + j * ldw + v * L, c[j][v]);                               \
    }                                                                                              \
    ISA static void NAME(int64_t kc, const EL *a, int64_t as, int64_t pf, const EL *b, int64_t bs, \
                         int64_t bj, EL *w, int64_t ldw, bool first) {                             \
        NAME##_body(kc, a, as, pf, b, bs, bj, w, ldw, first);                                      \
    }
#define AVX2_TILE(NAME, EL, VT, SFX, NV, NC) VEC_TILE(NAME, AVX2, 256, EL, VT, SFX, NV, NC)

/* The default tile and the shapes for jobs of few columns: 24 x 4, 48 x 2, 96 x 1 floats (half
 * as many rows of doubles). No shape for few rows: a wider tile reads more columns of B at once,
 * and 12 streams at a leading dimension of a power of two overflow a cache set (measured on a
 * Zen 3: 1 x 2048 x 1024 f32 went from 4.1 to 2.5 GFLOP/s). */
AVX2_TILE(avx2_s32_2x6, float, __m256, ps, 2, 6)
AVX2_TILE(avx2_s32_3x4, float, __m256, ps, 3, 4)
AVX2_TILE(avx2_s32_6x2, float, __m256, ps, 6, 2)
AVX2_TILE(avx2_s32_12x1, float, __m256, ps, 12, 1)
AVX2_TILE(avx2_s64_2x6, double, __m256d, pd, 2, 6)
AVX2_TILE(avx2_s64_3x4, double, __m256d, pd, 3, 4)
AVX2_TILE(avx2_s64_6x2, double, __m256d, pd, 6, 2)
AVX2_TILE(avx2_s64_12x1, double, __m256d, pd, 12, 1)

/* The AVX-512 paths' tiles for jobs that read op(A) in place and pack op(B) (the AVX2 ones above
 * serve the other in-place jobs: a tile of many columns of op(B) read in place along k reads
 * that many streams a leading dimension apart, which overflow a cache set). On a Zen 4 core,
 * f64 2048 x N x 1024 in GFLOP/s, the best AVX2 tile against the AVX-512 one that fits N
 * (2026-11-26, one thread, best of 100 calls): N = 2 16.6 / 19.6, 3 12.6 / 24.1 (48 x 4),
 * 4 23.9 / 29.4, 8 34.1 / 44.6, 12 33.3 / 44.7, 16 34.3 / 44.0-46.0, 24 32.4 / 47.4 (16 x 12);
 * at N = 1 the 48 x 1 AVX2 tile is as fast (11.1 against 10.9 for 96 x 1), so there is none. */
#define AVX512_F64_TILE(NV, NC)                                                                    \
    VEC_TILE(avx512_s64_##NV##x##NC, AVX512, 512, double, __m512d, pd, NV, NC)
AVX512_F64_TILE(8, 2)
AVX512_F64_TILE(6, 4)
AVX512_F64_TILE(2, 6)
AVX512_F64_TILE(3, 8)
AVX512_F64_TILE(2, 12)
AVX512_F64_TILE(1, 16)
/* In f32 the AVX-512 paths have 512-bit tiles for every job read in place (`wide` but the one
 * of a single vector: gemm.c, sup_shape), of at most eight columns, so that the columns of op(B)
 * read in place along k stay within a cache set's ways. On a Zen 4 thread, f32 GFLOP/s against
 * the AVX2 tile the choice took before (2026-11-26, best of 200 calls): 2048 x 8 x 1024 57 ->
 * 102 (32 x 8), 2048 x 3 x 1024 26 -> 59 (64 x 4), 64 x 64 x 16384 92 -> 96 (32 x 8). */
#define AVX512_F32_TILE(NV, NC)                                                                    \
    VEC_TILE(avx512_s32_##NV##x##NC, AVX512, 512, float, __m512, ps, NV, NC)
AVX512_F32_TILE(2, 8)
AVX512_F32_TILE(2, 6)
AVX512_F32_TILE(2, 4)
AVX512_F32_TILE(1, 8)
AVX512_F32_TILE(4, 4)
AVX512_F32_TILE(4, 2)

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
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(c[2 * i], c[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(c[2 * i], c[2 * i + 1]);
    }
#pragma GCC unroll 2
    for (int i = 0; i < 2; i++) {
        u[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
        u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        c[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
        c[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
}

#define LANE_TILE(NAME, R)                                                                         \
    AVX2 static void NAME(int64_t kc, const float *a, int64_t as, int64_t pf, const float *b,      \
                          int64_t bs, int64_t bj, float *w, int64_t ldw, bool first) {             \
        float buf[R][8] __attribute__((aligned(32)));                                              \
        __m256 acc[R];                                                                             \
        _Pragma("GCC unroll 8") for (int j = 0; j < 8; j++)                                        \
            _Pragma("GCC unroll 4") for (int r = 0; r < (R); r++) buf[r][j] =                      \
                first ? 0.0f : w[r + j * ldw];                                                     \
        _Pragma("GCC unroll 4") for (int r = 0; r < (R); r++) acc[r] = _mm256_load_ps(buf[r]);     \
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
        _Pragma("GCC unroll 4") for (int r = 0; r < (R); r++) _mm256_store_ps(buf[r], acc[r]);     \
        _Pragma("GCC unroll 8") for (int j = 0; j < 8; j++)                                        \
            _Pragma("GCC unroll 4") for (int r = 0; r < (R); r++) w[r + j * ldw] = buf[r][j];      \
    }

LANE_TILE(avx2_l32_4x8, 4)
LANE_TILE(avx2_l32_1x8, 1)

AVX2 static void avx2_f32(int64_t kc, const float *a, const float *b, float *w, int64_t ldw,
                          bool first) {
    avx2_s32_2x6_body(kc, a, A2_MR32, 0, b, A2_NR, 1, w, ldw, first);
}

AVX2 static void avx2_f64(int64_t kc, const double *a, const double *b, double *w, int64_t ldw,
                          bool first) {
    avx2_s64_2x6_body(kc, a, A2_MR64, 0, b, A2_NR, 1, w, ldw, first);
}

/* ---- AVX-512F: 32 x 12 floats, 24 x 8 doubles (24 of 32 zmm registers accumulate) ------- */

/* The f64 tile is three vectors by eight columns, not two by twelve as the f32 one: each step
 * loads three A vectors and broadcasts eight B values for its 24 FMAs, instead of two and twelve,
 * and a sliver of B of 8 columns lets a KC block of 256 steps fit half of L1 (168 with 12). On a
 * Zen 4 core (2026-11-25, the two libraries alternating in one minute): f64 2048^3 on two threads
 * 88.1-96.5 -> 97.8-99.5 GFLOP/s, 1024^3 on one 42.0-47.2 -> 44.8-49.0, in cache (192 x 192 x
 * 256) 41.7-42.4 -> 43.2-44.4. */
enum { A5_MR32 = 32, A5_NR = 12, A5_MR64 = 24, A5_NR64 = 8 };

/* the tile after w's: tile_bytes (`lines` cache lines) on, in each of the tile's cols columns */
AVX512 static inline __attribute__((always_inline)) void
prefetch_tile(const void *w, int64_t ldw_bytes, int64_t tile_bytes, int cols, int lines) {
#pragma GCC unroll 16
    for (int j = 0; j < cols; j++)
#pragma GCC unroll 4
        for (int l = 0; l < lines; l++) PREFETCH(w, j * ldw_bytes + tile_bytes + 64 * l);
}

/* The 32 x 12 f32 tile of W into registers (or +0 when `first`), with the next tile requested,
 * and back: shared by the f32 and the bf16 pair micro-kernels. Inlined, so the arrays stay in
 * registers. */
AVX512 static inline __attribute__((always_inline)) void
tile_f32_load(__m512 *c0, __m512 *c1, const float *w, int64_t ldw, bool first) {
#pragma GCC unroll 16
    for (int j = 0; j < A5_NR; j++) {
        c0[j] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(w + j * ldw);
        c1[j] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(w + j * ldw + 16);
    }
    prefetch_tile(w, ldw * 4, A5_MR32 * 4, A5_NR, 2);
}

AVX512 static inline __attribute__((always_inline)) void
tile_f32_store(const __m512 *c0, const __m512 *c1, float *w, int64_t ldw) {
#pragma GCC unroll 16
    for (int j = 0; j < A5_NR; j++) {
        _mm512_storeu_ps(w + j * ldw, c0[j]);
        _mm512_storeu_ps(w + j * ldw + 16, c1[j]);
    }
}

AVX512 static void avx512_f32(int64_t kc, const float *a, const float *b, float *w, int64_t ldw,
                              bool first) {
    __m512 c0[A5_NR], c1[A5_NR];
    tile_f32_load(c0, c1, w, ldw, first);
    for (int64_t k = 0; k < kc; k++, a += A5_MR32, b += A5_NR) {
        PREFETCH(a, PF_STEPS * A5_MR32 * 4);
        PREFETCH(a, PF_STEPS * A5_MR32 * 4 + 64);
        __m512 a0 = _mm512_loadu_ps(a), a1 = _mm512_loadu_ps(a + 16);
#pragma GCC unroll 16
        for (int j = 0; j < A5_NR; j++) {
            __m512 bj = _mm512_set1_ps(b[j]);
            c0[j] = _mm512_fmadd_ps(a0, bj, c0[j]);
            c1[j] = _mm512_fmadd_ps(a1, bj, c1[j]);
        }
    }
    tile_f32_store(c0, c1, w, ldw);
}

AVX512 static void avx512_f64(int64_t kc, const double *a, const double *b, double *w, int64_t ldw,
                              bool first) {
    __m512d c[A5_NR64][3];
#pragma GCC unroll 16
    for (int j = 0; j < A5_NR64; j++)
#pragma GCC unroll 3
        for (int v = 0; v < 3; v++)
            c[j][v] = first ? _mm512_setzero_pd() : _mm512_loadu_pd(w + j * ldw + 8 * v);
    prefetch_tile(w, ldw * 8, A5_MR64 * 8, A5_NR64, 3);
    for (int64_t k = 0; k < kc; k++, a += A5_MR64, b += A5_NR64) {
#pragma GCC unroll 3
        for (int v = 0; v < 3; v++) PREFETCH(a, PF_STEPS * A5_MR64 * 8 + 64 * v);
        __m512d av[3] = {_mm512_loadu_pd(a), _mm512_loadu_pd(a + 8), _mm512_loadu_pd(a + 16)};
#pragma GCC unroll 16
        for (int j = 0; j < A5_NR64; j++) {
            __m512d bj = _mm512_set1_pd(b[j]);
#pragma GCC unroll 3
            for (int v = 0; v < 3; v++) c[j][v] = _mm512_fmadd_pd(av[v], bj, c[j][v]);
        }
    }
#pragma GCC unroll 16
    for (int j = 0; j < A5_NR64; j++)
#pragma GCC unroll 3
        for (int v = 0; v < 3; v++) _mm512_storeu_pd(w + j * ldw + 8 * v, c[j][v]);
}

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

F16C static float f16_to_f32_hw(uint16_t h) { return _cvtsh_ss(h); }

F16C static uint16_t f16_from_f32_hw(float x) {
    return (uint16_t)_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(x), _MM_FROUND_TO_NEAREST_INT), 0);
}

const gck_kdot2_fn gck_kdot2_hw = dot2_hw;
const gck_kcvt_bf16_fn gck_kcvtbf16_hw = cvtbf16_hw;
const gck_kf16_to_f32_fn gck_kf16_to_f32_hw = f16_to_f32_hw;
const gck_kf16_from_f32_fn gck_kf16_from_f32_hw = f16_from_f32_hw;

// clang-format off
#define A2_S32                                                                              \
    {16, 6, avx2_s32_2x6}, {24, 4, avx2_s32_3x4}, {48, 2, avx2_s32_6x2},                      \
    {96, 1, avx2_s32_12x1}, {4, 8, avx2_l32_4x8, true}, {1, 8, avx2_l32_1x8, true}
#define A2_S64                                                                              \
    {8, 6, avx2_s64_2x6}, {12, 4, avx2_s64_3x4}, {24, 2, avx2_s64_6x2}, {48, 1, avx2_s64_12x1}
const gck_kpath_ops gck_kpath_avx2_ops = {
    .mr32 = A2_MR32, .nr32 = A2_NR, .mr64 = A2_MR64, .nr64 = A2_NR, .f16c = true,
    .f32 = avx2_f32, .f64 = avx2_f64, .s32 = {A2_S32}, .s64 = {A2_S64}};
/* The AVX-512 paths read skinny operands in place with the avx2 kernels (the same arithmetic;
 * every AVX-512 CPU has AVX2 and FMA, and gck_kpath_cpu_has requires them): reading in place is
 * what those shapes need (on a Zen 5 core the packed avx512bf16 path ran 16x2048x1024 f32 at 39
 * GFLOP/s, a Zen 3 core 88 on the avx2 in-place kernels); f64 jobs that read only op(A) in
 * place have AVX-512 tiles besides (packed_b, above), and f32 jobs their own (wide, above). */
#define A5_S64                                                                              \
    .s64 = {A2_S64, {64, 2, avx512_s64_8x2, false, true},                                   \
            {48, 4, avx512_s64_6x4, false, true}, {16, 6, avx512_s64_2x6, false, true},       \
            {24, 8, avx512_s64_3x8, false, true}, {16, 12, avx512_s64_2x12, false, true},     \
            {8, 16, avx512_s64_1x16, false, true}}
#define A5_S32                                                                              \
    .s32 = {A2_S32, {32, 8, avx512_s32_2x8, false, false, true},                             \
            {32, 6, avx512_s32_2x6, false, false, true},                                     \
            {32, 4, avx512_s32_2x4, false, false, true}, {16, 8, avx512_s32_1x8},            \
            {64, 4, avx512_s32_4x4, false, false, true},                                     \
            {64, 2, avx512_s32_4x2, false, false, true}}
#define A5_OPS .mr32 = A5_MR32, .nr32 = A5_NR, .mr64 = A5_MR64, .nr64 = A5_NR64, .f16c = true, \
               .f32 = avx512_f32, .f64 = avx512_f64, A5_S32, A5_S64
const gck_kpath_ops gck_kpath_avx512_ops = {A5_OPS};
const gck_kpath_ops gck_kpath_avx512bf16_ops = {A5_OPS, .mrbf = A5_MR32, .nrbf = A5_NR,
                                                .bf16dot = avx512_bf16dot};
// clang-format on

bool gck_kpath_cpu_has(gck_kpath p, const char **missing) {
    __builtin_cpu_init();
    *missing = NULL;
    switch (p) {
    case GCK_KPATH_AVX2:
        if (!__builtin_cpu_supports("avx2"))
            *missing = "AVX2";
        else if (!__builtin_cpu_supports("fma"))
            *missing = "FMA";
        else if (!__builtin_cpu_supports("f16c"))
            *missing = "F16C";
        break;
    case GCK_KPATH_AVX512BF16:
        if (!__builtin_cpu_supports("avx512bf16")) *missing = "AVX512-BF16";
        /* fall through */
    case GCK_KPATH_AVX512:
        if (!__builtin_cpu_supports("avx512f"))
            *missing = "AVX-512F";
        else if (!__builtin_cpu_supports("f16c"))
            *missing = "F16C";
        else if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
            *missing = "AVX2 and FMA (for the in-place kernels)";
        break;
    default: *missing = "an instruction set this build knows"; break;
    }
    return !*missing;
}

#else

const gck_kpath_ops gck_kpath_avx2_ops = {0};
const gck_kpath_ops gck_kpath_avx512_ops = {0};
const gck_kpath_ops gck_kpath_avx512bf16_ops = {0};
const gck_kdot2_fn gck_kdot2_hw = NULL;
const gck_kcvt_bf16_fn gck_kcvtbf16_hw = NULL;
const gck_kf16_to_f32_fn gck_kf16_to_f32_hw = NULL;
const gck_kf16_from_f32_fn gck_kf16_from_f32_hw = NULL;

void gck_kf16c_to_f32(float *dst, int64_t ds, const void *src, int64_t ss, int64_t n) {
    (void)dst, (void)ds, (void)src, (void)ss, (void)n; /* never called: no path has F16C here */
}

bool gck_kpath_cpu_has(gck_kpath p, const char **missing) {
    (void)p;
    *missing = "x86-64 with a GCC-compatible compiler (this build has neither)";
    return false;
}

#endif
