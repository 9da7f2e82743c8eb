/* The AMX path (ukernel_x86.h): the AVX-512 path, with bf16 x bf16 in f32 on Intel AMX tiles
 * (TDPBF16PS, AMX-BF16) instead of converting to f32; the instruction's one-element form for its
 * conformance probe, and Linux's permission to use the tile state. It ends in the path's table.
 *
 * A TDPBF16PS multiplies a 16 x 32 tile of bf16 (16 rows of 32 k) by a 32 x 16 one stored as 16
 * rows of 16 pairs (k, k+1), into a 16 x 16 tile of FP32. Its arithmetic per element, as the
 * Intel SDM's pseudocode (2023 on) states and this CPU's probe confirms, is gck_ktile_sdm: two
 * FP32 chains from +0 (even k, odd k), their sum, then that added to the accumulator.
 *
 * The micro-tile is 32 x 32 of W (4 accumulator tiles, 2 of op(B), 2 of op(A)). W is
 * column-major, so a tile of it is stored transposed: tile row c holds W's column c, 16 rows.
 * The tile operation is then C^T += op(B)^T op(A)^T: op(B)^T's rows are op(B)'s columns, each
 * with its k contiguous (packed a column at a time), and op(A)^T in pairs is the pair kernel's
 * sliver layout (a group of two k per row of A). */
#define _DEFAULT_SOURCE 1 /* syscall */
#include "ukernel_x86.h"

#if defined(__x86_64__) && defined(__GNUC__)

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#define AMX __attribute__((target("avx512f,amx-tile,amx-bf16")))

enum { AMX_MR = 32, AMX_NR = 32, AMX_ARCH_REQ_XCOMP_PERM = 0x1023, AMX_XFEATURE_XTILEDATA = 18 };

