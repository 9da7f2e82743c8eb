/* gemmcheck's int8 GEMM (gemmcheck/kernels.h, gck_igemm_s8): C = A·Bᵀ of int8 lines along k,
 * exact in int32. On AVX512-VNNI, VPDPBUSD multiplies unsigned by signed bytes and adds groups of
 * four products to int32 lanes: A is read as a + 128 (unsigned), and 128·Σ_k b, each column's
 * sum, is taken off after; every product and partial sum is an integer below 2^31 in magnitude,
 * so the result is the exact sum in any order (no rounding anywhere), the same bits as the
 * portable loop. Blocking as BLIS's (Low et al., ACM TOMS 43(2), 2016): a KC x NC panel of B and an
 * MC x KC block of A packed, the 6 x 64 micro-tile in 24 zmm accumulators, the correction and
 * the store of a whole tile in vector registers (C is row-major, a tile's row 64 contiguous
 * int32). On AMX-INT8, TDPBSSD (signed by signed bytes, so no offset) on the same packed B, A
 * copied a row at a time, a 32 x 32 tile of C in four accumulator tiles (ukernel_amx.c). */
#define _DEFAULT_SOURCE 1
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gemmcheck/kernels.h"
#include "kernels_internal.h"
#include "parallel.h"

#define IG_MR 6
#define IG_NR 64
#ifndef IG_KC      /* the blocks may be given at compile time, for tuning runs */
#define IG_KC 2048 /* bytes of k per packed block (a multiple of 4) */
#define IG_MC 48   /* rows of A per packed block (a multiple of IG_MR) */
#define IG_NC 1024 /* columns of B per packed panel (a multiple of IG_NR) */
#endif
#define AMX_MR 32  /* rows and columns of the AMX kernel's tile of C */
#define AMX_MC 128 /* rows of A per packed block on AMX (a multiple of AMX_MR) */

/* ---- the portable loop ---------------------------------------------------------------------- */

static void portable_cols(const gck_igemm_args *g, int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; j++)
        for (int64_t i = 0; i < g->m; i++) {
            const int8_t *a = g->A + i * g->lda, *b = g->B + j * g->ldb;
            int32_t s = 0;
            for (int64_t k = 0; k < g->k; k++) s += (int32_t)a[k] * (int32_t)b[k];
            int32_t *c = &g->C[i * g->ldc + j];
            *c = g->accumulate ? *c + s : s;
        }
}

/* ---- AVX512-VNNI ---------------------------------------------------------------------------- */

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define VNNI __attribute__((target("avx512f,avx512bw,avx512vnni")))

/* VPDPBUSD written as an instruction with its accumulator tied: through the intrinsic, GCC 12
 * copies each accumulator to a fresh register and back and spills it to the stack on every step
 * (137-163 GOPS at 2048³ on one Zen 4 core, 35% of the peak). */
#define DPBUSD(acc, a, b) __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b))

/* Sixteen rows of sixteen 32-bit words transposed in place: r[i] word j becomes r[j] word i.
 * Words interleaved in pairs, then in fours (within each 128-bit lane), then the lanes moved. */
