/* gemmcheck — the backend interface and its support tables.
 *
 * A backend is one GEMM implementation (the reference GEMMs, OpenBLAS, BLIS, any CBLAS library,
 * cuBLAS, a user's kernel). It declares, in one table, every type tuple it offers together with
 * the arithmetic model it uses for it and the promises it makes; the checker derives its bounds
 * from the declared model, and the fuzzer and reports use the table as the support matrix.
 *
 * A user's own kernel plugs in as a shared library exporting
 *     const gck_backend_ops *gemmcheck_backend_plugin(const char *name);
 * and, once, GCK_PLUGIN_ABI_DECLARE (below), and is named on the command line as
 * plugin:/path/lib.so[:name]. */
#ifndef GEMMCHECK_BACKEND_H
#define GEMMCHECK_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

#include "gemmcheck/case.h"
#include "gemmcheck/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What a backend call returned. */
typedef enum gck_call_status {
    GCK_CALL_OK = 0,
    GCK_CALL_NOT_SUPPORTED, /**< the backend refused the case (NOT_SUPPORTED, missing symbol) */
    GCK_CALL_ERROR,         /**< the backend returned an error status */
    GCK_CALL_DEVICE_FAULT,  /**< a sticky device error: the context is unusable (a crash) */
} gck_call_status;

/** The operands of one call, on the host, laid out as the case describes (first element of the
 *  first batch member). D == C when the case computes in place. */
typedef struct gck_operands {
    const void *a, *b, *c;
    void *d;
    /** The guarded host region around each operand (A, B, C, D; D's is C's when in place):
     *  canary zone, operand, back zone. A device backend mirrors whole regions to the device
     *  and back, so that the host's guard and input checks see what happened on the device. */
    void *region[4];
    size_t region_bytes[4];
} gck_operands;

typedef struct gck_backend gck_backend;

/** The operations of a backend. `state` is the backend's own. */
typedef struct gck_backend_ops {
    const char *name;
    /** Set up; `arg` is what followed "name:" in the spec (or NULL). On failure: a one-line
     *  reason in msg and GCK_EINVAL (bad spec) or GCK_EIO (library or device unavailable). */
    gck_status (*init)(void **state, const char *arg, char *msg, size_t len);
    void (*teardown)(void *state);
    /** Whether calls can run, and if not why (e.g. the CUDA runtime's reason). */
    bool (*available)(void *state, char *why, size_t len);
    /** Library name and version, e.g. "OpenBLAS 0.3.21 (libopenblas.so.0)". */
    void (*version)(void *state, char *buf, size_t len);
    /** The support table; valid until teardown. */
    size_t (*table)(void *state, const gck_support_row **rows);
    /** Run one GEMM described by `c` with the row that matched it. */
    gck_call_status (*call)(void *state, const gck_case *c, const gck_support_row *row,
                            const gck_operands *ops, char *msg, size_t len);
} gck_backend_ops;

/** The version of the plugin interface: the layouts of gck_backend_ops, gck_support_row,
 *  gck_model, gck_case and gck_operands and the meaning of their fields. gemmcheck refuses a
 *  plugin built for another version (it would misread its tables and calls). Version 2 added
 *  gck_model.rounding. */
#define GCK_PLUGIN_ABI 2
/** Put once in a plugin's source: exports the plugin ABI version it was compiled against. */
#define GCK_PLUGIN_ABI_DECLARE                                                                     \
    __attribute__((visibility("default"))) unsigned gemmcheck_plugin_abi(void);                    \
    __attribute__((visibility("default"))) unsigned gemmcheck_plugin_abi(void) {                   \
        return GCK_PLUGIN_ABI;                                                                     \
    }

/** An initialised backend. */
struct gck_backend {
    const gck_backend_ops *ops;
    void *state;
    char spec[512];
    void *plugin_handle;
};

/** Open a backend from its spec: ref, openblas, blis, cblas:/path/lib.so, cublas, cublaslt,
 *  plugin:/path/lib.so[:name]. On failure GCK_EINVAL (unknown spec) or GCK_EIO (library could
 *  not be loaded), with one line in msg. */
GCK_API gck_status gck_backend_open(gck_backend *be, const char *spec, char *msg, size_t len);
GCK_API void gck_backend_close(gck_backend *be);
/** A backend served by a function of this process, as `call` of gck_backend_ops with `ctx` for
 *  the state: the Python module's workers define the user's function so (docs/FRAMEWORKS.md). */
typedef gck_call_status (*gck_defined_call)(void *ctx, const gck_case *c,
                                            const gck_support_row *row, const gck_operands *ops,
                                            char *msg, size_t len);
/** Define (or redefine) the backend that gck_backend_open(spec) opens in this process: its
 *  version line, its support table (copied, checked as any backend's) and its call. The spec
 *  is at most 255 bytes without blanks and is not a built-in name; up to 16 are defined. On
 *  failure GCK_EINVAL with one line in msg. */
GCK_API gck_status gck_backend_define(const char *spec, const char *version,
                                      const gck_support_row *rows, size_t nrows,
                                      gck_defined_call call, void *ctx, char *msg, size_t len);
/** The names of the built-in backends, NULL-terminated. */
GCK_API const char *const *gck_backend_names(void);

/** The row of the backend's table that serves the case: element types, compute type, and the
 *  promises the case needs (row-major, batch, D separate or in place, scale type). NULL when
 *  none does; `why` then says which part is missing. */
GCK_API const gck_support_row *gck_backend_find_row(const gck_backend *be, const gck_case *c,
                                                    char *why, size_t len);
/** Whether a row's type tuple is the case's (ignoring the layout promises). */
GCK_API bool gck_row_types_match(const gck_support_row *row, const gck_case *c);
/** One line describing a row: "f32 f32 f32 f32 | f32 | compute=f32 block-FMA ... | entry". */
GCK_API void gck_row_describe(const gck_support_row *row, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
