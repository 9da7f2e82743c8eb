/* Known findings (known.h). An entry names a backend (an extended regular expression matched
 * against the whole spec), a kind, and optionally what else must match: the backend's version
 * line, the cause's rule, the type tuple, the reproducer, the finding's details; and where the
 * deviation is documented. A finding is known when one entry matches it; an entry that matched
 * nothing, although its backend ran, is stale. The matching is by text only, except for `overread`,
 * which re-runs the crash without guard pages before it accepts it. */
#define _GNU_SOURCE 1
#include "known.h"

#include "causes.h"
#include "report.h"

#include <errno.h>
#include <jansson.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "gemmcheck/runner.h"

enum { F_BACKEND, F_VERSION, F_RULE, F_TYPES, F_CASE, F_DETAILS, F_COUNT };
static const char *const field_names[F_COUNT] = {"backend", "version", "rule",
                                                 "types",   "case",    "details"};

typedef struct entry {
    char where[300]; /* FILE:LINE, or "baseline FILE" */
    char text[400];  /* the entry as written (for stale entries) */
    char see[200];
    int kind; /* a gck_kind, or -1 for any */
    bool has[F_COUNT];
    regex_t re[F_COUNT];
    bool overread;
    size_t hits;
} entry;

struct gck_known {
    entry *e;
    size_t n, cap;
};

/* How many overread verifications a run makes at most (each a fresh process). */
enum { MAX_VERIFICATIONS = 64 };

gck_known *gck_known_new(void) { return calloc(1, sizeof(gck_known)); }

static void entry_free(entry *e) {
    for (int i = 0; i < F_COUNT; i++)
        if (e->has[i]) regfree(&e->re[i]);
}

void gck_known_free(gck_known *k) {
    if (!k) return;
    for (size_t i = 0; i < k->n; i++) entry_free(&k->e[i]);
    free(k->e);
    free(k);
}

static entry *push(gck_known *k) {
    if (k->n == k->cap) {
        size_t cap = k->cap ? 2 * k->cap : 16;
        entry *p = realloc(k->e, cap * sizeof *p);
        if (!p) return NULL;
        k->e = p;
        k->cap = cap;
    }
    entry *e = &k->e[k->n];
    memset(e, 0, sizeof *e);
    return e;
}

/* Compile field i's pattern; the backend and the type tuple match whole. */
static bool set_re(entry *e, int i, const char *pat, char *msg, size_t len) {
    bool whole = i == F_BACKEND || i == F_TYPES;
    size_t n = strlen(pat) + 5; /* "^(" ")$" and the terminator */
    char *buf = malloc(n);
    if (!buf) {
        snprintf(msg, len, "%s: out of memory", e->where);
        return false;
    }
    snprintf(buf, n, whole ? "^(%s)$" : "%s", pat);
    int rc = regcomp(&e->re[i], buf, REG_EXTENDED | REG_NOSUB);
    free(buf);
    if (rc) {
        char why[200];
        regerror(rc, &e->re[i], why, sizeof why);
        snprintf(msg, len, "%s: bad %s pattern '%s': %s", e->where, field_names[i], pat, why);
        return false;
    }
    e->has[i] = true;
    return true;
}

static int kind_of(const char *name) {
    if (!strcmp(name, "*")) return -1;
    for (int k = 0; k < GCK_KIND_COUNT; k++)
        if (!strcmp(name, gck_kind_name((gck_kind)k))) return k;
    return -2;
}

/* One qualifier: NAME=VALUE for a field or see, or the word overread. */
static bool qualifier(entry *e, const char *tok, char *msg, size_t len) {
    if (!strcmp(tok, "overread")) return e->overread = true;
    const char *eq = strchr(tok, '=');
    if (eq && !strncmp(tok, "see=", 4)) {
        snprintf(e->see, sizeof e->see, "%s", eq + 1);
        return true;
    }
    for (int i = F_VERSION; eq && i < F_COUNT; i++)
        if ((size_t)(eq - tok) == strlen(field_names[i]) && !strncmp(tok, field_names[i], eq - tok))
            return set_re(e, i, eq + 1, msg, len);
    snprintf(msg, len,
             "%s: unknown qualifier '%s' (version=, rule=, types=, case=, details=, overread, "
             "see=)",
             e->where, tok);
    return false;
}

/* Parse one line into e (tokens separated by blanks: no blank inside a pattern; \s is one). */
static bool parse_line(entry *e, char *line, char *msg, size_t len) {
    snprintf(e->text, sizeof e->text, "%.*s", (int)sizeof e->text - 1, line);
    char *save, *tok = strtok_r(line, " \t", &save), *kind = strtok_r(NULL, " \t", &save);
    if (!kind) {
        snprintf(msg, len, "%s: an entry is BACKEND-PATTERN KIND [qualifiers] see=WHERE", e->where);
        return false;
    }
    if (!set_re(e, F_BACKEND, tok, msg, len)) return false;
    if ((e->kind = kind_of(kind)) == -2) {
        snprintf(msg, len, "%s: unknown kind '%s'", e->where, kind);
        return false;
    }
    while ((tok = strtok_r(NULL, " \t", &save)))
        if (!qualifier(e, tok, msg, len)) return false;
    if (!e->see[0]) {
        snprintf(msg, len, "%s: the entry says nowhere why it is known (see=WHERE)", e->where);
        return false;
    }
    return true;
}

