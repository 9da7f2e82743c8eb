/* What the x86-64 micro-kernels share (internal: private to kernels/): the instruction-set
 * attributes, the prefetch, the tile generator, the tile sizes, the kernels one path's table
 * borrows from another's (the AVX-512 paths read skinny operands with the AVX2 kernels; the
 * AVX512-BF16 path is the AVX-512 path plus its pair kernel) and the tables' shared rows. Each
 * path is one file ending in its table: ukernel_avx2.c, ukernel_avx512.c, ukernel_avx512bf16.c,
 * ukernel_avx512fp16.c, ukernel_amx.c;
 * ukernel_x86.c says which the CPU can run. */
#ifndef GEMMCHECK_KERNELS_UKERNEL_X86_H
#define GEMMCHECK_KERNELS_UKERNEL_X86_H

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

/* The first two rounds of the transposition of N W-bit vectors of floats r[0..N-1] (the lane
 * tiles': rows are columns of op(B), lanes its steps): each four rows 4h..4h+3 transposed within
 * every 128-bit lane by an unpack and a shuffle, so that u[4h + g] holds, in each lane l, step 4l
 * + g of those four rows; t holds the unpacked pairs. What is left is moving 128-bit lanes. */
#define TRANSPOSE_IN_LANES(W, N, r, t, u)                                                          \
    do {                                                                                           \
        _Pragma("GCC unroll 8") for (int i_ = 0; i_ < (N) / 2; i_++) {                             \
            t[2 * i_] = _mm##W##_unpacklo_ps(r[2 * i_], r[2 * i_ + 1]);                            \
            t[2 * i_ + 1] = _mm##W##_unpackhi_ps(r[2 * i_], r[2 * i_ + 1]);                        \
        }                                                                                          \
        _Pragma("GCC unroll 4") for (int h_ = 0; h_ < (N) / 4; h_++) {                             \
            u[4 * h_] = _mm##W##_shuffle_ps(t[4 * h_], t[4 * h_ + 2], 0x44);                       \
            u[4 * h_ + 1] = _mm##W##_shuffle_ps(t[4 * h_], t[4 * h_ + 2], 0xEE);                   \
            u[4 * h_ + 2] = _mm##W##_shuffle_ps(t[4 * h_ + 1], t[4 * h_ + 3], 0x44);               \
            u[4 * h_ + 3] = _mm##W##_shuffle_ps(t[4 * h_ + 1], t[4 * h_ + 3], 0xEE);               \
        }                                                                                          \
    } while (0)

/* A lane tile's R x L block of W (column-major, ldw; zeros when first) into R accumulators of L
 * elements, W-bit vectors with the suffix SFX (ps or pd): acc[r] holds row r's L columns, through
 * the aligned buffer buf[R][L] (a transposition by memory, once per call); LANE_W_OUT stores them
 * back. */
#define LANE_W_IN(W, SFX, L, R, buf, acc, w, ldw, first)                                           \
    do {                                                                                           \
        _Pragma("GCC unroll 16") for (int j_ = 0; j_ < (L); j_++)                                  \
            _Pragma("GCC unroll 4") for (int r_ = 0; r_ < (R); r_++) buf[r_][j_] =                 \
                (first) ? 0 : (w)[r_ + j_ * (ldw)];                                                \
        _Pragma("GCC unroll 4") for (int r_ = 0; r_ < (R); r_++) acc[r_] =                         \
            _mm##W##_load_##SFX(buf[r_]);                                                          \
    } while (0)
#define LANE_W_OUT(W, SFX, L, R, buf, acc, w, ldw)                                                 \
    do {                                                                                           \
        _Pragma("GCC unroll 4") for (int r_ = 0; r_ < (R); r_++)                                   \
            _mm##W##_store_##SFX(buf[r_], acc[r_]);                                                \
        _Pragma("GCC unroll 16") for (int j_ = 0; j_ < (L); j_++)                                  \
            _Pragma("GCC unroll 4") for (int r_ = 0; r_ < (R); r_++)(w)[r_ + j_ * (ldw)] =         \
                buf[r_][j_];                                                                       \
    } while (0)

