/* The verdict of one element (check_internal.h): the finding kinds and their names, the
 * non-finite rules, the output interval widened by the bound, the statistical allowance. */
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

static const char *const kind_names[GCK_KIND_COUNT] = {"out_of_tolerance",
                                                       "nonfinite_mismatch",
                                                       "out_of_bounds_write",
                                                       "input_modified",
                                                       "crash",
                                                       "hang",
                                                       "nondeterministic",
                                                       "unimplemented",
                                                       "error",
                                                       "fpenv_modified",
                                                       "improbable_error"};

const char *gck_kind_name(gck_kind k) { return (unsigned)k < GCK_KIND_COUNT ? kind_names[k] : "?"; }

bool gck_kind_parse(const char *name, gck_kind *out) {
    for (int k = 0; k < GCK_KIND_COUNT; k++)
        if (strcmp(name, kind_names[k]) == 0) {
            *out = (gck_kind)k;
            return true;
        }
    return false;
}

/* Whether e is worse than the worst kept of its kind: by error/bound, or by error/statistical
 * allowance for improbable errors (the first one of the other kinds is kept). */
bool gck_worse(gck_kind k, const gck_element_report *e, const gck_element_report *than) {
    return (k == GCK_KIND_OUT_OF_TOLERANCE && e->ratio > than->ratio) ||
           (k == GCK_KIND_IMPROBABLE_ERROR && e->stat > than->stat);
}

void gck_note_failure(gck_check_result *r, gck_kind k, const gck_element_report *e) {
    bool first = r->count[k]++ == 0;
    if (first || gck_worse(k, e, &r->worst[k])) r->worst[k] = *e;
}

/* A failing verdict of the given kind. */
static bool fails_as(gck_kind *out, gck_kind k) {
    *out = k;
    return false;
}

/* A failing verdict with its rule. */
static bool fails_by(gck_element_report *e, gck_kind *kind, gck_kind k, const char *rule) {
    snprintf(e->rule, sizeof e->rule, "%s", rule);
    return fails_as(kind, k);
}

/* The rules for a NaN or Inf oracle value or result: true when one applies, with the verdict in
 * *pass (and the kind in *kind when it fails). */
static bool decide_nonfinite(const gather_plan *gp, const gck_oracle_eval *ev, const elem_facts *f,
                             double got, gck_element_report *e, gck_kind *kind, bool *pass) {
    const gck_kind K = GCK_KIND_NONFINITE_MISMATCH;
    double o = ev->value;
    bool any = isnan(o) || (isinf(o) && ev->special_input) || isnan(got) || isinf(got);
    if (!any) return false;
    overflow_facts xf = gck_overflow_of(gp, f), *x = &xf; /* only here: finite ones need none */
    double g = x->growth, thr = x->thr;
    *pass = true;
    if (isnan(o)) {
        if (!isnan(got)) *pass = fails_by(e, kind, K, "oracle NaN, result not NaN");
    } else if (isinf(o) && ev->special_input) {
        /* Inf + (-Inf): the finite terms of the other sign may overflow first in some order */
        if (got != o &&
            !(isnan(got) && ((o > 0 ? f->neg : f->pos) * g >= thr || f->max_term >= thr ||
                             f->input_overflow || x->unscaled || f->inf_times_flushed))) {
            *pass = fails_as(kind, K);
            snprintf(e->rule, sizeof e->rule, "oracle %cInf from an Inf input, result differs",
                     o > 0 ? '+' : '-');
        }
    } else if (isnan(got)) {
        if (!x->nan) *pass = fails_by(e, kind, K, "result NaN, no evaluation order can overflow");
    } else if (isinf(o)) {
        /* the terms of the other sign alone may overflow first in some order */
        if (got != o && !((got > 0 ? f->pos : f->neg) * g >= thr || f->max_term >= thr ||
                          f->input_overflow || x->unscaled)) {
            *pass = fails_as(kind, K);
            snprintf(e->rule, sizeof e->rule,
                     "oracle overflows to %cInf, result has the other "
                     "sign and no order overflows that way",
                     o > 0 ? '+' : '-');
        }
    } else if (!x->possible) {
        *pass = fails_by(e, kind, K, "result Inf, oracle finite and overflow impossible");
    }
    return true;
}

