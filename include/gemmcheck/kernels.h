/* gemmcheck — its own mixed-precision GEMM (kernels/).
 *
 *   D = alpha * op(A) * op(B) + beta * C
 *
 * for every combination of f16, bf16, f32 and f64 for A, B, C and D, computed in f32 or f64 (the
 * products of f16 and bf16 inputs are exact in f32), and f16 x f16 computed in f16 (the
 * accumulation of cuBLAS's CUBLAS_COMPUTE_16F, with alpha and beta in f32), column- or
 * row-major, with transposes, leading dimensions, strided batches, and D in place of C or
 * separate: the operation a gck_case describes (gemmcheck/case.h).
 *
 * BLAS semantics: beta = 0 does not read C, alpha = 0 or K = 0 does not read A and B, M or N = 0
 * returns at once. Invalid arguments are refused before anything is read or written, with a code
 * naming the argument (gck_gemm_arg).
 *
 * The arithmetic is declared (docs/KERNELS.md, gck_gemm_model): each element of D is one
 * accumulator in the compute format, the products of k = 0, 1, ..., K-1 added in that order with
 * a fused multiply-add (inputs first rounded to the compute format), then alpha times the sum,
 * plus beta times c, each rounded to the compute format, and one rounding to D's format. It is
 * gck_ref_gemm's model {compute, fma, round_inputs, scale_compute = compute} (f32 for compute f16:
 * each element of D is then one f16 accumulator), and every path
 * gives the same bits as that reference on every thread count, with two exceptions: bf16 x bf16
 * in f32 on the avx512bf16 path adds the products in pairs with VDPBF16PS (gck_gemm_pair_dot),
 * and on the amx path in tile steps of 32 with TDPBF16PS (gck_gemm_tile_dot).
 *
 * Thread-safe: calls may run concurrently from any number of threads. */
#ifndef GEMMCHECK_KERNELS_H
#define GEMMCHECK_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gemmcheck/case.h"
#include "gemmcheck/export.h"
#include "gemmcheck/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/** An instruction-set path. */
typedef enum gck_kpath {
    GCK_KPATH_AUTO = 0,   /**< per input class, the fastest supported path (gck_kpath_auto_for) */
    GCK_KPATH_PORTABLE,   /**< C only: the reference every other path is tested against */
    GCK_KPATH_AVX2,       /**< AVX2 and FMA */
    GCK_KPATH_AVX512,     /**< AVX-512F (F16C for f16 inputs) */
    GCK_KPATH_AVX512BF16, /**< AVX-512F with VDPBF16PS for bf16 x bf16 in f32 (DAZ, FTZ) */
    GCK_KPATH_AVX512FP16, /**< AVX-512F with VFMADDPH for f16 x f16 in f16 (the same bits as
                               every path: one rounding per step, subnormals kept) */
    GCK_KPATH_AMX,        /**< AVX-512F with Intel AMX tiles (TDPBF16PS) for bf16 x bf16 in f32
                               (DAZ, FTZ; gck_gemm_tile_dot) */
    GCK_KPATH_COUNT
} gck_kpath;

/** The path's name ("auto", "portable", ...). */
GCK_API const char *gck_kpath_name(gck_kpath p);
/** The path a name gives; false for an unknown name. */
GCK_API bool gck_kpath_parse(const char *name, gck_kpath *out);
/** Whether this build and this CPU can run the path; if not, why (into why). */
GCK_API bool gck_kpath_supported(gck_kpath p, char *why, size_t why_len);
/** Run now, once per process, every conformance probe the SIMD paths rely on (F16C, the bf16
 *  dot product, the AMX tile; each otherwise runs when first needed, tens of milliseconds on an
 *  AMX CPU). A process that forks workers calls it first: a forked child keeps the results,
 *  and the AMX tile permission the tile probe asks Linux for (gck_kernels_amx_default). */
