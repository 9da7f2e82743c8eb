/* CBLAS backends: `openblas` (the OpenBLAS found at build time), `cblas:/path/lib.so` (any
 * library exporting cblas_sgemm and cblas_dgemm) and `cblas64:/path/lib.so` (the same with 64-bit
 * integer arguments, as the ILP64 builds Debian ships as libblas64, libopenblas64 and
 * libblis64 take them; the enum arguments stay int). The library is loaded with dlopen and
 * RTLD_LOCAL so that several BLAS libraries, which all export the same symbol names, can be
 * tested side by side without one interposing on another. Optional extensions are declared
 * only when their symbols are present: OpenBLAS cblas_sbgemm / cblas_shgemm, MKL
 * cblas_gemm_bf16bf16f32 / cblas_gemm_f16f16f32. */
#define _GNU_SOURCE 1 /* dlinfo */
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends.h"
#include "text.h"

enum { CBLAS_ROW = 101, CBLAS_COL = 102, CBLAS_NOTRANS = 111, CBLAS_TRANS = 112 };

typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *, int, const float *,
                         int, float, float *, int);
typedef void (*dgemm_fn)(int, int, int, int, int, int, double, const double *, int, const double *,
                         int, double, double *, int);
/* bf16 x bf16 -> f32 and f16 x f16 -> f32 (OpenBLAS and MKL share this argument list) */
typedef void (*hgemm_fn)(int, int, int, int, int, int, float, const uint16_t *, int,
                         const uint16_t *, int, float, float *, int);
typedef void (*sgemm64_fn)(int, int, int, int64_t, int64_t, int64_t, float, const float *, int64_t,
                           const float *, int64_t, float, float *, int64_t);
typedef void (*dgemm64_fn)(int, int, int, int64_t, int64_t, int64_t, double, const double *,
                           int64_t, const double *, int64_t, double, double *, int64_t);
typedef void (*hgemm64_fn)(int, int, int, int64_t, int64_t, int64_t, float, const uint16_t *,
                           int64_t, const uint16_t *, int64_t, float, float *, int64_t);

typedef enum flavour { FLAVOUR_GENERIC, FLAVOUR_OPENBLAS } flavour;

typedef enum entry_id {
    E_SGEMM,
    E_DGEMM,
    E_SBGEMM,
    E_SHGEMM,
    E_MKL_BF16,
    E_MKL_F16,
    E_COUNT
} entry_id;
static const char *const entry_names[E_COUNT] = {
    "cblas_sgemm",         "cblas_dgemm", "cblas_sbgemm", "cblas_shgemm", "cblas_gemm_bf16bf16f32",
    "cblas_gemm_f16f16f32"};

typedef struct cblas_state {
    void *handle;
    bool ilp64; /* 64-bit integer arguments */
    char path[PATH_MAX];
    flavour fl;
    void *fn[E_COUNT];
    gck_support_row rows[E_COUNT];
    entry_id row_entry[E_COUNT];
    size_t n;
    char version[256];
} cblas_state;

static void add_row(cblas_state *s, entry_id e, gck_format ab, gck_format cd, gck_format compute,
                    unsigned promises) {
    gck_model m = {.compute = compute, .acc = GCK_ACC_SCALAR, .epilogue = compute};
    /* OpenBLAS scales C by beta first (its gemm_beta kernels) and adds alpha times each
     * K-block's sum, small-matrix kernels add beta*c last, GEMV-shaped calls may scale an
     * operand by alpha: every order but alpha*(A*B + (beta/alpha)*C). A library of unknown
     * make may use any. */
    m.orders = s->fl == FLAVOUR_OPENBLAS ? GCK_ORDERS_ANY & ~GCK_ORDER_BETA_OVER_ALPHA : 0;
    m.inputs_rounded = false; /* the inputs are already of the compute type or exact in it */
    m.input_format = compute;
    s->row_entry[s->n] = e;
    s->rows[s->n++] = (gck_support_row){ab, ab, cd, cd, compute, m, promises, entry_names[e]};
}

