/* The minimiser: greedy first-improvement over simpler variants of the case (smaller
 * dimensions, tight layouts, no offsets, batch 1, simpler values), each run in an isolated
 * worker so that crashes and hangs can be minimised too. */
#include "shrink.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemmcheck/runner.h"
#include "wire.h"

/* Complexity, compared lexicographically: a candidate is accepted only when it is strictly
 * simpler, so the search cannot cycle. */
enum { NMEASURE = 12 };
static void measure(const gck_spec *s, double v[NMEASURE]) {
    const gck_case *c = &s->c;
    v[0] = (double)c->m * (double)c->n * (double)c->k * (double)c->batch;
    v[1] = (double)(c->m + c->n + c->k);
    v[2] = (double)c->batch;
    v[3] = (double)(c->lda + c->ldb + c->ldc + c->ldd);
    v[4] = (double)(s->offset[0] + s->offset[1] + s->offset[2] + s->offset[3]);
    v[5] = (double)(c->stride_a + c->stride_b + c->stride_c + c->stride_d);
    v[6] = s->special_pm + (s->c_nan ? 1 : 0);
    v[7] = (s->dist_ab == GCK_DIST_INT       ? 0
            : s->dist_ab == GCK_DIST_UNIFORM ? 1
                                             : 2) +
           (s->dist_c == GCK_DIST_INT       ? 0
            : s->dist_c == GCK_DIST_UNIFORM ? 1
                                            : 2);
    v[8] = (c->transa == GCK_OP_T) + (c->transb == GCK_OP_T) + (c->order == GCK_ROW_MAJOR);
    v[9] = c->alpha != 1.0;
    v[10] = c->beta == 0.0 ? 0 : c->beta == 1.0 ? 1 : 2;
    v[11] = 0;
}

static bool simpler(const gck_spec *a, const gck_spec *b) {
    double va[NMEASURE], vb[NMEASURE];
    measure(a, va);
    measure(b, vb);
    for (int i = 0; i < NMEASURE; i++)
        if (va[i] != vb[i]) return va[i] < vb[i];
    return false;
}

/* Tight leading dimensions and strides where the current ones became invalid. */
static void repair(gck_spec *s) {
    gck_case *c = &s->c;
    int64_t *lds[] = {&c->lda, &c->ldb, &c->ldc, &c->ldd};
    for (int x = 0; x < 4; x++) {
        int64_t need = gck_case_min_ld(c, (gck_operand)x);
        if (*lds[x] < need) *lds[x] = need;
    }
    if (c->d_is_c) c->ldd = c->ldc;
    int64_t *st[] = {&c->stride_a, &c->stride_b, &c->stride_c, &c->stride_d};
    for (int x = 0; x < 4; x++) {
        int64_t fp = gck_case_footprint(c, (gck_operand)x);
        if (*st[x] != 0 && *st[x] < fp) *st[x] = fp;
    }
    if (c->batch > 1 && c->stride_c == 0) c->stride_c = gck_case_footprint(c, GCK_C);
    if (c->batch > 1 && c->stride_d == 0) c->stride_d = gck_case_footprint(c, GCK_D);
    if (c->d_is_c) c->stride_d = c->stride_c;
}

static void tight(gck_spec *s) {
    gck_case *c = &s->c;
    c->lda = c->ldb = c->ldc = c->ldd = 0; /* repair() raises each to its minimum */
    repair(s);
}