/* The tile configuration (palette 1): 64 bytes, as LDTILECFG reads them. */
typedef struct amx_cfg {
    uint8_t palette, start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_cfg;
_Static_assert(sizeof(amx_cfg) == 64, "LDTILECFG reads 64 bytes");

static pthread_once_t permit_once = PTHREAD_ONCE_INIT;
static const char *permit_why;
static _Atomic bool ask_by_default = true;

void gck_kernels_amx_default(bool ask) { ask_by_default = ask; }

static void permit(void) {
    /* The permission is the whole process's and cannot be given back: asked for in a worker
     * that calls another library, it would let that library's AMX code run where, in its
     * users' programs, it faults (a library that uses AMX without asking would go unseen). */
    const char *env = getenv("GEMMCHECK_AMX");
    bool ask = env && *env ? strcmp(env, "0") != 0 : ask_by_default;
    if (!ask) {
        permit_why = env && *env ? "the tile state (not asked for: GEMMCHECK_AMX=0)"
                                 : "the tile state (not asked for in a process that calls another "
                                   "library; GEMMCHECK_AMX=1 asks)";
        return;
    }
    /* the tile data state is off for a Linux process until asked for (Linux 5.16 on) */
    if (syscall(SYS_arch_prctl, AMX_ARCH_REQ_XCOMP_PERM, AMX_XFEATURE_XTILEDATA) != 0)
        permit_why = errno == EINVAL || errno == ENOSYS
                         ? "the tile state from Linux (arch_prctl ARCH_REQ_XCOMP_PERM unknown)"
                         : "the tile state from Linux (arch_prctl ARCH_REQ_XCOMP_PERM refused)";
}

bool gck_kamx_permit(const char **why) {
    pthread_once(&permit_once, permit);
    *why = permit_why;
    return !permit_why;
}

/* All eight tiles 16 rows of 64 bytes. Loaded at every call: the configuration is the thread's
 * and other code (the probe below, a library using AMX in the same thread) may change it. */
static const amx_cfg full_cfg = {
    .palette = 1,
    .colsb = {64, 64, 64, 64, 64, 64, 64, 64},
    .rows = {16, 16, 16, 16, 16, 16, 16, 16},
};

#define AMXT __attribute__((target("avx512f,amx-tile")))

/* The configuration, and the four accumulator tiles from a 32 x 32 block of 4-byte elements at p
 * whose rows are `stride` bytes apart (tile 2r + c: its rows 16r to 16r + 15, its elements 16c to
 * 16c + 15), or from zero. */
AMXT static inline __attribute__((always_inline)) void acc_begin(char *p, size_t stride,
                                                                 bool zero) {
    _tile_loadconfig(&full_cfg);
    if (zero) {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
        return;
    }
    _tile_loadd(0, p, stride);
    _tile_loadd(1, p + 64, stride);
    _tile_loadd(2, p + 16 * stride, stride);
    _tile_loadd(3, p + 16 * stride + 64, stride);
}

AMXT static inline __attribute__((always_inline)) void acc_end(char *p, size_t stride) {
    _tile_stored(0, p, stride);
    _tile_stored(1, p + 64, stride);
    _tile_stored(2, p + 16 * stride, stride);
    _tile_stored(3, p + 16 * stride + 64, stride);
}

/* kp pairs (a multiple of 16): a holds groups of AMX_MR pairs, b the tile's 32 columns of 2*kp
 * values each. Tiles 0-3: W's columns 0-15 and 16-31 (c) by rows 0-15 and 16-31 (r), 2c + r;
 * 4-5: op(B)'s columns 0-15, 16-31; 6-7: op(A)'s rows 0-15, 16-31 as pairs. */
AMX static void amx_bf16tile(int64_t kp, const uint16_t *a, const uint16_t *b, float *w,
                             int64_t ldw, bool first) {
    size_t sw = (size_t)ldw * sizeof(float), sb = (size_t)(2 * kp) * sizeof(uint16_t),
           sa = AMX_MR * 2 * sizeof(uint16_t);
    acc_begin((char *)w, sw, first);
    const uint16_t *b1 = b + 16 * 2 * kp;
    for (int64_t g = 0; g < kp / 16; g++) {
        const uint16_t *ag = a + g * 16 * AMX_MR * 2;
        _tile_loadd(4, b + g * GCK_AMX_KSTEP, sb);
        _tile_loadd(6, ag, sa);
        _tile_loadd(7, ag + 32, sa);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_loadd(5, b1 + g * GCK_AMX_KSTEP, sb);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    acc_end((char *)w, sw);
}

/* One element: a 1 x 1 accumulator, a row of 32 bf16 and a column of 16 pairs. */
static const amx_cfg one_cfg = {
    .palette = 1,
    .colsb = {4, 64, 4},
    .rows = {1, 1, 16},
};

AMX static float tile_hw(float acc, const uint16_t a[GCK_AMX_KSTEP],
                         const uint16_t b[GCK_AMX_KSTEP]) {
    float c[1] = {acc};
    _tile_loadconfig(&one_cfg);
    _tile_loadd(0, c, sizeof c);
    _tile_loadd(1, a, GCK_AMX_KSTEP * sizeof(uint16_t));
    _tile_loadd(2, b, 2 * sizeof(uint16_t));
    _tile_dpbf16ps(0, 1, 2);
    _tile_stored(0, c, sizeof c);
    return c[0];
}

const gck_ktile_fn gck_ktile_hw = tile_hw;

/* ---- int8: TDPBSSD for the exact int8 GEMM (igemm.c) ---------------------------------------- */

#define AMXI __attribute__((target("avx512f,amx-tile,amx-int8")))

bool gck_kamx_int8(void) {
    const char *why;
    __builtin_cpu_init();
    return __builtin_cpu_supports("amx-tile") && __builtin_cpu_supports("amx-int8") &&
           gck_kamx_permit(&why);
}

/* Tiles 0-3: C's rows 0-15 / 16-31 by columns 0-15 / 16-31 (2r + c); 4-5: A's rows 0-15, 16-31,
 * 64 bytes of k each; 6-7: B's columns 0-15, 16-31, a row per four k. TDPBSSD adds, to each int32
 * of C, the products of signed bytes four at a time: exact integers, within int32 (the caller's
 * k bound), so the order does not matter. */
AMXI void gck_kamx_i8_tile(int64_t steps, const int8_t *a, int64_t sa, const int8_t *b, int64_t sb,
                           int32_t *c, int64_t ldc, bool add) {
    size_t sc = (size_t)ldc * sizeof(int32_t);
    acc_begin((char *)c, sc, !add);
    const int8_t *a1 = a + 16 * sa;
    for (int64_t s = 0; s < steps; s++) {
        const int8_t *bs = b + s * 16 * sb;
        _tile_loadd(4, a + s * 64, (size_t)sa);
        _tile_loadd(6, bs, (size_t)sb);
        _tile_loadd(7, bs + 64, (size_t)sb);
        _tile_dpbssd(0, 4, 6);
        _tile_dpbssd(1, 4, 7);
        _tile_loadd(5, a1 + s * 64, (size_t)sa);
        _tile_dpbssd(2, 5, 6);
        _tile_dpbssd(3, 5, 7);
    }
    acc_end((char *)c, sc);
}

// clang-format off
const gck_kpath_ops gck_kpath_amx_ops = {A5_OPS, A5_H16, .mrbf = AMX_MR, .nrbf = AMX_NR,
                                         .bf16dot = amx_bf16tile, .bf16tile = true};
// clang-format on

#endif
