/* Findings grouped by cause. A finding's signature separates type tuples and shape classes, so
 * one defect hit from many tuples and shapes is many findings; a cause is the backend, the kind
 * and what the kind tells of the mechanism (the checker's rule for numeric kinds; for a crash
 * the signal, exit status, pipe abuse, late death or device error; for a hang the call; for an
 * error or unimplemented path the backend's message without its numbers; for a guard finding the
 * operand and zone; for the floating-point environment what was left set), so that a report leads
 * with one line per defect and its smallest reproducer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "causes.h"
#include "result.h"

/* At most `max` bytes of text from `from` up to `stop` (or its end), digit runs as '#': a
 * message's words without the numbers that differ from case to case. */
static void words_of(const char *from, const char *stop, size_t max, char *buf, size_t len) {
    size_t o = 0;
    for (const char *p = from; *p && p != stop && (size_t)(p - from) < max && o + 1 < len; p++) {
        if (*p >= '0' && *p <= '9') {
            if (o == 0 || buf[o - 1] != '#') buf[o++] = '#';
        } else {
            buf[o++] = *p;
        }
    }
    buf[o] = '\0';
}

/* The mechanism of a crash, from the worker's death or the call's status. */
static void crash_rule(const char *d, char *buf, size_t len) {
    const char *p;
    int n;
    if ((p = strstr(d, "signal ")) && sscanf(p, "signal %d", &n) == 1)
        snprintf(buf, len, "signal %d", n); /* "the worker died by signal 11 (...) ..." */
    else if ((p = strstr(d, "exited with status ")) && sscanf(p, "exited with status %d", &n) == 1)
        snprintf(buf, len, "exit status %d", n);
    else if (strstr(d, "closed gemmcheck's message pipe"))
        snprintf(buf, len, "closed gemmcheck's message pipe");
    else if (strstr(d, "message pipe carried"))
        snprintf(buf, len, "wrote into gemmcheck's message pipe");
    else if (strstr(d, "died after the backend's calls"))
        snprintf(buf, len, "died after its calls returned");
    else if ((p = strstr(d, "sticky device error")) && (p = strstr(p, "(cuda")))
        words_of(p + 1, strchr(p, ')'), 60, buf, len); /* "cudaErrorMisalignedAddress" */
    else if (strstr(d, "sticky device error"))
        snprintf(buf, len, "sticky device error");
}

void gck_cause_rule(const gck_fuzz_finding *f, char *buf, size_t len) {
    buf[0] = '\0';
    const char *d = f->detail, *p;
    if (f->has_element) {
        snprintf(buf, len, "%s", f->element.rule);
    } else if (f->kind == GCK_KIND_CRASH) {
        crash_rule(d, buf, len);
    } else if (f->kind == GCK_KIND_HANG && (p = strstr(d, "the backend's "))) {
        /* "the backend's first call did not return ...": which call */
        words_of(p + 14, strstr(p, " did not return"), 60, buf, len);
    } else if ((f->kind == GCK_KIND_ERROR || f->kind == GCK_KIND_UNIMPLEMENTED) &&
               ((p = strstr(d, "returned an error: ")) || (p = strstr(d, "not supported: ")))) {
        words_of(strchr(p, ':') + 2, NULL, 80, buf, len); /* the backend's own words */
    } else if (f->kind == GCK_KIND_INPUT_MODIFIED || f->kind == GCK_KIND_OUT_OF_BOUNDS_WRITE) {
        /* "D: 4 byte(s) changed in the guard zone, ...": "D, guard zone" */
        p = strstr(d, " changed in the ");
        if (p && strchr(d, ':') && strchr(d, ':') < p) {
            char zone[64];
            words_of(p + 16, strchr(p + 16, ','), 40, zone, sizeof zone);
            snprintf(buf, len, "%.*s, %s", (int)(strchr(d, ':') - d), d, zone);
        }
    } else if (f->kind == GCK_KIND_FPENV_MODIFIED && (p = strstr(d, "(now "))) {
        /* what the backend left set, without the register's value (its sticky flags vary) */
        const char *end = strstr(p, " (MXCSR");
        words_of(p + 5, end ? end : strstr(p, "); "), 80, buf, len);
    }
}

/* The cause's key of finding f: "kind|rule" (the backend is compared apart). */
static void cause_key(const gck_fuzz_finding *f, char *key, size_t len) {
    char rule[128];
    gck_cause_rule(f, rule, sizeof rule);
    snprintf(key, len, "%s|%s", gck_kind_name(f->kind), rule);
}

void gck_signature_tuple_and_shape(const char *sig, char *tuple, size_t tl, char *shape,
                                   size_t sl) {
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
        gck_signature_tuple_and_shape(f->signature, m[i].tuple, sizeof m[i].tuple, m[i].shape,
                                      sizeof m[i].shape);
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

const char *gck_cause_known(const gck_campaign_result *r, const gck_cause *c, size_t nc, size_t k) {
    for (size_t i = 0; i < r->nfindings; i++)
        if (!r->findings[i].known[0] && gck_cause_of(r, c, nc, i) == k) return NULL;
    return r->findings[c[k].first].known[0] ? r->findings[c[k].first].known : NULL;
}
