/* cublas and cublaslt when gemmcheck was built without the CUDA toolkit. */
#include "backends.h"
#include "cuda_probe.h"

static gck_status no_cuda_init(void **state, const char *arg, char *msg, size_t len) {
    (void)arg;
    *state = NULL;
    gck_cuda_probe(msg, len); /* says why */
    return GCK_EIO;
}

const gck_backend_ops *gck_cublas_backend_ops(void) {
    static const gck_backend_ops ops = {"cublas", no_cuda_init, NULL, NULL, NULL, NULL, NULL};
    return &ops;
}

const gck_backend_ops *gck_cublaslt_backend_ops(void) {
    static const gck_backend_ops ops = {"cublaslt", no_cuda_init, NULL, NULL, NULL, NULL, NULL};
    return &ops;
}
