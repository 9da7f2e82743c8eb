/* Synthetic "upgrades": test backends whose arithmetic is known by construction, loaded as a
 * plugin (plugin:/path/libgck_upgrade.so:NAME), so that `gemmcheck compare` can be shown to
 * label each change correctly. Every kind has one f32 row (column-major, D separate or in
 * place) and is the reference GEMM (sequential k, FMA, alpha on the sum, beta*C last) but for
 * what its name says:
 *   base           that reference (the "before" of every pair but kc384's)
 *   tf32           A and B rounded to 11 significant bits before the products (declared: a
 *                  precision change, no finding)
 *   splitk-bf16    K split in two halves whose partial sums are rounded to bf16 (declared as
 *                  plain f32: beyond the bound)
 *   kc256, kc384   the k sum in blocks of 256 / 384 terms added in turn (a changed KC)
 *   threads        K split in as many contiguous parts as OMP_NUM_THREADS says (1 when
 *                  unset), each summed from 0 and added in turn
 *   beta-c-bf16    with beta = 1, C read as if it were bf16 (rounded to 8 bits)
 *   transpose-wrong with op(A) = A^T, the sign of alpha lost: wrong for every input
 *   size-wrong     with M = 17, D(0,0) off by 1%: right for every other size
 *   truncating     every operation rounded toward zero (a truncating accumulator)
 *   ftz            the x86 flush-to-zero and denormals-are-zero modes on (MXCSR; declared)
 *   block-fma8     products summed exactly in blocks of 8 and each block added to the
 *                  accumulator with one rounding (a block FMA, as tensor cores; declared)
 *   tile-tc        the base below 64 rows or 64 columns; at least 64 of both, what a GPU
 *                  library's tensor-core tiles do: A and B rounded to 11 bits, block-fma8's
 *                  blocks, each block's addition rounded toward zero (declared: TF32 inputs,
 *                  blocks of 8, faithful rounding)
 *   edge-trunc     the base, but rows 100 and beyond of a column-major product without
 *                  transposes computed with every operation rounded toward zero (an edge
 *                  kernel of other arithmetic, as a library's remainder tiles; declared:
 *                  faithful rounding)
 *   fast-tf32      tf32's arithmetic on a row whose compute type is named tf32, as cuBLAS's
 *                  CUBLAS_COMPUTE_32F_FAST_TF32 rows are: the sum is wider than the type named */
#include <fenv.h>
#include <immintrin.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemmcheck/backend.h"
#include "gemmcheck/format.h"
#include "gemmcheck/refgemm.h"

typedef enum change {
    BASE,
    TF32,
    SPLITK_BF16,
    KC256,
    KC384,
    THREADS,
    BETA_C_BF16,
    TRANSPOSE_WRONG,
    SIZE_WRONG,
    TRUNCATING,
    BLOCK_FMA8,
    FTZ,
    TILE_TC,
    EDGE_TRUNC,
    FAST_TF32
} change;

static const char *const names[] = {"base",       "tf32",       "splitk-bf16", "kc256",
                                    "kc384",      "threads",    "beta-c-bf16", "transpose-wrong",
                                    "size-wrong", "truncating", "block-fma8",  "ftz",
                                    "tile-tc",    "edge-trunc", "fast-tf32"};
static change kind;

typedef struct up_state {
    gck_support_row row;
} up_state;

/* The reference evaluation, with the k sum in blocks of `block` terms (0: sequential), each
 * summed from 0 and added in turn, alpha on the total. */
static gck_ref_model model(int block) {
    gck_ref_model m = gck_ref_model_default(GCK_F32);
    m.fma = true;
    if (block) m.sum = GCK_REF_SUM_BLOCKED, m.group = block;
    return m;
}

static gck_status u_init(void **state, const char *arg, char *msg, size_t len) {
    (void)arg;
    up_state *s = calloc(1, sizeof *s);
    if (!s) return snprintf(msg, len, "out of memory"), GCK_ENOMEM;
    gck_ref_model rm = model(0);
    gck_model m = gck_ref_model_declared(&rm);
    if (kind == BLOCK_FMA8) m.acc = GCK_ACC_BLOCK_FMA, m.block = 8;
    if (kind == FTZ) m.ftz = m.daz = true;
    if (kind == TF32 || kind == FAST_TF32) /* declared */
        m.inputs_rounded = true, m.input_format = GCK_TF32;
    if (kind == TILE_TC)
        m.inputs_rounded = true, m.input_format = GCK_TF32, m.acc = GCK_ACC_BLOCK_FMA, m.block = 8,
        m.rounding = GCK_ROUND_FAITHFUL;
    if (kind == EDGE_TRUNC) m.rounding = GCK_ROUND_FAITHFUL;
    s->row = (gck_support_row){GCK_F32,
                               GCK_F32,
                               GCK_F32,
                               GCK_F32,
                               kind == FAST_TF32 ? GCK_TF32 : GCK_F32,
                               m,
                               GCK_PROMISE_ALPHA0_NO_READ_AB | GCK_PROMISE_BETA0_NO_READ_C |
                                   GCK_PROMISE_D_SEPARATE | GCK_PROMISE_D_IN_PLACE |
                                   GCK_PROMISE_SCALE_F32,
                               "upgrade pair"};
    *state = s;
    return GCK_OK;
}

