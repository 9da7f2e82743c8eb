/* A cuBLAS for the fake device (tests/fake_cuda): cublasCreate takes GCK_FAKE_CUBLAS_HANDLE
 * bytes of device memory (default 4 MiB) for the handle's life, and every GEMM takes
 * GCK_FAKE_CUBLAS_SCRATCH bytes (default 8 MiB) for its own duration, as a library with a
 * workspace pool does; when one of these allocations fails, the GEMM does what
 * GCK_FAKE_CUDA_OOM says (fake_gemm.h). */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "fake_cuda.h"
#include "fake_gemm.h"

struct cublasContext {
    void *mem;
};
static bool poisoned;

cublasStatus_t cublasCreate(cublasHandle_t *h) {
    struct cublasContext *c = calloc(1, sizeof *c);
    if (!c) return CUBLAS_STATUS_ALLOC_FAILED;
    size_t bytes = fake_bytes("GCK_FAKE_CUBLAS_HANDLE", (size_t)4 << 20);
    if (bytes && cudaMalloc(&c->mem, bytes) != cudaSuccess) {
        cudaGetLastError();
        fake_log("cublasCreate: %zu bytes refused", bytes);
        free(c);
        return CUBLAS_STATUS_ALLOC_FAILED;
    }
    *h = c;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t h) {
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    cudaFree(h->mem);
    free(h);
    return CUBLAS_STATUS_SUCCESS;
}

const char *cublasGetStatusString(cublasStatus_t st) {
    switch (st) {
    case CUBLAS_STATUS_SUCCESS: return "the operation completed successfully";
    case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    default: return "unknown error";
    }
}

static cudaDataType scale_of(cublasComputeType_t ct) {
    return ct == CUBLAS_COMPUTE_16F   ? CUDA_R_16F
           : ct == CUBLAS_COMPUTE_64F ? CUDA_R_64F
                                      : CUDA_R_32F;
}

static cublasStatus_t gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const void *alpha, const void *A, cudaDataType at, int lda, long long sa,
                           const void *B, cudaDataType bt, int ldb, long long sb, const void *beta,
                           void *C, cudaDataType ct_, int ldc, long long sc, int batch,
                           cublasComputeType_t ct) {
    if (poisoned) return CUBLAS_STATUS_EXECUTION_FAILED;
    size_t bytes = fake_bytes("GCK_FAKE_CUBLAS_SCRATCH", (size_t)8 << 20);
    void *scratch = NULL;
    if (bytes && cudaMalloc(&scratch, bytes) != cudaSuccess) {
        cudaGetLastError();
        fake_log("gemm: %zu bytes of scratch refused", bytes);
        switch (fake_oom_mode()) {
        case FAKE_OOM_GARBAGE: return CUBLAS_STATUS_SUCCESS;
        case FAKE_OOM_POISON: poisoned = true; return CUBLAS_STATUS_EXECUTION_FAILED;
        case FAKE_OOM_FAULT: gck_fake_cuda_fault(); return CUBLAS_STATUS_EXECUTION_FAILED;
        case FAKE_OOM_ABORT: abort();
        default: return CUBLAS_STATUS_ALLOC_FAILED;
        }
    }
    fake_mat x = {at, A, lda, sa, ta != CUBLAS_OP_N}, y = {bt, B, ldb, sb, tb != CUBLAS_OP_N};
    fake_mat c = {ct_, C, ldc, sc, false};
    fake_gemm(m, n, k, fake_scalar(scale_of(ct), alpha), &x, &y, fake_scalar(scale_of(ct), beta),
              &c, &c, batch);
    cudaFree(scratch);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                            int n, int k, const void *alpha, const void *A, cudaDataType at,
                            int lda, const void *B, cudaDataType bt, int ldb, const void *beta,
                            void *C, cudaDataType ct_, int ldc, cublasComputeType_t ct,
                            cublasGemmAlgo_t algo) {
    (void)algo;
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    return gemm(ta, tb, m, n, k, alpha, A, at, lda, 0, B, bt, ldb, 0, beta, C, ct_, ldc, 0, 1, ct);
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta,
                                          cublasOperation_t tb, int m, int n, int k,
                                          const void *alpha, const void *A, cudaDataType at,
                                          int lda, long long sa, const void *B, cudaDataType bt,
                                          int ldb, long long sb, const void *beta, void *C,
                                          cudaDataType ct_, int ldc, long long sc, int batch,
                                          cublasComputeType_t ct, cublasGemmAlgo_t algo) {
    (void)algo;
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    return gemm(ta, tb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb, sb, beta, C, ct_, ldc, sc,
                batch, ct);
}
