/* Internals of gemmcheck's GEMM (kernels/): blocking, packing and micro-kernels (internal: private
 * to kernels/). */
#ifndef GEMMCHECK_KERNELS_KERNELS_INTERNAL_H
#define GEMMCHECK_KERNELS_KERNELS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gemmcheck/kernels.h"

/** A micro-kernel: the MR x NR tile W (column-major, leading dimension ldw, compute type) takes
 *  the products of kc steps of the packed slivers a (MR values per step) and b (NR values per
 *  step), one fused multiply-add per element and step, k ascending; with `first` the tile starts
 *  at +0 instead of its stored values. */
typedef void (*gck_ukernel_f32)(int64_t kc, const float *a, const float *b, float *w, int64_t ldw,
                                bool first);
typedef void (*gck_ukernel_f64)(int64_t kc, const double *a, const double *b, double *w,
                                int64_t ldw, bool first);

/** The bf16 pair micro-kernel: kp groups of two steps; a and b hold, per group, MR (NR) pairs of
 *  bf16 bits (the even step low, the odd step high); each group is one VDPBF16PS per element:
 *  the odd step's product added first, then the even one's, each an FP32 fused multiply-add
 *  rounded to nearest even, denormal inputs read as zero, denormal results flushed to zero. */
typedef void (*gck_ukernel_bf16)(int64_t kp, const uint16_t *a, const uint16_t *b, float *w,
                                 int64_t ldw, bool first);

/** The f16-arithmetic micro-kernel (f16 x f16 in f16): a and b hold f16 bits (MR and NR values
 *  per step), the tile W holds f16 values as floats (exactly); each step is one f16 fused
 *  multiply-add per element, a*b + w rounded once to f16 (nearest even, subnormals kept),
 *  k ascending. */
typedef void (*gck_ukernel_h16)(int64_t kc, const uint16_t *a, const uint16_t *b, float *w,
                                int64_t ldw, bool first);

/** A micro-kernel that reads its operands where they are stored ("sup", as BLIS calls its
 *  kernels for skinny shapes): step k of A's MR rows at a + k*as (the rows contiguous), element
 *  (k, j) of B at b[k*bs + j*bj]; otherwise as above. Used when packing one operand costs more
 *  than it saves: it is already in the compute type and each of its values is used by few tiles.
 *  The same arithmetic, so the same bits. At each step the kernel requests from memory the MR
 *  rows' bytes pf bytes past that step's A values (0: a few steps ahead along k, as for a
 *  packed sliver; A read in place asks for the tiles below, which the next calls read). */
typedef void (*gck_skernel_f32)(int64_t kc, const float *a, int64_t as, int64_t pf, const float *b,
                                int64_t bs, int64_t bj, float *w, int64_t ldw, bool first);
typedef void (*gck_skernel_f64)(int64_t kc, const double *a, int64_t as, int64_t pf,
                                const double *b, int64_t bs, int64_t bj, double *w, int64_t ldw,
                                bool first);

/** Kernels on unpacked operands, with their tiles; the first is the path's default tile. A
 *  kernel with `lanes` holds columns in its vector lanes (rows in scalars): it serves jobs of at
 *  most MR rows only. A kernel with `packed_b` serves only jobs that read op(A) in place and
 *  pack op(B). A `wide` kernel (the AVX-512 paths' tiles of two or more 512-bit vectors of
 *  rows: in f32 for any job read in place, in f64 only for jobs that read op(B) in place stored
 *  along k) is counted at WIDE_WORK (f32) or WIDE_WORK64 (f64) of its padded work when a job's
 *  tile is chosen (gemm.c, sup_shape). */
enum { GCK_SUP_SHAPES = 14 };
typedef struct gck_sup_f32 {
    int mr, nr;
    gck_skernel_f32 fn; /**< NULL: no such shape */
    bool lanes, packed_b, wide;
} gck_sup_f32;
typedef struct gck_sup_f64 {
    int mr, nr;
    gck_skernel_f64 fn;
    bool lanes, packed_b, wide;
} gck_sup_f64;

