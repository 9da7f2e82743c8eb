/* The `ref` backend: the reference GEMMs of refimpl/, for every type tuple. */
#include <stdio.h>
#include <stdlib.h>

#include "backends.h"
#include "gemmcheck/refgemm.h"
#include "gemmcheck/version.h"

gck_model gck_model_plain(gck_format compute) {
    return (gck_model){.compute = compute,
                       .inputs_rounded = true,
                       .input_format = compute,
                       .acc = GCK_ACC_SCALAR,
                       .block = 0,
                       .epilogue = compute};
}

typedef struct ref_state {
    gck_support_row *rows;
    size_t n;
} ref_state;

static const unsigned ref_promises = GCK_PROMISE_ALPHA0_NO_READ_AB | GCK_PROMISE_BETA0_NO_READ_C |
                                     GCK_PROMISE_ROW_MAJOR | GCK_PROMISE_BATCHED |
                                     GCK_PROMISE_D_SEPARATE | GCK_PROMISE_D_IN_PLACE |
                                     GCK_PROMISE_SCALE_F32 | GCK_PROMISE_SCALE_F64;

static void add_row(ref_state *s, gck_format a, gck_format b, gck_format c, gck_format d,
                    gck_format compute) {
    gck_model m = gck_model_plain(compute);
    m.epilogue = compute == GCK_F64 ? GCK_F64 : GCK_F32;     /* gck_ref_model_default's epilogue */
    m.orders = GCK_ORDER_ALPHA_ON_SUM | GCK_ORDER_BETA_LAST; /* gck_ref_gemm's default order */
    s->rows[s->n++] = (gck_support_row){a, b, c, d, compute, m, ref_promises, "gck_ref_gemm"};
}

static gck_status ref_init(void **state, const char *arg, char *msg, size_t len) {
    if (arg) {
        snprintf(msg, len, "backend 'ref' takes no argument (got 'ref:%s')", arg);
        return GCK_EINVAL;
    }
    static const gck_format st[] = {GCK_F16, GCK_BF16, GCK_F32, GCK_F64};
    ref_state *s = calloc(1, sizeof *s);
    if (s) s->rows = calloc(256 * 2 + 3 * 16, sizeof *s->rows);
    if (!s || !s->rows) {
        free(s);
        snprintf(msg, len, "out of memory");
        return GCK_ENOMEM;
    }
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++)
            for (int c = 0; c < 4; c++)
                for (int d = 0; d < 4; d++) {
                    add_row(s, st[a], st[b], st[c], st[d], GCK_F32);
                    add_row(s, st[a], st[b], st[c], st[d], GCK_F64);
                    /* narrow compute types for the inputs they are made for */
                    if (a == b && st[a] == GCK_F16) add_row(s, st[a], st[b], st[c], st[d], GCK_F16);
                    if (a == b && st[a] == GCK_BF16)
                        add_row(s, st[a], st[b], st[c], st[d], GCK_BF16);
                    if (a == b && st[a] == GCK_F32)
                        add_row(s, st[a], st[b], st[c], st[d], GCK_TF32);
                }
    *state = s;
    return GCK_OK;
}

static void ref_teardown(void *state) {
    ref_state *s = state;
    if (!s) return;
    free(s->rows);
    free(s);
}

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
    ref_state *s = state;
    *rows = s->rows;
    return s->n;
}

static gck_call_status ref_call(void *state, const gck_case *c, const gck_support_row *row,
                                const gck_operands *ops, char *msg, size_t len) {
    (void)state;
    gck_ref_model m = gck_ref_model_default(row->compute);
    m.scale_compute = row->model.epilogue;
    gck_status s = gck_ref_gemm(c, &m, ops->a, ops->b, ops->c, ops->d, msg, len);
    return s == GCK_OK ? GCK_CALL_OK : GCK_CALL_ERROR;
}

const gck_backend_ops *gck_ref_backend_ops(void) {
    static const gck_backend_ops ops = {"ref",       ref_init,  ref_teardown, ref_available,
                                        ref_version, ref_table, ref_call};
    return &ops;
}