static gck_status cblas_open(cblas_state *s, const char *path, flavour fl, char *msg, size_t len) {
    s->fl = fl;
    snprintf(s->path, sizeof s->path, "%s", path);
    s->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!s->handle) {
        snprintf(msg, len, "cannot load %s: %s", path, dlerror());
        return GCK_EIO;
    }
    for (int e = 0; e < E_COUNT; e++) s->fn[e] = dlsym(s->handle, entry_names[e]);
    if (!s->fn[E_SGEMM] || !s->fn[E_DGEMM]) {
        snprintf(msg, len, "%s does not export %s: not a CBLAS library", path,
                 !s->fn[E_SGEMM] ? "cblas_sgemm" : "cblas_dgemm");
        dlclose(s->handle);
        s->handle = NULL;
        return GCK_EIO;
    }
    /* A library of known make declares what it does: OpenBLAS loaded through cblas: (its
     * libblas.so.3 or libopenblas64) is OpenBLAS */
    const char *(*ob_config)(void) = NULL;
    *(void **)&ob_config = dlsym(s->handle, "openblas_get_config");
    if (fl == FLAVOUR_GENERIC && ob_config) s->fl = FLAVOUR_OPENBLAS;
    /* OpenBLAS says how wide its integers are: the other interface would hand it garbage
     * dimensions, so it is refused (other makes cannot be asked) */
    if (ob_config && (strstr(ob_config(), "USE64BITINT") != NULL) != s->ilp64) {
        bool wide = !s->ilp64;
        snprintf(msg, len,
                 "%s takes %s-bit integer arguments (OpenBLAS built %s USE64BITINT): use %s:%s",
                 path, wide ? "64" : "32", wide ? "with" : "without", wide ? "cblas64" : "cblas",
                 path);
        dlclose(s->handle);
        s->handle = NULL;
        return GCK_EINVAL;
    }
    /* Reference BLAS skips terms whose B element is zero and leaves A and B unread when
     * alpha = 0; a library of unknown make is assumed to do the same (docs/SEMANTICS.md). OpenBLAS
     * propagates NaN. Both honour beta = 0 (C not read). */
    unsigned p = GCK_PROMISE_BETA0_NO_READ_C | GCK_PROMISE_ROW_MAJOR | GCK_PROMISE_D_IN_PLACE |
                 (s->ilp64 ? 0 : GCK_PROMISE_INT32_DIMS);
    /* OpenBLAS 0.3.21 reads A and B when alpha = 0 (measured: a NaN in A reaches C), so it
     * does not get the reference BLAS's alpha = 0 promise. */
    if (s->fl == FLAVOUR_GENERIC) p |= GCK_PROMISE_MAY_SKIP_ZERO | GCK_PROMISE_ALPHA0_NO_READ_AB;
    add_row(s, E_SGEMM, GCK_F32, GCK_F32, GCK_F32, p | GCK_PROMISE_SCALE_F32);
    add_row(s, E_DGEMM, GCK_F64, GCK_F64, GCK_F64, p | GCK_PROMISE_SCALE_F64);
    if (s->fn[E_SBGEMM])
        add_row(s, E_SBGEMM, GCK_BF16, GCK_F32, GCK_F32, p | GCK_PROMISE_SCALE_F32);
    if (s->fn[E_SHGEMM]) add_row(s, E_SHGEMM, GCK_F16, GCK_F32, GCK_F32, p | GCK_PROMISE_SCALE_F32);
    if (s->fn[E_MKL_BF16])
        add_row(s, E_MKL_BF16, GCK_BF16, GCK_F32, GCK_F32, p | GCK_PROMISE_SCALE_F32);
    if (s->fn[E_MKL_F16])
        add_row(s, E_MKL_F16, GCK_F16, GCK_F32, GCK_F32, p | GCK_PROMISE_SCALE_F32);

    /* version: the library's own words where it has them */
    void (*mkl_version)(char *, int) = NULL;
    *(void **)&mkl_version = dlsym(s->handle, "MKL_Get_Version_String");
    const char *(*bli_version)(void) = NULL;
    *(void **)&bli_version = dlsym(s->handle, "bli_info_get_version_str");
    /* the file the loader opened (a name without a slash is looked up by the loader's rules,
     * not in the current directory), resolved through its links */
    char real[PATH_MAX];
    struct link_map *lm = NULL;
    const char *opened =
        dlinfo(s->handle, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name[0] ? lm->l_name : path;
    if (!realpath(opened, real)) snprintf(real, sizeof real, "%s", opened);
    if (ob_config) {
        snprintf(s->version, sizeof s->version, "%.120s (%.120s)", ob_config(), real);
    } else if (mkl_version) {
        char v[198];
        mkl_version(v, (int)sizeof v);
        snprintf(s->version, sizeof s->version, "%.120s (%.120s)", v, real);
    } else if (bli_version) {
        snprintf(s->version, sizeof s->version, "BLIS %.60s (%.160s)", bli_version(), real);
    } else {
        snprintf(s->version, sizeof s->version, "%.200s (no version query exported)", real);
    }
    return GCK_OK;
}

static gck_status openblas_init(void **state, const char *arg, char *msg, size_t len) {
    if (arg) {
        snprintf(msg, len, "backend 'openblas' takes no argument; use cblas:%s for another library",
                 arg);
        return GCK_EINVAL;
    }
#ifdef GCK_OPENBLAS_LIBRARY
    cblas_state *s = calloc(1, sizeof *s);
    if (!s) return gck_fail(GCK_ENOMEM, msg, len, "out of memory for the backend's state");
    gck_status st = cblas_open(s, GCK_OPENBLAS_LIBRARY, FLAVOUR_OPENBLAS, msg, len);
    if (st != GCK_OK) {
        free(s);
        return st;
    }
    *state = s;
    return GCK_OK;
#else
    *state = NULL;
    snprintf(msg, len,
             "gemmcheck was built without OpenBLAS (GEMMCHECK_OPENBLAS=OFF or not "
             "found); use cblas:/path/libopenblas.so.0");
    return GCK_EIO;
#endif
}

