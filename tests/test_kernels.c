/* gemmcheck's own GEMM (kernels/): every path gives exactly the bits of its declared model (the
 * reference GEMM with FMA, inputs rounded to the compute type, alpha and beta in it), on any
 * thread count; BLAS semantics; invalid arguments named and nothing touched; paths reported. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemmcheck/gemmcheck.h"
#include "grid.h"
#include "testutil.h"

/* The reference evaluation gck_gemm declares for a compute type. */
static gck_ref_model declared_evaluation(gck_format compute) {
    gck_ref_model r = gck_ref_model_default(compute);
    r.fma = true;
    r.scale_compute = compute;
    return r;
}

/* Operands of a spec, filled with its values; D is a copy of C when computed in place, else
 * filled with a pattern so that an element the GEMM must not touch is seen. */
typedef struct operands {
    void *a, *b, *c, *d;
    size_t dbytes;
} operands;

static void *filled(const gck_spec *s, gck_operand x, size_t *bytes) {
    const gck_case *c = &s->c;
    int64_t n = gck_case_extent(c, x);
    size_t es = (size_t)gck_format_get(gck_case_type(c, x))->storage_bytes;
    *bytes = (size_t)(n > 0 ? n : 1) * es;
    void *p = malloc(*bytes);
    cr_assert_not_null(p);
    memset(p, 0x5a, *bytes);
    if (x != GCK_D) gck_spec_fill(s, x, p);
    return p;
}

static void make(const gck_spec *s, operands *o) {
    size_t bytes;
    o->a = filled(s, GCK_A, &bytes);
    o->b = filled(s, GCK_B, &bytes);
    o->c = filled(s, GCK_C, &bytes);
    if (s->c.d_is_c) {
        o->d = malloc(bytes);
        cr_assert_not_null(o->d);
        memcpy(o->d, o->c, bytes);
        o->dbytes = bytes;
    } else {
        o->d = filled(s, GCK_D, &o->dbytes);
    }
}

static void release(operands *o) {
    free(o->a);
    free(o->b);
    free(o->c);
    free(o->d);
}

/* One spec on a path and thread count against the reference model: returns elements compared
 * (0 when D differs, with the spec reported). */
static int64_t compare(const gck_spec *s, gck_kpath path, int threads) {
    const gck_case *c = &s->c;
    operands got, want;
    make(s, &got);
    make(s, &want);
    gck_gemm_config cfg = {.threads = threads, .path = path};
    char msg[512];
    gck_gemm_arg r =
        gck_gemm(c, got.a, got.b, c->d_is_c ? got.d : got.c, got.d, &cfg, msg, sizeof msg);
    char repro[2048];
    gck_spec_format(s, repro, sizeof repro);
    cr_assert_eq(r, GCK_GEMM_OK, "%s: %s (%s)", repro, gck_gemm_arg_name(r), msg);
    gck_ref_model m = declared_evaluation(c->compute);
    cr_assert_eq(
        gck_ref_gemm(c, &m, want.a, want.b, c->d_is_c ? want.d : want.c, want.d, msg, sizeof msg),
        GCK_OK, "%s", msg);
    /* every element of D's extent, padding included: the same bits (a NaN's payload aside) */
    gck_format td = gck_case_type(c, GCK_D);
    int64_t n = gck_case_extent(c, GCK_D), differ = 0, first = -1;
    for (int64_t e = 0; e < n; e++)
        if (!same_value(gck_load(got.d, td, e), gck_load(want.d, td, e))) {
            if (first < 0) first = e;
            differ++;
        }
    cr_expect_eq(differ, 0,
                 "path %s, %d threads: %lld elements of D differ from the declared model, first "
                 "at %lld: %a vs %a: %s",
                 gck_kpath_name(path), threads, (long long)differ, (long long)first,
                 first >= 0 ? gck_load(got.d, td, first) : 0.0,
                 first >= 0 ? gck_load(want.d, td, first) : 0.0, repro);
    release(&got);
    release(&want);
    return differ ? 0 : c->m * c->n * c->batch;
}

#ifdef GCK_TEST_SANITIZED
#define BIT_CASES 1000 /* the sanitizers look for memory errors: a third keeps CI short */
#else
#define BIT_CASES 3000
#endif

/* Every supported path, 1 and 2 threads, over the grid of specs of the kernels backend's
 * table (every type tuple, shapes 0/1/edges/tall/long-K, layouts, transposes, lds, offsets,
 * batches, special values), bit for bit against gck_ref_gemm with the declared model. */
