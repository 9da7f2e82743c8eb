/* The `ref` backend: the reference GEMMs of refimpl/, for every type tuple. */
#include <stdio.h>
#include <stdlib.h>

#include "backends.h"
#include "gemmcheck/refgemm.h"
#include "gemmcheck/version.h"

/* The support table, as data: every tuple of f16, bf16, f32 and f64 for A, B, C and D with f32
 * and f64 compute, and the narrow compute types for the inputs they are made for (f16 x f16 in
 * f16, bf16 x bf16 in bf16, f32 x f32 in tf32). Each row declares the model of
 * gck_ref_model_default for its compute type, as gck_ref_model_declared maps it (a test checks
 * the two agree): inputs rounded, no FMA, k ascending, alpha on the sum, beta*c last, epilogue in
 * f64 for f64 compute and f32 otherwise. */
#define REF_PROMISES                                                                               \
    (GCK_PROMISE_ALPHA0_NO_READ_AB | GCK_PROMISE_BETA0_NO_READ_C | GCK_PROMISE_ROW_MAJOR |         \
     GCK_PROMISE_BATCHED | GCK_PROMISE_D_SEPARATE | GCK_PROMISE_D_IN_PLACE |                       \
     GCK_PROMISE_SCALE_F32 | GCK_PROMISE_SCALE_F64)
#define REF_ROW(a, b, c, d, k)                                                                     \
    {GCK_##a,                                                                                      \
     GCK_##b,                                                                                      \
     GCK_##c,                                                                                      \
     GCK_##d,                                                                                      \
     GCK_##k,                                                                                      \
     {.compute = GCK_##k,                                                                          \
      .inputs_rounded = true,                                                                      \
      .input_format = GCK_##k,                                                                     \
      .acc = GCK_ACC_SCALAR,                                                                       \
      .epilogue = GCK_##k == GCK_F64 ? GCK_F64 : GCK_F32,                                          \
      .orders = GCK_ORDER_ALPHA_ON_SUM | GCK_ORDER_BETA_LAST},                                     \
     REF_PROMISES,                                                                                 \
     "gck_ref_gemm"},
/* the rows of one tuple: f32 and f64 compute, then the narrow one if any (NARROW_x) */
#define NARROW_NONE(a, b, c, d)
#define NARROW_F16(a, b, c, d)  REF_ROW(a, b, c, d, F16)
#define NARROW_BF16(a, b, c, d) REF_ROW(a, b, c, d, BF16)
#define NARROW_TF32(a, b, c, d) REF_ROW(a, b, c, d, TF32)
#define REF_TUPLE(a, b, c, d, narrow)                                                              \
    REF_ROW(a, b, c, d, F32) REF_ROW(a, b, c, d, F64) narrow(a, b, c, d)
#define REF_D(a, b, c, narrow)                                                                     \
    REF_TUPLE(a, b, c, F16, narrow)                                                                \
    REF_TUPLE(a, b, c, BF16, narrow) REF_TUPLE(a, b, c, F32, narrow) REF_TUPLE(a, b, c, F64, narrow)
#define REF_CD(a, b, narrow)                                                                       \
    REF_D(a, b, F16, narrow)                                                                       \
    REF_D(a, b, BF16, narrow) REF_D(a, b, F32, narrow) REF_D(a, b, F64, narrow)

/* each (A, B) pair with its narrow compute type */
// clang-format off
static const gck_support_row ref_rows[] = {
    REF_CD(F16,  F16,  NARROW_F16) REF_CD(F16,  BF16, NARROW_NONE)
    REF_CD(F16,  F32,  NARROW_NONE) REF_CD(F16,  F64,  NARROW_NONE)
    REF_CD(BF16, F16,  NARROW_NONE) REF_CD(BF16, BF16, NARROW_BF16)
    REF_CD(BF16, F32,  NARROW_NONE) REF_CD(BF16, F64,  NARROW_NONE)
    REF_CD(F32,  F16,  NARROW_NONE) REF_CD(F32,  BF16, NARROW_NONE)
    REF_CD(F32,  F32,  NARROW_TF32) REF_CD(F32,  F64,  NARROW_NONE)
    REF_CD(F64,  F16,  NARROW_NONE) REF_CD(F64,  BF16, NARROW_NONE)
    REF_CD(F64,  F32,  NARROW_NONE) REF_CD(F64,  F64,  NARROW_NONE)
};
// clang-format on

static gck_status ref_init(void **state, const char *arg, char *msg, size_t len) {
    if (arg) {
        snprintf(msg, len, "backend 'ref' takes no argument (got 'ref:%s')", arg);
        return GCK_EINVAL;
    }
    *state = NULL;
    return GCK_OK;
}

static void ref_teardown(void *state) { (void)state; }

static bool ref_available(void *state, char *why, size_t len) {
    (void)state;
    snprintf(why, len, "built in");
    return true;
}

static void ref_version(void *state, char *buf, size_t len) {
    (void)state;
    snprintf(buf, len,
             "gemmcheck reference GEMMs %s (k ascending, no FMA, inputs rounded to "
             "the compute type)",
             GEMMCHECK_VERSION);
}

static size_t ref_table(void *state, const gck_support_row **rows) {
    (void)state;
    *rows = ref_rows;
    return sizeof ref_rows / sizeof ref_rows[0];
}

static gck_call_status ref_call(void *state, const gck_case *c, const gck_support_row *row,
                                const gck_operands *ops, char *msg, size_t len) {
    (void)state;
    gck_ref_model m = gck_ref_model_default(row->compute);
    gck_status s = gck_ref_gemm(c, &m, ops->a, ops->b, ops->c, ops->d, msg, len);
    return s == GCK_OK ? GCK_CALL_OK : GCK_CALL_ERROR;
}

const gck_backend_ops *gck_ref_backend_ops(void) {
    static const gck_backend_ops ops = {"ref",       ref_init,  ref_teardown, ref_available,
                                        ref_version, ref_table, ref_call};
    return &ops;
}
