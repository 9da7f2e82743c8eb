/* Findings grouped by cause. A finding's signature separates type tuples and shape classes, so
 * one defect hit from many tuples and shapes is many findings; a cause is the backend, the kind
 * and what the kind tells of the mechanism (the checker's rule for numeric kinds, the signal
 * for crashes), so that a report leads with one line per defect and its smallest reproducer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "campaign.h"

void gck_cause_rule(const gck_fuzz_finding *f, char *buf, size_t len) {
    buf[0] = '\0';
    if (f->has_element) {
        snprintf(buf, len, "%s", f->element.rule);
    } else if (f->kind == GCK_KIND_CRASH) {
        /* "the worker died by signal 11 (Segmentation fault) ...": "signal 11" */
        const char *p = strstr(f->detail, "signal ");
        int sig;
        if (p && sscanf(p, "signal %d", &sig) == 1) snprintf(buf, len, "signal %d", sig);
    }
}

/* The cause's key of finding f: "kind|rule" (the backend is compared apart). */
static void cause_key(const gck_fuzz_finding *f, char *key, size_t len) {
    char rule[128];
    gck_cause_rule(f, rule, sizeof rule);
    snprintf(key, len, "%s|%s", gck_kind_name(f->kind), rule);
}

/* The type tuple ("f32,f32,f32,f32:f32") and the shape class of a signature
 * "backend|kind|tuple|shape", read from its end (a backend's path may hold '|'). */
static void tuple_and_shape(const char *sig, char *tuple, size_t tl, char *shape, size_t sl) {
    const char *last = strrchr(sig, '|'), *prev = last;
    while (prev && prev > sig && prev[-1] != '|') prev--;
    if (!last || !prev || prev == sig) {
        snprintf(tuple, tl, "?");
        snprintf(shape, sl, "?");
        return;
    }
    snprintf(tuple, tl, "%.*s", (int)(last - prev), prev);
    snprintf(shape, sl, "%s", last + 1);
}

static bool same_cause(const gck_fuzz_finding *a, const gck_fuzz_finding *b) {
    if (strcmp(a->backend, b->backend) != 0) return false;
    char ka[160], kb[160];
    cause_key(a, ka, sizeof ka);
    cause_key(b, kb, sizeof kb);
    return strcmp(ka, kb) == 0;
}

typedef struct member {
    size_t cause;
    char tuple[96], shape[64];
} member;

/* How many distinct tuples (part 0) or shape classes (part 1) the members of cause k hit. */
static size_t count_distinct(const member *m, size_t n, size_t k, int part) {
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        if (m[i].cause != k) continue;
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = m[j].cause == k &&
                   !strcmp(part ? m[i].shape : m[i].tuple, part ? m[j].shape : m[j].tuple);
        count += !seen;
    }
    return count;
}

static int by_cases(const void *pa, const void *pb) {
    const gck_cause *a = pa, *b = pb;
    if (a->cases != b->cases) return a->cases > b->cases ? -1 : 1;
    return a->first < b->first ? -1 : a->first > b->first;
}

size_t gck_cause_of(const gck_campaign_result *r, const gck_cause *c, size_t nc, size_t f) {
    for (size_t i = 0; i < nc; i++)
        if (same_cause(&r->findings[c[i].first], &r->findings[f])) return i;
    return nc;
}

size_t gck_result_causes(const gck_campaign_result *r, gck_cause **out) {
    *out = NULL;
    if (r->nfindings == 0) return 0;
    gck_cause *c = calloc(r->nfindings, sizeof *c);
    member *m = calloc(r->nfindings, sizeof *m);
    if (!c || !m) {
        free(c);
        free(m);
        return 0;
    }
    size_t nc = 0;
    for (size_t i = 0; i < r->nfindings; i++) {
        const gck_fuzz_finding *f = &r->findings[i];
        size_t k = gck_cause_of(r, c, nc, i);
        if (k == nc) {
            c[nc++] = (gck_cause){.first = i};
        } else {
            const gck_fuzz_finding *g = &r->findings[c[k].first];
            if (f->cost < g->cost || (f->cost == g->cost && strlen(f->repro) < strlen(g->repro)))
                c[k].first = i;
        }
        c[k].nfindings++;
        c[k].cases += f->count;
        m[i].cause = k;
        tuple_and_shape(f->signature, m[i].tuple, sizeof m[i].tuple, m[i].shape, sizeof m[i].shape);
    }
    for (size_t k = 0; k < nc; k++) {
        c[k].ntuples = count_distinct(m, r->nfindings, k, 0);
        c[k].nshapes = count_distinct(m, r->nfindings, k, 1);
    }
    free(m);
    qsort(c, nc, sizeof *c, by_cases);
    *out = c;
    return nc;
}
