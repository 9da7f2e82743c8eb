/* The `blis` backend: BLIS's object API (bli_gemm), including its mixed-datatype GEMM for
 * every real s/d combination of A, B and C with single or double computation precision
 * (BLIS docs/MixedDatatypes.md). BLIS is loaded with dlopen and RTLD_LOCAL, like the CBLAS
 * backends: it exports the same cblas_ and Fortran symbols as OpenBLAS and netlib, and a
 * global link would make them call into each other. Types and inline helpers come from
 * blis.h; the exported functions are looked up in the loaded library. */
#define _DEFAULT_SOURCE 1
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends.h"
#include "text.h"

#ifdef GCK_BLIS_LIBRARY
#include <blis.h>

typedef void (*obj_create_fn)(num_t, dim_t, dim_t, void *, inc_t, inc_t, obj_t *);
typedef void (*obj_1x1_fn)(num_t, void *, obj_t *);
typedef void (*gemm_fn)(obj_t *, obj_t *, obj_t *, obj_t *, obj_t *);
typedef void (*init_fn)(void);
typedef const char *(*version_fn)(void);

typedef struct blis_state {
    void *handle;
    obj_create_fn obj_create;
    obj_1x1_fn obj_1x1;
    gemm_fn gemm;
    char version[320];
} blis_state;

/* The support table, as data: every s/d combination of A, B, C (D is C) with computation
 * precision s or d. A and B are cast to the computation precision when packed; A*B is cast to
 * C's precision before it is accumulated into C (so C's format is the epilogue's when
 * narrower). beta*C enters in the micro-kernel's update and alpha on each K-block's sum or folded
 * into a packed operand: every order but beta/alpha. Scalars are passed in C's datatype: the
 * object API wants all objects of one datatype (BLISObjectAPI.md), and BLIS 0.9 computes 0 for
 * float operands with a double alpha. */
