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
 * Every rounding is to nearest even in the named format with gradual underflow; results are
 * deterministic and bit-reproducible on every IEEE 754 machine. */
#ifndef GEMMCHECK_REFGEMM_H
#define GEMMCHECK_REFGEMM_H

#include <stdbool.h>
#include <stddef.h>

#include "gemmcheck/case.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The arithmetic model of a reference GEMM. */
typedef struct gck_ref_model {
    gck_format compute;       /**< accumulation format: f16, bf16, tf32, f32 or f64 */
    bool fma;                 /**< fused multiply-add into the accumulator */
    bool round_inputs;        /**< round A and B elements to `compute` before multiplying */
    gck_format scale_compute; /**< format of the alpha/beta epilogue: f32 or f64 */
} gck_ref_model;

/** The usual model for a compute type: no FMA, inputs rounded to the compute type, epilogue
 *  in f64 for f64 compute and in f32 otherwise (as cuBLAS's 32F scale type). */
gck_ref_model gck_ref_model_default(gck_format compute);

/** Run the reference GEMM of the model on the case's operands (layout as gck_oracle_mpfr).
 *  Returns GCK_EINVAL with a message for an invalid case or model. */
gck_status gck_ref_gemm(const gck_case *c, const gck_ref_model *model, const void *A, const void *B,
                        const void *C, void *D, char *msg, size_t msg_len);

/** One-line description of a model, e.g. "compute=f32 fma=no round_inputs=yes scale=f32". */
void gck_ref_model_describe(const gck_ref_model *model, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