GCK_API void gck_kernels_probe_all(void);
/** Settle this process's AMX tile state now, running no probe: where the CPU has AMX and
 *  gemmcheck asks for the tile state (gck_kernels_amx_default, GEMMCHECK_AMX), Linux's permission
 *  is asked for. An executed worker calls it before its backend opens, so that no backend code
 *  runs before the process's tile state is what it will stay; its probes run when first needed. */
GCK_API void gck_kernels_amx_settle(void);
/** The default path: the environment variable GEMMCHECK_KERNELS_PATH if it names a supported
 *  path, else the last supported one in the list above (the widest instruction set). */
GCK_API gck_kpath gck_kpath_auto(void);

/** Whether gemmcheck asks Linux for the AMX tile state (arch_prctl ARCH_REQ_XCOMP_PERM, which the
 *  amx path and the int8 GEMM's AMX kernel need) when GEMMCHECK_AMX is unset; GEMMCHECK_AMX=1
 *  asks and 0 never does, whatever this says. It asks by default. The permission is the whole
 *  process's and cannot be given back, so the gemmcheck tool's workers that call another library
 *  do not ask (that library then runs as in its users' programs, where AMX code that did not ask
 *  faults); call this before the first gck_gemm or gck_kpath_* call to choose for a process. */
GCK_API void gck_kernels_amx_default(bool ask);
/** Whether the environment variable GEMMCHECK_KERNELS_PATH is unset, or names a path this build
 *  and this CPU can run, and GEMMCHECK_AMX is unset, 0 or 1; if not, why (into why). The kernels
 * read any other value as unset (the automatic choice); the command line refuses one (exit 2), so
 * that a campaign meant for one path never quietly runs another. */
GCK_API bool gck_kpath_env_ok(char *why, size_t why_len);

/** The classes of inputs whose rates the automatic choice compares: f64 (f64 compute), f32 (f32
 *  compute, no 16-bit input), f16 (f32 compute, an f16 input), bf16 (bf16 x bf16 in f32: the pair
 *  dot product's inputs where a path has it; bf16 with another type counts as f32), f16-in-f16
 *  (f16 x f16 in f16: the f16 fused multiply-add, on VFMADDPH where a path has it; a path
 *  without it runs the portable path's emulation of the same bits, and has no rate). */
typedef enum gck_kclass {
    GCK_KCLASS_F64,
    GCK_KCLASS_F32,
    GCK_KCLASS_F16,
    GCK_KCLASS_BF16,
    GCK_KCLASS_F16F16,
    GCK_KCLASS_COUNT
} gck_kclass;

/** The class of the input types and compute type; its name ("f64", "f32", "f16", "bf16",
 *  "f16-in-f16"). */
GCK_API gck_kclass gck_kclass_of(gck_format type_a, gck_format type_b, gck_format compute);
GCK_API const char *gck_kclass_name(gck_kclass cls);
/** The types that stand for a class: both operands' type and the compute type (f64 x f64 in
 *  f64, f32 x f32 in f32, f16 x f16 in f32, bf16 x bf16 in f32, f16 x f16 in f16). */
GCK_API void gck_kclass_types(gck_kclass cls, gck_format *input, gck_format *compute);

/** How much faster than the default path another path must be, measured, to be chosen. */
#define GCK_KPATH_MARGIN 1.25

/** Path p's measured rate on the class, GFLOP/s on one thread: gck_gemm of a 192 x 192 x 384
 *  product of the class's types, the best of three after a warm-up, measured once per process
 *  for every supported SIMD path when the first automatic choice is made; 0 for a path the CPU
 *  cannot run, for the portable path (the reference, never chosen over a SIMD path), and on the
 *  f16-in-f16 class for a path without an f16 kernel (it would run the portable emulation). */
GCK_API double gck_kpath_rate(gck_kpath p, gck_kclass cls);
/** The choice on given rates (indexed by path): `dflt`, unless another path's rate is at least
 *  GCK_KPATH_MARGIN times dflt's (then the fastest). The margin keeps the choice the same
 *  from one process to the next where two paths are within measuring noise of each other. */