bool gck_known_load(gck_known *k, const char *path, char *msg, size_t len) {
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(msg, len, "cannot read known findings %s: %s", path, strerror(errno));
        return false;
    }
    size_t first = k->n;
    char line[1024];
    bool ok = true;
    for (int no = 1; ok && fgets(line, sizeof line, f); no++) {
        line[strcspn(line, "\r\n")] = '\0';
        const char *p = line + strspn(line, " \t");
        if (!*p || *p == '#') continue;
        entry *e = push(k);
        if (!e) {
            snprintf(msg, len, "out of memory reading %s", path);
            ok = false;
            break;
        }
        snprintf(e->where, sizeof e->where, "%s:%d", path, no);
        ok = parse_line(e, line, msg, len);
        if (ok)
            k->n++;
        else
            entry_free(e);
    }
    fclose(f);
    if (!ok)
        while (k->n > first) entry_free(&k->e[--k->n]);
    return ok;
}

/* s with every ERE metacharacter escaped (a literal pattern). */
static void literal(const char *s, char *buf, size_t len) {
    size_t o = 0;
    for (; *s && o + 3 < len; s++) {
        if (strchr("\\^$.|?*+()[]{}", *s)) buf[o++] = '\\';
        buf[o++] = *s;
    }
    buf[o] = '\0';
}

static bool baseline_cause(gck_known *k, const char *report, json_t *c, char *msg, size_t len) {
    const char *be = json_string_value(json_object_get(c, "backend"));
    const char *kind = json_string_value(json_object_get(c, "kind"));
    const char *rule = json_string_value(json_object_get(c, "rule"));
    entry *e = push(k);
    if (!e) {
        snprintf(msg, len, "out of memory");
        return false;
    }
    snprintf(e->where, sizeof e->where, "baseline %s", report);
    snprintf(e->see, sizeof e->see, "baseline %s", report);
    if (!be || !kind || !rule || (e->kind = kind_of(kind)) < 0) {
        snprintf(msg, len, "%s: a cause without backend, kind and rule", report);
        return false;
    }
    snprintf(e->text, sizeof e->text, "%s %s rule=%s", be, kind, rule);
    char pat[600];
    literal(be, pat, sizeof pat);
    if (!set_re(e, F_BACKEND, pat, msg, len)) return false;
    literal(rule, pat, sizeof pat);
    char whole[620];
    snprintf(whole, sizeof whole, "^%s$", pat);
    if (!set_re(e, F_RULE, whole, msg, len)) {
        entry_free(e);
        return false;
    }
    k->n++;
    return true;
}

bool gck_known_baseline(gck_known *k, const char *report, char *msg, size_t len) {
    json_error_t err;
    json_t *root = json_load_file(report, 0, &err);
    if (!root) {
        snprintf(msg, len, "cannot read baseline %s: %s", report, err.text);
        return false;
    }
    json_t *causes = json_object_get(root, "causes");
    bool ok =
        json_integer_value(json_object_get(root, "schema_version")) == GCK_REPORT_SCHEMA_VERSION &&
        json_is_array(causes);
    if (!ok)
        snprintf(msg, len, "baseline %s is not a gemmcheck report of schema version %d", report,
                 GCK_REPORT_SCHEMA_VERSION);
    size_t i;
    json_t *c;
    json_array_foreach(causes, i, c) if (ok) ok = baseline_cause(k, report, c, msg, len);
    json_decref(root);
    return ok;
}

gck_known *gck_known_open(const char *const *files, int nfiles, const char *const *reports,
                          int nreports, char *msg, size_t len) {
    msg[0] = '\0';
    if (nfiles + nreports == 0) return NULL;
    gck_known *k = gck_known_new();
    bool ok = k != NULL;
    for (int i = 0; ok && i < nfiles; i++) ok = gck_known_load(k, files[i], msg, len);
    for (int i = 0; ok && i < nreports; i++) ok = gck_known_baseline(k, reports[i], msg, len);
    if (ok) return k;
    if (!k) snprintf(msg, len, "out of memory");
    gck_known_free(k);
    return NULL;
}

static const char *version_of(const gck_campaign_result *r, const char *spec) {
    for (int b = 0; b < r->nbackends; b++)
        if (!strcmp(r->backends[b].spec, spec)) return r->backends[b].version;
    return "";
}

static bool field_ok(const entry *e, int i, const char *text) {
    return !e->has[i] || regexec(&e->re[i], text, 0, NULL, 0) == 0;
}

static bool matches(const entry *e, const gck_campaign_result *r, const gck_fuzz_finding *f) {
    if (e->kind >= 0 && e->kind != (int)f->kind) return false;
    char rule[128], tuple[96], shape[64];
    gck_cause_rule(f, rule, sizeof rule);
    gck_signature_tuple_and_shape(f->signature, tuple, sizeof tuple, shape, sizeof shape);
    return field_ok(e, F_BACKEND, f->backend) &&
           field_ok(e, F_VERSION, version_of(r, f->backend)) && field_ok(e, F_RULE, rule) &&
           field_ok(e, F_TYPES, tuple) && field_ok(e, F_CASE, f->repro) &&
           field_ok(e, F_DETAILS, f->detail);
}

