/* The AVX-512F path (ukernel_x86.h): 32 x 12 floats and 24 x 8 doubles packed, the 512-bit
 * tiles for jobs that read op(A) in place; it ends in the path's table (whose skinny shapes
 * include the AVX2 path's). */
#include "ukernel_x86.h"

#if defined(__x86_64__) && defined(__GNUC__)

/* ---- AVX-512F: 32 x 12 floats, 24 x 8 doubles (24 of 32 zmm registers accumulate) ------- */

/* The AVX-512 paths' tiles for jobs that read op(A) in place and pack op(B) (the AVX2 ones above
 * serve the other in-place jobs: a tile of many columns of op(B) read in place along k reads
 * that many streams a leading dimension apart, which overflow a cache set). On a Zen 4 core,
 * f64 2048 x N x 1024 in GFLOP/s, the best AVX2 tile against the AVX-512 one that fits N
 * (2026-11-26, one thread, best of 100 calls): N = 2 16.6 / 19.6, 3 12.6 / 24.1 (48 x 4),
 * 4 23.9 / 29.4, 8 34.1 / 44.6, 12 33.3 / 44.7, 16 34.3 / 44.0-46.0, 24 32.4 / 47.4 (16 x 12);
 * at N = 1 the 48 x 1 AVX2 tile is as fast (11.1 against 10.9 for 96 x 1), so there is none. */
