/* Sum_k |a_ik|·|b_kj| of every element of a large GEMM by one GEMM on |op(A)| and |op(B)| (f32
 * where every term fits it, from bf16 inputs where they are bf16 values or are rounded up to them
 * where that pays, else f64), rounded up rigorously, for the checker's bound (internal: private
 * to src/check/). */
#ifndef GEMMCHECK_CHECK_ABSPROD_H
#define GEMMCHECK_CHECK_ABSPROD_H

#include <stdbool.h>
#include <stdint.h>

#include "gemmcheck/case.h"

typedef struct gck_absprod gck_absprod;

/** From op(A) and op(B) as doubles along k, or as floats when `floats` (a: [member][i][k], b:
 *  [member][j][k]; a NaN or Inf counts as 0: the checker sums such lines itself). NULL when the
 *  product is too small for a GEMM to pay, out of memory, or when the GEMM's row sums contradict
 *  the exact ones (then a warning is printed and the checker sums every element itself). */
gck_absprod *gck_absprod_new(const gck_case *c, const void *a, const void *b, bool floats);
void gck_absprod_free(gck_absprod *p);

/** An upper bound of sum_k |a_ik||b_kj| for element (i, j) of batch member bi; Inf when the
 *  GEMM overflowed (the caller sums the element itself). */
double gck_absprod_bound(const gck_absprod *p, int64_t bi, int64_t i, int64_t j);

/** Whether every member's sums came from an f32 GEMM (slack K·2^-23 instead of K·2^-52), and
 *  whether on bf16 inputs (VDPBF16PS where the kernels have it; the same slack). */
bool gck_absprod_f32(const gck_absprod *p);
bool gck_absprod_bf16(const gck_absprod *p);

/** Whether some member's sums came from values rounded up to bf16 (the rounded road: see
 *  absprod.c). Then each bound T may lie up to (1 + 2^-7)^2 (1 + 3·K·2^-24) above the exact sum,
 *  and T·GCK_ABSPROD_BAND is still at most the exact sum: a verdict or certificate that T times
 *  the band would change is settled by the element's own sums. */
bool gck_absprod_rounded(const gck_absprod *p);

/** 1 / ((1 + 2^-7)^2 (1 + 3·2^-11)) = 0.9830..., rounded down (K <= 2^13 on that road). */
#define GCK_ABSPROD_BAND 0.98

/** For tests: how many have been built over the process, how many of them on the f32 road, how
 *  many of those with bf16 inputs, and how many on the rounded road. */
long gck_absprod_built(void);
long gck_absprod_built_f32(void);
long gck_absprod_built_bf16(void);
long gck_absprod_built_rounded(void);

/** For tests: every later GEMM's T^ has its element `element` (column-major, j·M + i; < 0: none)
 *  multiplied by `factor` before its row sums are compared with the exact ones. */
void gck_absprod_plant(int64_t element, double factor);

/** For tests: the rounded road taken where the kernels' bf16 GEMM is measurably faster than their
 *  f32 one and the product has at least 2^30 multiply-adds (mode < 0, the default), never (0) or
 *  wherever its conditions hold (> 0); returns the mode before. */
int gck_absprod_round_up(int mode);

#endif