/** A path's micro-kernels and their register tiles. */
typedef struct gck_kpath_ops {
    int mr32, nr32, mr64, nr64, mrbf, nrbf, mrh, nrh;
    gck_ukernel_f32 f32;
    gck_ukernel_f64 f64;
    gck_sup_f32 s32[GCK_SUP_SHAPES]; /**< none (s32[0].fn NULL): the path always packs */
    gck_sup_f64 s64[GCK_SUP_SHAPES];
    gck_ukernel_bf16 bf16dot; /**< NULL: bf16 inputs are converted to f32 like any other */
    /** f16 x f16 in f16 (VFMADDPH on avx512fp16, the C emulation on portable, the vector
     *  emulations on avx2 and the other AVX-512 paths); NULL (no table now): the path would run
     *  that class on the portable path's kernel (the same bits, gck_kfma16_step) */
    gck_ukernel_h16 h16;
    bool f16c; /**< f16 runs are converted with F16C while packing */
    /** bf16dot is the AMX tile kernel (gck_gemm_tile_dot's tree), not the pair kernel: kp is a
     *  multiple of 16 (k padded with zeros to whole steps of 32), a holds the groups of pairs as
     *  for the pair kernel, and b holds op(B) a column at a time, each column's 2*kp values
     *  contiguous (so column j of the tile starts at b + j*2*kp). */
    bool bf16tile;
} gck_kpath_ops;

/** The operations of a supported path (GCK_KPATH_AUTO not allowed). */
const gck_kpath_ops *gck_kpath_ops_of(gck_kpath p);

/** gck_gemm on cfg's path as given (gemm.c), GCK_KPATH_AUTO meaning the default path
 *  (gck_kpath_auto), without the floating-point environment's guard; the public gck_gemm
 *  (select.c) resolves GCK_KPATH_AUTO per class of inputs first. */
gck_gemm_arg gck_kgemm(const gck_case *c, const void *A, const void *B, const void *C, void *D,
                       const gck_gemm_config *cfg, char *msg, size_t len);
/** The rate of call(ctx), `ops` operations a call, in G per second: the best of three timed
 *  calls after a warm-up call (select.c); 0 when a call returns false. gck_igemm_rate goes
 *  through it; gck_kpath_rate times the paths of a class the same way, their calls interleaved. */
double gck_kbest_rate(bool (*call)(void *ctx), void *ctx, double ops);
/** gck_gemm_model and gck_gemm_pair_dot of a path as given (GCK_KPATH_AUTO: the default). */
gck_model gck_kgemm_model(gck_kpath path, gck_format ta, gck_format tb, gck_format compute);
bool gck_kgemm_pair_dot(gck_kpath path, gck_format ta, gck_format tb, gck_format compute);
bool gck_kgemm_tile_dot(gck_kpath path, gck_format ta, gck_format tb, gck_format compute);

/** The portable micro-kernels (C, fmaf/fma), and the x86-64 ones (ukernel_x86.c). */
extern const gck_kpath_ops gck_kpath_portable_ops;
extern const gck_kpath_ops gck_kpath_avx2_ops;
extern const gck_kpath_ops gck_kpath_avx512_ops;
extern const gck_kpath_ops gck_kpath_avx512bf16_ops;
extern const gck_kpath_ops gck_kpath_amx_ops;
extern const gck_kpath_ops gck_kpath_avx512fp16_ops;

/** Steps of k per AMX tile step (TDPBF16PS with 64-byte tile rows of bf16). */
enum { GCK_AMX_KSTEP = 32 };

/** Whether the CPU (and the OS) can run a SIMD path; if not, *missing names what it lacks. */
bool gck_kpath_cpu_has(gck_kpath p, const char **missing);

/** Runs of n stored values of type t (stride ss, elements) into the compute type (stride ds):
 *  exact, or one rounding to nearest even (f64 into f32); with f16c, f16 runs use F16C (the
 *  same bits). gck_kline_bits16 copies 16-bit patterns. */
void gck_kline_to_f32(float *dst, int64_t ds, const void *src, gck_format t, int64_t ss, int64_t n,
                      bool f16c);
void gck_kline_to_f64(double *dst, int64_t ds, const void *src, gck_format t, int64_t ss, int64_t n,
                      bool f16c);
