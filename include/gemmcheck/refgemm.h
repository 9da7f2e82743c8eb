/* gemmcheck — reference GEMMs with an explicit arithmetic model.
 *
 * For every output element the computation is, in this order (k ascending, sequential):
 *   acc = 0                                                   (compute type)
 *   for k = 0 .. K-1:
 *       a = op(A)(i,k), b = op(B)(k,j)   converted to the compute type first if round_inputs
 *       fma:  acc = round_c(a * b + acc)            (one rounding)
 *       else: acc = round_c(round_c(a * b) + acc)   (two roundings)
 *   t = round_s(alpha * acc)                                  (scale-compute type)
 *   if beta != 0: t = round_s(t + round_s(beta * c))
 *   D = round_out(t)
 * with the BLAS special cases: M or N = 0 writes nothing; alpha = 0 or K = 0 gives
 * D = round_out(round_s(beta * c)) without reading A and B; beta = 0 does not read C.
 *
 * That is the default evaluation order. The model's order fields select the others that
 * correct libraries use (docs/TOLERANCE.md): where alpha and beta enter (netlib's
 * beta*c first and (alpha*b)*a added into it; alpha on each product; alpha*(A*B + (beta/alpha)*C)),
 * how the k sum is grouped (blocks added into the result one at a time, pairwise, split into
 * parts as threads do), and zero-skipping as reference BLAS does it. Every order other than the
 * default does its alpha/beta arithmetic in the compute format (scale_compute must equal it).
 * Every rounding is to nearest even in the named format with gradual underflow; results are
 * deterministic and bit-reproducible on every IEEE 754 machine. A NaN result is written as the
 * quiet NaN with the sign bit clear and no payload: IEEE 754 leaves a NaN's sign and payload to
 * the implementation, and which of two NaNs an operation passes on depends on the order the
 * compiler gives its operands. */
#ifndef GEMMCHECK_REFGEMM_H
#define GEMMCHECK_REFGEMM_H

#include <stdbool.h>
#include <stddef.h>

#include "gemmcheck/case.h"
#include "gemmcheck/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Where alpha enters. */
typedef enum gck_ref_alpha {
    GCK_REF_ALPHA_ON_SUM = 0, /**< alpha times the sum (or each group's sum) of a*b */
    GCK_REF_ALPHA_ON_PRODUCT, /**< alpha * round(a*b) for each term */
    GCK_REF_ALPHA_ON_B,       /**< round(alpha*b) * a for each term (netlib) */
} gck_ref_alpha;

/** Where beta*c enters. */
typedef enum gck_ref_beta {
    GCK_REF_BETA_LAST = 0,   /**< round_s(alpha*S) + round_s(beta*c) */
    GCK_REF_BETA_FIRST,      /**< the accumulator starts at round(beta*c) (netlib, BLIS) */
    GCK_REF_BETA_OVER_ALPHA, /**< it starts at round(round(beta/alpha)*c); D = alpha*acc */
} gck_ref_beta;

/** How the k sum is grouped. */
typedef enum gck_ref_sum {
    GCK_REF_SUM_SEQUENTIAL = 0, /**< k ascending, every term into the accumulator */
    GCK_REF_SUM_BLOCKED,        /**< blocks of `group` terms summed from 0, each added in turn */
    GCK_REF_SUM_PAIRWISE,       /**< a balanced tree over the terms (leaves of `group` terms) */
    GCK_REF_SUM_SPLIT,          /**< `group` contiguous parts summed apart, then added in turn */
} gck_ref_sum;

/** Terms left out (as reference BLAS does: IF (B(L,J).NE.ZERO)). */
typedef enum gck_ref_skip {
    GCK_REF_SKIP_NONE = 0,
    GCK_REF_SKIP_ZERO_A, /**< terms whose op(A) element is zero */
    GCK_REF_SKIP_ZERO_B, /**< terms whose op(B) element is zero */
} gck_ref_skip;

/** The arithmetic model of a reference GEMM. */
typedef struct gck_ref_model {
    gck_format compute;       /**< accumulation format: f16, bf16, tf32, f32 or f64 */
    bool fma;                 /**< fused multiply-add into the accumulator */
    bool round_inputs;        /**< round A and B elements to `compute` before multiplying */
    gck_format scale_compute; /**< format of the alpha/beta epilogue: f32 or f64 */
    gck_ref_alpha alpha_at;   /**< default GCK_REF_ALPHA_ON_SUM */
    gck_ref_beta beta_at;     /**< default GCK_REF_BETA_LAST */
    gck_ref_sum sum;          /**< default GCK_REF_SUM_SEQUENTIAL */
    int group;                /**< block size, leaf size or part count (>= 1; 0 means 1) */
    gck_ref_skip skip;        /**< default GCK_REF_SKIP_NONE */
} gck_ref_model;

/** The usual model for a compute type: no FMA, inputs rounded to the compute type, epilogue
 *  in f64 for f64 compute and in f32 otherwise (as cuBLAS's 32F scale type). */
GCK_API gck_ref_model gck_ref_model_default(gck_format compute);

/** The declared model (gemmcheck/model.h) that covers this evaluation: its compute and epilogue
 *  formats, input rounding, scalar accumulation (one rounding per operation, fused or not), and
 *  the one order of alpha and beta it uses. What a backend that calls gck_ref_gemm with this
 *  model states in its support row. */
GCK_API gck_model gck_ref_model_declared(const gck_ref_model *model);

/** Run the reference GEMM of the model on the case's operands (layout as gck_oracle_mpfr).
 *  Returns GCK_EINVAL with a message for an invalid case or model. */
GCK_API gck_status gck_ref_gemm(const gck_case *c, const gck_ref_model *model, const void *A,
                                const void *B, const void *C, void *D, char *msg, size_t msg_len);

/** One-line description of a model, e.g. "compute=f32 fma=no round_inputs=yes scale=f32"
 *  (followed by the order fields that differ from the default). */
GCK_API void gck_ref_model_describe(const gck_ref_model *model, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