/* The steps a lane tile takes before its first block, so that each column's later runs of
 * `width` bytes (the vector it loads) start at a multiple of `width`: op(B) stored along k (bs =
 * 1) at b, columns bj elements of es bytes apart. None where b already is so aligned, where the
 * columns are not a whole number of widths apart or b not a whole number of elements, or where
 * kc has fewer steps. The AVX-512 lane tiles load the columns' runs aligned down, masked to the
 * steps from 0 on (the AVX2 ones do not: docs/KERNELS.md, "Lane tiles' loads on line
 * boundaries"). Runs that straddle two lines cost a Zen 5 thread f32 4 x 2048 x 1024 about a
 * sixth (82-84 against 96-102 GFLOP/s, op(B) 16 bytes past a line, as malloc returns it). */
static inline int64_t lane_lead(const void *b, int64_t bj, int64_t es, int64_t width, int64_t kc) {
    int64_t off = (int64_t)((uintptr_t)b % (uintptr_t)width);
    if (!off || off % es || bj * es % width) return 0;
    int64_t lead = (width - off) / es;
    return lead <= kc ? lead : 0;
}

enum { A2_MR32 = 16, A2_MR64 = 8, A2_NR = 6 };
/* The f64 tile is three vectors by eight columns, not two by twelve as the f32 one: each step
 * loads three A vectors and broadcasts eight B values for its 24 FMAs, instead of two and twelve,
 * and a sliver of B of 8 columns lets a KC block of 256 steps fit half of L1 (168 with 12). On a
 * Zen 4 core (2026-11-25, the two libraries alternating in one minute): f64 2048^3 on two threads
 * 88.1-96.5 -> 97.8-99.5 GFLOP/s, 1024^3 on one 42.0-47.2 -> 44.8-49.0, in cache (192 x 192 x
 * 256) 41.7-42.4 -> 43.2-44.4. */
enum { A5_MR32 = 32, A5_NR = 12, A5_MR64 = 24, A5_NR64 = 8 };
/* The f16-arithmetic emulation's tile (ukernel_avx512.c): 32 rows by 6 columns */
enum { A5_MRH = 32, A5_NRH = 6 };

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
    ISA void NAME(int64_t kc, const EL *a, int64_t as, int64_t pf, const EL *b, int64_t bs,        \
                  int64_t bj, EL *w, int64_t ldw, bool first) {                                    \
        NAME##_body(kc, a, as, pf, b, bs, bj, w, ldw, first);                                      \
    }
#define AVX2_TILE(NAME, EL, VT, SFX, NV, NC) VEC_TILE(NAME, AVX2, 256, EL, VT, SFX, NV, NC)

/* The sum of an f16 fused multiply-add on W-bit vectors of floats holding f16 values (fma16_avx2,
 * fma16_avx512): the product exact in f32, s = a*b + c rounded to nearest, and e = a*b + c - s
 * exactly (TwoSum: Knuth, TAOCP vol. 2, 4.2.2). */
#define FMA16_SUM(W, a, b, c, s, e)                                                                \
    do {                                                                                           \
        __m##W p_ = _mm##W##_mul_ps(a, b), z_;                                                     \
        s = _mm##W##_add_ps(p_, c);                                                                \
        z_ = _mm##W##_sub_ps(s, p_);                                                               \
        e = _mm##W##_add_ps(_mm##W##_sub_ps(p_, _mm##W##_sub_ps(s, z_)), _mm##W##_sub_ps(c, z_));  \
    } while (0)

/* The f16-arithmetic kernel of a path without VFMADDPH: two vectors of rows (2L f16 values a
 * step, L the floats of VT) by NC columns, the accumulators floats holding f16 values; STEP(a, b,
 * c) is one f16 fused multiply-add per lane (fma16_avx2, fma16_avx512), and HLOAD loads L f16
 * values as an HT. Also NAME##_lane, the step on one lane, for the tests. */
