/* The built-in backends (internal: for src/backends/ and src/cli/, src/run/). */
#ifndef GEMMCHECK_BACKENDS_BACKENDS_H
#define GEMMCHECK_BACKENDS_BACKENDS_H

#include "gemmcheck/backend.h"

const gck_backend_ops *gck_ref_backend_ops(void);
const gck_backend_ops *gck_kernels_backend_ops(void);
const gck_backend_ops *gck_openblas_backend_ops(void);
const gck_backend_ops *gck_cblas_backend_ops(void);
const gck_backend_ops *gck_cblas64_backend_ops(void);
const gck_backend_ops *gck_blis_backend_ops(void);
const gck_backend_ops *gck_cublas_backend_ops(void);
const gck_backend_ops *gck_cublaslt_backend_ops(void);
const gck_backend_ops *gck_onednn_backend_ops(void);
const gck_backend_ops *gck_defined_backend_ops(void);

/** Whether gck_backend_define has defined `spec` in this process (src/backends/defined.c). */
bool gck_backend_defined(const char *spec);
/** Whether a spec names a built-in backend or plugin: "ref", "cblas:/x.so", "plugin:...". */
bool gck_backend_is_builtin(const char *spec);

/** Check a support table a backend declared: at least one row, at most GCK_MAX_ROWS, every
 *  format and enumeration in range, block >= 0, the entry (if any) a terminated string.
 *  False with the reason (naming the row) otherwise. */
#define GCK_MAX_ROWS 1024
bool gck_backend_check_table(const gck_support_row *rows, size_t n, char *why, size_t len);

/** A row's model in the words `gemmcheck verify --model` and Python's Model.parse take
 *  ("compute=f32 in=exact block-FMA epi=f32 FTZ nearest"; the evaluation orders have no words). */
void gck_row_model_words(const gck_support_row *row, char *buf, size_t len);

#endif
