/* The `onednn` backend: oneDNN's matmul primitive (`onednn`) and dnnl_sgemm (`onednn:sgemm`),
 * through oneDNN's C API. libdnnl is opened with dlopen on first use, as the CUDA libraries
 * are: gemmcheck runs where it is not installed, and its headers are needed only to build.
 *
 * The matmul primitive computes dst = output_scale * (src x weights) and then the sum post-op
 * dst += beta * dst_before: alpha is the output scale (f32), beta the post-op's scale (f32), and
 * oneDNN accumulates in f32 and applies scales and post-ops to the f32 value before the one
 * conversion to dst's type ("General numerical behavior", oneDNN's developer guide). C is D's
 * buffer: for D separate from C, C is copied into D first (the same type: exact), as PyTorch
 * does for addmm. Operands are described by their strides (dnnl_memory_desc_init_by_strides),
 * transposes and leading dimensions included; a batch is the outer dimension, and a batch
 * stride of 0 is oneDNN's broadcast (a dimension of 1). oneDNN refuses strides whose outer
 * stride is smaller than the inner extent, which is the tight batch stride of the BLAS
 * convention (ld * (cols - 1) + rows): such a batch runs as one call per member.
 *
 * The table is probed when the backend opens: every tuple of the candidates below whose
 * primitive oneDNN creates on this CPU (bf16 needs AVX512 at least; f16 AVX512-FP16). The ISA
 * oneDNN dispatches to (ONEDNN_MAX_CPU_ISA may cap it) is in the version line. */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends.h"
#include "gemmcheck/format.h"
#include "text.h"

#ifdef GCK_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>

#define LIBDNNL "libdnnl.so.2"

/* The functions of oneDNN's C API this backend calls, looked up in the loaded library. */
#define DNNL_FUNCTIONS(X)                                                                          \
    X(dnnl_engine_create)                                                                          \
    X(dnnl_engine_destroy)                                                                         \
    X(dnnl_stream_create)                                                                          \
    X(dnnl_stream_destroy)                                                                         \
    X(dnnl_stream_wait)                                                                            \
    X(dnnl_memory_desc_init_by_strides)                                                            \
    X(dnnl_matmul_desc_init)                                                                       \
    X(dnnl_primitive_attr_create)                                                                  \
    X(dnnl_primitive_attr_destroy)                                                                 \
    X(dnnl_primitive_attr_set_output_scales)                                                       \
    X(dnnl_primitive_attr_set_post_ops)                                                            \
    X(dnnl_post_ops_create)                                                                        \
    X(dnnl_post_ops_destroy)                                                                       \
    X(dnnl_post_ops_append_sum)                                                                    \
    X(dnnl_primitive_desc_create)                                                                  \
    X(dnnl_primitive_desc_destroy)                                                                 \
    X(dnnl_primitive_desc_query_md)                                                                \
    X(dnnl_primitive_create)                                                                       \
    X(dnnl_primitive_destroy)                                                                      \
    X(dnnl_primitive_execute)                                                                      \
    X(dnnl_memory_create)                                                                          \
    X(dnnl_memory_destroy)                                                                         \
    X(dnnl_sgemm)                                                                                  \
    X(dnnl_version)                                                                                \
    X(dnnl_get_effective_cpu_isa)

typedef struct onednn_state {
    void *handle;
#define DECLARE(f) __typeof__(f) *f;
    DNNL_FUNCTIONS(DECLARE)
#undef DECLARE
    dnnl_engine_t engine;
    bool sgemm; /* onednn:sgemm */
    gck_support_row rows[8];
    size_t nrows;
    char version[512];
} onednn_state;

/* ---- the support table --------------------------------------------------------------------- */

/* The matmul primitive's candidate tuples: A and B of one type, D (and C, its buffer) of that
 * type or f32. oneDNN 2.6 has no f64 on the CPU. */
static const struct {
    gck_format in, out;
} candidates[] = {
    {GCK_F32, GCK_F32}, {GCK_BF16, GCK_BF16}, {GCK_BF16, GCK_F32},
    {GCK_F16, GCK_F16}, {GCK_F16, GCK_F32},
};
/* The bf16 and f16 dot-product instructions (AVX512-BF16's VDPBF16PS, AMX's TDPBF16PS and
 * TDPFP16PS) read subnormal inputs as zero and flush subnormal results whatever MXCSR says
 * (Intel SDM, vol. 2): the ISAs from avx512_core_bf16 up flush in those types. */