Test(kernels, every_path_gives_the_bits_of_its_declared_model, .timeout = 1200) {
    gck_backend be;
    char msg[512];
    cr_assert_eq(gck_backend_open(&be, "kernels", msg, sizeof msg), GCK_OK, "%s", msg);
    const gck_support_row *rows;
    size_t nrows = be.ops->table(be.state, &rows);
    for (int p = GCK_KPATH_AUTO + 1; p < GCK_KPATH_COUNT; p++) {
        char why[256];
        if (!gck_kpath_supported((gck_kpath)p, why, sizeof why)) {
            printf("[kernels] path %s not supported here: %s\n", gck_kpath_name((gck_kpath)p), why);
            continue;
        }
        int64_t elements = 0, cases = 0;
        for (uint64_t i = 0; i < BIT_CASES; i++) {
            gck_spec s;
            grid_spec(i, rows, nrows, &s);
            const gck_case *c = &s.c;
            if ((double)c->m * (double)c->n * (double)c->k * (double)c->batch > 4e6) continue;
            elements += compare(&s, (gck_kpath)p, 1 + (int)(i % 2));
            cases++;
        }
        printf("[kernels] path %s: %lld cases, %lld elements bit-identical to the declared "
               "model\n",
               gck_kpath_name((gck_kpath)p), (long long)cases, (long long)elements);
        cr_expect_gt(cases, BIT_CASES * 5 / 6);
    }
    gck_backend_close(&be);
}

static bool same_model(const gck_model *a, const gck_model *b) {
    return a->compute == b->compute && a->inputs_rounded == b->inputs_rounded &&
           a->input_format == b->input_format && a->acc == b->acc && a->block == b->block &&
           a->epilogue == b->epilogue && a->orders == b->orders && a->ftz == b->ftz &&
           a->daz == b->daz;
}

/* The backend's rows declare gck_gemm_model of their compute type, which is the declared
 * evaluation's model. */
Test(kernels, the_backend_declares_the_model_it_computes) {
    gck_backend be;
    char msg[512];
    cr_assert_eq(gck_backend_open(&be, "kernels", msg, sizeof msg), GCK_OK, "%s", msg);
    const gck_support_row *rows;
    size_t n = be.ops->table(be.state, &rows);
    cr_expect_eq(n, 512);
    for (size_t r = 0; r < n; r++) {
        gck_ref_model e = declared_evaluation(rows[r].compute);
        gck_model want = gck_ref_model_declared(&e), api = gck_gemm_model(rows[r].compute);
        const gck_model *got = &rows[r].model;
        cr_expect(same_model(got, &want), "row %zu", r);
        cr_expect(same_model(&api, &want), "row %zu", r);
    }
    gck_backend_close(&be);
}

static gck_case small_case(void) {
    gck_case c;
    gck_case_init(&c, 3, 2, 4);
    c.type_a = c.type_b = c.type_c = c.type_d = c.compute = GCK_F32;
    c.alpha = 1;
    c.beta = 0.5;
    c.scale_type = GCK_F32;
    c.d_is_c = false;
    return c;
}

