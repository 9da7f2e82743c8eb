/* The backend registry: specs, support-row lookup, plugins. */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends.h"
#include "format_internal.h"
#include "fpenv.h"
#include "text.h"

/* Every built-in backend: its name, how a spec names it, and its operations. The one list. */
typedef struct registered {
    const char *name;
    const char *usage; /* as gck_backend_names() shows it */
    const gck_backend_ops *(*ops)(void);
} registered;

static const registered registry[] = {
    {"ref", "ref", gck_ref_backend_ops},
    {"kernels", "kernels", gck_kernels_backend_ops},
    {"openblas", "openblas", gck_openblas_backend_ops},
    {"blis", "blis", gck_blis_backend_ops},
    {"cblas", "cblas:<lib.so>", gck_cblas_backend_ops},
    {"cblas64", "cblas64:<lib.so>", gck_cblas64_backend_ops},
    {"cublas", "cublas", gck_cublas_backend_ops},
    {"cublaslt", "cublaslt", gck_cublaslt_backend_ops},
    {"onednn", "onednn[:sgemm]", gck_onednn_backend_ops},
};
#define NREGISTERED (sizeof registry / sizeof registry[0])

static const char *usage_names[NREGISTERED + 3];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void fill_names(void) {
    for (size_t r = 0; r < NREGISTERED; r++) usage_names[r] = registry[r].usage;
    usage_names[NREGISTERED] = "plugin:<lib.so>[:name]";
    usage_names[NREGISTERED + 1] = "python:<file.py|module>:<name>";
    usage_names[NREGISTERED + 2] = NULL;
}

const char *const *gck_backend_names(void) {
    pthread_once(&names_once, fill_names);
    return usage_names;
}

typedef const gck_backend_ops *(*plugin_entry)(const char *name);

static gck_status open_plugin(gck_backend *be, const char *arg, char *msg, size_t len) {
    char path[PATH_MAX];
    const char *colon = strchr(arg, ':');
    size_t n = colon ? (size_t)(colon - arg) : strlen(arg);
    if (n == 0 || n >= sizeof path) {
        snprintf(msg, len, "plugin backend needs a library path: plugin:/path/lib.so[:name]");
        return GCK_EINVAL;
    }
    memcpy(path, arg, n);
    path[n] = '\0';
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(msg, len, "cannot load plugin %s: %s", path, dlerror());
        return GCK_EIO;
    }
    unsigned (*abi)(void);
    *(void **)&abi = dlsym(h, "gemmcheck_plugin_abi");
    unsigned v = abi ? abi() : 0;
    if (v != GCK_PLUGIN_ABI) {
        if (abi)
            snprintf(msg, len,
                     "plugin %s was built for gemmcheck's plugin ABI %u, this gemmcheck has ABI "
                     "%u: rebuild it against this gemmcheck's headers",
                     path, v, GCK_PLUGIN_ABI);
        else
            snprintf(msg, len,
                     "plugin %s does not say which plugin ABI it was built for (it lacks "
                     "GCK_PLUGIN_ABI_DECLARE, see gemmcheck/backend.h): rebuild it against this "
                     "gemmcheck's headers",
                     path);
        dlclose(h);
        return GCK_EIO;
    }
    plugin_entry entry;
    *(void **)&entry = dlsym(h, "gemmcheck_backend_plugin");
    if (!entry) {
        snprintf(msg, len, "%s does not export gemmcheck_backend_plugin()", path);
        dlclose(h);
        return GCK_EIO;
    }
    const gck_backend_ops *ops = entry(colon ? colon + 1 : NULL);
    if (!ops) {
        snprintf(msg, len, "plugin %s has no backend named '%s'", path, colon ? colon + 1 : "");
        dlclose(h);
        return GCK_EINVAL;
    }
    be->ops = ops;
    be->plugin_handle = h;
    return GCK_OK;
}

