/* The `kernels` backend: gemmcheck's own GEMM (kernels/, gemmcheck/kernels.h), on the path the
 * CPU's best (or GEMMCHECK_KERNELS_PATH), or on one named path: kernels:<path>. */
#include <stdio.h>
#include <stdlib.h>

#include "backends.h"
#include "gemmcheck/kernels.h"
#include "gemmcheck/version.h"
#include "text.h"

/* The support table's tuples, as data: every tuple of f16, bf16, f32 and f64 for A, B, C and D,
 * computed in f32 and in f64, and f16 x f16 computed in f16 (alpha and beta in f32) with any C and
 * D, with the promises of gck_gemm (BLAS semantics, row-major, batches,
 * D in place or separate, alpha and beta in the compute type). The model of each row is
 * gck_gemm_model for the path the backend runs (kernels_init fills it in). */
#define KERNELS_ROW(a, b, c, d, k)                                                                 \
    {GCK_##a,                                                                                      \
     GCK_##b,                                                                                      \
     GCK_##c,                                                                                      \
     GCK_##d,                                                                                      \
     GCK_##k,                                                                                      \
     {0},                                                                                          \
     GCK_PROMISE_ALPHA0_NO_READ_AB | GCK_PROMISE_BETA0_NO_READ_C | GCK_PROMISE_ROW_MAJOR |         \
         GCK_PROMISE_BATCHED | GCK_PROMISE_D_SEPARATE | GCK_PROMISE_D_IN_PLACE |                   \
         (GCK_##k == GCK_F64 ? GCK_PROMISE_SCALE_F64 : GCK_PROMISE_SCALE_F32),                     \
     "gck_gemm"},
#define KERNELS_TUPLE(a, b, c, d) KERNELS_ROW(a, b, c, d, F32) KERNELS_ROW(a, b, c, d, F64)
#define KERNELS_D(a, b, c)                                                                         \
    KERNELS_TUPLE(a, b, c, F16)                                                                    \
    KERNELS_TUPLE(a, b, c, BF16) KERNELS_TUPLE(a, b, c, F32) KERNELS_TUPLE(a, b, c, F64)
#define KERNELS_CD(a, b)                                                                           \
    KERNELS_D(a, b, F16) KERNELS_D(a, b, BF16) KERNELS_D(a, b, F32) KERNELS_D(a, b, F64)
#define KERNELS_BCD(a) KERNELS_CD(a, F16) KERNELS_CD(a, BF16) KERNELS_CD(a, F32) KERNELS_CD(a, F64)
#define KERNELS_H16_D(c)                                                                           \
    KERNELS_ROW(F16, F16, c, F16, F16)                                                             \
    KERNELS_ROW(F16, F16, c, BF16, F16)                                                            \
    KERNELS_ROW(F16, F16, c, F32, F16) KERNELS_ROW(F16, F16, c, F64, F16)

static const gck_support_row kernels_tuples[] = {
    KERNELS_BCD(F16) KERNELS_BCD(BF16) KERNELS_BCD(F32) KERNELS_BCD(F64) KERNELS_H16_D(F16)
        KERNELS_H16_D(BF16) KERNELS_H16_D(F32) KERNELS_H16_D(F64)};
enum { KERNELS_ROWS = sizeof kernels_tuples / sizeof kernels_tuples[0] };

typedef struct kernels_state {
    gck_gemm_config cfg;
    gck_support_row rows[KERNELS_ROWS];
} kernels_state;

/* The path a row runs on: the backend's, or the automatic choice for the row's types. */
static gck_kpath row_path(const kernels_state *s, const gck_support_row *row) {
    return s->cfg.path == GCK_KPATH_AUTO ? gck_kpath_auto_for(row->a, row->b, row->compute)
                                         : s->cfg.path;
}

/* The rows with the model of the path each resolves to (chosen once per process). */
static void declare_rows(kernels_state *s) {
    for (int r = 0; r < KERNELS_ROWS; r++) {
        gck_support_row *row = &s->rows[r];
        *row = kernels_tuples[r];
        gck_kpath p = row_path(s, row);
        row->model = gck_gemm_model(p, row->a, row->b, row->compute);
        if (gck_gemm_pair_dot(p, row->a, row->b, row->compute))
            row->entry = "gck_gemm (VDPBF16PS pairs, odd step first, DAZ, FTZ)";
        else if (gck_gemm_tile_dot(p, row->a, row->b, row->compute))
            row->entry = "gck_gemm (TDPBF16PS tiles, even and odd chains per 32 steps, DAZ, FTZ)";
    }
}

/* "path avx512", or for the automatic choice the path of each class of inputs: "path auto (f64
 * avx512, f32 avx512, f16 avx512, bf16 amx, f16-in-f16 avx512fp16)". */
static void path_text(const kernels_state *s, char *buf, size_t len) {
    if (s->cfg.path != GCK_KPATH_AUTO) {
        snprintf(buf, len, "path %s", gck_kpath_name(s->cfg.path));
        return;
    }
    size_t n = (size_t)snprintf(buf, len, "path auto (");
    for (int k = 0; k < GCK_KCLASS_COUNT && n < len; k++) {
        gck_kpath p = gck_kpath_auto_class((gck_kclass)k);
        n += (size_t)snprintf(buf + n, len - n, "%s%s %s", k ? ", " : "",
                              gck_kclass_name((gck_kclass)k), gck_kpath_name(p));
    }
    if (n < len) snprintf(buf + n, len - n, ")");
}

static gck_status kernels_init(void **state, const char *arg, char *msg, size_t len) {
    kernels_state *s = calloc(1, sizeof *s);
    if (!s) return gck_fail(GCK_ENOMEM, msg, len, "out of memory for the backend's state");
    s->cfg.threads = 1; /* a campaign runs one case per worker and core */
    if (arg && !gck_kpath_parse(arg, &s->cfg.path)) {
        free(s);
        return gck_fail(GCK_EINVAL, msg, len,
                        "backend 'kernels:%s': unknown path (kernels:auto, kernels:portable, "
                        "kernels:avx2, kernels:avx512, kernels:avx512bf16, kernels:avx512fp16, "
                        "kernels:amx)",
                        arg);
    }
    declare_rows(s);
    *state = s;
    return GCK_OK;
}

static void kernels_teardown(void *state) { free(state); }

static bool kernels_available(void *state, char *why, size_t len) {
    const kernels_state *s = state;
    if (!gck_kpath_supported(s->cfg.path, why, len)) return false;
    char path[160];
    path_text(s, path, sizeof path);
    snprintf(why, len, "built in, %s", path);
    return true;
}

static void kernels_version(void *state, char *buf, size_t len) {
    const kernels_state *s = state;
    char path[160];
    path_text(s, path, sizeof path);
    snprintf(buf, len, "gemmcheck kernels %s, %s (docs/KERNELS.md)", GEMMCHECK_VERSION, path);
}

static size_t kernels_table(void *state, const gck_support_row **rows) {
    const kernels_state *s = state;
    *rows = s->rows;
    return KERNELS_ROWS;
}

static gck_call_status kernels_call(void *state, const gck_case *c, const gck_support_row *row,
                                    const gck_operands *ops, char *msg, size_t len) {
    (void)row;
    const kernels_state *s = state;
    gck_gemm_arg r = gck_gemm(c, ops->a, ops->b, ops->c, ops->d, &s->cfg, msg, len);
    return r == GCK_GEMM_OK ? GCK_CALL_OK : GCK_CALL_ERROR;
}

const gck_backend_ops *gck_kernels_backend_ops(void) {
    static const gck_backend_ops ops = {"kernels",         kernels_init,    kernels_teardown,
                                        kernels_available, kernels_version, kernels_table,
                                        kernels_call};
    return &ops;
}
