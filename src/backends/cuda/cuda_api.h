/* The CUDA runtime, cuBLAS and cuBLASLt entry points gemmcheck uses, opened with dlopen on first
 * use: the binary does not link them, so it starts without paying for their relocation and runs
 * on machines without CUDA. Built only when the toolkit's headers were found.
 *
 * Where the libraries are looked for (docs/CUDA.md):
 *   GEMMCHECK_CUDA_LIBRARY_PATH set: only in its directories (a colon-separated list of absolute
 *     paths; an empty or relative entry is an error, never "the current directory");
 *   otherwise: the toolkit's library directory gemmcheck was built against, then the system's
 *     loader search by soname (ld.so.conf, LD_LIBRARY_PATH).
 * The sonames carry the major versions of the headers gemmcheck was compiled with (internal:
 * private to src/backends/). */
#ifndef GEMMCHECK_BACKENDS_CUDA_API_H
#define GEMMCHECK_BACKENDS_CUDA_API_H

#include <stdbool.h>
#include <stddef.h>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

/* The functions, per library. Some names are macros of the headers (cublasCreate is
 * cublasCreate_v2): the table's members and the looked-up symbols both take the expanded name. */
#define GCK_CUDART_FUNCS(X)                                                                        \
    X(cudaRuntimeGetVersion)                                                                       \
    X(cudaDriverGetVersion)                                                                        \
    X(cudaGetDeviceCount)                                                                          \
    X(cudaGetDeviceProperties)                                                                     \
    X(cudaGetErrorString)                                                                          \
    X(cudaGetErrorName)                                                                            \
    X(cudaGetLastError)                                                                            \
    X(cudaMemGetInfo)                                                                              \
    X(cudaMalloc)                                                                                  \
    X(cudaFree)                                                                                    \
    X(cudaMemcpy)                                                                                  \
    X(cudaDeviceSynchronize)
#define GCK_CUBLASLT_FUNCS(X)                                                                      \
    X(cublasLtGetVersion)                                                                          \
    X(cublasLtCreate)                                                                              \
    X(cublasLtDestroy)                                                                             \
    X(cublasLtMatmulDescCreate)                                                                    \
    X(cublasLtMatmulDescDestroy)                                                                   \
    X(cublasLtMatmulDescSetAttribute)                                                              \
    X(cublasLtMatrixLayoutCreate)                                                                  \
    X(cublasLtMatrixLayoutDestroy)                                                                 \
    X(cublasLtMatrixLayoutSetAttribute)                                                            \
    X(cublasLtMatmulPreferenceCreate)                                                              \
    X(cublasLtMatmulPreferenceDestroy)                                                             \
    X(cublasLtMatmulPreferenceSetAttribute)                                                        \
    X(cublasLtMatmulAlgoGetHeuristic)                                                              \
    X(cublasLtMatmul)
#define GCK_CUBLAS_FUNCS(X)                                                                        \
    X(cublasCreate)                                                                                \
    X(cublasDestroy)                                                                               \
    X(cublasGemmEx)                                                                                \
    X(cublasGemmStridedBatchedEx)                                                                  \
    X(cublasGetStatusString)

typedef struct gck_cuda_api {
#define GCK_CUDA_MEMBER(f) __typeof__(&f) f;
    GCK_CUDART_FUNCS(GCK_CUDA_MEMBER)
    GCK_CUBLASLT_FUNCS(GCK_CUDA_MEMBER)
    GCK_CUBLAS_FUNCS(GCK_CUDA_MEMBER)
#undef GCK_CUDA_MEMBER
    char paths[3][512]; /* the files loaded: cudart, cublasLt, cublas */
} gck_cuda_api;

/** The loaded entry points, or NULL with the reason in `why` ("CUDA runtime not found: ...",
 *  naming the places tried). With `blas` false only the runtime's entries are loaded (the
 *  probe's needs); with `blas` true cuBLASLt and cuBLAS too. Each library is looked for once
 *  per process (thread-safe); later calls give the same answer. */
const gck_cuda_api *gck_cuda_api_get(bool blas, char *why, size_t len);

/** Whether a GEMMCHECK_CUDA_LIBRARY_PATH value is usable: true when every colon-separated entry
 *  is an absolute path; false with the first offending entry described in `why`. */
bool gck_cuda_path_valid(const char *list, char *why, size_t len);

#endif
