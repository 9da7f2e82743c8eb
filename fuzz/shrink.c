/* The minimiser: greedy first-improvement over simpler variants of the case (smaller
 * dimensions, tight layouts, no offsets, batch 1, simpler values), each run in a worker so
 * that crashes and hangs can be minimised too: first in one kept between attempts, then, if it
 * fails there, in a fresh one. */
#include "shrink.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemmcheck/runner.h"
#include "wire.h"
#include "worker.h"

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

/* Whether res shows a finding of `kind` (with kind == COUNT, of any kind: written back). */
static bool shows(const gck_isolated_result *res, gck_kind *kind, bool *setup_error) {
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

/* Run s in `kept` (NULL: a fresh worker); true when it fails with `kind` (or, with kind ==
 * COUNT, with any kind: written back). The kept worker is the shrinker's: a backend's start (a
 * `python:` worker importing PyTorch, a CUDA context) is paid once, not per attempt. */
static bool fails(const gck_shrink_options *o, gck_kept_worker *kept, const gck_spec *s,
                  gck_kind *kind, gck_isolated_result *res, int *runs, bool *setup_error) {
    gck_run_options ro = {.check = {.strict_ieee = o->strict_ieee, .threads = 0},
                          .determinism =
                              *kind == GCK_KIND_NONDETERMINISTIC || *kind == GCK_KIND_COUNT,
                          .concurrency = *kind == GCK_KIND_NONDETERMINISTIC ? 4 : 0};
    (*runs)++;
    if (kept)
        gck_run_kept(kept, o->backend, s, &ro, o->call_timeout, res);
    else
        gck_run_isolated(o->backend, s, &ro, o->call_timeout, res);
    return shows(res, kind, setup_error);
}

/* The cases accepted so far, the start first: each failed, and is simpler than the one before. */
typedef struct chain {
    gck_spec *at;
    size_t n, cap;
} chain;

static bool push(chain *ch, const gck_spec *s) {
    if (ch->n == ch->cap) {
        size_t cap = ch->cap ? 2 * ch->cap : 64;
        gck_spec *more = realloc(ch->at, cap * sizeof *more);
        if (!more) return false;
        ch->at = more, ch->cap = cap;
    }
    ch->at[ch->n++] = *s;
    return true;
}

/* Greedy first-improvement from the chain's last case until no candidate fails or the time is
 * up; the candidates run in `kept` (NULL: each in a fresh worker). */
static void descend(const gck_shrink_options *o, chain *ch, gck_kept_worker *kept, gck_kind kind,
                    double end, gck_isolated_result *res, int *runs, bool *setup_error) {
    bool improved = true;
    while (improved && gck_wire_now() < end) {
        improved = false;
        gck_spec cand;
        const gck_spec *last = &ch->at[ch->n - 1];
        for (int i = 0; candidate(last, i, &cand) && gck_wire_now() < end; i++) {
            if (gck_case_validate(&cand.c, NULL, 0) != GCK_OK) continue;
            if (!simpler(&cand, last)) continue;
            gck_kind k = kind;
            if (fails(o, kept, &cand, &k, res, runs, setup_error)) {
                if (!push(ch, &cand)) return;
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
}

/* The last case of the chain that fails in a fresh worker: the kept worker carries state from
 * case to case (as a campaign's workers do), and the minimal case must fail on its own. The
 * start did; almost always the last one does too (one run); otherwise a bisection finds a
 * neighbouring pair of which the first fails fresh and the second does not. */
static size_t fresh_end(const gck_shrink_options *o, const chain *ch, gck_kind kind,
                        gck_isolated_result *res, int *runs) {
    bool setup_error = false;
    size_t n = ch->n;
    if (n == 1 || fails(o, NULL, &ch->at[n - 1], &kind, res, runs, &setup_error)) return n - 1;
    size_t lo = 0, hi = n - 1;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (fails(o, NULL, &ch->at[mid], &kind, res, runs, &setup_error))
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

gck_shrink_status gck_shrink(const gck_shrink_options *o, const gck_spec *start, gck_kind *kind,
                             gck_spec *best, int *runs, char *msg, size_t len) {
    gck_isolated_result *res = malloc(sizeof *res);
    chain ch = {0};
    if (!res || !push(&ch, start)) {
        free(res);
        free(ch.at);
        snprintf(msg, len, "out of memory");
        return GCK_SHRINK_SETUP_ERROR;
    }
    *runs = 0;
    bool setup_error = false;
    *best = *start;
    if (!fails(o, NULL, start, kind, res, runs, &setup_error)) {
        snprintf(msg, len, "%s", setup_error ? res->message : "the case does not fail");
        free(res);
        free(ch.at);
        return setup_error ? GCK_SHRINK_SETUP_ERROR : GCK_SHRINK_NOT_FAILING;
    }
    double end = gck_wire_now() + o->time_limit;
    if (*kind == GCK_KIND_HANG) { /* each try costs its deadline: fresh ones only, as before */
        descend(o, &ch, NULL, *kind, end, res, runs, &setup_error);
    } else {
        gck_kept_worker kept = {0};
        descend(o, &ch, &kept, *kind, end, res, runs, &setup_error);
        gck_kept_worker_end(&kept);
        size_t last = fresh_end(o, &ch, *kind, res, runs);
        if (last + 1 < ch.n) { /* state decided: go on from there with fresh workers only */
            ch.n = last + 1;
            descend(o, &ch, NULL, *kind, end, res, runs, &setup_error);
        }
    }
    *best = ch.at[ch.n - 1];
    free(ch.at);
    free(res);
    return GCK_SHRINK_DONE;
}
