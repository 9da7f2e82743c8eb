/* A cuBLASLt for the fake device (tests/fake_cuda): descriptors as plain structs, a heuristic
 * that asks for GCK_FAKE_LT_WORKSPACE bytes of workspace (default 4 MiB) or the preference's
 * maximum when that is less, and cublasLtMatmul on fake_gemm.h. Every heuristic's offer is
 * written to GCK_FAKE_CUDA_LOG ("heuristic: max workspace N, chose M"). */
#include <cublasLt.h>

#include "fake_gemm.h"

struct cublasLtContext {
    int unused;
};
typedef struct desc {
    cublasComputeType_t ct;
    cudaDataType scale;
    int32_t ta, tb;
} desc;
typedef struct layout {
    cudaDataType t;
    uint64_t rows, cols;
    int64_t ld, stride;
    int32_t batch;
} layout;
typedef struct pref {
    uint64_t max_ws;
} pref;

size_t cublasLtGetVersion(void) { return CUBLAS_VERSION; }

/* A descriptor: a copy of `init` on the heap (NULL when out of memory). */
static void *make(size_t size, const void *init) {
    void *x = malloc(size);
    if (x) memcpy(x, init, size);
    return x;
}

static cublasStatus_t dispose(void *p) {
    free(p);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtCreate(cublasLtHandle_t *h) {
    *h = calloc(1, sizeof **h);
    return *h ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}
cublasStatus_t cublasLtDestroy(cublasLtHandle_t h) { return dispose(h); }

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t ct,
                                        cudaDataType_t scale) {
    *d = make(sizeof(desc), &(desc){ct, scale, 0, 0});
    return *d ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) { return dispose(d); }
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d,
                                              cublasLtMatmulDescAttributes_t attr, const void *buf,
                                              size_t size) {
    desc *x = (desc *)(void *)d;
    if (size != sizeof(int32_t)) return CUBLAS_STATUS_INVALID_VALUE;
    if (attr == CUBLASLT_MATMUL_DESC_TRANSA)
        memcpy(&x->ta, buf, size);
    else if (attr == CUBLASLT_MATMUL_DESC_TRANSB)
        memcpy(&x->tb, buf, size);
    else
        return CUBLAS_STATUS_INVALID_VALUE;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType t, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
    *l = make(sizeof(layout), &(layout){t, rows, cols, ld, 0, 1});
    return *l ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) { return dispose(l); }
cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t l,
                                                cublasLtMatrixLayoutAttribute_t attr,
                                                const void *buf, size_t size) {
    layout *x = (layout *)(void *)l;
    if (attr == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT && size == sizeof x->batch)
        memcpy(&x->batch, buf, size);
    else if (attr == CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET && size == sizeof x->stride)
        memcpy(&x->stride, buf, size);
    else
        return CUBLAS_STATUS_INVALID_VALUE;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p) {
    *p = make(sizeof(pref), &(pref){0});
    return *p ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) { return dispose(p); }
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void *buf, size_t size) {
    if (attr == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES && size == sizeof(uint64_t))
        memcpy(&((pref *)(void *)p)->max_ws, buf, size);
    return CUBLAS_STATUS_SUCCESS; /* the alignments: every algorithm here takes any */
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t d,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t dd,
                                              cublasLtMatmulPreference_t p, int want,
                                              cublasLtMatmulHeuristicResult_t res[], int *found) {
    (void)h, (void)d, (void)a, (void)b, (void)c, (void)dd;
    if (want < 1) return CUBLAS_STATUS_INVALID_VALUE;
    size_t max = ((pref *)(void *)p)->max_ws, ws = fake_bytes("GCK_FAKE_LT_WORKSPACE", 4u << 20);
    if (ws > max) ws = max;
    memset(&res[0], 0, sizeof res[0]);
    res[0].workspaceSize = ws;
    res[0].state = CUBLAS_STATUS_SUCCESS;
    res[0].algo.data[0] = ws;
    *found = 1;
    fake_log("heuristic: max workspace %zu, chose %zu", max, ws);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t dsc, const void *alpha,
                              const void *A, cublasLtMatrixLayout_t la, const void *B,
                              cublasLtMatrixLayout_t lb, const void *beta, const void *C,
                              cublasLtMatrixLayout_t lc, void *D, cublasLtMatrixLayout_t ld,
                              const cublasLtMatmulAlgo_t *algo, void *ws, size_t ws_bytes,
                              cudaStream_t stream) {
    (void)h, (void)stream;
    if (ws_bytes < algo->data[0] || (ws_bytes && !ws)) return CUBLAS_STATUS_INVALID_VALUE;
    const desc *d = (const desc *)(const void *)dsc;
    const layout *xa = (const void *)la, *xb = (const void *)lb, *xc = (const void *)lc,
                 *xd = (const void *)ld;
    fake_mat x = {xa->t, A, xa->ld, xa->stride, d->ta != CUBLAS_OP_N};
    fake_mat y = {xb->t, B, xb->ld, xb->stride, d->tb != CUBLAS_OP_N};
    fake_mat c = {xc->t, C, xc->ld, xc->stride, false}, o = {xd->t, D, xd->ld, xd->stride, false};
    int k = (int)(x.trans ? xa->rows : xa->cols);
    fake_gemm((int)xd->rows, (int)xd->cols, k, fake_scalar(d->scale, alpha), &x, &y,
              fake_scalar(d->scale, beta), &c, &o, xd->batch);
    return CUBLAS_STATUS_SUCCESS;
}