void gck_kline_bits16(uint16_t *dst, int64_t ds, const void *src, int64_t ss, int64_t n);
/** n computed values into D's type t (stride ds), one rounding to nearest even each; with f16c,
 *  f32 into f16 uses F16C (the same bits). */
void gck_kline_from_f32(void *dst, gck_format t, int64_t ds, const float *src, int64_t n,
                        bool f16c);
void gck_kline_from_f64(void *dst, gck_format t, int64_t ds, const double *src, int64_t n,
                        bool f16c);
/** n f16 values to f32 with F16C (VCVTPH2PS, 8 at a time where both strides are 1); only where
 *  the CPU has F16C. */
void gck_kf16c_to_f32(float *dst, int64_t ds, const void *src, int64_t ss, int64_t n);
/** n floats to f16 with F16C (VCVTPS2PH, nearest even, 8 at a time where ds is 1): the epilogue's
 *  rounding into an f16 D, which in software took half the time of an f16-arithmetic 2048^3 on
 *  one core of the Intel Xeon with AMX; only where the CPU has F16C. */
void gck_kf16c_from_f32(void *dst, int64_t ds, const float *src, int64_t n);

/** The operations the conformance probes check (probe.c), each on one value or lane: one
 *  VDPBF16PS lane (acc plus the products of the even pair a0*b0 and the odd pair a1*b1, bf16
 *  bits), VCVTNEPS2BF16, VCVTPH2PS and VCVTPS2PH (round to nearest even). */
typedef float (*gck_kdot2_fn)(float acc, uint16_t a0, uint16_t b0, uint16_t a1, uint16_t b1);
typedef uint16_t (*gck_kcvt_bf16_fn)(float x);
typedef float (*gck_kf16_to_f32_fn)(uint16_t h);
typedef uint16_t (*gck_kf16_from_f32_fn)(float x);
/** One f16 fused multiply-add on bits: a*b + c rounded once to f16 (VFMADDPH's lane). */
typedef uint16_t (*gck_kfma16_fn)(uint16_t a, uint16_t b, uint16_t c);

/** One element of one TDPBF16PS step: acc and the 32 bf16 values of k = 0..31 of a row of A
 *  (a) and of a column of B (b). */
typedef float (*gck_ktile_fn)(float acc, const uint16_t a[GCK_AMX_KSTEP],
                              const uint16_t b[GCK_AMX_KSTEP]);

/** The instructions themselves (ukernel_x86.c); call only where the CPU has the set. NULL in a
 *  build without them. */
extern const gck_kdot2_fn gck_kdot2_hw;
extern const gck_kcvt_bf16_fn gck_kcvtbf16_hw;
extern const gck_kf16_to_f32_fn gck_kf16_to_f32_hw;
extern const gck_kf16_from_f32_fn gck_kf16_from_f32_hw;
/** VFMADDPH on one lane (ukernel_avx512fp16.c); only where the CPU has AVX512-FP16. */
extern const gck_kfma16_fn gck_kfma16_hw;
/** The vector emulations of the f16 fused multiply-add (gck_kfma16_step's arithmetic) on one
 *  lane: AVX2 with F16C (ukernel_avx2.c) and AVX-512F (ukernel_avx512.c), the steps of the
 *  avx2 path's f16-arithmetic kernel and of the AVX-512 paths' without VFMADDPH; only where the
 *  CPU has the set. */
extern const gck_kfma16_fn gck_kfma16_avx2;
extern const gck_kfma16_fn gck_kfma16_avx512;
/** TDPBF16PS on one element (ukernel_amx.c); only after gck_kamx_permit succeeded. */
extern const gck_ktile_fn gck_ktile_hw;

/** Asks Linux for the AMX tile data state (arch_prctl ARCH_REQ_XCOMP_PERM, once per process);
 *  false with why filled when refused or not possible (ukernel_amx.c). */
bool gck_kamx_permit(const char **why);

/** The int8 GEMM's implementations (igemm.c): the C loop, VPDPBUSD, AMX tiles (TDPBSSD). All
 *  exact, so all give the same bits; gck_igemm_s8 runs the last one supported (AMX where Linux
 *  grants it), or the C loop with `portable`. */