GCK_API gck_kpath gck_kpath_choose(const double rates[GCK_KPATH_COUNT], gck_kpath dflt);
/** The path GCK_KPATH_AUTO runs for these types: GEMMCHECK_KERNELS_PATH if it names a supported
 *  path (nothing measured), else gck_kpath_choose on the class's measured rates with
 *  gck_kpath_auto as the default. The same for every call of a process. */
GCK_API gck_kpath gck_kpath_auto_for(gck_format type_a, gck_format type_b, gck_format compute);
/** The same for a class of inputs (gck_kpath_auto_for of any types of the class). */
GCK_API gck_kpath gck_kpath_auto_class(gck_kclass cls);

/** Run options; a NULL pointer means the defaults. */
typedef struct gck_gemm_config {
    int threads;    /**< 0: one per online core */
    gck_kpath path; /**< GCK_KPATH_AUTO by default */
} gck_gemm_config;

/** What gck_gemm returns: success, or the argument that is invalid. */
typedef enum gck_gemm_arg {
    GCK_GEMM_OK = 0,
    GCK_GEMM_ARG_ORDER,
    GCK_GEMM_ARG_TRANSA,
    GCK_GEMM_ARG_TRANSB,
    GCK_GEMM_ARG_M,
    GCK_GEMM_ARG_N,
    GCK_GEMM_ARG_K,
    GCK_GEMM_ARG_ALPHA,
    GCK_GEMM_ARG_BETA,
    GCK_GEMM_ARG_A,
    GCK_GEMM_ARG_TYPE_A,
    GCK_GEMM_ARG_LDA,
    GCK_GEMM_ARG_STRIDE_A,
    GCK_GEMM_ARG_B,
    GCK_GEMM_ARG_TYPE_B,
    GCK_GEMM_ARG_LDB,
    GCK_GEMM_ARG_STRIDE_B,
    GCK_GEMM_ARG_C,
    GCK_GEMM_ARG_TYPE_C,
    GCK_GEMM_ARG_LDC,
    GCK_GEMM_ARG_STRIDE_C,
    GCK_GEMM_ARG_D,
    GCK_GEMM_ARG_TYPE_D,
    GCK_GEMM_ARG_LDD,
    GCK_GEMM_ARG_STRIDE_D,
    GCK_GEMM_ARG_BATCH,
    GCK_GEMM_ARG_COMPUTE,
    GCK_GEMM_ARG_SCALE_TYPE,
    GCK_GEMM_ARG_THREADS,
    GCK_GEMM_ARG_PATH,
    GCK_GEMM_OUT_OF_MEMORY, /**< not an argument: the packing buffers could not be allocated */
    GCK_GEMM_RESULT_COUNT
} gck_gemm_arg;

/** The name of an argument ("lda", "type_b", ...), or "ok" / "out of memory". */
GCK_API const char *gck_gemm_arg_name(gck_gemm_arg a);

/** D = alpha*op(A)*op(B) + beta*C for the case c (its types, layout, batch and compute type;
 *  compute must be f32 or f64, or f16 with f16 A and B; scale_type f32 or f64; with c->d_is_c,
 *  D must be C). Returns
 *  GCK_GEMM_OK, or the first invalid argument, in which case nothing was read or written; with
 *  msg, one line says why (e.g. "ldb (12) < K (17) for op(B)=N, column-major"). */
GCK_API gck_gemm_arg gck_gemm(const gck_case *c, const void *A, const void *B, const void *C,
                              void *D, const gck_gemm_config *cfg, char *msg, size_t msg_len);

/** The arithmetic model gck_gemm declares on a path (GCK_KPATH_AUTO: the one it resolves to) for
 *  the input types and the compute type (f32, f64, or f16 for f16 x f16): what the kernels
 *  backend's support-table rows state and the checker holds it to. It is the FMA model of this
 *  header's introduction, except for bf16 x bf16 in f32 on a path with the pair dot product
 *  (gck_gemm_pair_dot) or the tile dot product (gck_gemm_tile_dot), which also declares denormal
 *  inputs read as zero and denormal sums flushed. */