static void u_teardown(void *state) { free(state); }

static bool u_available(void *state, char *why, size_t len) {
    (void)state;
    snprintf(why, len, "upgrade pair '%s'", names[kind]);
    return true;
}

static void u_version(void *state, char *buf, size_t len) {
    (void)state;
    snprintf(buf, len, "synthetic upgrade '%s' over the reference GEMM", names[kind]);
}

static size_t u_table(void *state, const gck_support_row **rows) {
    *rows = &((up_state *)state)->row;
    return 1;
}

/* A copy of the f32 operand x (count elements) with every value rounded to f. */
static float *rounded(const void *x, int64_t count, gck_format f) {
    float *y = malloc((size_t)(count > 0 ? count : 1) * sizeof *y);
    for (int64_t e = 0; y && e < count; e++) y[e] = (float)gck_round_to(((const float *)x)[e], f);
    return y;
}

/* Two halves of K, each summed by the reference and rounded to bf16, added in f32 in the
 * epilogue: D = alpha*(round_bf16(S1) + round_bf16(S2)) + beta*C (column-major, batch 1). */
static gck_status split_bf16(const gck_case *c, const gck_operands *o, char *msg, size_t len) {
    gck_case h = *c;
    int64_t m = c->m, n = c->n, k1 = c->k / 2, at = c->transa == GCK_OP_T ? 1 : c->lda;
    int64_t bt = c->transb == GCK_OP_T ? c->ldb : 1;
    float *s = calloc((size_t)(2 * m * n), sizeof *s);
    gck_ref_model rm = model(0);
    h.alpha = 1, h.beta = 0, h.ldc = h.ldd = m, h.d_is_c = false;
    h.k = k1;
    gck_status st = s ? gck_ref_gemm(&h, &rm, o->a, o->b, NULL, s, msg, len) : GCK_ENOMEM;
    h.k = c->k - k1;
    if (st == GCK_OK)
        st = gck_ref_gemm(&h, &rm, (const float *)o->a + k1 * at, (const float *)o->b + k1 * bt,
                          NULL, s + m * n, msg, len);
    for (int64_t j = 0; st == GCK_OK && j < n; j++)
        for (int64_t i = 0; i < m; i++) {
            float p = (float)gck_round_to(s[i + j * m], GCK_BF16) +
                      (float)gck_round_to(s[m * n + i + j * m], GCK_BF16);
            float t = (float)c->alpha * p;
            if (c->beta != 0) t += (float)c->beta * ((const float *)o->c)[i + j * c->ldc];
            ((float *)o->d)[i + j * c->ldd] = t;
        }
    free(s);
    return st;
}

/* Blocks of 8 products summed exactly (in binary64: exact for the probes' values, within
 * binary64's rounding otherwise) and added to the f32 accumulator with one rounding; D =
 * alpha*acc + beta*C in f32 (column-major, batch 1). */
static void block_fma8(const gck_case *c, const gck_operands *o) {
    const float *A = o->a, *B = o->b, *C = o->c;
    float *D = o->d;
    for (int64_t j = 0; j < c->n; j++)
        for (int64_t i = 0; i < c->m; i++) {
            float acc = 0;
            for (int64_t k0 = 0; k0 < c->k; k0 += 8) {
                double s = acc;
                for (int64_t k = k0; k < k0 + 8 && k < c->k; k++) {
                    double a = c->transa == GCK_OP_T ? A[k + i * c->lda] : A[i + k * c->lda];
                    double b = c->transb == GCK_OP_T ? B[j + k * c->ldb] : B[k + j * c->ldb];
                    s += a * b;
                }
                acc = (float)s;
            }
            float t = c->k && c->alpha != 0 ? (float)c->alpha * acc : 0;
            if (c->beta != 0) t += (float)c->beta * C[i + j * c->ldc];
            D[i + j * c->ldd] = t;
        }
}

/* The base evaluation in the hardware's float arithmetic, under the rounding and MXCSR modes in
 * force (gck_ref_gemm computes in gemmcheck's environment whatever its caller's): the first
 * product rounded alone, then one FMA per term, D = round(alpha*S) + round(beta*C) in f32
 * (column-major, batch 1). */
static void float_loop(const gck_case *c, const gck_operands *o) {
    const float *A = o->a, *B = o->b, *C = o->c;
    float *D = o->d, alpha = (float)c->alpha, beta = (float)c->beta;
    for (int64_t j = 0; j < c->n; j++)
        for (int64_t i = 0; i < c->m; i++) {
            float acc = 0;
            for (int64_t k = 0; alpha != 0 && k < c->k; k++) {
                float a = c->transa == GCK_OP_T ? A[k + i * c->lda] : A[i + k * c->lda];
                float b = c->transb == GCK_OP_T ? B[j + k * c->ldb] : B[k + j * c->ldb];
                acc = k == 0 ? a * b : fmaf(a, b, acc);
            }
            float t = c->k && alpha != 0 ? alpha * acc : 0;
            if (beta != 0) t += beta * C[i + j * c->ldc];
            D[i + j * c->ldd] = t;
        }
}

