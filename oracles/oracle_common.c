/* The special-value pass and exact-zero signs shared by the MPFR and the exact oracle. */
#include "oracle_common.h"
#include "format_internal.h"

#include <math.h>
#include <stdio.h>

gck_status gck_oracle_check_args(const gck_case *c, const void *A, const void *B, const void *C,
                                 const void *D, int64_t *total, char *msg, size_t msg_len) {
    gck_status s = gck_case_validate(c, msg, msg_len);
    if (s != GCK_OK) return s;
    if (c->d_is_c && D != C) {
        snprintf(msg, msg_len, "D must be C's buffer when the case computes D in place");
        return GCK_EINVAL;
    }
    *total = c->m * c->n * c->batch;
    if (*total == 0) return GCK_OK; /* quick return: nothing is written */
    if ((gck_case_reads_ab(c) && (!A || !B)) || (gck_case_reads_c(c) && !C) || !D) {
        snprintf(msg, msg_len, "a buffer the case reads or writes is NULL");
        return GCK_EINVAL;
    }
    return GCK_OK;
}

const void *gck_oracle_member(const void *base, gck_format f, int64_t stride, int64_t bi) {
    return (const char *)base + (size_t)(bi * stride) * (size_t)gck_format_get(f)->storage_bytes;
}

void gck_oracle_pass1(const gck_case *c, const void *A, const void *B, const void *C, int64_t bi,
                      int64_t i, int64_t j, bool skip_zero, gck_oracle_pre *p) {
    p->rab = gck_case_reads_ab(c);
    p->rc = gck_case_reads_c(c);
    gck_case_op_strides(c, GCK_A, &p->ars, &p->acs);
    gck_case_op_strides(c, GCK_B, &p->brs, &p->bcs);
    p->Ab = p->rab ? gck_oracle_member(A, c->type_a, c->stride_a, bi) : NULL;
    p->Bb = p->rab ? gck_oracle_member(B, c->type_b, c->stride_b, bi) : NULL;
    bool nan = false, pos_inf = false, neg_inf = false;
    p->s_neg_zero = p->rab;
    p->any_nonzero = false;
    int64_t used = 0;
    for (int64_t k = 0; p->rab && k < c->k; k++) {
        double a = gck_fmt_load(p->Ab, c->type_a, i * p->ars + k * p->acs);
        double b = gck_fmt_load(p->Bb, c->type_b, k * p->brs + j * p->bcs);
        if (skip_zero && (a == 0.0 || b == 0.0)) continue;
        used++;
        bool neg = signbit(a) != signbit(b);
        if (isnan(a) || isnan(b)) {
            nan = true;
        } else if (isinf(a) || isinf(b)) {
            if (a == 0.0 || b == 0.0)
                nan = true; /* Inf * 0 */
            else if (neg != (bool)signbit(c->alpha))
                neg_inf = true;
            else
                pos_inf = true;
        }
        if (a != 0.0 && b != 0.0) p->any_nonzero = true;
        if (!(a == 0.0 || b == 0.0) || !neg) p->s_neg_zero = false;
    }
    /* No term left (alpha = 0, K = 0, or every term dropped by zero-skipping): the product
     * term is absent, as in BLAS, and D = beta*c. */
    p->ab_absent = used == 0;
    if (p->ab_absent) p->s_neg_zero = false;
    p->cv = 0.0;
    if (p->rc) {
        int64_t crs, ccs;
        gck_case_op_strides(c, GCK_C, &crs, &ccs);
        p->cv = gck_fmt_load(gck_oracle_member(C, c->type_c, c->stride_c, bi), c->type_c,
                             i * crs + j * ccs);
        if (isnan(p->cv))
            nan = true;
        else if (isinf(p->cv)) {
            if (signbit(p->cv) != signbit(c->beta))
                neg_inf = true;
            else
                pos_inf = true;
        }
        if (p->cv != 0.0) p->any_nonzero = true;
    }
    p->special = nan || pos_inf || neg_inf;
    p->value = (nan || (pos_inf && neg_inf)) ? NAN : pos_inf ? INFINITY : -INFINITY;
}

double gck_oracle_exact_zero(const gck_case *c, const gck_oracle_pre *p) {
    /* A non-zero beta*c cancelled a non-zero alpha*S: x + (-x) = +0. */
    if (p->rc && p->cv != 0.0) return 0.0;
    bool bc_neg = p->rc && (bool)signbit(p->cv) != (bool)signbit(c->beta);
    /* No product term: D = beta*c with its sign (c = -0, beta > 0 gives -0); +0 when beta = 0
     * as well. */
    if (p->ab_absent) return bc_neg ? -0.0 : 0.0;
    /* Otherwise alpha*S is itself an exact zero: S is -0 only when every product is a zero of
     * negative sign (non-zero products that cancel give +0). */
    bool as_neg = p->s_neg_zero != (bool)signbit(c->alpha);
    if (!p->rc) return as_neg ? -0.0 : 0.0;
    return (as_neg && bc_neg) ? -0.0 : 0.0;
}