/* Candidate number i derived from s; false when there are no more. */
static bool candidate(const gck_spec *s, int i, gck_spec *out) {
    *out = *s;
    gck_case *c = &out->c;
    int64_t *dims[] = {&c->m, &c->n, &c->k};
    switch (i) {
    case 0:
    case 1:
    case 2: *dims[i] = *dims[i] / 2; break;
    case 3:
    case 4:
    case 5: *dims[i - 3] = *dims[i - 3] - 1; break;
    case 6:
    case 7:
    case 8: *dims[i - 6] = 1; break;
    case 9: c->batch = 1; break;
    case 10: c->batch = c->batch - 1; break;
    case 11: tight(out); break;
    case 12: memset(out->offset, 0, sizeof out->offset); break;
    case 13: out->special_pm = 0; break;
    case 14: out->c_nan = false; break;
    case 15: out->dist_ab = GCK_DIST_INT; break;
    case 16: out->dist_c = GCK_DIST_INT; break;
    case 17: out->dist_ab = GCK_DIST_UNIFORM; break;
    case 18: out->dist_c = GCK_DIST_UNIFORM; break;
    case 19: c->alpha = 1.0; break;
    case 20: c->beta = 0.0; break;
    case 21: c->beta = 1.0; break;
    case 22: c->transa = GCK_OP_N; break;
    case 23: c->transb = GCK_OP_N; break;
    case 24: c->order = GCK_COL_MAJOR; break;
    case 25: c->stride_a = 0; break;
    case 26: c->stride_b = 0; break;
    case 27: out->special_pm = out->special_pm > 1 ? out->special_pm / 2 : 0; break;
    default: return false;
    }
    for (int d = 0; d < 3; d++)
        if (*dims[d] < 0) *dims[d] = 0;
    if (c->batch < 1) c->batch = 1;
    if (c->batch == 1) c->stride_a = c->stride_b = c->stride_c = c->stride_d = 0;
    repair(out);
    return true;
}

/* Run s; true when it fails with `kind` (or, with kind == COUNT, with any kind: written back). */
static bool fails(const gck_shrink_options *o, const gck_spec *s, gck_kind *kind,
                  gck_isolated_result *res, int *runs, bool *setup_error) {
    gck_run_options ro = {.check = {.strict_ieee = o->strict_ieee, .threads = 0},
                          .determinism =
                              *kind == GCK_KIND_NONDETERMINISTIC || *kind == GCK_KIND_COUNT,
                          .concurrency = *kind == GCK_KIND_NONDETERMINISTIC ? 4 : 0};
    (*runs)++;
    gck_run_isolated(o->backend, s, &ro, o->call_timeout, res);
    gck_kind seen[GCK_KIND_COUNT + 1];
    int nseen = 0;
    switch (res->status) {
    case GCK_ISOLATED_RAN:
        for (int f = 0; f < res->run.nfindings; f++) seen[nseen++] = res->run.findings[f].kind;
        break;
    case GCK_ISOLATED_CRASH: seen[nseen++] = GCK_KIND_CRASH; break;
    case GCK_ISOLATED_HANG: seen[nseen++] = GCK_KIND_HANG; break;
    case GCK_ISOLATED_SETUP_ERROR: *setup_error = true; return false;
    default: return false;
    }
    for (int q = 0; q < nseen; q++) {
        if (*kind == GCK_KIND_COUNT) {
            *kind = seen[q];
            return true;
        }
        if (seen[q] == *kind) return true;
    }
    return false;
}

gck_shrink_status gck_shrink(const gck_shrink_options *o, const gck_spec *start, gck_kind *kind,
                             gck_spec *best, int *runs, char *msg, size_t len) {
    gck_isolated_result *res = malloc(sizeof *res);
    if (!res) {
        snprintf(msg, len, "out of memory");
        return GCK_SHRINK_SETUP_ERROR;
    }
    *runs = 0;
    bool setup_error = false;
    *best = *start;
    if (!fails(o, start, kind, res, runs, &setup_error)) {
        snprintf(msg, len, "%s", setup_error ? res->message : "the case does not fail");
        free(res);
        return setup_error ? GCK_SHRINK_SETUP_ERROR : GCK_SHRINK_NOT_FAILING;
    }
    double end = gck_wire_now() + o->time_limit;
    bool improved = true;
    while (improved && gck_wire_now() < end) {
        improved = false;
        gck_spec cand;
        for (int i = 0; candidate(best, i, &cand) && gck_wire_now() < end; i++) {
            if (gck_case_validate(&cand.c, NULL, 0) != GCK_OK) continue;
            if (!simpler(&cand, best)) continue;
            if (fails(o, &cand, kind, res, runs, &setup_error)) {
                *best = cand;
                improved = true;
                if (o->verbose) {
                    char a[2048];
                    gck_spec_format(&cand, a, sizeof a);
                    fprintf(stderr, "shrink: %s\n", a);
                }
                break;
            }
        }
    }
    free(res);
    return GCK_SHRINK_DONE;
}