typedef enum gck_ipath {
    GCK_IPATH_PORTABLE,
    GCK_IPATH_VNNI,
    GCK_IPATH_AMX,
    GCK_IPATH_COUNT
} gck_ipath;
bool gck_ipath_supported(gck_ipath p);
const char *gck_ipath_name(gck_ipath p);
/** gck_igemm_s8 on one implementation (its `portable` ignored); false when the CPU lacks it. */
bool gck_igemm_s8_on(const gck_igemm_args *g, gck_ipath path);

/** Whether the CPU has AMX-TILE and AMX-INT8 and Linux grants the tile state (ukernel_amx.c); the
 *  int8 GEMM's AMX kernel also needs AVX512-VNNI, for the packing it shares with the VNNI kernel
 *  (igemm.c checks it). */
bool gck_kamx_int8(void);
/** C (32 x 32 int32, row-major at c, ldc; loaded first when add, else from zero) += the exact
 *  products of A (32 rows of signed bytes at a, sa bytes apart, 64 per step) and B (a row of 4
 *  bytes of k for each of 32 columns per four k, rows sb bytes apart: the VNNI kernel's packed
 *  panel), `steps` steps of 64 k (TDPBSSD); only where gck_kamx_int8. */
void gck_kamx_i8_tile(int64_t steps, const int8_t *a, int64_t sa, const int8_t *b, int64_t sb,
                      int32_t *c, int64_t ldc, bool add);

/** VDPBF16PS's documented lane (Intel SDM): the odd pair's product added first, then the even
 *  one's, each an FP32 fused multiply-add rounded to nearest even; denormal inputs (the bf16
 *  factors and the accumulator) read as zero, denormal results flushed to a zero of their sign,
 *  tininess after rounding; MXCSR ignored. The declared model of the avx512bf16 path. */
float gck_kdot2_sdm(float acc, uint16_t a0, uint16_t b0, uint16_t a1, uint16_t b1);

/** TDPBF16PS's documented element (Intel SDM, the pseudocode of 2023 on): two FP32 chains from
 *  +0, the products of the even k (0, 2, ..., 30) into one and those of the odd k into the
 *  other, each step an FP32 fused multiply-add rounded to nearest even; then s = even + odd and
 *  acc + s, each rounded to nearest even; denormal inputs (bf16 factors and acc) read as zero,
 *  denormal results flushed to a zero of their sign (tininess after rounding); MXCSR ignored.
 *  The declared model of the amx path (gck_gemm_tile_dot). */
float gck_ktile_sdm(float acc, const uint16_t a[GCK_AMX_KSTEP], const uint16_t b[GCK_AMX_KSTEP]);

/** The f16 fused multiply-add of the f16-arithmetic class, emulated (ukernel_portable.c): acc
 *  (an f16 value held as a float) plus the product of the f16 values a and b, rounded once to
 *  f16, nearest even, subnormals kept, overflow to infinity. The product is exact in f32; the
 *  sum is rounded to f32 by round-to-odd (TwoSum's error decides the last bit), and 24 >= 11 + 2
 *  bits make rounding that to f16 the one rounding of the exact value (Boldo and Melquiond,
 *  "Emulation of FMA and correctly rounded sums: proved algorithms using rounding to odd", IEEE
 *  TC 57(4), 2008). The declared model of every path on that class; gck_kfma16_sim is the same
 *  on bits. */
float gck_kfma16_step(uint16_t a, uint16_t b, float acc);
uint16_t gck_kfma16_sim(uint16_t a, uint16_t b, uint16_t c);

/** Conformance probes: crafted cases whose documented results the plausible alternatives
 *  change (pair order, one rounding or two, DAZ, FTZ, tininess, ties), then many random ones
 *  (VDPBF16PS), or every upper half with the lower halves at the rounding boundaries
 *  (conversions from f32) and every f16 (VCVTPH2PS). true when all match, else why names the
 *  first mismatch. */
bool gck_kprobe_dot2(gck_kdot2_fn f, char *why, size_t len);
bool gck_kprobe_tile(gck_ktile_fn f, char *why, size_t len);
bool gck_kprobe_cvtneps2bf16(gck_kcvt_bf16_fn f, char *why, size_t len);
bool gck_kprobe_f16c(gck_kf16_to_f32_fn to32, gck_kf16_from_f32_fn to16, char *why, size_t len);
/** VFMADDPH against gck_kfma16_sim: crafted cases (ties broken by a product's low bits, results
 *  among the subnormals and at the overflow threshold, signed zeros, exact cancellation), then
 *  random triples of finite values with c near -a*b. */