static bool flushing_isa(dnnl_cpu_isa_t isa) {
    return (isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16;
}

static gck_support_row matmul_row(gck_format in, gck_format out, bool flush) {
    bool low = in != GCK_F32;
    return (gck_support_row){
        in,
        in,
        out,
        out,
        GCK_F32,
        {.compute = GCK_F32,
         .input_format = GCK_F32,
         .acc = GCK_ACC_SCALAR,
         .epilogue = GCK_F32,
         .ftz = low && flush,
         .daz = low && flush,
         .orders = GCK_ORDER_ALPHA_ON_SUM | GCK_ORDER_ALPHA_ON_OPERAND | GCK_ORDER_BETA_LAST},
        GCK_PROMISE_BETA0_NO_READ_C | GCK_PROMISE_ROW_MAJOR | GCK_PROMISE_BATCHED |
            GCK_PROMISE_D_SEPARATE | GCK_PROMISE_D_IN_PLACE | GCK_PROMISE_SCALE_F32,
        "dnnl_matmul"};
}

/* dnnl_sgemm: row-major, C is D (BLAS's in-place convention), f32 throughout. */
static const gck_support_row sgemm_row = {
    GCK_F32,
    GCK_F32,
    GCK_F32,
    GCK_F32,
    GCK_F32,
    {.compute = GCK_F32, .input_format = GCK_F32, .acc = GCK_ACC_SCALAR, .epilogue = GCK_F32},
    GCK_PROMISE_ROW_MAJOR | GCK_PROMISE_D_IN_PLACE | GCK_PROMISE_SCALE_F32,
    "dnnl_sgemm"};

static dnnl_status_t plain_md(const onednn_state *s, dnnl_memory_desc_t *md, dnnl_data_type_t t,
                              int64_t d0, int64_t d1, int64_t d2, int64_t s0, int64_t s1,
                              int64_t s2) {
    dnnl_dims_t dims = {d0, d1, d2}, strides = {s0, s1, s2};
    return s->dnnl_memory_desc_init_by_strides(md, 3, dims, t, strides);
}

static dnnl_data_type_t dnnl_type(gck_format f) {
    return f == GCK_BF16 ? dnnl_bf16 : f == GCK_F16 ? dnnl_f16 : dnnl_f32;
}

/* Whether oneDNN creates a matmul primitive for the tuple here (a 2 x 2 x 2 product). */
static bool probe(const onednn_state *s, gck_format fin, gck_format fout) {
    dnnl_data_type_t in = dnnl_type(fin), out = dnnl_type(fout);
    dnnl_memory_desc_t a, b, d;
    dnnl_matmul_desc_t op;
    dnnl_primitive_desc_t pd = NULL;
    bool ok = plain_md(s, &a, in, 1, 2, 2, 4, 2, 1) == dnnl_success &&
              plain_md(s, &b, in, 1, 2, 2, 4, 2, 1) == dnnl_success &&
              plain_md(s, &d, out, 1, 2, 2, 4, 2, 1) == dnnl_success &&
              s->dnnl_matmul_desc_init(&op, &a, &b, NULL, &d) == dnnl_success &&
              s->dnnl_primitive_desc_create(&pd, &op, NULL, s->engine, NULL) == dnnl_success;
    if (pd) s->dnnl_primitive_desc_destroy(pd);
    return ok;
}

/* ---- opening --------------------------------------------------------------------------------- */

static const char *isa_name(dnnl_cpu_isa_t isa) {
    switch (isa) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx512_mic: return "avx512_mic";
    case dnnl_cpu_isa_avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    default: return "other";
    }
}

static void onednn_teardown(void *state) {
    onednn_state *s = state;
    if (!s) return;
    if (s->engine) s->dnnl_engine_destroy(s->engine);
    /* libdnnl stays loaded: its thread pool and JIT caches outlive a dlclose badly */
    free(s);
}