static gck_status generic_init(void **state, const char *arg, bool ilp64, char *msg, size_t len) {
    if (!arg || !*arg) {
        snprintf(msg, len, "backend '%s' needs a library: %s:/path/lib.so",
                 ilp64 ? "cblas64" : "cblas", ilp64 ? "cblas64" : "cblas");
        return GCK_EINVAL;
    }
    cblas_state *s = calloc(1, sizeof *s);
    if (!s) return gck_fail(GCK_ENOMEM, msg, len, "out of memory for the backend's state");
    s->ilp64 = ilp64;
    gck_status st = cblas_open(s, arg, FLAVOUR_GENERIC, msg, len);
    if (st != GCK_OK) {
        free(s);
        return st;
    }
    *state = s;
    return GCK_OK;
}

static gck_status cblas_init(void **state, const char *arg, char *msg, size_t len) {
    return generic_init(state, arg, false, msg, len);
}

static gck_status cblas64_init(void **state, const char *arg, char *msg, size_t len) {
    return generic_init(state, arg, true, msg, len);
}

static void cblas_teardown(void *state) {
    cblas_state *s = state;
    if (!s) return;
    if (s->handle) dlclose(s->handle);
    free(s);
}

static bool cblas_available(void *state, char *why, size_t len) {
    cblas_state *s = state;
    snprintf(why, len, "loaded from %s", s->path);
    return true;
}

static void cblas_version(void *state, char *buf, size_t len) {
    snprintf(buf, len, "%s", ((cblas_state *)state)->version);
}

static size_t cblas_table(void *state, const gck_support_row **rows) {
    cblas_state *s = state;
    *rows = s->rows;
    return s->n;
}

static gck_call_status cblas_call(void *state, const gck_case *c, const gck_support_row *row,
                                  const gck_operands *ops, char *msg, size_t len) {
    cblas_state *s = state;
    entry_id e = s->row_entry[row - s->rows];
    int order = c->order == GCK_COL_MAJOR ? CBLAS_COL : CBLAS_ROW;
    int ta = c->transa == GCK_OP_N ? CBLAS_NOTRANS : CBLAS_TRANS;
    int tb = c->transb == GCK_OP_N ? CBLAS_NOTRANS : CBLAS_TRANS;
    if (!s->fn[e]) {
        snprintf(msg, len, "%s is missing", entry_names[e]);
        return GCK_CALL_NOT_SUPPORTED;
    }
    if (s->ilp64) {
        int64_t m = c->m, n = c->n, k = c->k, lda = c->lda, ldb = c->ldb, ldc = c->ldc;
        switch (e) {
        case E_SGEMM:
            ((sgemm64_fn)s->fn[e])(order, ta, tb, m, n, k, (float)c->alpha, ops->a, lda, ops->b,
                                   ldb, (float)c->beta, ops->d, ldc);
            break;
        case E_DGEMM:
            ((dgemm64_fn)s->fn[e])(order, ta, tb, m, n, k, c->alpha, ops->a, lda, ops->b, ldb,
                                   c->beta, ops->d, ldc);
            break;
        default:
            ((hgemm64_fn)s->fn[e])(order, ta, tb, m, n, k, (float)c->alpha, ops->a, lda, ops->b,
                                   ldb, (float)c->beta, ops->d, ldc);
            break;
        }
        return GCK_CALL_OK;
    }
    int m = (int)c->m, n = (int)c->n, k = (int)c->k;
    int lda = (int)c->lda, ldb = (int)c->ldb, ldc = (int)c->ldc;
    switch (e) {
    case E_SGEMM:
        ((sgemm_fn)s->fn[e])(order, ta, tb, m, n, k, (float)c->alpha, ops->a, lda, ops->b, ldb,
                             (float)c->beta, ops->d, ldc);
        break;
    case E_DGEMM:
        ((dgemm_fn)s->fn[e])(order, ta, tb, m, n, k, c->alpha, ops->a, lda, ops->b, ldb, c->beta,
                             ops->d, ldc);
        break;
    default:
        ((hgemm_fn)s->fn[e])(order, ta, tb, m, n, k, (float)c->alpha, ops->a, lda, ops->b, ldb,
                             (float)c->beta, ops->d, ldc);
        break;
    }
    return GCK_CALL_OK;
}

const gck_backend_ops *gck_openblas_backend_ops(void) {
    static const gck_backend_ops ops = {"openblas",      openblas_init, cblas_teardown,
                                        cblas_available, cblas_version, cblas_table,
                                        cblas_call};
    return &ops;
}

const gck_backend_ops *gck_cblas64_backend_ops(void) {
    static const gck_backend_ops ops = {"cblas64",       cblas64_init,  cblas_teardown,
                                        cblas_available, cblas_version, cblas_table,
                                        cblas_call};
    return &ops;
}

const gck_backend_ops *gck_cblas_backend_ops(void) {
    static const gck_backend_ops ops = {"cblas",       cblas_init,  cblas_teardown, cblas_available,
                                        cblas_version, cblas_table, cblas_call};
    return &ops;
}