#define H16_TILE(NAME, ISA, W, VT, HT, HLOAD, STEP, NC)                                            \
    ISA void NAME(int64_t kc, const uint16_t *a, const uint16_t *b, float *w, int64_t ldw,         \
                  bool first) {                                                                    \
        enum { L = sizeof(VT) / sizeof(float) };                                                   \
        VT c[NC][2];                                                                               \
        _Pragma("GCC unroll 16") for (int j = 0; j < (NC); j++)                                    \
            _Pragma("GCC unroll 2") for (int v = 0; v < 2; v++) c[j][v] =                          \
                first ? _mm##W##_setzero_ps() : _mm##W##_loadu_ps(w + j * ldw + v * L);            \
        for (int64_t k = 0; k < kc; k++, a += 2 * L, b += (NC)) {                                  \
            VT a0 = _mm##W##_cvtph_ps(HLOAD((const HT *)a));                                       \
            VT a1 = _mm##W##_cvtph_ps(HLOAD((const HT *)(a + L)));                                 \
            _Pragma("GCC unroll 16") for (int j = 0; j < (NC); j++) {                              \
                VT bj = _mm##W##_set1_ps(_cvtsh_ss(b[j]));                                         \
                c[j][0] = STEP(a0, bj, c[j][0]);                                                   \
                c[j][1] = STEP(a1, bj, c[j][1]);                                                   \
            }                                                                                      \
        }                                                                                          \
        _Pragma("GCC unroll 16") for (int j = 0; j < (NC); j++)                                    \
            _Pragma("GCC unroll 2") for (int v = 0; v < 2; v++)                                    \
                _mm##W##_storeu_ps(w + j * ldw + v * L, c[j][v]);                                  \
    }                                                                                              \
    ISA static uint16_t NAME##_lane(uint16_t a, uint16_t b, uint16_t c) {                          \
        VT r = STEP(_mm##W##_set1_ps(_cvtsh_ss(a)), _mm##W##_set1_ps(_cvtsh_ss(b)),                \
                    _mm##W##_set1_ps(_cvtsh_ss(c)));                                               \
        return _cvtss_sh(_mm_cvtss_f32(_mm##W##_castps##W##_ps128(r)), _MM_FROUND_TO_NEAREST_INT); \
    }

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

/* The kernels one table borrows from another file (VEC_TILE and LANE_TILE define them). */
#define GCK_KTILE_ARGS(EL)                                                                         \
    int64_t kc, const EL *a, int64_t as, int64_t pf, const EL *b, int64_t bs, int64_t bj, EL *w,   \
        int64_t ldw, bool first
void gck_kavx2_s32_2x6(GCK_KTILE_ARGS(float));
void gck_kavx2_s32_3x4(GCK_KTILE_ARGS(float));
void gck_kavx2_s32_6x2(GCK_KTILE_ARGS(float));
void gck_kavx2_s32_12x1(GCK_KTILE_ARGS(float));
void gck_kavx2_l32_4x8(GCK_KTILE_ARGS(float));
void gck_kavx2_l32_1x8(GCK_KTILE_ARGS(float));
void gck_kavx2_s64_2x6(GCK_KTILE_ARGS(double));
void gck_kavx2_s64_3x4(GCK_KTILE_ARGS(double));
void gck_kavx2_s64_6x2(GCK_KTILE_ARGS(double));
void gck_kavx2_s64_12x1(GCK_KTILE_ARGS(double));
void gck_kavx512_s64_8x2(GCK_KTILE_ARGS(double));
void gck_kavx512_s64_6x4(GCK_KTILE_ARGS(double));
void gck_kavx512_s64_2x6(GCK_KTILE_ARGS(double));
void gck_kavx512_s64_3x8(GCK_KTILE_ARGS(double));
void gck_kavx512_s64_2x12(GCK_KTILE_ARGS(double));
void gck_kavx512_s64_1x16(GCK_KTILE_ARGS(double));
void gck_kavx512_s64_2x8(GCK_KTILE_ARGS(double));
void gck_kavx512_s32_2x8(GCK_KTILE_ARGS(float));
void gck_kavx512_s32_2x6(GCK_KTILE_ARGS(float));
void gck_kavx512_s32_2x4(GCK_KTILE_ARGS(float));
void gck_kavx512_s32_1x8(GCK_KTILE_ARGS(float));
void gck_kavx512_s32_4x4(GCK_KTILE_ARGS(float));
void gck_kavx512_s32_4x2(GCK_KTILE_ARGS(float));
void gck_kavx512_l32_4x16(GCK_KTILE_ARGS(float));
void gck_kavx512_l32_1x16(GCK_KTILE_ARGS(float));
void gck_kavx512_l64_4x8(GCK_KTILE_ARGS(double));
void gck_kavx512_l64_1x8(GCK_KTILE_ARGS(double));
void gck_kavx512_f32(int64_t kc, const float *a, const float *b, float *w, int64_t ldw, bool first);
void gck_kavx512_f64(int64_t kc, const double *a, const double *b, double *w, int64_t ldw,
                     bool first);
void gck_kavx2_h16(int64_t kc, const uint16_t *a, const uint16_t *b, float *w, int64_t ldw,
                   bool first);
void gck_kavx512_h16(int64_t kc, const uint16_t *a, const uint16_t *b, float *w, int64_t ldw,
                     bool first);

/* The tables' shared rows: the AVX2 skinny shapes, and the AVX-512 path's whole table. */
// clang-format off
#define A2_S32                                                                              \
    {16, 6, gck_kavx2_s32_2x6}, {24, 4, gck_kavx2_s32_3x4}, {48, 2, gck_kavx2_s32_6x2},                      \
    {96, 1, gck_kavx2_s32_12x1}, {4, 8, gck_kavx2_l32_4x8, true}, {1, 8, gck_kavx2_l32_1x8, true}
#define A2_S64                                                                              \
    {8, 6, gck_kavx2_s64_2x6}, {12, 4, gck_kavx2_s64_3x4}, {24, 2, gck_kavx2_s64_6x2}, {48, 1, gck_kavx2_s64_12x1}
/* The AVX-512 paths read skinny operands in place with the avx2 kernels (the same arithmetic;
 * every AVX-512 CPU has AVX2 and FMA, and gck_kpath_cpu_has requires them): reading in place is
 * what those shapes need (on a Zen 5 core the packed avx512bf16 path ran 16x2048x1024 f32 at 39
 * GFLOP/s, a Zen 3 core 88 on the avx2 in-place kernels); f64 jobs that read only op(A) in
 * place have AVX-512 tiles besides (packed_b), f64 jobs that read op(B) in place stored along k
 * two wide ones and, of one to four rows, lane tiles of 8 columns, and f32 jobs their own (wide),
 * one-to-four-row ones lane tiles of 16 columns (ukernel_avx512.c says which and why). */
#define A5_S64                                                                              \
    .s64 = {A2_S64, {64, 2, gck_kavx512_s64_8x2, false, true},                                   \
            {48, 4, gck_kavx512_s64_6x4, false, true}, {16, 6, gck_kavx512_s64_2x6, false, true},       \
            {24, 8, gck_kavx512_s64_3x8, false, true}, {16, 12, gck_kavx512_s64_2x12, false, true},     \
            {8, 16, gck_kavx512_s64_1x16, false, true},                                           \
            {16, 8, gck_kavx512_s64_2x8, false, false, true},                                     \
            {24, 8, gck_kavx512_s64_3x8, false, false, true},                                     \
            {4, 8, gck_kavx512_l64_4x8, true, false, true},                                       \
            {1, 8, gck_kavx512_l64_1x8, true, false, true}}
#define A5_S32                                                                              \
    .s32 = {A2_S32, {32, 8, gck_kavx512_s32_2x8, false, false, true},                             \
            {32, 6, gck_kavx512_s32_2x6, false, false, true},                                     \
            {32, 4, gck_kavx512_s32_2x4, false, false, true}, {16, 8, gck_kavx512_s32_1x8},            \
            {64, 4, gck_kavx512_s32_4x4, false, false, true},                                     \
            {64, 2, gck_kavx512_s32_4x2, false, false, true},                                     \
            {4, 16, gck_kavx512_l32_4x16, true, false, true},                                     \
            {1, 16, gck_kavx512_l32_1x16, true, false, true}}
#define A5_OPS .mr32 = A5_MR32, .nr32 = A5_NR, .mr64 = A5_MR64, .nr64 = A5_NR64, .f16c = true, \
               .f32 = gck_kavx512_f32, .f64 = gck_kavx512_f64, A5_S32, A5_S64
/* The AVX-512 paths without VFMADDPH run f16 arithmetic on the emulation's 512-bit kernel */
#define A5_H16 .mrh = A5_MRH, .nrh = A5_NRH, .h16 = gck_kavx512_h16
// clang-format on

#endif
#endif