/* Whether a finding of the room run (below) is a documented deviation of its own: one that an
 * entry without `overread` covers, of a kind that says nothing was written out of place. */
static bool known_elsewhere(const gck_known *k, const gck_campaign_result *r,
                            const gck_fuzz_finding *crash, const gck_finding *g) {
    if (g->kind == GCK_KIND_OUT_OF_BOUNDS_WRITE || g->kind == GCK_KIND_INPUT_MODIFIED ||
        g->kind == GCK_KIND_CRASH || g->kind == GCK_KIND_HANG)
        return false;
    gck_fuzz_finding *f = malloc(sizeof *f);
    if (!f) return false;
    *f = *crash; /* the same backend, reproducer, tuple and shape class */
    f->kind = g->kind;
    snprintf(f->detail, sizeof f->detail, "%s", g->detail);
    f->has_element = g->has_element;
    if (g->has_element) f->element = g->element;
    bool known = false;
    for (size_t i = 0; i < k->n && !known; i++)
        known = !k->e[i].overread && matches(&k->e[i], r, f);
    free(f);
    return known;
}

/* An over-read, shown: the finding's case crashes again in a fresh process, and runs once every
 * operand ends 4 KiB (or 64 lines of the widest leading dimension) before its guard page, with
 * nothing written out of place and no finding but documented ones (BLIS 0.9.0's NaN·0 tiles
 * show on a case whose operands also end where BLIS over-reads: the crash hides them until the
 * room is there). Both runs without the case's memory budget and thread limit
 * (docs/RESOURCES.md): an over-read does not need them, and a crash they cause (an exit when a
 * thread cannot start) is not one. */
static bool overread_shown(const gck_known *k, const gck_campaign_result *r,
                           const gck_fuzz_finding *f) {
    gck_spec spec;
    char msg[512];
    if (f->kind != GCK_KIND_CRASH || gck_spec_parse(f->repro, &spec, msg, sizeof msg) != GCK_OK)
        return false;
    spec.mem_budget = 0;
    spec.limit_threads = false;
    gck_isolated_result *res = malloc(sizeof *res);
    if (!res) return false;
    gck_run_options o = {.check = {.oracle = GCK_ORACLE_EXACT}};
    bool shown = gck_run_isolated(f->backend, &spec, &o, 0, res) == GCK_OK &&
                 res->status == GCK_ISOLATED_CRASH;
    o.no_guard_page = true;
    shown = shown && gck_run_isolated(f->backend, &spec, &o, 0, res) == GCK_OK &&
            res->status == GCK_ISOLATED_RAN;
    if (shown && res->run.outcome != GCK_OUTCOME_PASS) { /* findings, each documented elsewhere */
        shown = res->run.outcome == GCK_OUTCOME_FINDINGS && res->run.nfindings > 0;
        for (int i = 0; shown && i < res->run.nfindings; i++)
            shown = known_elsewhere(k, r, f, &res->run.findings[i]);
    }
    free(res);
    return shown;
}

/* Whether the entry is about a backend this campaign ran (only such an entry can be stale). */
static bool ran_here(const entry *e, const gck_campaign_result *r) {
    for (int b = 0; b < r->nbackends; b++)
        if (r->backends[b].ran && field_ok(e, F_BACKEND, r->backends[b].spec)) return true;
    return false;
}

static bool add_stale(gck_campaign_result *r, const entry *e) {
    char **p = realloc(r->stale, (r->nstale + 1) * sizeof *p);
    if (!p) return false;
    r->stale = p;
    if (asprintf(&r->stale[r->nstale], "%s: %s", e->where, e->text) < 0) return false;
    r->nstale++;
    return true;
}

bool gck_known_apply(gck_known *k, gck_campaign_result *r) {
    int verifications = 0;
    for (size_t i = 0; i < k->n; i++) k->e[i].hits = 0;
    for (size_t f = 0; f < r->nfindings; f++) {
        gck_fuzz_finding *fd = &r->findings[f];
        fd->known[0] = '\0';
        for (size_t i = 0; i < k->n && !fd->known[0]; i++) {
            entry *e = &k->e[i];
            if (!matches(e, r, fd)) continue;
            if (e->overread && (verifications++ >= MAX_VERIFICATIONS || !overread_shown(k, r, fd)))
                continue;
            snprintf(fd->known, sizeof fd->known, "%s", e->see);
            e->hits++;
        }
    }
    for (size_t i = 0; i < k->n; i++)
        if (!k->e[i].hits && ran_here(&k->e[i], r) && !add_stale(r, &k->e[i])) return false;
    return true;
}

size_t gck_result_unknown_findings(const gck_campaign_result *r) {
    size_t n = 0;
    for (size_t i = 0; i < r->nfindings; i++) n += !r->findings[i].known[0];
    return n;
}
