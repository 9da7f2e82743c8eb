/* gemmcheck — the GEMM case model: one struct describes one GEMM call completely.
 *
 *   D = alpha * op(A) * op(B) + beta * C,   op(X) in {X, X^T}
 *
 * After op(), A is M x K, B is K x N, C and D are M x N. Each operand is stored in its own
 * order-independent layout described by the storage order and its leading dimension; batches
 * are strided (stride 0 on an input broadcasts one matrix to every batch member). */
#ifndef GEMMCHECK_CASE_H
#define GEMMCHECK_CASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gemmcheck/format.h"
#include "gemmcheck/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gck_order { GCK_COL_MAJOR = 0, GCK_ROW_MAJOR } gck_order;
typedef enum gck_op { GCK_OP_N = 0, GCK_OP_T } gck_op;
typedef enum gck_operand { GCK_A = 0, GCK_B, GCK_C, GCK_D } gck_operand;

/** One GEMM problem. Fill it with gck_case_init() and then set what differs. */
typedef struct gck_case {
    int64_t m, n, k;            /**< op(A) is m x k, op(B) is k x n, C and D are m x n */
    double alpha, beta;         /**< exact values of `scale_type` */
    gck_format scale_type;      /**< GCK_F32 or GCK_F64 */
    gck_order order;            /**< storage order shared by all four operands */
    gck_op transa, transb;      /**< op(A), op(B) */
    int64_t lda, ldb, ldc, ldd; /**< leading dimensions, in elements */
    bool d_is_c;                /**< D is C itself (BLAS, in place): needs type_d == type_c,
                                     ldd == ldc, stride_d == stride_c */
    int64_t batch;              /**< number of matrices, >= 1 */
    int64_t stride_a, stride_b, stride_c, stride_d; /**< element strides between batch members */
    gck_format type_a, type_b, type_c, type_d;      /**< element type of each operand */
    gck_format compute;                             /**< compute type the backend is asked to use */
} gck_case;

/** A column-major, non-transposed, single-batch, in-place f64 case of the given shape with
 *  tight leading dimensions, alpha = 1, beta = 0. */
GCK_API void gck_case_init(gck_case *c, int64_t m, int64_t n, int64_t k);

/** Check every field; on failure writes one line naming the offending field and its value,
 *  e.g. "ldb (12) < K (17) for op(B)=N, column-major", into msg (if msg_len > 0). */
GCK_API gck_status gck_case_validate(const gck_case *c, char *msg, size_t msg_len);

/** Rows and columns of the operand as stored (before op()). */
GCK_API void gck_case_stored_shape(const gck_case *c, gck_operand x, int64_t *rows, int64_t *cols);
/** Leading dimension, batch stride and element type of an operand (for D with d_is_c: C's). */
GCK_API int64_t gck_case_ld(const gck_case *c, gck_operand x);
/** The smallest valid leading dimension of an operand: its stored rows (column-major) or columns
 *  (row-major), and at least 1, as in BLAS. */
GCK_API int64_t gck_case_min_ld(const gck_case *c, gck_operand x);
GCK_API int64_t gck_case_stride(const gck_case *c, gck_operand x);
GCK_API gck_format gck_case_type(const gck_case *c, gck_operand x);
/** Element strides of the logical (post-op) matrix: element (r, s) of op(X) is at
 *  r * (*rs) + s * (*cs) from the start of the batch member. */
GCK_API void gck_case_op_strides(const gck_case *c, gck_operand x, int64_t *rs, int64_t *cs);
/** Elements spanned by one stored matrix (0 when it is empty). */
GCK_API int64_t gck_case_footprint(const gck_case *c, gck_operand x);
/** Elements spanned by all batch members of the operand (what a buffer must hold). */
GCK_API int64_t gck_case_extent(const gck_case *c, gck_operand x);

/** Whether the computation reads A and B (alpha != 0 and K > 0) and C (beta != 0). */
GCK_API bool gck_case_reads_ab(const gck_case *c);
GCK_API bool gck_case_reads_c(const gck_case *c);

/** One-line human-readable summary, e.g. "m=3 n=4 k=5 col N/T f16,f16,f32->f32 (f32) ...". */
GCK_API void gck_case_describe(const gck_case *c, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