#define AVX512_F64_TILE(NV, NC)                                                                    \
    VEC_TILE(gck_kavx512_s64_##NV##x##NC, AVX512, 512, double, __m512d, pd, NV, NC)
AVX512_F64_TILE(8, 2)
AVX512_F64_TILE(6, 4)
AVX512_F64_TILE(2, 6)
AVX512_F64_TILE(3, 8)
AVX512_F64_TILE(2, 12)
AVX512_F64_TILE(1, 16)
/* f64 jobs that read op(B) in place stored along k have two `wide` tiles of eight columns (the
 * f32 ones' width, below): 16 x 8, and 24 x 8 (the kernel above) where it pads less (17-24, 65-72
 * or 113-120 rows). Reading eight columns at once keeps op(B)'s streams within an L1 set's ways
 * (the tiles of 12 and 16 columns above would not); gemm.c's sup_shape says what they gained on a
 * Zen 5. */
AVX512_F64_TILE(2, 8)
/* In f32 the AVX-512 paths have 512-bit tiles for every job read in place (`wide` but the one
 * of a single vector: gemm.c, sup_shape), of at most eight columns, so that the columns of op(B)
 * read in place along k stay within a cache set's ways. On a Zen 4 thread, f32 GFLOP/s against
 * the AVX2 tile the choice took before (2026-11-26, best of 200 calls): 2048 x 8 x 1024 57 ->
 * 102 (32 x 8), 2048 x 3 x 1024 26 -> 59 (64 x 4), 64 x 64 x 16384 92 -> 96 (32 x 8). */
#define AVX512_F32_TILE(NV, NC)                                                                    \
    VEC_TILE(gck_kavx512_s32_##NV##x##NC, AVX512, 512, float, __m512, ps, NV, NC)
AVX512_F32_TILE(2, 8)
AVX512_F32_TILE(2, 6)
AVX512_F32_TILE(2, 4)
AVX512_F32_TILE(1, 8)
AVX512_F32_TILE(4, 4)
AVX512_F32_TILE(4, 2)

/* Lane tiles of sixteen columns for jobs of one to four rows that read op(B) in place (the avx2
 * path's lane tiles, ukernel_avx2.c, at twice the width). Stored along k (bs = 1), each column's
 * next sixteen steps, a line's worth (one line where the column is 64-byte aligned), are loaded as
 * they lie and transposed 16 x 16 in registers (unpack, shuffle, then two rounds of 128-bit lane
 * shuffles), so that op(B) is used as it is read and need not stay in L1 for a later block. A
 * one-row job is one chain of dependent FMAs: sixteen lanes per FMA instead of eight double what
 * the chain's latency allows (on a Zen 5 core the eight-lane tile ran f32 1 x 2048 x 1024 at 16.5
 * GFLOP/s, about 90% of that bound). Each element still takes one FMA per step, k ascending, into
 * its one accumulator. */
AVX512 static inline __attribute__((always_inline)) void transpose16(__m512 *r) {
    __m512 t[16], u[16];
    /* u[4h + g]: rows 4h..4h+3 at steps g, g+4, g+8, g+12 (one per 128-bit lane) */
    TRANSPOSE_IN_LANES(512, 16, r, t, u);
    /* t[8p + g] (steps g, g+8) and t[8p + 4 + g] (g+4, g+12): rows 8p..8p+7 */
#pragma GCC unroll 2
    for (int p = 0; p < 2; p++)
#pragma GCC unroll 4
        for (int g = 0; g < 4; g++) {
            t[8 * p + g] = _mm512_shuffle_f32x4(u[8 * p + g], u[8 * p + 4 + g], 0x88);
            t[8 * p + 4 + g] = _mm512_shuffle_f32x4(u[8 * p + g], u[8 * p + 4 + g], 0xDD);
        }
#pragma GCC unroll 4
    for (int g = 0; g < 4; g++) {
        r[g] = _mm512_shuffle_f32x4(t[g], t[8 + g], 0x88);
        r[g + 8] = _mm512_shuffle_f32x4(t[g], t[8 + g], 0xDD);
        r[g + 4] = _mm512_shuffle_f32x4(t[4 + g], t[12 + g], 0x88);
        r[g + 12] = _mm512_shuffle_f32x4(t[4 + g], t[12 + g], 0xDD);
    }
}

/* A lane tile's body, L columns of EL in the lanes of a 512-bit VT (ps or pd: SFX), TR their L x L
 * transposition, for A's steps `as` elements apart: as == R is a packed sliver (each block of L
 * steps one run of L R values, requested a line at a time PF_STEPS blocks ahead), otherwise A
 * read in place (each step's R values requested pf bytes on, or PF_STEPS steps ahead; the driver
 * gives lane tiles packed slivers only, the kernel type's contract any stride, and
 * kernels::lane_tiles_keep_the_kernel_contract holds them to both). op(B)'s columns are
 * requested LANE_PF elements ahead along k, and where they start off a line (lane_lead) a first
 * block masked to their first steps puts every later block on lines. The packed body's constant
 * stride frees the registers the sixteen steps' addresses took: f32 4 x 2048 x 1024 on a Zen 5
 * thread went from 67 to 76 GFLOP/s, 1 x 2048 x 1024 from 20 to 22 (measured beside another job,
 * the two builds alternated). */
#define LANE_PF 64
#define LANE_BODY(EL, VT, SFX, L, TR, R, as)                                                       \
    do {                                                                                           \
        int64_t k = 0;                                                                             \
        if (bs == 1) {                                                                             \
            int64_t lead = lane_lead(b, bj, sizeof(EL), 64, kc);                                   \
            if (lead) { /* a block from `lead` steps before 0, masked to the steps from 0 on */    \
                int64_t o = (L)-lead;                                                              \
                VT c[L];                                                                           \
                _Pragma("GCC unroll 16") for (int j = 0; j < (L); j++) c[j] =                      \
                    _mm512_maskz_loadu_##SFX((((1u << (L)) - 1) >> o) << o, b - o + j * bj);       \
                TR(c);                                                                             \
                _Pragma("GCC unroll 16") for (int q = 0; q < (L); q++) {                           \
                    if (q < o) continue;                                                           \
                    _Pragma("GCC unroll 4") for (int r = 0; r < (R); r++) acc[r] =                 \
                        _mm512_fmadd_##SFX(_mm512_set1_##SFX(a[(q - o) * (as) + r]), c[q],         \
                                           acc[r]);                                                \
                }                                                                                  \
                k = lead;                                                                          \
            }                                                                                      \
            for (; k + (L) <= kc; k += (L)) {                                                      \
                VT c[L];                                                                           \
                _Pragma("GCC unroll 16") for (int j = 0; j < (L); j++) {                           \
                    PREFETCH(b + k + j * bj, LANE_PF * (int64_t)sizeof(EL));                       \
                    c[j] = _mm512_loadu_##SFX(b + k + j * bj);                                     \
                }                                                                                  \
                if ((as) == (R))                                                                   \
                    _Pragma("GCC unroll 4") for (int l = 0; l < (R); l++)                          \
                        PREFETCH(a + k * (R) + (L)*l, PF_STEPS * 64 * (R));                        \
                TR(c);                                                                             \
                _Pragma("GCC unroll 16") for (int q = 0; q < (L); q++) {                           \
                    if ((as) != (R))                                                               \
                        PREFETCH(a + (k + q) * (as),                                               \
                                 pf ? pf : PF_STEPS * (as) * (int64_t)sizeof(EL));                 \
                    _Pragma("GCC unroll 4") for (int r = 0; r < (R); r++) acc[r] =                 \
                        _mm512_fmadd_##SFX(_mm512_set1_##SFX(a[(k + q) * (as) + r]), c[q],         \
                                           acc[r]);                                                \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
        for (; k < kc; k++) {                                                                      \
            const EL *bk = b + k * bs;                                                             \
            VT v;                                                                                  \
            if (bj == 1)                                                                           \
                v = _mm512_loadu_##SFX(bk);                                                        \
            else {                                                                                 \
                _Pragma("GCC unroll 16") for (int j = 0; j < (L); j++) buf[0][j] = bk[j * bj];     \
                v = _mm512_load_##SFX(buf[0]);                                                     \
            }                                                                                      \
            _Pragma("GCC unroll 4") for (int r = 0; r < (R); r++) acc[r] =                         \
                _mm512_fmadd_##SFX(_mm512_set1_##SFX(a[k * (as) + r]), v, acc[r]);                 \
        }                                                                                          \
    } while (0)
/* A lane tile of R rows and L columns of EL (ukernel_x86.h's LANE_W_IN and LANE_W_OUT take W in
 * and out) */
#define LANE512_TILE(NAME, EL, VT, SFX, L, TR, R)                                                  \
    AVX512 void NAME(int64_t kc, const EL *a, int64_t as, int64_t pf, const EL *b, int64_t bs,     \
                     int64_t bj, EL *w, int64_t ldw, bool first) {                                 \
        EL buf[R][L] __attribute__((aligned(64)));                                                 \
        VT acc[R];                                                                                 \
        LANE_W_IN(512, SFX, L, R, buf, acc, w, ldw, first);                                        \
        if (as == (R))                                                                             \
            LANE_BODY(EL, VT, SFX, L, TR, R, R);                                                   \
        else                                                                                       \
            LANE_BODY(EL, VT, SFX, L, TR, R, as);                                                  \
        LANE_W_OUT(512, SFX, L, R, buf, acc, w, ldw);                                              \
    }

LANE512_TILE(gck_kavx512_l32_4x16, float, __m512, ps, 16, transpose16, 4)
LANE512_TILE(gck_kavx512_l32_1x16, float, __m512, ps, 16, transpose16, 1)

/* f64 lane tiles of eight columns, 4 x 8 and 1 x 8, for jobs of one to four rows that read op(B)
 * in place stored along k: one 512-bit accumulator per row. Each column's next eight steps (a
 * line's worth) are loaded as they lie and transposed 8 x 8 in registers (unpack within 128-bit
 * lanes, then two rounds of `VSHUFF64X2`: 24 shuffles per 64 multiply-adds of a row). Before them
 * such a job ran on the AVX2 8 x 6 tile, seven of its eight rows padding at M = 1. Each element
 * still takes one FMA per step, k ascending, into its one accumulator. Tiles of sixteen columns
 * (two accumulators per row, two chains of FMAs in a one-row job) were tried on a Zen 5 core and
 * not kept: f64 1 x 2048 x 1024 ran 10.4-11.1 GFLOP/s on them against 12.7-14.3 on these, 4 x 2048
 * x 1024 30-31 against 40-51 (sixteen streams of op(B) a leading dimension apart), and in L2 (1 x
 * 64 x 1024) both ran 11.5-11.7. */
AVX512 static inline __attribute__((always_inline)) void transpose8d(__m512d *r) {
    __m512d t[8], u[8];
    /* t[2i]: columns 2i, 2i+1 at the even steps; t[2i+1]: at the odd ones */
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm512_unpacklo_pd(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_pd(r[2 * i], r[2 * i + 1]);
    }
    /* u[4h + e]: columns 4h..4h+3 at steps s and s + 4, s = 0, 2, 1, 3 for e = 0..3 */
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
        u[4 * h] = _mm512_shuffle_f64x2(t[4 * h], t[4 * h + 2], 0x88);
        u[4 * h + 1] = _mm512_shuffle_f64x2(t[4 * h], t[4 * h + 2], 0xDD);
        u[4 * h + 2] = _mm512_shuffle_f64x2(t[4 * h + 1], t[4 * h + 3], 0x88);
        u[4 * h + 3] = _mm512_shuffle_f64x2(t[4 * h + 1], t[4 * h + 3], 0xDD);
    }
    static const int step[4] = {0, 2, 1, 3};
#pragma GCC unroll 4
    for (int e = 0; e < 4; e++) {
        r[step[e]] = _mm512_shuffle_f64x2(u[e], u[4 + e], 0x88);
        r[step[e] + 4] = _mm512_shuffle_f64x2(u[e], u[4 + e], 0xDD);
    }
}

LANE512_TILE(gck_kavx512_l64_4x8, double, __m512d, pd, 8, transpose8d, 4)
LANE512_TILE(gck_kavx512_l64_1x8, double, __m512d, pd, 8, transpose8d, 1)

AVX512 void gck_kavx512_f32(int64_t kc, const float *a, const float *b, float *w, int64_t ldw,
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

AVX512 void gck_kavx512_f64(int64_t kc, const double *a, const double *b, double *w, int64_t ldw,
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

/* ---- f16 x f16 in f16 without VFMADDPH: the emulation, 16 lanes at a time --------------- */

/* fma16_avx2's arithmetic (ukernel_avx2.c) on 512-bit vectors, the rounding to odd under a mask;
 * the conversions are AVX-512F's VCVTPS2PH and VCVTPH2PS */
#define AVX512F16C __attribute__((target("avx512f,f16c")))

AVX512F16C static inline __attribute__((always_inline)) __m512 fma16_avx512(__m512 a, __m512 b,
                                                                            __m512 c) {
    __m512 s, e;
    FMA16_SUM(512, a, b, c, s, e);
    __mmask16 inexact = _mm512_cmp_ps_mask(e, _mm512_setzero_ps(), _CMP_NEQ_OQ);
    __m512i si = _mm512_castps_si512(s);
    __m512i below = _mm512_srai_epi32(_mm512_xor_si512(_mm512_castps_si512(e), si), 31);
    __m512i r = _mm512_mask_add_epi32(si, inexact, si, below);
    r = _mm512_mask_or_epi32(r, inexact, r, _mm512_set1_epi32(1));
    return _mm512_cvtph_ps(_mm512_cvtps_ph(_mm512_castsi512_ps(r), _MM_FROUND_TO_NEAREST_INT));
}

H16_TILE(gck_kavx512_h16, AVX512F16C, 512, __m512, __m256i, _mm256_loadu_si256, fma16_avx512,
         A5_NRH)

const gck_kfma16_fn gck_kfma16_avx512 = gck_kavx512_h16_lane;

// clang-format off
const gck_kpath_ops gck_kpath_avx512_ops = {A5_OPS, A5_H16};
// clang-format on

#endif
