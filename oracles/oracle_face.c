/* The oracle of one check, behind one face (oracle_face.h): the choice of oracle, its plan,
 * per-thread evaluation and the reconciliation of the two oracles. */
#include "oracle_face.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bigmem.h"
#include "oracle_exact.h"

static const char *const oracle_names[] = {"exact", "mpfr", "both"};

const char *gck_oracle_kind_name(gck_oracle_kind k) {
    return (unsigned)k < 3 ? oracle_names[k] : "unknown";
}

bool gck_oracle_kind_parse(const char *name, gck_oracle_kind *out) {
    for (int k = 0; k < 3; k++)
        if (!strcmp(name, oracle_names[k])) {
            *out = (gck_oracle_kind)k;
            return true;
        }
    return false;
}

size_t gck_memory_kept(void) { return gck_big_kept(); }

size_t gck_memory_release(void) { return gck_big_release(); }

struct gck_oracle_plan {
    gck_oracle_kind kind;
    const gck_case *c;
    const void *A, *B, *C;
    gck_exact_plan *exact; /* NULL for MPFR alone */
};

struct gck_oracle_thread {
    const gck_oracle_plan *p;
    gck_oracle_ws *mp;
    gck_exact_ws *ex;
    int64_t disagreements;
    gck_oracle_disagreement first;
};

gck_oracle_plan *gck_oracle_plan_new(gck_oracle_kind kind, const gck_case *c, const void *A,
                                     const void *B, const void *C) {
    gck_oracle_plan *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    *p = (gck_oracle_plan){kind, c, A, B, C, NULL};
    if (kind != GCK_ORACLE_MPFR && !(p->exact = gck_exact_plan_new_rated(c, A, B, C))) {
        free(p);
        return NULL;
    }
    return p;
}

void gck_oracle_plan_free(gck_oracle_plan *p) {
    if (!p) return;
    gck_exact_plan_free(p->exact);
    free(p);
}

void gck_oracle_plan_describe(const gck_oracle_plan *p, char *buf, size_t len) {
    if (p->exact)
        gck_exact_plan_describe(p->exact, buf, len);
    else
        snprintf(buf, len, "MPFR");
}

bool gck_oracle_plan_split(const gck_oracle_plan *p) {
    return p->exact && !strcmp(gck_exact_plan_path(p->exact), "ozaki");
}

int64_t gck_oracle_plan_tile(const gck_oracle_plan *p) {
    return p->exact ? gck_exact_plan_tile(p->exact) : 64;
}

gck_oracle_thread *gck_oracle_thread_new(const gck_oracle_plan *p) {
    gck_oracle_thread *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->p = p;
    bool ok = true;
    if (p->kind != GCK_ORACLE_EXACT) ok = (t->mp = gck_oracle_ws_new(p->c->k)) != NULL;
    if (ok && p->kind != GCK_ORACLE_MPFR) ok = (t->ex = gck_exact_ws_new(p->exact)) != NULL;
    if (!ok) {
        gck_oracle_thread_free(t);
        return NULL;
    }
    return t;
}

void gck_oracle_thread_free(gck_oracle_thread *t) {
    if (!t) return;
    gck_oracle_ws_free(t->mp);
    gck_exact_ws_free(t->ex);
    free(t);
}

static bool same_bits(double a, double b) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    return a == b && signbit(a) == signbit(b);
}

void gck_oracle_thread_eval(gck_oracle_thread *t, int64_t bi, int64_t i, int64_t j, bool skip_zero,
                            const double *got, gck_oracle_eval *out) {
    const gck_oracle_plan *p = t->p;
    if (p->kind != GCK_ORACLE_MPFR) gck_exact_eval(p->exact, t->ex, bi, i, j, skip_zero, got, out);
    if (p->kind == GCK_ORACLE_EXACT) return;
    gck_oracle_eval mp;
    gck_oracle_eval_element(t->mp, p->c, p->A, p->B, p->C, bi, i, j, skip_zero, got, &mp);
    if (p->kind == GCK_ORACLE_MPFR) {
        *out = mp;
        return;
    }
    if (!same_bits(mp.value, out->value) || mp.special_input != out->special_input ||
        !same_bits(mp.abs_error, out->abs_error)) {
        if (t->disagreements++ == 0)
            t->first = (gck_oracle_disagreement){
                bi, i, j, mp.value, out->value, mp.abs_error, out->abs_error};
    }
}

void gck_oracle_thread_eval_run(gck_oracle_thread *t, int64_t bi, int64_t i0, int64_t i1, int64_t j,
                                const double *got, gck_oracle_eval *out) {
    if (t->p->kind == GCK_ORACLE_EXACT) {
        gck_exact_eval_run(t->p->exact, t->ex, bi, i0, i1, j, got, out);
        return;
    }
    for (int64_t i = i0; i < i1; i++)
        gck_oracle_thread_eval(t, bi, i, j, false, got ? &got[i - i0] : NULL, &out[i - i0]);
}

int64_t gck_oracle_thread_disagreements(const gck_oracle_thread *t,
                                        gck_oracle_disagreement *first) {
    if (t->disagreements) *first = t->first;
    return t->disagreements;
}