/* The next double above x (positive and finite; others unchanged). */
static inline double next_above(double x) {
    if (!(x > 0) || isinf(x)) return x;
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    u++;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* floor(log2(x)) of a finite x > 0, subnormals included (with pow2_bits, instead of frexp and
 * ldexp: 1.7% of a 2048^3 f16 check). */
static inline int floor_log2(double x) {
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    int be = (int)(u >> 52 & 0x7ff);
    return be ? be - 1023 : 63 - __builtin_clzll(u) - 1074;
}

/* How far a finite result `got` is from the edge of the values that round to it on the exact
 * value's side (sign: that of got - x): half the gap to got's neighbour there under round to
 * nearest, the whole gap under faithful rounding, and for a zero where flushing is declared
 * everything whose rounding is subnormal. Exact. */
static double edge(const gather_plan *g, double got, int sign) {
    const gck_format_info *fo = g->fo;
    double ad = fabs(got), gap = fo->min_subnormal;
    if (ad != 0) {
        int e = floor_log2(ad); /* ad in [2^e, 2^(e+1)) */
        int eb = e < fo->emin ? fo->emin : e;
        gap = pow2_bits(eb - fo->precision + 1);
        /* a power of two first: the signs are random, the powers rare (a branch predicted) */
        if (ad == pow2_bits(eb) && eb > fo->emin &&
            ((sign > 0 && got > 0) || (sign < 0 && got < 0)))
            gap *= 0.5; /* toward zero, the binade below */
    }
    double h = g->nearest ? 0.5 * gap : gap;
    /* a flushed zero stands for any value whose rounding is subnormal: below the largest
     * subnormal's upper edge, min_normal - min_subnormal / 2 */
    double flushed = fo->min_normal - 0.5 * fo->min_subnormal;
    if (g->ftz && ad == 0 && flushed > h) h = flushed;
    return h;
}

/* How far from the exact value x a finite result may lie, rounded up: `inner` (what the
 * arithmetic may move the value D is rounded from) plus its edge h. RNE being monotone, D may
 * be any value of [RNE(x - inner), RNE(x + inner)] and no other. */
static double allowance(double inner, double h) {
    return next_above(inner + h); /* one rounding of a sum of two positive numbers */
}

/* A finite result's verdict on its error err: the ratio to the allowance `bound`, and where
 * the statistical allowance applies (stat >= 0; the arithmetic's part, D's rounding h aside)
 * the ratio of the error beyond h to it (*statr, left as it was otherwise). */
enum { VERDICT_PASS, VERDICT_BOUND, VERDICT_STAT };
static inline int finite_verdict(double err, double bound, double h, double stat, double *ratio,
                                 double *statr) {
    *ratio = bound > 0 ? err / bound : (err > 0 ? INFINITY : 0.0);
    if (err > bound) return VERDICT_BOUND;
    if (stat < 0) return VERDICT_PASS;
    /* 0 where err <= h, else (err - h) / stat: the difference made +0 without a branch where
     * it is not positive (whether err <= h is random: a branch on it mispredicted) */
    double d = err - h;
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    u &= -(uint64_t) !(d <= 0); /* d <= 0 made +0; a NaN (not computed) kept, as before */
    memcpy(&d, &u, sizeof d);
    *statr = stat > 0 ? d / stat : err <= h ? 0.0 : INFINITY;
    return err <= allowance(stat, h) ? VERDICT_PASS : VERDICT_STAT;
}

/* Decide one element against one oracle evaluation: true when it passes, else false with the
 * kind of finding in *kind. */
bool gck_decide(const gather_plan *g, const gck_oracle_eval *ev, const elem_facts *f, double got,
                gck_element_report *e, gck_kind *kind) {
    double o = ev->value, bound = f->bound;
    bool degenerate = f->degenerate;
    e->expected = o;
    e->got = got;
    e->error = ev->abs_error;
    e->bound = f->exact_case ? 0.0 : bound;
    e->exact_case = f->exact_case;
    e->ratio = 0;
    e->stat = NAN;
    e->degenerate = degenerate && !f->exact_case;
    bool pass;
    if (decide_nonfinite(g, ev, f, got, e, kind, &pass)) return pass;
    /* finite result: oracle finite, or overflowed (then the bound of the exact value applies) */
    double err = ev->abs_error;
    if (degenerate && !f->exact_case) {
        e->ratio = bound > 0 ? fabs(got) / bound : (got != 0 ? INFINITY : 0.0);
        if (fabs(got) <= bound) return true;
        return fails_by(e, kind, GCK_KIND_OUT_OF_TOLERANCE,
                        "|result| exceeds the magnitude limit (gamma = Inf)");
    }
    double h = edge(g, got, ev->err_sign);
    if (!f->exact_case) e->bound = allowance(f->inner, h);
    int v = finite_verdict(err, e->bound, h, f->stat, &e->ratio, &e->stat);
    if (v == VERDICT_BOUND)
        return fails_by(e, kind, GCK_KIND_OUT_OF_TOLERANCE,
                        f->exact_case ? "exact case: result differs from the exact value"
                        : g->nearest  ? "outside the rounded interval of the exact value "
                                        "widened by the bound"
                                      : "error exceeds the bound");
    if (v == VERDICT_PASS) return true;
    return fails_by(e, kind, GCK_KIND_IMPROBABLE_ERROR,
                    "error improbable under round to nearest on random data (p < 1e-12)");
}

bool gck_decide_plain(const gather_plan *g, const gck_oracle_eval *ev, const plain_facts *p,
                      double got, double *bound, double *ratio, double *stat) {
    double h = edge(g, got, ev->err_sign);
    *bound = allowance(p->inner, h);
    *stat = NAN;
    return finite_verdict(ev->abs_error, *bound, h, p->stat, ratio, stat) == VERDICT_PASS;
}

/* Whether a backend that does compute alpha * (A*B) under alpha = 0 can get NaN: 0 * NaN,
 * 0 * Inf, or 0 times a product sum that overflows in some evaluation order. */
bool gck_alpha0_may_nan(const gck_case *c, const gck_model *m, const void *A, const void *B,
                        int64_t bi, int64_t i, int64_t j) {
    int64_t ars, acs, brs, bcs;
    gck_case_op_strides(c, GCK_A, &ars, &acs);
    gck_case_op_strides(c, GCK_B, &brs, &bcs);
    const char *Ab = (const char *)A + bi * c->stride_a * gck_format_get(c->type_a)->storage_bytes;
    const char *Bb = (const char *)B + bi * c->stride_b * gck_format_get(c->type_b)->storage_bytes;
    const gck_format_info *fc = gck_format_get(m->compute);
    double thr = fmin(fc->max, gck_format_get(gck_case_type(c, GCK_D))->max);
    double in_max =
        fmin(fc->max, gck_format_get(m->inputs_rounded ? m->input_format : m->compute)->max);
    int old = fegetround();
    fesetround(FE_UPWARD);
    double T = 0,
           growth = exp((2 * (double)c->k + 4) * fc->epsilon + 2 * gck_input_eps(c, m)) * MARGIN;
    bool may = false;
    for (int64_t k = 0; k < c->k && !may; k++) {
        double a = fabs(gck_fmt_load(Ab, c->type_a, i * ars + k * acs));
        double b = fabs(gck_fmt_load(Bb, c->type_b, k * brs + j * bcs));
        if (!isfinite(a) || !isfinite(b) || a > in_max || b > in_max || a * b >= thr) may = true;
        T += a * b;
    }
    may = may || T * growth >= thr;
    fesetround(old);
    return may;
}

int gck_bin_of_ratio(double error, double ratio) {
    if (error == 0) return 0;
    /* the first bound the ratio is at most, counted without a branch per bound (a NaN is at
     * most none: the last bin): the ratios of a product's elements straddle bounds at random,
     * and the branches mispredicted (14% of the element pass's own samples, Zen 4); written
     * out, not as a loop the compiler kept */
    int above = !(ratio <= 1e-6) + !(ratio <= 1e-5) + !(ratio <= 1e-4) + !(ratio <= 1e-3) +
                !(ratio <= 1e-2) + !(ratio <= 1e-1) + !(ratio <= 1);
    return above + 1; /* 8 = GCK_RATIO_BINS - 1 when above all */
}