static gck_call_status u_call(void *state, const gck_case *c, const gck_support_row *row,
                              const gck_operands *o, char *msg, size_t len) {
    (void)state, (void)row;
    if (c->order != GCK_COL_MAJOR || c->batch != 1)
        return snprintf(msg, len, "column-major, one matrix only"), GCK_CALL_NOT_SUPPORTED;
    const char *env = getenv("OMP_NUM_THREADS");
    int threads = env && atoi(env) > 1 ? atoi(env) : 1;
    int64_t part = (c->k + threads - 1) / threads; /* one contiguous part of K per thread */
    gck_ref_model rm = model(kind == KC256     ? 256
                             : kind == KC384   ? 384
                             : kind == THREADS ? (int)(threads > 1 && c->k >= 64 ? part : 0)
                                               : 0);
    gck_case cc = *c;
    const void *a = o->a, *b = o->b, *cv = o->c;
    float *ra = NULL, *rb = NULL, *rc = NULL;
    bool tile = kind == TILE_TC && c->m >= 64 && c->n >= 64,
         tf32_inputs = kind == TF32 || kind == FAST_TF32 || tile;
    if (tf32_inputs) {
        a = ra = rounded(o->a, gck_case_extent(c, GCK_A), GCK_TF32);
        b = rb = rounded(o->b, gck_case_extent(c, GCK_B), GCK_TF32);
    }
    if (kind == BETA_C_BF16 && c->beta == 1 && c->d_is_c) /* in place: C is D's to overwrite */
        for (int64_t j = 0; j < c->n; j++) /* the elements only: the padding is no one's */
            for (int64_t i = 0; i < c->m; i++) {
                float *x = (float *)o->c + i + j * c->ldc;
                *x = (float)gck_round_to(*x, GCK_BF16);
            }
    else if (kind == BETA_C_BF16 && c->beta == 1)
        cv = rc = rounded(o->c, gck_case_extent(c, GCK_C), GCK_BF16);
    if ((tf32_inputs && (!ra || !rb)) || (cv == NULL && o->c != NULL)) {
        free(ra), free(rb), free(rc);
        snprintf(msg, len, "out of memory for the rounded operands");
        return GCK_CALL_ERROR; /* what a library does when its memory runs out */
    }
    if (kind == TRANSPOSE_WRONG && c->transa == GCK_OP_T) cc.alpha = -c->alpha;
    if (kind == EDGE_TRUNC && c->transa == GCK_OP_N && c->transb == GCK_OP_N && c->m > 100) {
        float_loop(c, o);
        gck_case edge = *c;
        gck_operands rest = *o;
        edge.m = c->m - 100;
        rest.a = (const float *)o->a + 100, rest.c = o->c ? (const float *)o->c + 100 : NULL;
        rest.d = (float *)o->d + 100;
        fesetround(FE_TOWARDZERO);
        float_loop(&edge, &rest);
        fesetround(FE_TONEAREST);
        return GCK_CALL_OK;
    }
    if (kind == TRUNCATING || tile) fesetround(FE_TOWARDZERO);
    unsigned csr = _mm_getcsr();
    if (kind == FTZ) _mm_setcsr(csr | 0x8040); /* FTZ (bit 15) and DAZ (bit 6) */
    if (kind == BLOCK_FMA8 || kind == TRUNCATING || kind == FTZ || tile) {
        gck_operands rounded_ab = *o;
        rounded_ab.a = a, rounded_ab.b = b;
        if (kind == BLOCK_FMA8 || tile)
            block_fma8(c, &rounded_ab);
        else
            float_loop(c, o);
        fesetround(FE_TONEAREST);
        _mm_setcsr(csr);
        free(ra), free(rb), free(rc);
        return GCK_CALL_OK;
    }
    gck_status st = kind == SPLITK_BF16 && c->k >= 2 && c->alpha != 0 && c->m > 0 && c->n > 0
                        ? split_bf16(c, o, msg, len)
                        : gck_ref_gemm(&cc, &rm, a, b, cv, o->d, msg, len);
    fesetround(FE_TONEAREST);
    _mm_setcsr(csr);
    if (st == GCK_OK && kind == SIZE_WRONG && c->m == 17 && c->n > 0)
        ((float *)o->d)[0] = ((float *)o->d)[0] * 1.01f + 0.01f;
    free(ra);
    free(rb);
    free(rc);
    return st == GCK_OK ? GCK_CALL_OK : GCK_CALL_ERROR;
}

GCK_PLUGIN_ABI_DECLARE
const gck_backend_ops *gemmcheck_backend_plugin(const char *name);
const gck_backend_ops *gemmcheck_backend_plugin(const char *name) {
    static const gck_backend_ops ops = {"upgrade", u_init,  u_teardown, u_available,
                                        u_version, u_table, u_call};
    for (size_t i = 0; name && i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(name, names[i])) {
            kind = (change)i;
            return &ops;
        }
    return NULL;
}