static gck_status load(onednn_state *s, char *msg, size_t len) {
    s->handle = dlopen(LIBDNNL, RTLD_NOW | RTLD_LOCAL);
    if (!s->handle)
        return gck_fail(GCK_EIO, msg, len,
                        "cannot load oneDNN (%s): %s; on Debian: apt-get "
                        "install libdnnl2",
                        LIBDNNL, dlerror());
#define LOOKUP(f)                                                                                  \
    *(void **)&s->f = dlsym(s->handle, #f);                                                        \
    if (!s->f) return gck_fail(GCK_EIO, msg, len, "%s does not export %s", LIBDNNL, #f);
    DNNL_FUNCTIONS(LOOKUP)
#undef LOOKUP
    if (s->dnnl_engine_create(&s->engine, dnnl_cpu, 0) != dnnl_success)
        return gck_fail(GCK_EIO, msg, len, "oneDNN cannot create its CPU engine");
    return GCK_OK;
}

static gck_status onednn_init(void **state, const char *arg, char *msg, size_t len) {
    if (arg && strcmp(arg, "sgemm") != 0)
        return gck_fail(GCK_EINVAL, msg, len,
                        "backend 'onednn' takes no argument or 'sgemm' (got 'onednn:%s')", arg);
    onednn_state *s = calloc(1, sizeof *s);
    if (!s) return gck_fail(GCK_ENOMEM, msg, len, "out of memory for the backend's state");
    gck_status st = load(s, msg, len);
    if (st != GCK_OK) {
        onednn_teardown(s);
        return st;
    }
    s->sgemm = arg != NULL;
    dnnl_cpu_isa_t isa = s->dnnl_get_effective_cpu_isa();
    if (s->sgemm)
        s->rows[s->nrows++] = sgemm_row;
    else
        for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++)
            if (probe(s, candidates[i].in, candidates[i].out))
                s->rows[s->nrows++] =
                    matmul_row(candidates[i].in, candidates[i].out, flushing_isa(isa));
    const dnnl_version_t *v = s->dnnl_version();
    Dl_info info = {0};
    dladdr(*(void **)&s->dnnl_version, &info);
    const char *var = getenv("ONEDNN_MAX_CPU_ISA") ? "ONEDNN_MAX_CPU_ISA" : "DNNL_MAX_CPU_ISA",
               *cap = getenv(var);
    snprintf(s->version, sizeof s->version,
             "oneDNN %d.%d.%d (%.12s), %s, ISA %s%s%s%s%s%s (%.200s)", v->major, v->minor, v->patch,
             v->hash ? v->hash : "?", s->sgemm ? "dnnl_sgemm" : "matmul primitive", isa_name(isa),
             cap ? " (" : "", cap ? var : "", cap ? "=" : "", cap ? cap : "", cap ? ")" : "",
             info.dli_fname ? info.dli_fname : LIBDNNL);
    *state = s;
    return GCK_OK;
}

static bool onednn_available(void *state, char *why, size_t len) {
    (void)state;
    snprintf(why, len, "loaded from %s", LIBDNNL);
    return true;
}

static void onednn_version(void *state, char *buf, size_t len) {
    snprintf(buf, len, "%s", ((onednn_state *)state)->version);
}

static size_t onednn_table(void *state, const gck_support_row **rows) {
    onednn_state *s = state;
    *rows = s->rows;
    return s->nrows;
}

/* ---- calls --------------------------------------------------------------------------------- */

/* The descriptor of op(X) for `members` batch members from `first` on: dims (members or 1 for
 * a broadcast, rows, cols), strides of the logical matrix. */
static dnnl_status_t operand_md(const onednn_state *s, const gck_case *c, gck_operand x,
                                int64_t members, int64_t rows, int64_t cols,
                                dnnl_memory_desc_t *md) {
    int64_t rs, cs, bs = gck_case_stride(c, x);
    gck_case_op_strides(c, x, &rs, &cs);
    bool broadcast = members > 1 && bs == 0;
    int64_t outer =
        broadcast || members == 1 ? (rows * rs > cols * cs ? rows * rs : cols * cs) : bs;
    if (outer < 1) outer = 1;
    return plain_md(s, md, dnnl_type(gck_case_type(c, x)), broadcast ? 1 : members, rows, cols,
                    outer, rs, cs);
}

/* C into D's buffer (same type, element by element through both layouts). */
static void copy_c_to_d(const gck_case *c, const gck_operands *ops) {
    size_t es = (size_t)gck_format_get(c->type_d)->storage_bytes;
    int64_t crs, ccs, drs, dcs;
    gck_case_op_strides(c, GCK_C, &crs, &ccs);
    gck_case_op_strides(c, GCK_D, &drs, &dcs);
    for (int64_t b = 0; b < c->batch; b++)
        for (int64_t i = 0; i < c->m; i++)
            for (int64_t j = 0; j < c->n; j++)
                memcpy((char *)ops->d + (size_t)(b * c->stride_d + i * drs + j * dcs) * es,
                       (const char *)ops->c + (size_t)(b * c->stride_c + i * crs + j * ccs) * es,
                       es);
}

typedef struct call_objects {
    dnnl_primitive_attr_t attr;
    dnnl_post_ops_t post;
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t prim;
    dnnl_memory_t mem[3];
    dnnl_stream_t stream;
} call_objects;

static void release(const onednn_state *s, call_objects *o) {
    for (int i = 0; i < 3; i++)
        if (o->mem[i]) s->dnnl_memory_destroy(o->mem[i]);
    if (o->prim) s->dnnl_primitive_destroy(o->prim);
    if (o->pd) s->dnnl_primitive_desc_destroy(o->pd);
    if (o->post) s->dnnl_post_ops_destroy(o->post);
    if (o->attr) s->dnnl_primitive_attr_destroy(o->attr);
    if (o->stream) s->dnnl_stream_destroy(o->stream);
}

/* A status oneDNN returned: while describing the problem or choosing an implementation
 * (`describing`), a refusal of the case (unimplemented, or strides its descriptors do not
 * take); once the primitive exists, an error. */
static gck_call_status refused(dnnl_status_t st, const char *what, bool describing, char *msg,
                               size_t len) {
    snprintf(msg, len, "oneDNN: %s failed (status %d%s)", what, (int)st,
             st == dnnl_unimplemented       ? ": unimplemented"
             : st == dnnl_invalid_arguments ? ": invalid arguments"
                                            : "");
    return describing && (st == dnnl_unimplemented || st == dnnl_invalid_arguments)
               ? GCK_CALL_NOT_SUPPORTED
               : GCK_CALL_ERROR;
}

/* One matmul over `members` batch members, the operands' first elements given. */
static gck_call_status matmul(const onednn_state *s, const gck_case *c, int64_t members,
                              const void *a, const void *b, void *d, char *msg, size_t len) {
    dnnl_memory_desc_t ma, mb, md;
    dnnl_matmul_desc_t op;
    call_objects o = {0};
    float alpha = (float)c->alpha, beta = (float)c->beta; /* exact: the row's scale promise */
    dnnl_status_t st;
    if ((st = operand_md(s, c, GCK_A, members, c->m, c->k, &ma)) != dnnl_success ||
        (st = operand_md(s, c, GCK_B, members, c->k, c->n, &mb)) != dnnl_success ||
        (st = operand_md(s, c, GCK_D, members, c->m, c->n, &md)) != dnnl_success)
        return refused(st, "dnnl_memory_desc_init_by_strides", true, msg, len);
    if ((st = s->dnnl_matmul_desc_init(&op, &ma, &mb, NULL, &md)) != dnnl_success)
        return refused(st, "dnnl_matmul_desc_init", true, msg, len);
    const char *what = "setting alpha and beta";
    bool describing = false; /* choosing an implementation: a refusal is not an error */
    if ((st = s->dnnl_primitive_attr_create(&o.attr)) != dnnl_success) goto fail;
    if (alpha != 1.0f &&
        (st = s->dnnl_primitive_attr_set_output_scales(o.attr, 1, 0, &alpha)) != dnnl_success)
        goto fail;
    if (beta != 0.0f) {
        if ((st = s->dnnl_post_ops_create(&o.post)) != dnnl_success ||
            (st = s->dnnl_post_ops_append_sum(o.post, beta)) != dnnl_success ||
            (st = s->dnnl_primitive_attr_set_post_ops(o.attr, o.post)) != dnnl_success)
            goto fail;
    }
    what = "dnnl_primitive_desc_create";
    describing = true;
    if ((st = s->dnnl_primitive_desc_create(&o.pd, &op, o.attr, s->engine, NULL)) != dnnl_success)
        goto fail;
    what = "creating the primitive, memories and stream";
    describing = false;
    /* the memories take the descriptors as the primitive descriptor states them (it may
     * normalise the strides of dimensions of size 1; execution wants them equal) */
    const dnnl_memory_desc_t *qa = s->dnnl_primitive_desc_query_md(o.pd, dnnl_query_src_md, 0),
                             *qb = s->dnnl_primitive_desc_query_md(o.pd, dnnl_query_weights_md, 0),
                             *qd = s->dnnl_primitive_desc_query_md(o.pd, dnnl_query_dst_md, 0);
    if (!qa || !qb || !qd) {
        st = dnnl_runtime_error;
        goto fail;
    }
    if ((st = s->dnnl_primitive_create(&o.prim, o.pd)) != dnnl_success ||
        (st = s->dnnl_memory_create(&o.mem[0], qa, s->engine, (void *)a)) != dnnl_success ||
        (st = s->dnnl_memory_create(&o.mem[1], qb, s->engine, (void *)b)) != dnnl_success ||
        (st = s->dnnl_memory_create(&o.mem[2], qd, s->engine, d)) != dnnl_success ||
        (st = s->dnnl_stream_create(&o.stream, s->engine, dnnl_stream_default_flags)) !=
            dnnl_success)
        goto fail;
    dnnl_exec_arg_t args[3] = {
        {DNNL_ARG_SRC, o.mem[0]}, {DNNL_ARG_WEIGHTS, o.mem[1]}, {DNNL_ARG_DST, o.mem[2]}};
    what = "dnnl_primitive_execute";
    if ((st = s->dnnl_primitive_execute(o.prim, o.stream, 3, args)) != dnnl_success ||
        (st = s->dnnl_stream_wait(o.stream)) != dnnl_success)
        goto fail;
    release(s, &o);
    return GCK_CALL_OK;
fail:
    release(s, &o);
    return refused(st, what, describing, msg, len);
}

static gck_call_status call_matmul(const onednn_state *s, const gck_case *c,
                                   const gck_operands *ops, char *msg, size_t len) {
    if (c->beta != 0 && !c->d_is_c) copy_c_to_d(c, ops);
    if (c->m == 0 || c->n == 0) return GCK_CALL_OK; /* nothing to write */
    gck_call_status st = matmul(s, c, c->batch, ops->a, ops->b, ops->d, msg, len);
    if (st != GCK_CALL_NOT_SUPPORTED || c->batch == 1) return st;
    /* strides oneDNN's descriptors refuse (a tight batch stride): one call per member */
    size_t ea = (size_t)gck_format_get(c->type_a)->storage_bytes,
           eb = (size_t)gck_format_get(c->type_b)->storage_bytes,
           ed = (size_t)gck_format_get(c->type_d)->storage_bytes;
    for (int64_t b = 0; b < c->batch && st != GCK_CALL_ERROR; b++) {
        st = matmul(s, c, 1, (const char *)ops->a + (size_t)(b * c->stride_a) * ea,
                    (const char *)ops->b + (size_t)(b * c->stride_b) * eb,
                    (char *)ops->d + (size_t)(b * gck_case_stride(c, GCK_D)) * ed, msg, len);
        if (st != GCK_CALL_OK) return st;
    }
    return st;
}

/* dnnl_sgemm is row-major: a column-major case is its transpose, D^T = op(B)^T op(A)^T. */
static gck_call_status call_sgemm(const onednn_state *s, const gck_case *c, const gck_operands *ops,
                                  char *msg, size_t len) {
    char ta = c->transa == GCK_OP_T ? 'T' : 'N', tb = c->transb == GCK_OP_T ? 'T' : 'N';
    dnnl_status_t st;
    if (c->order == GCK_ROW_MAJOR)
        st = s->dnnl_sgemm(ta, tb, c->m, c->n, c->k, (float)c->alpha, ops->a, c->lda, ops->b,
                           c->ldb, (float)c->beta, ops->d, c->ldc);
    else
        st = s->dnnl_sgemm(tb, ta, c->n, c->m, c->k, (float)c->alpha, ops->b, c->ldb, ops->a,
                           c->lda, (float)c->beta, ops->d, c->ldc);
    return st == dnnl_success ? GCK_CALL_OK : refused(st, "dnnl_sgemm", false, msg, len);
}

static gck_call_status onednn_call(void *state, const gck_case *c, const gck_support_row *row,
                                   const gck_operands *ops, char *msg, size_t len) {
    (void)row;
    const onednn_state *s = state;
    return s->sgemm ? call_sgemm(s, c, ops, msg, len) : call_matmul(s, c, ops, msg, len);
}

const gck_backend_ops *gck_onednn_backend_ops(void) {
    static const gck_backend_ops ops = {"onednn",         onednn_init,    onednn_teardown,
                                        onednn_available, onednn_version, onednn_table,
                                        onednn_call};
    return &ops;
}

#else /* built without oneDNN's headers */

static gck_status onednn_init(void **state, const char *arg, char *msg, size_t len) {
    (void)arg;
    *state = NULL;
    snprintf(msg, len, "gemmcheck was built without oneDNN's headers (Debian: libdnnl-dev)");
    return GCK_EIO;
}

const gck_backend_ops *gck_onednn_backend_ops(void) {
    static const gck_backend_ops ops = {"onednn", onednn_init, NULL, NULL, NULL, NULL, NULL};
    return &ops;
}
#endif
