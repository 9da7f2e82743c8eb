/* The order zoo: correct GEMMs, each evaluating alpha*op(A)*op(B) + beta*C in one of the orders
 * that real libraries use (docs/TOLERANCE.md), loaded as a plugin
 * (plugin:/path/libgck_zoo.so:NAME). Every one is the reference GEMM with the order as a model
 * parameter, and declares exactly the orders it uses; the checker must pass all of them:
 *   netlib            beta*c first, then (alpha*b)*a added term by term, zero op(B) skipped
 *   beta-over-alpha   alpha*(A*B + (beta/alpha)*C), k ascending
 *   alpha-each        alpha*(a*b) for each term, blocks of 8, beta*c last
 *   blocked           beta*c first, alpha times each block of 16 added in turn (BLIS/OpenBLAS)
 *   pairwise          a pairwise tree with leaves of 4, alpha on the sum, beta*c last
 *   split-k           three parts summed apart with FMA (threads), beta*c first
 *   skip0-a, skip0-b  the default order, dropping terms whose op(A) / op(B) element is zero
 *   beta-over-alpha-undeclared  beta-over-alpha declaring the default order only (a control:
 *                     must be caught)
 *   sticky-f64        blocked, but an f64 call leaves a sticky device error: it and every
 *                     later call of the process fail (a CUDA context after a kernel fault)
 * Rows: f32 and f64 as CBLAS has them, and bf16/f16 inputs into f32 (exact in f32). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemmcheck/backend.h"
#include "gemmcheck/refgemm.h"

typedef struct zoo_kind {
    const char *name;
    gck_ref_alpha alpha_at;
    gck_ref_beta beta_at;
    gck_ref_sum sum;
    int group;
    bool fma;
    gck_ref_skip skip;
    unsigned orders;
    bool sticky_f64;
} zoo_kind;

#define ORD(a, b) (GCK_ORDER_ALPHA_##a | GCK_ORDER_BETA_##b)
static const zoo_kind kinds[] = {
    {"netlib", GCK_REF_ALPHA_ON_B, GCK_REF_BETA_FIRST, GCK_REF_SUM_SEQUENTIAL, 1, false,
     GCK_REF_SKIP_ZERO_B, ORD(ON_OPERAND, FIRST), false},
    {"beta-over-alpha", GCK_REF_ALPHA_ON_SUM, GCK_REF_BETA_OVER_ALPHA, GCK_REF_SUM_SEQUENTIAL, 1,
     false, GCK_REF_SKIP_NONE, ORD(ON_SUM, OVER_ALPHA), false},
    {"alpha-each", GCK_REF_ALPHA_ON_PRODUCT, GCK_REF_BETA_LAST, GCK_REF_SUM_BLOCKED, 8, false,
     GCK_REF_SKIP_NONE, ORD(ON_PRODUCT, LAST), false},
    {"blocked", GCK_REF_ALPHA_ON_SUM, GCK_REF_BETA_FIRST, GCK_REF_SUM_BLOCKED, 16, false,
     GCK_REF_SKIP_NONE, ORD(ON_SUM, FIRST), false},
    {"pairwise", GCK_REF_ALPHA_ON_SUM, GCK_REF_BETA_LAST, GCK_REF_SUM_PAIRWISE, 4, false,
     GCK_REF_SKIP_NONE, ORD(ON_SUM, LAST), false},
    {"split-k", GCK_REF_ALPHA_ON_SUM, GCK_REF_BETA_FIRST, GCK_REF_SUM_SPLIT, 3, true,
     GCK_REF_SKIP_NONE, ORD(ON_SUM, FIRST), false},
    {"skip0-a", GCK_REF_ALPHA_ON_SUM, GCK_REF_BETA_LAST, GCK_REF_SUM_SEQUENTIAL, 1, false,
     GCK_REF_SKIP_ZERO_A, ORD(ON_SUM, LAST), false},
    {"skip0-b", GCK_REF_ALPHA_ON_SUM, GCK_REF_BETA_LAST, GCK_REF_SUM_SEQUENTIAL, 1, false,
     GCK_REF_SKIP_ZERO_B, ORD(ON_SUM, LAST), false},
    /* a control: beta-over-alpha declaring only the default order, which the checker must
     * catch (the orders a backend declares decide its verdicts) */
    {"beta-over-alpha-undeclared", GCK_REF_ALPHA_ON_SUM, GCK_REF_BETA_OVER_ALPHA,
     GCK_REF_SUM_SEQUENTIAL, 1, false, GCK_REF_SKIP_NONE, ORD(ON_SUM, LAST), false},
    {"sticky-f64", GCK_REF_ALPHA_ON_SUM, GCK_REF_BETA_FIRST, GCK_REF_SUM_BLOCKED, 16, false,
     GCK_REF_SKIP_NONE, ORD(ON_SUM, FIRST), true},
};

