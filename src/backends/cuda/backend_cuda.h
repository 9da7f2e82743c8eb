/* cuBLAS and cuBLASLt backends: the host-side parts, exposed for unit tests (no device needed):
 * the support table from the cuBLAS type/compute tables, the type and compute mappings, and
 * the argument mapping from a gemmcheck case to a column-major cuBLAS call (internal: private to
 * src/backends/). */
#ifndef GEMMCHECK_BACKENDS_BACKEND_CUDA_H
#define GEMMCHECK_BACKENDS_BACKEND_CUDA_H

#include <cublasLt.h>
#include <cublas_v2.h>

#include "gemmcheck/backend.h"

/** The support rows of cublasGemmEx/cublasGemmStridedBatchedEx (lt = false) or of
 *  cublasLtMatmul (lt = true), with the cublasComputeType_t of each row in *computes. */
size_t gck_cuda_rows(bool lt, const gck_support_row **rows, const cublasComputeType_t **computes);

/** CUDA_R_16F, CUDA_R_16BF, CUDA_R_32F, CUDA_R_64F for the element types. */
cudaDataType gck_cuda_datatype(gck_format f);
/** The scale type cuBLAS uses with a compute type (CUDA_R_16F for 16F, 64F for 64F, else 32F). */
cudaDataType gck_cuda_scale_type(cublasComputeType_t ct);

/** One column-major GEMM call: C = alpha op(X) op(Y) + beta C, possibly strided-batched. A
 *  row-major case is mapped through C^T = op(B)^T op(A)^T: X is B's buffer, Y is A's, m and n
 *  swap, the transposes stay. */
typedef struct gck_cublas_args {
    cublasOperation_t opx, opy;
    int m, n, k;
    gck_operand x, y; /* which operands X and Y are (GCK_A/GCK_B) */
    int ldx, ldy, ldc, ldd;
    long long stride_x, stride_y, stride_c, stride_d;
    int batch;
} gck_cublas_args;

/** The largest power of two, at most 256, that divides a pointer's address: what cuBLASLt's
 *  heuristic is told of each operand (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES, whose
 *  default of 256 would let it pick kernels the fuzzer's offset pointers break). */
uint32_t gck_cuda_pointer_alignment(const void *p);

/** The mapping of a case that passed the row's promises (dimensions fit in int). */
gck_cublas_args gck_cublas_map(const gck_case *c);

#endif