#define BLIS_ROW(a, b, c, k)                                                                       \
    {GCK_##a,                                                                                      \
     GCK_##b,                                                                                      \
     GCK_##c,                                                                                      \
     GCK_##c,                                                                                      \
     GCK_##k,                                                                                      \
     {.compute = GCK_##k,                                                                          \
      .inputs_rounded = true,                                                                      \
      .input_format = GCK_##k,                                                                     \
      .acc = GCK_ACC_SCALAR,                                                                       \
      .epilogue = GCK_##c == GCK_F32 ? GCK_F32 : GCK_##k,                                          \
      .orders = GCK_ORDERS_ANY & ~GCK_ORDER_BETA_OVER_ALPHA},                                      \
     GCK_PROMISE_ALPHA0_NO_READ_AB | GCK_PROMISE_BETA0_NO_READ_C | GCK_PROMISE_ROW_MAJOR |         \
         GCK_PROMISE_D_IN_PLACE |                                                                  \
         (GCK_##c == GCK_F32 ? GCK_PROMISE_SCALE_F32 : GCK_PROMISE_SCALE_F64),                     \
     "bli_gemm (object API)"},
#define BLIS_K(a, b, c) BLIS_ROW(a, b, c, F32) BLIS_ROW(a, b, c, F64)
#define BLIS_C(a, b)    BLIS_K(a, b, F32) BLIS_K(a, b, F64)
// clang-format off
static const gck_support_row blis_rows[] = {
    BLIS_C(F32, F32) BLIS_C(F32, F64)
    BLIS_C(F64, F32) BLIS_C(F64, F64)
};
// clang-format on

static void *sym(blis_state *s, const char *name, char *msg, size_t len, bool *ok) {
    void *p = dlsym(s->handle, name);
    if (!p && *ok) {
        snprintf(msg, len, "%s does not export %s", GCK_BLIS_LIBRARY, name);
        *ok = false;
    }
    return p;
}

static gck_status blis_init(void **state, const char *arg, char *msg, size_t len) {
    if (arg) {
        snprintf(msg, len, "backend 'blis' takes no argument (got 'blis:%s')", arg);
        return GCK_EINVAL;
    }
    blis_state *s = calloc(1, sizeof *s);
    if (!s) return gck_fail(GCK_ENOMEM, msg, len, "out of memory for the backend's state");
    s->handle = dlopen(GCK_BLIS_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (!s->handle) {
        snprintf(msg, len, "cannot load BLIS: %s", dlerror());
        free(s);
        return GCK_EIO;
    }
    bool ok = true;
    init_fn init;
    version_fn version;
    arch_t (*arch_id)(void);
    const char *(*arch_name)(arch_t);
    *(void **)&init = sym(s, "bli_init", msg, len, &ok);
    *(void **)&version = sym(s, "bli_info_get_version_str", msg, len, &ok);
    *(void **)&s->obj_create = sym(s, "bli_obj_create_with_attached_buffer", msg, len, &ok);
    *(void **)&s->obj_1x1 = sym(s, "bli_obj_create_1x1_with_attached_buffer", msg, len, &ok);
    *(void **)&s->gemm = sym(s, "bli_gemm", msg, len, &ok);
    *(void **)&arch_id = sym(s, "bli_arch_query_id", msg, len, &ok);
    *(void **)&arch_name = sym(s, "bli_arch_string", msg, len, &ok);
    if (!ok) {
        dlclose(s->handle);
        free(s);
        return GCK_EIO;
    }
    init();
    char real[PATH_MAX];
    if (!realpath(GCK_BLIS_LIBRARY, real)) snprintf(real, sizeof real, "%s", GCK_BLIS_LIBRARY);
    /* the kernel set BLIS chose for this CPU (BLIS_ARCH_TYPE may force one): its results
     * depend on it */
    snprintf(s->version, sizeof s->version, "BLIS %.60s, arch %.24s (%.160s)", version(),
             arch_name(arch_id()), real);
    *state = s;
    return GCK_OK;
}

static void blis_teardown(void *state) {
    blis_state *s = state;
    if (!s) return;
    /* bli_finalize is not called: BLIS keeps global state that a later bli_init would reuse,
     * and unloading it while its thread pools exist is not safe. */
    free(s);
}

static bool blis_available(void *state, char *why, size_t len) {
    (void)state;
    snprintf(why, len, "loaded from %s", GCK_BLIS_LIBRARY);
    return true;
}

static void blis_version(void *state, char *buf, size_t len) {
    snprintf(buf, len, "%s", ((blis_state *)state)->version);
}

static size_t blis_table(void *state, const gck_support_row **rows) {
    (void)state;
    *rows = blis_rows;
    return sizeof blis_rows / sizeof blis_rows[0];
}

static num_t blis_dt(gck_format f) { return f == GCK_F32 ? BLIS_FLOAT : BLIS_DOUBLE; }

/* An object for the stored operand x (rows x cols as stored, strides from order and ld). */
static void make_obj(blis_state *s, const gck_case *c, gck_operand x, const void *p, obj_t *o) {
    int64_t rows, cols;
    gck_case_stored_shape(c, x, &rows, &cols);
    int64_t ld = gck_case_ld(c, x);
    inc_t rs = c->order == GCK_COL_MAJOR ? 1 : ld, cs = c->order == GCK_COL_MAJOR ? ld : 1;
    s->obj_create(blis_dt(gck_case_type(c, x)), rows, cols, (void *)p, rs, cs, o);
}

static gck_call_status blis_call(void *state, const gck_case *c, const gck_support_row *row,
                                 const gck_operands *ops, char *msg, size_t len) {
    (void)msg;
    (void)len;
    blis_state *s = state;
    obj_t a, b, cc, alpha, beta;
    double al = c->alpha, be = c->beta;
    float alf = (float)c->alpha, bef = (float)c->beta; /* exact: the row's scale promise */
    make_obj(s, c, GCK_A, ops->a, &a);
    make_obj(s, c, GCK_B, ops->b, &b);
    make_obj(s, c, GCK_C, ops->d, &cc);
    if (c->transa == GCK_OP_T) bli_obj_set_conjtrans(BLIS_TRANSPOSE, &a);
    if (c->transb == GCK_OP_T) bli_obj_set_conjtrans(BLIS_TRANSPOSE, &b);
    bli_obj_set_comp_prec(row->compute == GCK_F32 ? BLIS_SINGLE_PREC : BLIS_DOUBLE_PREC, &cc);
    if (c->type_c == GCK_F32) {
        s->obj_1x1(BLIS_FLOAT, &alf, &alpha);
        s->obj_1x1(BLIS_FLOAT, &bef, &beta);
    } else {
        s->obj_1x1(BLIS_DOUBLE, &al, &alpha);
        s->obj_1x1(BLIS_DOUBLE, &be, &beta);
    }
    s->gemm(&alpha, &a, &b, &beta, &cc);
    return GCK_CALL_OK;
}

const gck_backend_ops *gck_blis_backend_ops(void) {
    static const gck_backend_ops ops = {"blis",       blis_init,  blis_teardown, blis_available,
                                        blis_version, blis_table, blis_call};
    return &ops;
}

#else /* built without BLIS */

static gck_status blis_init(void **state, const char *arg, char *msg, size_t len) {
    (void)arg;
    *state = NULL;
    snprintf(msg, len, "gemmcheck was built without BLIS (GEMMCHECK_BLIS=OFF or not found)");
    return GCK_EIO;
}

const gck_backend_ops *gck_blis_backend_ops(void) {
    static const gck_backend_ops ops = {"blis", blis_init, NULL, NULL, NULL, NULL, NULL};
    return &ops;
}
#endif