/* Edit distance between a[0..na) and b (insertions, deletions, substitutions), capped at 9. */
static int edit_distance(const char *a, size_t na, const char *b) {
    size_t nb = strlen(b);
    if (na > 30 || nb > 30) return 9;
    int row[32];
    for (size_t j = 0; j <= nb; j++) row[j] = (int)j;
    for (size_t i = 1; i <= na; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= nb; j++) {
            int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[nb] < 9 ? row[nb] : 9;
}

/* The registered backend name nearest to a mistyped one (at most 2 edits), or NULL. */
static const char *nearest_backend(const char *name, size_t n) {
    const char *best = NULL;
    int bd = 3;
    for (const char *const *b = gck_backend_names(); *b; b++) {
        int d = edit_distance(name, n, *b);
        if (d < bd) bd = d, best = *b;
    }
    return best;
}

bool gck_backend_is_builtin(const char *spec) {
    const char *colon = strchr(spec, ':');
    size_t n = colon ? (size_t)(colon - spec) : strlen(spec);
    if (n == 6 && strncmp(spec, "plugin", 6) == 0) return true;
    for (size_t r = 0; r < NREGISTERED; r++)
        if (strlen(registry[r].name) == n && strncmp(spec, registry[r].name, n) == 0) return true;
    return false;
}

gck_status gck_backend_open(gck_backend *be, const char *spec, char *msg, size_t len) {
    memset(be, 0, sizeof *be);
    snprintf(be->spec, sizeof be->spec, "%s", spec);
    const char *arg = NULL;
    if (gck_backend_defined(spec)) {
        be->ops = gck_defined_backend_ops();
        arg = spec;
    } else if (strncmp(spec, "python:", 7) == 0) {
        return gck_fail(GCK_EINVAL, msg, len,
                        "backend %s is a Python callable: it runs in a worker started by "
                        "`python3 -m gemmcheck.worker`, which defines it (docs/FRAMEWORKS.md)",
                        spec);
    } else if (strncmp(spec, "plugin:", 7) == 0) {
        gck_status s = open_plugin(be, spec + 7, msg, len);
        if (s != GCK_OK) return s;
        const char *colon = strchr(spec + 7, ':');
        arg = colon ? colon + 1 : NULL;
    } else {
        const char *colon = strchr(spec, ':');
        size_t n = colon ? (size_t)(colon - spec) : strlen(spec);
        for (size_t r = 0; r < NREGISTERED; r++)
            if (strlen(registry[r].name) == n && strncmp(spec, registry[r].name, n) == 0)
                be->ops = registry[r].ops();
        if (!be->ops) {
            char known[512] = "";
            size_t k = 0;
            for (const char *const *b = gck_backend_names(); *b && k < sizeof known; b++)
                k += (size_t)snprintf(known + k, sizeof known - k, "%s%s", k ? ", " : "", *b);
            const char *near = nearest_backend(spec, n);
            return gck_fail(GCK_EINVAL, msg, len, "unknown backend '%s'%s%s%s (known: %s)", spec,
                            near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "",
                            known);
        }
        arg = colon ? colon + 1 : NULL;
    }
    if (len) msg[0] = '\0';
    gck_status s = be->ops->init(&be->state, arg, msg, len);
    if (s != GCK_OK) {
        if (len && !msg[0]) /* every failure says why, even a plugin's that does not */
            snprintf(msg, len, "backend %s failed to start (%s) without saying why", spec,
                     s == GCK_ENOMEM ? "out of memory" : "error");
        if (be->plugin_handle) dlclose(be->plugin_handle);
        be->ops = NULL;
        be->plugin_handle = NULL;
        return s;
    }
    /* everything gemmcheck does with the backend trusts its table: check it once, here */
    const gck_support_row *rows = NULL;
    size_t n = be->ops->table(be->state, &rows);
    char why[256];
    if (!gck_backend_check_table(rows, n, why, sizeof why)) {
        snprintf(msg, len, "backend %s declares an invalid support table: %s", spec, why);
        gck_backend_close(be);
        return GCK_EINVAL;
    }
    return GCK_OK;
}

static bool format_ok(gck_format f) { return (unsigned)f < GCK_FORMAT_COUNT; }

/* Every promise bit gemmcheck defines (gemmcheck/backend.h): a row with another is refused. */
#define PROMISES_DEFINED ((GCK_PROMISE_PRODUCT_ONLY << 1) - 1u)

bool gck_backend_check_table(const gck_support_row *rows, size_t n, char *why, size_t len) {
    if (n == 0 || !rows) {
        snprintf(why, len, "no rows");
        return false;
    }
    if (n > GCK_MAX_ROWS) {
        snprintf(why, len, "%zu rows, more than %d", n, GCK_MAX_ROWS);
        return false;
    }
    for (size_t r = 0; r < n; r++) {
        const gck_support_row *w = &rows[r];
        const gck_model *m = &w->model;
        const char *bad = !format_ok(w->a)                          ? "type of A"
                          : !format_ok(w->b)                        ? "type of B"
                          : !format_ok(w->c)                        ? "type of C"
                          : !format_ok(w->d)                        ? "type of D"
                          : !format_ok(w->compute)                  ? "compute type"
                          : !format_ok(m->compute)                  ? "model's compute type"
                          : !format_ok(m->input_format)             ? "model's input format"
                          : !format_ok(m->epilogue)                 ? "model's epilogue format"
                          : (unsigned)m->acc > GCK_ACC_BLOCK_FMA    ? "accumulation"
                          : m->block < 0                            ? "block width"
                          : (m->orders & ~(unsigned)GCK_ORDERS_ANY) ? "evaluation orders"
                          : (w->promises & ~PROMISES_DEFINED)       ? "set of promises"
                                                                    : NULL;
        if (bad) {
            snprintf(why, len, "row %zu: its %s is out of range", r, bad);
            return false;
        }
        if (w->entry && strnlen(w->entry, 96) == 96) {
            snprintf(why, len, "row %zu: its entry name is not a string of at most 95 bytes", r);
            return false;
        }
    }
    return true;
}

void gck_backend_close(gck_backend *be) {
    if (be->ops) be->ops->teardown(be->state);
    if (be->plugin_handle) dlclose(be->plugin_handle);
    memset(be, 0, sizeof *be);
}

bool gck_row_types_match(const gck_support_row *row, const gck_case *c) {
    return row->a == c->type_a && row->b == c->type_b && row->c == c->type_c &&
           row->d == gck_case_type(c, GCK_D) && row->compute == c->compute;
}

static bool fits_int32(const gck_case *c) {
    const int64_t v[] = {c->m, c->n, c->k, c->lda, c->ldb, c->ldc, c->ldd};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        if (v[i] > INT_MAX) return false;
    return true;
}

/* The promises a case needs that the row lacks, as text; NULL when the row serves it. */
static const char *missing_promise(const gck_support_row *row, const gck_case *c) {
    unsigned p = row->promises;
    if (c->order == GCK_ROW_MAJOR && !(p & GCK_PROMISE_ROW_MAJOR)) return "row-major storage";
    if (c->batch > 1 && !(p & GCK_PROMISE_BATCHED)) return "batched calls";
    if (c->d_is_c && !(p & GCK_PROMISE_D_IN_PLACE)) return "D in place of C";
    if (!c->d_is_c && !(p & GCK_PROMISE_D_SEPARATE)) return "D separate from C";
    bool f32 = gck_fmt_round_to(c->alpha, GCK_F32) == c->alpha &&
               gck_fmt_round_to(c->beta, GCK_F32) == c->beta;
    bool f16 = gck_fmt_round_to(c->alpha, GCK_F16) == c->alpha &&
               gck_fmt_round_to(c->beta, GCK_F16) == c->beta;
    if (!(p & GCK_PROMISE_SCALE_F64) && !((p & GCK_PROMISE_SCALE_F32) && f32) &&
        !((p & GCK_PROMISE_SCALE_F16) && f16))
        return "alpha/beta not representable in the backend's scale type";
    if ((p & GCK_PROMISE_INT32_DIMS) && !fits_int32(c)) return "dimensions beyond 32-bit int";
    if ((p & GCK_PROMISE_PRODUCT_ONLY) && (c->alpha != 1 || c->beta != 0))
        return "alpha other than 1 or beta other than 0 (a plain product)";
    return NULL;
}

const gck_support_row *gck_backend_find_row(const gck_backend *be, const gck_case *c, char *why,
                                            size_t len) {
    const gck_support_row *rows;
    size_t n = be->ops->table(be->state, &rows);
    const char *missing = NULL;
    for (size_t r = 0; r < n; r++) {
        if (!gck_row_types_match(&rows[r], c)) continue;
        const char *m = missing_promise(&rows[r], c);
        if (!m) return &rows[r];
        missing = m;
    }
    if (missing)
        snprintf(why, len, "%s does not support %s for this type tuple", be->spec, missing);
    else
        snprintf(why, len, "%s has no row for A=%s B=%s C=%s D=%s compute=%s", be->spec,
                 gck_format_get(c->type_a)->name, gck_format_get(c->type_b)->name,
                 gck_format_get(c->type_c)->name, gck_format_get(gck_case_type(c, GCK_D))->name,
                 gck_format_get(c->compute)->name);
    return NULL;
}

/* "any", or the declared orders as "alpha:sum,product,operand beta:last,first,over-alpha" */
static void describe_orders(unsigned o, char *buf, size_t len) {
    static const char *const names[] = {"sum", "product", "operand", "last", "first", "over-alpha"};
    if (o == GCK_ORDERS_ANY) {
        snprintf(buf, len, "any");
        return;
    }
    size_t n = 0;
    for (int b = 0; b < 6 && n < len; b++) {
        if (!(o >> b & 1)) continue;
        bool first_of_kind = b < 3 ? !(o & ((1u << b) - 1)) : !(o & (((1u << b) - 1) & ~7u));
        n += (size_t)snprintf(buf + n, len - n, "%s%s%s",
                              n && first_of_kind ? " "
                              : n                ? ","
                                                 : "",
                              first_of_kind ? (b < 3 ? "alpha:" : "beta:") : "", names[b]);
    }
}

void gck_row_model_words(const gck_support_row *row, char *buf, size_t len) {
    const gck_model *m = &row->model;
    char acc[32] = "scalar";
    if (m->acc == GCK_ACC_BLOCK_FMA)
        snprintf(acc, sizeof acc, m->block ? "block-FMA/%d" : "block-FMA", m->block);
    snprintf(buf, len, "compute=%s in=%s %s epi=%s%s%s%s %s", gck_format_get(m->compute)->name,
             m->inputs_rounded ? gck_format_get(m->input_format)->name : "exact", acc,
             gck_format_get(m->epilogue)->name, m->ftz ? " FTZ" : "", m->daz ? " DAZ" : "",
             row->promises & GCK_PROMISE_MAY_SKIP_ZERO ? " skip0" : "",
             gck_rounding_name(m->rounding));
}

static void row_describe(const gck_support_row *row, char *buf, size_t len) {
    const gck_model *m = &row->model;
    unsigned p = row->promises;
    char acc[32], ord[96];
    describe_orders(gck_model_orders(m), ord, sizeof ord);
    if (m->acc == GCK_ACC_BLOCK_FMA)
        snprintf(acc, sizeof acc, m->block ? "block-FMA/%d" : "block-FMA", m->block);
    else
        snprintf(acc, sizeof acc, "scalar");
    snprintf(
        buf, len,
        "%-4s %-4s %-4s %-4s | %-4s | in=%s%s %s epi=%s%s%s out=%s order=%s | %s%s%s%s%s%s%s%s | "
        "%s",
        gck_format_get(row->a)->name, gck_format_get(row->b)->name, gck_format_get(row->c)->name,
        gck_format_get(row->d)->name, gck_format_get(row->compute)->name,
        m->inputs_rounded ? gck_format_get(m->input_format)->name : "exact", "", acc,
        gck_format_get(m->epilogue)->name, m->ftz ? " FTZ" : "", m->daz ? " DAZ" : "",
        gck_rounding_name(m->rounding), ord, p & GCK_PROMISE_ALPHA0_NO_READ_AB ? "a0 " : "",
        p & GCK_PROMISE_BETA0_NO_READ_C ? "b0 " : "", p & GCK_PROMISE_MAY_SKIP_ZERO ? "skip0 " : "",
        p & GCK_PROMISE_ROW_MAJOR ? "row " : "", p & GCK_PROMISE_BATCHED ? "batch " : "",
        p & GCK_PROMISE_D_SEPARATE ? "Dsep " : "", p & GCK_PROMISE_D_IN_PLACE ? "Dinpl " : "",
        p & GCK_PROMISE_PRODUCT_ONLY ? "product-only" : "", row->entry);
}

/* ---- the public functions, in gemmcheck's floating-point environment (fpenv.h) ------------ */

GCK_GUARDED_VOID(gck_row_describe, row_describe,
                 (const gck_support_row *row, char *buf, size_t len), (row, buf, len))