GCK_API gck_model gck_gemm_model(gck_kpath path, gck_format type_a, gck_format type_b,
                                 gck_format compute);

/** Whether gck_gemm runs these types on the path's VDPBF16PS pair dot product (avx512bf16, bf16 x
 *  bf16, f32 compute): steps in pairs (2p, 2p+1) from k = 0, the odd step's product added to the
 *  element's accumulator first, then the even one's, each an FP32 fused multiply-add rounded to
 *  nearest even, denormal inputs read as zero, denormal results flushed to zero (tininess after
 *  rounding), an odd K padded with +0 * +0 (docs/KERNELS.md). */
GCK_API bool gck_gemm_pair_dot(gck_kpath path, gck_format type_a, gck_format type_b,
                               gck_format compute);

/** Whether gck_gemm runs these types on the path's AMX tile dot product (amx, bf16 x bf16, f32
 *  compute), TDPBF16PS's documented arithmetic: K padded with zeros to a multiple of 32 and taken
 *  in steps of 32 from k = 0; in each step two FP32 chains start at +0, one taking the products of
 *  the step's even k in ascending order, the other those of its odd k, each an FP32 fused
 *  multiply-add rounded to nearest even; then s = even + odd and acc = acc + s, each rounded to
 *  nearest even; denormal inputs (the bf16 factors and acc) read as zero, denormal results
 *  flushed to a zero of their sign (docs/KERNELS.md). */
GCK_API bool gck_gemm_tile_dot(gck_kpath path, gck_format type_a, gck_format type_b,
                               gck_format compute);

/* ---- the int8 GEMM ---------------------------------------------------------------------------
 * The exact integer products of the oracles' sliced operands. */

/** The largest k gck_igemm_s8 takes: no partial sum of 65,536 products of int8 values (each of
 *  magnitude at most 2^14, and (a + 128)·b at most 255·128) can leave int32. */
#define GCK_IGEMM_MAX_K 65536

/** C = A·Bᵀ (+ C when accumulate) for int8 lines along k: row i of A at A + i·lda, column j of B
 *  at B + j·ldb, each k bytes; C row-major, C[i·ldc + j], int32. */
typedef struct gck_igemm_args {
    int64_t m, n, k;
    const int8_t *A;
    int64_t lda;
    const int8_t *B;
    int64_t ldb;
    int32_t *C;
    int64_t ldc;
    bool accumulate; /**< add to C (the caller keeps C + the sum within int32) */
    int threads;     /**< 0: one per online core, while each has work enough */
    bool portable;   /**< the C loop even where AMX or VPDPBUSD runs (tests) */
} gck_igemm_args;

/** The product, exact: every partial sum is an integer within int32, so the bits do not depend
 *  on the order, the path or the threads. AMX tiles (TDPBSSD) where the CPU has AMX-INT8 and Linux
 *  grants the tile state, else VPDPBUSD (AVX512-VNNI) where the CPU has it, else a C loop. False,
 * nothing written, for k > GCK_IGEMM_MAX_K, a negative size, a leading dimension below its line, or
 * out of memory for the packing (then C is partly written). */
GCK_API bool gck_igemm_s8(const gck_igemm_args *args);
/** The implementation gck_igemm_s8 runs here: "amx", "avx512vnni" or "portable" (always, with
 *  `portable`). */
GCK_API const char *gck_igemm_path(bool portable);
/** gck_igemm_s8's rate here, in GOPS (2 per multiply-add) on one thread: a 192 x 192 x 1024
 *  product, the best of three after a warm-up, measured once per process. */
GCK_API double gck_igemm_rate(void);

/** n stored values of type t (f16, bf16 or f32; one every ss elements) into dst as floats, as
 *  the kernels' packing converts them: exact, f16 through F16C where the CPU has it and the
 *  kernels' probe found it as documented (the same bits). */
GCK_API void gck_kfloats(float *dst, const void *src, gck_format t, int64_t ss, int64_t n);

#ifdef __cplusplus
}
#endif
#endif
