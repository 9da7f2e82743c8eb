/* The arithmetic of the fake cuBLAS and cuBLASLt (tests/fake_cuda): a column-major GEMM over
 * the CUDA data types, each sum in double and rounded once to the output type, which every
 * declared model of the CUDA rows allows; and the shared switches of their failure modes. */
#ifndef GCK_FAKE_GEMM_H
#define GCK_FAKE_GEMM_H

#include <library_types.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One matrix as cuBLAS sees it: column-major, `trans` for op = T. */
typedef struct fake_mat {
    cudaDataType t;
    const void *p;
    int64_t ld, stride;
    bool trans;
} fake_mat;

static inline double fake_load(cudaDataType t, const void *p, int64_t i) {
    switch (t) {
    case CUDA_R_16F: return (double)((const _Float16 *)p)[i];
    case CUDA_R_16BF: {
        uint32_t u = (uint32_t)((const uint16_t *)p)[i] << 16;
        float f;
        memcpy(&f, &u, sizeof f);
        return f;
    }
    case CUDA_R_64F: return ((const double *)p)[i];
    default: return ((const float *)p)[i];
    }
}

static inline void fake_store(cudaDataType t, void *p, int64_t i, double v) {
    switch (t) {
    case CUDA_R_16F: ((_Float16 *)p)[i] = (_Float16)v; break;
    case CUDA_R_16BF: { /* f32 first is exact enough here: a double rounded twice may differ */
        float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, sizeof u);
        if ((u & 0x7fffffffu) > 0x7f800000u)
            u |= 0x00400000u; /* NaN stays NaN */
        else
            u += 0x7fffu + ((u >> 16) & 1u);
        ((uint16_t *)p)[i] = (uint16_t)(u >> 16);
        break;
    }
    case CUDA_R_64F: ((double *)p)[i] = v; break;
    default: ((float *)p)[i] = (float)v; break;
    }
}

/* D = alpha op(X) op(Y) + beta C for each of `batch` members; C is not read when beta = 0. */
static inline void fake_gemm(int m, int n, int k, double alpha, const fake_mat *x,
                             const fake_mat *y, double beta, const fake_mat *c, const fake_mat *d,
                             int batch) {
    for (int b = 0; b < batch; b++)
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++) {
                double s = 0;
                for (int l = 0; l < k; l++) {
                    int64_t xi = x->trans ? l + (int64_t)i * x->ld : i + (int64_t)l * x->ld;
                    int64_t yi = y->trans ? j + (int64_t)l * y->ld : l + (int64_t)j * y->ld;
                    s += fake_load(x->t, x->p, b * x->stride + xi) *
                         fake_load(y->t, y->p, b * y->stride + yi);
                }
                double v = alpha * s;
                if (beta != 0) v += beta * fake_load(c->t, c->p, b * c->stride + i + j * c->ld);
                fake_store(d->t, (void *)d->p, b * d->stride + i + j * d->ld, v);
            }
}

/* The scalar alpha or beta as the scale type gives it. */
static inline double fake_scalar(cudaDataType scale, const void *p) {
    return fake_load(scale, p, 0);
}

/* What the fake does when an allocation of its own fails (GCK_FAKE_CUDA_OOM): "clean" returns
 * CUBLAS_STATUS_ALLOC_FAILED; "garbage" skips the product and reports success; "poison" fails
 * and makes every later call fail too; "fault" raises a sticky device error. */
typedef enum {
    FAKE_OOM_CLEAN,
    FAKE_OOM_GARBAGE,
    FAKE_OOM_POISON,
    FAKE_OOM_FAULT,
    FAKE_OOM_ABORT /* the process aborts, as cuBLAS 13.1's uncaught std::bad_alloc does */
} fake_oom;

static inline fake_oom fake_oom_mode(void) {
    const char *e = getenv("GCK_FAKE_CUDA_OOM");
    if (!e) return FAKE_OOM_CLEAN;
    if (!strcmp(e, "garbage")) return FAKE_OOM_GARBAGE;
    if (!strcmp(e, "poison")) return FAKE_OOM_POISON;
    if (!strcmp(e, "fault")) return FAKE_OOM_FAULT;
    if (!strcmp(e, "abort")) return FAKE_OOM_ABORT;
    return FAKE_OOM_CLEAN;
}

/* A size from the environment, or `dflt`. */
static inline size_t fake_bytes(const char *name, size_t dflt) {
    const char *e = getenv(name);
    return e ? (size_t)strtoull(e, NULL, 0) : dflt;
}

/* One line appended to GCK_FAKE_CUDA_LOG, when it is set. */
__attribute__((format(printf, 1, 2))) static inline void fake_log(const char *fmt, ...) {
    const char *path = getenv("GCK_FAKE_CUDA_LOG");
    if (!path) return;
    FILE *f = fopen(path, "a");
    if (!f) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    fclose(f);
}

#endif