static const zoo_kind *kind;

typedef struct zoo_state {
    gck_support_row rows[4];
    size_t n;
} zoo_state;

/* The reference GEMM's evaluation for this kind. */
static gck_ref_model zoo_model(gck_format compute) {
    return (gck_ref_model){.compute = compute,
                           .fma = kind->fma,
                           .round_inputs = false,
                           .scale_compute = compute,
                           .alpha_at = kind->alpha_at,
                           .beta_at = kind->beta_at,
                           .sum = kind->sum,
                           .group = kind->group,
                           .skip = kind->skip};
}

static void add_row(zoo_state *s, gck_format ab, gck_format compute) {
    gck_ref_model rm = zoo_model(compute);
    gck_model m = gck_ref_model_declared(&rm);
    m.orders = kind->orders; /* what the kind declares (the control declares less) */
    unsigned p = GCK_PROMISE_ALPHA0_NO_READ_AB | GCK_PROMISE_BETA0_NO_READ_C |
                 GCK_PROMISE_ROW_MAJOR | GCK_PROMISE_BATCHED | GCK_PROMISE_D_SEPARATE |
                 GCK_PROMISE_D_IN_PLACE |
                 (compute == GCK_F64 ? GCK_PROMISE_SCALE_F64 : GCK_PROMISE_SCALE_F32) |
                 (kind->skip != GCK_REF_SKIP_NONE ? GCK_PROMISE_MAY_SKIP_ZERO : 0);
    s->rows[s->n++] = (gck_support_row){ab, ab, compute, compute, compute, m, p, "gck_ref_gemm"};
}

static gck_status z_init(void **state, const char *arg, char *msg, size_t len) {
    (void)arg;
    zoo_state *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(msg, len, "out of memory");
        return GCK_ENOMEM;
    }
    add_row(s, GCK_F32, GCK_F32);
    add_row(s, GCK_F64, GCK_F64);
    add_row(s, GCK_BF16, GCK_F32);
    add_row(s, GCK_F16, GCK_F32);
    *state = s;
    return GCK_OK;
}

static void z_teardown(void *state) { free(state); }

static bool z_available(void *state, char *why, size_t len) {
    (void)state;
    snprintf(why, len, "order zoo '%s'", kind->name);
    return true;
}

static void z_version(void *state, char *buf, size_t len) {
    (void)state;
    snprintf(buf, len, "order zoo '%s' over the reference GEMMs", kind->name);
}

static size_t z_table(void *state, const gck_support_row **rows) {
    zoo_state *s = state;
    *rows = s->rows;
    return s->n;
}

static gck_call_status z_call(void *state, const gck_case *c, const gck_support_row *row,
                              const gck_operands *ops, char *msg, size_t len) {
    (void)state;
    static atomic_bool broken;
    if (kind->sticky_f64 && (atomic_load(&broken) || row->compute == GCK_F64)) {
        atomic_store(&broken, true);
        snprintf(msg, len, "misaligned address (simulated sticky device error)");
        return GCK_CALL_DEVICE_FAULT;
    }
    gck_ref_model m = zoo_model(row->compute);
    return gck_ref_gemm(c, &m, ops->a, ops->b, ops->c, ops->d, msg, len) == GCK_OK ? GCK_CALL_OK
                                                                                   : GCK_CALL_ERROR;
}

GCK_PLUGIN_ABI_DECLARE
const gck_backend_ops *gemmcheck_backend_plugin(const char *name);
const gck_backend_ops *gemmcheck_backend_plugin(const char *name) {
    static const gck_backend_ops ops = {"zoo",     z_init,  z_teardown, z_available,
                                        z_version, z_table, z_call};
    for (size_t i = 0; name && i < sizeof kinds / sizeof kinds[0]; i++)
        if (!strcmp(name, kinds[i].name)) {
            kind = &kinds[i];
            return &ops;
        }
    return NULL;
}
