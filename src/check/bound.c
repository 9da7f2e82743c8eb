/* The hard bound of docs/TOLERANCE.md from the declared model (check_internal.h), evaluated with
 * the FPU rounding upward (compiled with -frounding-math): every quantity is a sum or product
 * of non-negative numbers, so each rounding can only make the bound larger. */
#include <fenv.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_internal.h"
#include "decode.h"
#include "fpenv.h"
#include "mix.h"
#include "parallel.h"
#include "stash.h"
#include "text.h"
#include "tiles.h"

/* gamma(n, eps) = n eps / (1 - n eps), rounded up; Inf when n eps >= 1. FE_UPWARD only. */
static double gamma_up(double n, double eps) {
    double ne = n * eps;
    if (ne >= 1.0) return INFINITY;
    double den = -(ne - 1.0); /* ne - 1 rounded up, negated: 1 - ne rounded down */
    return ne / den;
}

double gck_input_eps(const gck_case *c, const gck_model *m) {
    if (!m->inputs_rounded) return 0.0;
    int pin = gck_format_get(m->input_format)->precision;
    int pa = gck_format_get(c->type_a)->precision, pb = gck_format_get(c->type_b)->precision;
    return pin < (pa > pb ? pa : pb) ? gck_format_get(m->input_format)->epsilon : 0.0;
}

void gck_bound_ctx_init(bound_ctx *b, const gck_case *c, const gck_model *m) {
    int old = fegetround();
    fesetround(FE_UPWARD);
    const gck_format_info *fo = gck_format_get(gck_case_type(c, GCK_D));
    const gck_format_info *fc = gck_format_get(m->compute);
    double eo = fo->epsilon, ec = fc->epsilon, ein = gck_input_eps(c, m);
    double K = (double)c->k, aa = fabs(c->alpha), ab = fabs(c->beta);
    double eta = (m->ftz || m->daz) ? fc->min_normal : 0.5 * fc->min_subnormal;
    double g = gamma_up(2 * K + 4, ec);
    /* Orders that apply alpha after partial sums were rounded (alpha on the sum, or
     * alpha*(A*B + (beta/alpha)*C)) scale those near-zero losses by |alpha|, and the latter
     * also the rounding of (beta/alpha)*c. */
    unsigned ord = gck_model_orders(m);
    double late = (ord & (GCK_ORDER_ALPHA_ON_SUM | GCK_ORDER_BETA_OVER_ALPHA)) ? 1 + aa : 1;
    *b = (bound_ctx){.eo = eo, .aa = aa, .ab = ab, .g = g};
    b->over = (ord & GCK_ORDER_BETA_OVER_ALPHA) ? 1 + aa : 1;
    b->one_eo_eta = (1 + eo) * eta;
    b->one_aa = 1 + aa;
    b->one_ab = 1 + ab;
    b->zero_late = (2 * K + 8) * late;
    b->fo_min_normal = fo->min_normal;
    b->degenerate = isinf(g);
    if (b->degenerate) {
        /* Only a magnitude limit: every partial sum grows by at most (1+ec) per rounding. */
        b->growth = exp((2 * K + 4) * ec);
        b->in = (1 + ein) * (1 + ein);
    } else {
        double gin = ein > 0 ? gamma_up(2, ein) : 0.0;
        b->t_coef = (1 + eo) * (g + gin * (1 + g)) * aa;
        b->c_coef = (1 + eo) * g * ab;
        const gck_format_info *fe = gck_format_get(m->epilogue);
        b->narrow_epilogue = fe->precision < fc->precision; /* alpha*AB rounded to it first */
        if (b->narrow_epilogue) b->e_coef = (1 + eo) * gamma_up(3, fe->epsilon);
    }
    fesetround(old);
}

/* The parts of the bound that are not D's own rounding (call in upward rounding; not for a
 * degenerate bound): the arithmetic's error (*core) and what the near-zero losses and a
 * narrower epilogue add to it (*det). */
void gck_inner_of(const bound_ctx *b, const gck_bound_terms *t, double *core, double *det) {
    double near_zero =
        b->one_eo_eta * (b->one_aa * t->sum_ab + b->one_ab * t->abs_c * b->over + b->zero_late);
    *core = b->t_coef * t->T + b->c_coef * t->abs_c;
    *det = near_zero;
    if (b->narrow_epilogue) *det += b->e_coef * (b->aa * t->T * (1 + b->g) + b->ab * t->abs_c);
}

/* The bound of one element's terms (call in upward rounding). */
double gck_bound_of(const bound_ctx *b, const gck_bound_terms *t, bool *degenerate) {
    double aa = b->aa, ab = b->ab;
    double near_zero =
        b->one_eo_eta * (b->one_aa * t->sum_ab + b->one_ab * t->abs_c * b->over + b->zero_late);
    double bound;
    *degenerate = b->degenerate;
    if (b->degenerate) {
        bound = b->growth * (aa * t->T * b->in + ab * t->abs_c) * (1 + b->eo) + near_zero +
                b->fo_min_normal;
    } else {
        bound = b->eo * t->abs_d * (1 + b->eo) + b->t_coef * t->T + b->c_coef * t->abs_c +
                near_zero + b->fo_min_normal;
        if (b->narrow_epilogue) bound += b->e_coef * (aa * t->T * (1 + b->g) + ab * t->abs_c);
    }
    return bound * MARGIN;
}

double gck_element_bound(const gck_case *c, const gck_model *m, const gck_bound_terms *t,
                         bool *degenerate) {
    gck_case k = *c;
    k.k = t->k; /* the terms' own K */
    bound_ctx b;
    gck_bound_ctx_init(&b, &k, m);
    int old = fegetround();
    fesetround(FE_UPWARD);
    double bound = gck_bound_of(&b, t, degenerate);
    fesetround(old);
    return bound;
}