/* Each invalid argument is named by its code and its message, and D is left untouched. */
Test(kernels, invalid_arguments_are_named_and_nothing_is_written) {
    float a[16] = {0}, b[16] = {0}, cc[16] = {0}, d[16];
    struct {
        const char *what;
        gck_gemm_arg want;
        const char *text;
    } t[] = {
        {"m", GCK_GEMM_ARG_M, "M (-1)"},
        {"lda", GCK_GEMM_ARG_LDA, "lda (2)"},
        {"ldb", GCK_GEMM_ARG_LDB, "ldb (3)"},
        {"ldc", GCK_GEMM_ARG_LDC, "ldc (1)"},
        {"ldd", GCK_GEMM_ARG_LDD, "ldd (1)"},
        {"type_a", GCK_GEMM_ARG_TYPE_A, "type_a"},
        {"compute", GCK_GEMM_ARG_COMPUTE, "f16"},
        {"alpha", GCK_GEMM_ARG_ALPHA, "alpha"},
        {"batch", GCK_GEMM_ARG_BATCH, "batch (0)"},
        {"order", GCK_GEMM_ARG_ORDER, "order"},
        {"A", GCK_GEMM_ARG_A, "A is NULL"},
        {"C", GCK_GEMM_ARG_C, "C is NULL"},
        {"D", GCK_GEMM_ARG_D, "D must be C"},
        {"threads", GCK_GEMM_ARG_THREADS, "threads"},
        {"path", GCK_GEMM_ARG_PATH, "path"},
        {"stride_d", GCK_GEMM_ARG_STRIDE_D, "stride_d"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        gck_case c = small_case();
        const void *A = a, *C = cc;
        void *D = d;
        gck_gemm_config cfg = {0, GCK_KPATH_AUTO};
        const char *w = t[i].what;
        if (!strcmp(w, "m")) c.m = -1;
        if (!strcmp(w, "lda")) c.lda = 2;
        if (!strcmp(w, "ldb")) c.ldb = 3;
        if (!strcmp(w, "ldc")) c.ldc = 1;
        if (!strcmp(w, "ldd")) c.ldd = 1;
        if (!strcmp(w, "type_a")) c.type_a = GCK_TF32;
        if (!strcmp(w, "compute")) c.compute = GCK_F16;
        if (!strcmp(w, "alpha")) c.alpha = NAN;
        if (!strcmp(w, "batch")) c.batch = 0;
        if (!strcmp(w, "order")) c.order = (gck_order)7;
        if (!strcmp(w, "A")) A = NULL;
        if (!strcmp(w, "C")) C = NULL;
        if (!strcmp(w, "D")) {
            c.d_is_c = true;
            c.ldd = c.ldc;
        }
        if (!strcmp(w, "threads")) cfg.threads = -1;
        if (!strcmp(w, "path")) cfg.path = (gck_kpath)99;
        if (!strcmp(w, "stride_d")) {
            c.batch = 2;
            c.stride_a = c.stride_b = c.stride_c = 0;
            c.stride_d = 1;
        }
        memset(d, 0x77, sizeof d);
        char msg[256] = "";
        gck_gemm_arg r = gck_gemm(&c, A, b, C, D, &cfg, msg, sizeof msg);
        cr_expect_eq(r, t[i].want, "%s: got %s (%s)", w, gck_gemm_arg_name(r), msg);
        cr_expect(strstr(msg, t[i].text) != NULL, "%s: '%s' lacks '%s'", w, msg, t[i].text);
        unsigned char *p = (unsigned char *)d;
        for (size_t k = 0; k < sizeof d; k++) cr_expect_eq(p[k], 0x77, "%s wrote D", w);
    }
}

/* beta = 0 does not read C (NaN there stays out of D), alpha = 0 and K = 0 do not read A and B
 * (NULL accepted), M or N = 0 returns at once with NULL operands. */
Test(kernels, blas_semantics) {
    gck_case c = small_case();
    float a[12], b[8], cc[6], d[6];
    for (int i = 0; i < 12; i++) a[i] = (float)(i + 1);
    for (int i = 0; i < 8; i++) b[i] = (float)(i % 3);
    for (int i = 0; i < 6; i++) cc[i] = NAN;
    c.beta = 0;
    cr_assert_eq(gck_gemm(&c, a, b, cc, d, NULL, NULL, 0), GCK_GEMM_OK);
    for (int i = 0; i < 6; i++) cr_expect(isfinite(d[i]), "D[%d] = %g", i, d[i]);
    c.beta = 0.5;
    c.alpha = 0;
    for (int i = 0; i < 6; i++) cc[i] = (float)i;
    cr_assert_eq(gck_gemm(&c, NULL, NULL, cc, d, NULL, NULL, 0), GCK_GEMM_OK);
    for (int i = 0; i < 6; i++) cr_expect_eq(d[i], 0.5f * (float)i);
    c.alpha = 1;
    c.k = 0;
    cr_assert_eq(gck_gemm(&c, NULL, NULL, cc, d, NULL, NULL, 0), GCK_GEMM_OK);
    for (int i = 0; i < 6; i++) cr_expect_eq(d[i], 0.5f * (float)i);
    c.k = 4;
    c.m = 0;
    c.lda = c.ldc = c.ldd = 1;
    cr_expect_eq(gck_gemm(&c, NULL, NULL, NULL, NULL, NULL, NULL, 0), GCK_GEMM_OK);
}

/* Paths: the portable one everywhere, an unknown one refused with the reason, and the
 * environment variable steering the automatic choice. */
Test(kernels, paths_are_reported) {
    char why[256] = "";
    cr_expect(gck_kpath_supported(GCK_KPATH_PORTABLE, why, sizeof why));
    cr_expect(!gck_kpath_supported((gck_kpath)99, why, sizeof why));
    cr_expect(strstr(why, "does not exist") != NULL, "%s", why);
    gck_kpath p;
    cr_expect(gck_kpath_parse("portable", &p) && p == GCK_KPATH_PORTABLE);
    cr_expect(!gck_kpath_parse("avx9000", &p));
    cr_assert_eq(setenv("GEMMCHECK_KERNELS_PATH", "portable", 1), 0);
    cr_expect_eq(gck_kpath_auto(), GCK_KPATH_PORTABLE);
    unsetenv("GEMMCHECK_KERNELS_PATH");
}