bool gck_kprobe_fma16(gck_kfma16_fn f, char *why, size_t len);

/** Cache blocking: rows of A per packed block (MC), steps of k per block (KC), columns of B per
 *  packed panel (NC, and the widest panel the driver may make to avoid a narrow last one,
 *  nc_max), from the cache sizes the machine reports, the bytes of the accumulator block (W:
 *  whole MC blocks of rows of a panel) and of the L1 data cache. */
typedef struct gck_blocking {
    int64_t mc, kc, nc, nc_max, w_bytes, l1, l1_ways;
} gck_blocking;

gck_blocking gck_kernels_blocking(int elem_bytes, int mr, int nr);

/** The steps of a block for a lane tile of mr rows (a job of at most mr rows reading op(B) in
 *  place): as many as keep the packed sliver of op(A), mr x kc values of elem_bytes, within half
 *  of L1, at least bk->kc and at most 8,192. */
int64_t gck_kernels_kc_lanes(const gck_blocking *bk, int64_t mr, int elem_bytes);

/** The steps of a block (at most kc, at least 4) over which a tile of few columns reads op(A) in
 *  place: col_bytes apart, window bytes of each column (the tile's rows and what it prefetches
 *  ahead) at a time; as many columns as keep each L1 set holding lines of no more than two thirds
 *  of its ways' worth of them (l1 bytes, `ways` ways of 64-byte lines). */
int64_t gck_kernels_kc_ways(int64_t kc, int64_t l1, int64_t ways, int64_t col_bytes,
                            int64_t window);

/** For tests: at most w_bytes of accumulator block and nc columns per panel, and l2_bytes of L2
 *  when choosing the tile of a job that reads op(A) in place (0: the machine's), so that small
 *  products cross row chunks and panels and take the tiles of large ones. Set it while no call
 *  runs. */
void gck_kernels_limit(int64_t w_bytes, int64_t nc, int64_t l2_bytes);

/** For tests: l1_bytes of L1 data cache for the blocking (0: the machine's), so that KC, taken
 *  from it, is small and products of small K cross it (the sanitizer build's tests, where each
 *  multiply-add of the reference evaluation costs tens of nanoseconds). Set it while no call
 *  runs. */
void gck_kernels_limit_l1(int64_t l1_bytes);

/** For tests: how many jobs (one batch member of one thread's share) so far read an operand in
 *  place with the kernels on unpacked operands, over all calls. */
long gck_kernels_sup_jobs(void);

/** For tests: how many of those jobs ran on a shape with the columns in its vector lanes (the
 *  tiles for jobs of a few rows), over all calls. */
long gck_kernels_lane_jobs(void);

/** For tests: how many of those jobs ran on shape `s` of a path's f32 (f32) or f64 table. */
long gck_kernels_shape_jobs(bool f32, int s);

/** For tests: how many blocks of rows and columns so far had their sums kept in D itself instead
 *  of W (D column-major in the compute type, alpha 1, C not read, whole tiles), over all calls. */
long gck_kernels_direct_blocks(void);

/** For tests: how many epilogues so far wrote D by rows (D's rows contiguous, its columns' lines
 *  crowding an L1 set), over all calls. */
long gck_kernels_rows_epilogues(void);

/* Packing buffers kept from one call to the next (kernels/gemm.c): a set taken from a shared
 * cache (NULL when out of memory), buffer `slot` of it grown to at least `bytes` (64-byte
 * aligned; NULL when out of memory), and the set given back (kept while the cache has room, freed
 * when the library is unloaded or the process exits). */
enum { KBUF_B, KBUF_A, KBUF_W, KBUF_TMP, KBUF_COUNT };
typedef struct kbufs kbufs;
kbufs *gck_kbufs_take(void);
void *gck_kbuf(kbufs *b, int slot, size_t bytes);
void gck_kbufs_give(kbufs *b);

#endif