VNNI static inline void transpose16(__m512i r[16]) {
    __m512i t[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) { /* r[4i + c] lane L: column 4L + c of rows 4i .. 4i+3 */
        r[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        r[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        r[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        r[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    for (int c = 0; c < 4; c++) {
        __m512i a = _mm512_shuffle_i32x4(r[c], r[4 + c], 0x88),
                b = _mm512_shuffle_i32x4(r[c], r[4 + c], 0xdd),
                d = _mm512_shuffle_i32x4(r[8 + c], r[12 + c], 0x88),
                e = _mm512_shuffle_i32x4(r[8 + c], r[12 + c], 0xdd);
        t[c] = _mm512_shuffle_i32x4(a, d, 0x88);
        t[4 + c] = _mm512_shuffle_i32x4(b, e, 0x88);
        t[8 + c] = _mm512_shuffle_i32x4(a, d, 0xdd);
        t[12 + c] = _mm512_shuffle_i32x4(b, e, 0xdd);
    }
    for (int i = 0; i < 16; i++) r[i] = t[i];
}

/* The bytes [from, from + 64) of a line of `len` bytes, zero past its end (masked: nothing past
 * the end is read). */
VNNI static inline __m512i load_part(const int8_t *line, int64_t from, int64_t len) {
    int64_t left = len - from;
    if (left >= 64) return _mm512_loadu_si512(line + from);
    return _mm512_maskz_loadu_epi8(left <= 0 ? 0 : (__mmask64)(~0ull >> (64 - left)), line + from);
}

/* B's columns j0 .. j0+nc-1, k from p0, kc bytes (padded with 0 to kq groups of 4), as panels of
 * IG_NR columns: [panel][k/4][column][4 bytes]; sum[j] = Σ_k b (the columns' sums over the block).
 * Sixteen columns by sixteen groups of four bytes at a time, one transpose of 32-bit words; the
 * sums by VPDPBUSD with ones. */
VNNI static void pack_b(const gck_igemm_args *g, int64_t j0, int64_t nc, int64_t p0, int64_t kc,
                        int64_t kq, int8_t *pb, int32_t *sum) {
    const __m512i ones = _mm512_set1_epi8(1);
    for (int64_t jp = 0; jp < nc; jp += IG_NR) {
        int8_t *panel = pb + jp * kq * 4;
        for (int64_t jg = 0; jg < IG_NR; jg += 16) {
            __m512i s = _mm512_setzero_si512();
            for (int64_t q0 = 0; q0 < kq; q0 += 16) {
                __m512i r[16];
                for (int64_t j = 0; j < 16; j++) {
                    int64_t col = jp + jg + j;
                    r[j] = col < nc ? load_part(g->B + (j0 + col) * g->ldb + p0, q0 * 4, kc)
                                    : _mm512_setzero_si512();
                }
                transpose16(r);
                int64_t qn = kq - q0 < 16 ? kq - q0 : 16;
                for (int64_t q = 0; q < qn; q++) {
                    _mm512_storeu_si512(panel + ((q0 + q) * IG_NR + jg) * 4, r[q]);
                    DPBUSD(s, ones, r[q]);
                }
            }
            _mm512_storeu_si512(sum + jp + jg, s);
        }
    }
}

/* A's rows i0 .. i0+mc-1 from p0, as slivers of IG_MR rows: [sliver][k/4][row][4 bytes], each byte
 * a + 128 (padding: 128, the image of 0). Sixteen groups of four bytes of the six rows at a time:
 * word d of the 96 written is word d / 6 of row d % 6, taken from rows 2h and 2h + 1 by one
 * two-source permutation each (h = 0, 1, 2) and merged by masks. */
VNNI static void pack_a(const gck_igemm_args *g, int64_t i0, int64_t mc, int64_t p0, int64_t kc,
                        uint8_t *pa) {
    int64_t kq = (kc + 3) / 4;
    int32_t idx[IG_MR][16];
    __mmask16 from23[IG_MR] = {0}, from45[IG_MR] = {0};
    for (int o = 0; o < IG_MR; o++)
        for (int t = 0; t < 16; t++) {
            int d = 16 * o + t, q = d / IG_MR, r = d % IG_MR;
            idx[o][t] = q | (r & 1) << 4;
            from23[o] |= (__mmask16)((r >> 1 == 1) << t);
            from45[o] |= (__mmask16)((r >> 1 == 2) << t);
        }
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    for (int64_t ip = 0; ip < mc; ip += IG_MR) {
        uint8_t *sliver = pa + ip * kq * 4;
        for (int64_t q0 = 0; q0 < kq; q0 += 16) {
            __m512i r[IG_MR];
            for (int64_t j = 0; j < IG_MR; j++)
                r[j] = _mm512_xor_si512(
                    flip, ip + j < mc ? load_part(g->A + (i0 + ip + j) * g->lda + p0, q0 * 4, kc)
                                      : _mm512_setzero_si512());
            int64_t words = (kq - q0 < 16 ? kq - q0 : 16) * IG_MR;
            for (int o = 0; o * 16 < words; o++) {
                __m512i x = _mm512_loadu_si512(idx[o]);
                __m512i v = _mm512_permutex2var_epi32(r[0], x, r[1]);
                v = _mm512_mask_blend_epi32(from23[o], v, _mm512_permutex2var_epi32(r[2], x, r[3]));
                v = _mm512_mask_blend_epi32(from45[o], v, _mm512_permutex2var_epi32(r[4], x, r[5]));
                int left = (int)(words - o * 16);
                _mm512_mask_storeu_epi32(
                    sliver + (q0 * IG_MR + o * 16) * 4,
                    left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1), v);
            }
        }
    }
}

/* The 6 x 64 tile of kq groups of four k, less 128·Σb, into C (row-major at c, ldc), stored or
 * added. */
#define IG_ROW(R)  __m512i c##R##0, c##R##1, c##R##2, c##R##3
#define IG_ZERO(R) c##R##0 = c##R##1 = c##R##2 = c##R##3 = _mm512_setzero_si512()
#define IG_STEP(R)                                                                                 \
    do {                                                                                           \
        __m512i a_ = _mm512_castps_si512(                                                          \
            _mm512_broadcastss_ps(_mm_load_ss((const float *)(const void *)(pa + (R)*4))));        \
        DPBUSD(c##R##0, a_, b0);                                                                   \
        DPBUSD(c##R##1, a_, b1);                                                                   \
        DPBUSD(c##R##2, a_, b2);                                                                   \
        DPBUSD(c##R##3, a_, b3);                                                                   \
    } while (0)
#define IG_PUT1(R, X)                                                                              \
    do {                                                                                           \
        __m512i v_ = _mm512_sub_epi32(c##R##X, o##X);                                              \
        int32_t *p_ = c + (R)*ldc + 16 * (X);                                                      \
        if (add) v_ = _mm512_add_epi32(v_, _mm512_loadu_si512(p_));                                \
        _mm512_storeu_si512(p_, v_);                                                               \
    } while (0)
#define IG_PUT(R)                                                                                  \
    do {                                                                                           \
        IG_PUT1(R, 0);                                                                             \
        IG_PUT1(R, 1);                                                                             \
        IG_PUT1(R, 2);                                                                             \
        IG_PUT1(R, 3);                                                                             \
    } while (0)

VNNI static void tile(int64_t kq, const uint8_t *pa, const int8_t *pb, const int32_t *sum,
                      int32_t *c, int64_t ldc, bool add) {
    IG_ROW(0);
    IG_ROW(1);
    IG_ROW(2);
    IG_ROW(3);
    IG_ROW(4);
    IG_ROW(5);
    IG_ZERO(0);
    IG_ZERO(1);
    IG_ZERO(2);
    IG_ZERO(3);
    IG_ZERO(4);
    IG_ZERO(5);
    for (int64_t q = 0; q < kq; q++, pa += IG_MR * 4, pb += IG_NR * 4) {
        __m512i b0 = _mm512_loadu_si512(pb), b1 = _mm512_loadu_si512(pb + 64),
                b2 = _mm512_loadu_si512(pb + 128), b3 = _mm512_loadu_si512(pb + 192);
        IG_STEP(0);
        IG_STEP(1);
        IG_STEP(2);
        IG_STEP(3);
        IG_STEP(4);
        IG_STEP(5);
    }
    __m512i o0 = _mm512_slli_epi32(_mm512_loadu_si512(sum), 7),
            o1 = _mm512_slli_epi32(_mm512_loadu_si512(sum + 16), 7),
            o2 = _mm512_slli_epi32(_mm512_loadu_si512(sum + 32), 7),
            o3 = _mm512_slli_epi32(_mm512_loadu_si512(sum + 48), 7);
    IG_PUT(0);
    IG_PUT(1);
    IG_PUT(2);
    IG_PUT(3);
    IG_PUT(4);
    IG_PUT(5);
}

typedef struct ig_buffers {
    int8_t *pb;
    uint8_t *pa;
    int32_t *sum;
} ig_buffers;

/* An edge tile computed into t (leading dimension ldt): its mr x nr part stored into C at
 * (i0, j0), or added. */
static void edge_into_c(const gck_igemm_args *g, const int32_t *t, int64_t ldt, int64_t i0,
                        int64_t mr, int64_t j0, int64_t nr, bool add) {
    for (int64_t r = 0; r < mr; r++)
        for (int64_t j = 0; j < nr; j++) {
            int32_t *c = &g->C[(i0 + r) * g->ldc + j0 + j];
            *c = add ? *c + t[r * ldt + j] : t[r * ldt + j];
        }
}

/* One tile at (i0, j0) of mr x nr: in place when whole, else through a buffer. */
static void one_tile(const gck_igemm_args *g, int64_t kq, const uint8_t *pa, const int8_t *pb,
                     const int32_t *sum, int64_t i0, int64_t mr, int64_t j0, int64_t nr, bool add) {
    if (mr == IG_MR && nr == IG_NR) {
        tile(kq, pa, pb, sum, g->C + i0 * g->ldc + j0, g->ldc, add);
        return;
    }
    int32_t t[IG_MR * IG_NR];
    tile(kq, pa, pb, sum, t, IG_NR, false);
    edge_into_c(g, t, IG_NR, i0, mr, j0, nr, add);
}

/* Columns [j0, j1) of C with the packed blocks in buf. */
static void vnni_cols(const gck_igemm_args *g, int64_t j0, int64_t j1, ig_buffers *buf) {
    for (int64_t jc = j0; jc < j1; jc += IG_NC) {
        int64_t nc = j1 - jc < IG_NC ? j1 - jc : IG_NC;
        for (int64_t pc = 0; pc < g->k; pc += IG_KC) {
            int64_t kc = g->k - pc < IG_KC ? g->k - pc : IG_KC, kq = (kc + 3) / 4;
            bool add = g->accumulate || pc > 0;
            pack_b(g, jc, nc, pc, kc, kq, buf->pb, buf->sum);
            for (int64_t ic = 0; ic < g->m; ic += IG_MC) {
                int64_t mc = g->m - ic < IG_MC ? g->m - ic : IG_MC;
                pack_a(g, ic, mc, pc, kc, buf->pa);
                for (int64_t jr = 0; jr < nc; jr += IG_NR)
                    for (int64_t ir = 0; ir < mc; ir += IG_MR)
                        one_tile(g, kq, buf->pa + ir * kq * 4, buf->pb + jr * kq * 4, buf->sum + jr,
                                 ic + ir, mc - ir < IG_MR ? mc - ir : IG_MR, jc + jr,
                                 nc - jr < IG_NR ? nc - jr : IG_NR, add);
            }
        }
    }
}

/* ---- AMX-INT8 -------------------------------------------------------------------------------- */

/* A's rows i0 .. i0+mc-1 from p0 as slivers of AMX_MR rows, each row kc bytes as stored then zeros
 * to ka (whole steps of 64); rows past mc zero. Signed: TDPBSSD multiplies signed by signed. */
static void amx_pack_a(const gck_igemm_args *g, int64_t i0, int64_t mc, int64_t p0, int64_t kc,
                       int64_t ka, int8_t *pa) {
    int64_t rows = (mc + AMX_MR - 1) / AMX_MR * AMX_MR;
    for (int64_t r = 0; r < rows; r++) {
        int8_t *dst = pa + r * ka;
        int64_t n = r < mc ? kc : 0;
        if (n) memcpy(dst, g->A + (i0 + r) * g->lda + p0, (size_t)n);
        memset(dst + n, 0, (size_t)(ka - n));
    }
}

/* Columns [j0, j1) of C on AMX tiles: B packed as for VPDPBUSD (its groups padded to whole steps
 * of 16), A a row at a time; tiles of 32 x 32, the edges through a buffer. */
static void amx_cols(const gck_igemm_args *g, int64_t j0, int64_t j1, ig_buffers *buf) {
    for (int64_t jc = j0; jc < j1; jc += IG_NC) {
        int64_t nc = j1 - jc < IG_NC ? j1 - jc : IG_NC;
        for (int64_t pc = 0; pc < g->k; pc += IG_KC) {
            int64_t kc = g->k - pc < IG_KC ? g->k - pc : IG_KC, ka = (kc + 63) / 64 * 64;
            bool add = g->accumulate || pc > 0;
            pack_b(g, jc, nc, pc, kc, ka / 4, buf->pb, buf->sum);
            for (int64_t ic = 0; ic < g->m; ic += AMX_MC) {
                int64_t mc = g->m - ic < AMX_MC ? g->m - ic : AMX_MC;
                amx_pack_a(g, ic, mc, pc, kc, ka, (int8_t *)buf->pa);
                for (int64_t jr = 0; jr < nc; jr += AMX_MR)
                    for (int64_t ir = 0; ir < mc; ir += AMX_MR) {
                        const int8_t *a = (const int8_t *)buf->pa + ir * ka,
                                     *b = buf->pb + jr / IG_NR * IG_NR * ka + jr % IG_NR * 4;
                        int64_t mr = mc - ir < AMX_MR ? mc - ir : AMX_MR,
                                nr = nc - jr < AMX_MR ? nc - jr : AMX_MR;
                        int32_t *c = g->C + (ic + ir) * g->ldc + jc + jr;
                        if (mr == AMX_MR && nr == AMX_MR) {
                            gck_kamx_i8_tile(ka / 64, a, ka, b, IG_NR * 4, c, g->ldc, add);
                            continue;
                        }
                        int32_t t[AMX_MR * AMX_MR];
                        gck_kamx_i8_tile(ka / 64, a, ka, b, IG_NR * 4, t, AMX_MR, false);
                        edge_into_c(g, t, AMX_MR, ic + ir, mr, jc + jr, nr, add);
                    }
            }
        }
    }
}

static bool vnni_ok(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vnni");
}
#else
static bool vnni_ok(void) { return false; }
static void vnni_cols(const gck_igemm_args *g, int64_t j0, int64_t j1, void *buf) {
    (void)buf;
    portable_cols(g, j0, j1);
}
#endif

/* ---- the driver ----------------------------------------------------------------------------- */

static const char *const ipath_names[GCK_IPATH_COUNT] = {"portable", "avx512vnni", "amx"};

bool gck_ipath_supported(gck_ipath p) {
    switch (p) {
    case GCK_IPATH_PORTABLE: return true;
    case GCK_IPATH_VNNI: return vnni_ok();
    case GCK_IPATH_AMX: return vnni_ok() && gck_kamx_int8();
    default: return false;
    }
}

/* The default: AMX tiles where Linux grants them, else VPDPBUSD, else the C loop. */
static gck_ipath default_ipath(bool portable) {
    if (portable) return GCK_IPATH_PORTABLE;
    return gck_ipath_supported(GCK_IPATH_AMX)    ? GCK_IPATH_AMX
           : gck_ipath_supported(GCK_IPATH_VNNI) ? GCK_IPATH_VNNI
                                                 : GCK_IPATH_PORTABLE;
}

const char *gck_ipath_name(gck_ipath p) {
    return (unsigned)p < GCK_IPATH_COUNT ? ipath_names[p] : "unknown";
}

const char *gck_igemm_path(bool portable) { return gck_ipath_name(default_ipath(portable)); }

typedef struct ig_ctx {
    const gck_igemm_args *g;
    gck_ipath path;
    bool failed;
} ig_ctx;

/* One thread's columns: packing buffers of its own. */
static void part(void *ctx, int p, int64_t lo, int64_t hi) {
    (void)p;
    ig_ctx *x = ctx;
    lo *= IG_NR, hi = hi * IG_NR < x->g->n ? hi * IG_NR : x->g->n;
    if (x->path == GCK_IPATH_PORTABLE) {
        portable_cols(x->g, lo, hi);
        return;
    }
#if defined(__x86_64__) && defined(__GNUC__)
    /* the float paths' cached packing buffers (fresh ones cost a page fault per 4 KiB page on
     * their first write, which made the rate's 192 x 192 x 1024 calibration run at a quarter
     * of its speed on a Zen 5 VM) */
    int64_t kq = (IG_KC + 3) / 4;
    kbufs *set = gck_kbufs_take();
    ig_buffers b = {gck_kbuf(set, KBUF_B, (size_t)(IG_NC * kq * 4)),
                    gck_kbuf(set, KBUF_A, (size_t)((IG_MC > AMX_MC ? IG_MC : AMX_MC) * kq * 4)),
                    gck_kbuf(set, KBUF_W, sizeof(int32_t) * IG_NC)};
    if (b.pb && b.pa && b.sum)
        (x->path == GCK_IPATH_AMX ? amx_cols : vnni_cols)(x->g, lo, hi, &b);
    else
        x->failed = true;
    gck_kbufs_give(set);
#endif
}

bool gck_igemm_s8(const gck_igemm_args *g) {
    return gck_igemm_s8_on(g, default_ipath(g && g->portable));
}

bool gck_igemm_s8_on(const gck_igemm_args *g, gck_ipath path) {
    if (!g || !gck_ipath_supported(path) || g->m < 0 || g->n < 0 || g->k < 0 ||
        g->k > GCK_IGEMM_MAX_K || (g->m > 0 && g->n > 0 && (!g->C || g->ldc < g->n)) ||
        (g->k > 0 && g->m > 0 && (!g->A || g->lda < g->k)) ||
        (g->k > 0 && g->n > 0 && (!g->B || g->ldb < g->k)))
        return false;
    if (g->m == 0 || g->n == 0) return true;
    if (g->k == 0) { /* the empty sum: 0 */
        for (int64_t i = 0; i < g->m && !g->accumulate; i++)
            memset(g->C + i * g->ldc, 0, sizeof(int32_t) * (size_t)g->n);
        return true;
    }
    ig_ctx x = {g, path, false};
    int64_t panels = (g->n + IG_NR - 1) / IG_NR;
    int parts = g->threads == 1 ? 1 : gck_parallel_parts(panels, g->m * g->k * IG_NR);
    if (g->threads > 1 && parts > g->threads) parts = g->threads;
    gck_parallel_for(parts, panels, &x, part);
    return !x.failed;
}

/* ---- the measured rate ---------------------------------------------------------------------- */

static double rate;
static pthread_once_t rate_once = PTHREAD_ONCE_INIT;

static bool rate_call(void *ctx) { return gck_igemm_s8(ctx); }

/* 192 x 192 x 1024 on one thread, the best of three after a warm-up (gck_kbest_rate). */
static void measure_rate(void) {
    enum { M = 192, N = 192, K = 1024 };
    int8_t *a = malloc((size_t)M * K), *b = malloc((size_t)N * K);
    int32_t *c = malloc(sizeof(int32_t) * M * N);
    if (a && b && c) {
        for (int64_t e = 0; e < (int64_t)M * K; e++)
            a[e] = (int8_t)(e * 37 % 251 - 125), b[e] = (int8_t)(e * 91 % 241 - 120);
        gck_igemm_args g = {M, N, K, a, K, b, K, c, N, false, 1, false};
        rate = gck_kbest_rate(rate_call, &g, 2.0 * M * N * K);
    }
    free(a), free(b), free(c);
}

double gck_igemm_rate(void) {
    pthread_once(&rate_once, measure_rate);
    return rate;
}
