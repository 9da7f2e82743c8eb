/* The result model of a campaign (result.h): findings deduplicated by signature, the support
 * matrix, backends, shards, and the verdict's words. Writers (report.c, junit.c, html.c) read
 * it; nothing here writes a file. */
#include "result.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemmcheck/checker.h"
#include "wire.h"

bool gck_result_add_finding(gck_campaign_result *r, const gck_fuzz_finding *f) {
    for (size_t i = 0; i < r->nfindings; i++) {
        gck_fuzz_finding *g = &r->findings[i];
        if (strcmp(g->signature, f->signature) != 0) continue;
        /* known only where every occurrence is (a merge of shards that disagree: not known) */
        char known[sizeof g->known];
        snprintf(known, sizeof known, "%s", g->known[0] && f->known[0] ? g->known : "");
        g->count += f->count;
        if (f->time_s < g->time_s) g->time_s = f->time_s;
        bool smaller =
            f->cost < g->cost || (f->cost == g->cost && strlen(f->repro) < strlen(g->repro));
        if (smaller) {
            double t = g->time_s;
            int64_t n = g->count;
            *g = *f;
            g->time_s = t;
            g->count = n;
        }
        memcpy(g->known, known, sizeof known);
        return smaller;
    }
    if (r->nfindings == r->cap_findings) {
        size_t cap = r->cap_findings ? 2 * r->cap_findings : 16;
        gck_fuzz_finding *p = realloc(r->findings, cap * sizeof *p);
        if (!p) return false;
        r->findings = p;
        r->cap_findings = cap;
    }
    r->findings[r->nfindings++] = *f;
    return true;
}

gck_matrix_entry *gck_result_matrix(gck_campaign_result *r, const char *backend, const char *types,
                                    const char *compute) {
    /* Callers ask for the rows in table order, again and again (a merge reads every shard's
     * matrix in the same order): looking first after the entry last given makes each such
     * lookup one comparison. Merging 1100 shards of ref's 560 rows took 17.5 s, a fifth of it
     * in strcmp; 2026-12-03. */
    for (size_t n = 0; n < r->nmatrix; n++) {
        size_t i = (r->matrix_next + n) % r->nmatrix;
        if (!strcmp(r->matrix[i].types, types) && !strcmp(r->matrix[i].compute, compute) &&
            !strcmp(r->matrix[i].backend, backend)) {
            r->matrix_next = i + 1;
            return &r->matrix[i];
        }
    }
    if (r->nmatrix == r->cap_matrix) {
        size_t cap = r->cap_matrix ? 2 * r->cap_matrix : 32;
        gck_matrix_entry *p = realloc(r->matrix, cap * sizeof *p);
        if (!p) return NULL;
        r->matrix = p;
        r->cap_matrix = cap;
    }
    gck_matrix_entry *e = &r->matrix[r->nmatrix++];
    r->matrix_next = r->nmatrix;
    memset(e, 0, sizeof *e);
    snprintf(e->backend, sizeof e->backend, "%s", backend);
    snprintf(e->types, sizeof e->types, "%s", types);
    snprintf(e->compute, sizeof e->compute, "%s", compute);
    return e;
}

gck_backend_totals gck_result_backend_totals(const gck_campaign_result *r, const char *spec) {
    gck_backend_totals t = {0};
    for (size_t m = 0; m < r->nmatrix; m++) {
        const gck_matrix_entry *e = &r->matrix[m];
        if (strcmp(e->backend, spec) != 0) continue;
        t.pass += e->pass;
        t.fail += e->fail;
        t.unsupported += e->unsupported;
        t.tuples++;
        t.failing += e->fail > 0;
        t.unreached += e->pass + e->fail == 0;
        t.refused += e->refused;
    }
    return t;
}

void gck_result_free(gck_campaign_result *r) {
    for (size_t i = 0; i < r->nenvironments; i++) free(r->environments[i]);
    free(r->environments);
    free(r->findings);
    free(r->matrix);
    free(r->shards);
    for (size_t i = 0; i < r->nstale; i++) free(r->stale[i]);
    free(r->stale);
    for (size_t i = 0; i < r->ninternal; i++) free(r->internal[i]);
    free(r->internal);
    memset(r, 0, sizeof *r);
}

bool gck_result_keep_internal(gck_campaign_result *r, const char *text) {
    if (r->ninternal >= GCK_INTERNAL_KEPT) return true;
    char **p = realloc(r->internal, (r->ninternal + 1) * sizeof *p);
    if (!p) return false;
    r->internal = p;
    if (!(p[r->ninternal] = strdup(text))) return false;
    r->ninternal++;
    return true;
}

bool gck_result_add_internal(gck_campaign_result *r, const char *text) {
    r->internal_errors++;
    return gck_result_keep_internal(r, text);
}

void gck_backend_status(const gck_backend_info *b, char *buf, size_t len) {
    snprintf(buf, len, b->ran ? "ran" : "skipped: %s", b->skipped_why);
}

bool gck_backend_status_parse(const char *text, gck_backend_info *b) {
    static const char skipped[] = "skipped: ";
    b->ran = !strcmp(text, "ran");
    if (b->ran)
        b->skipped_why[0] = '\0';
    else if (!strncmp(text, skipped, sizeof skipped - 1) &&
             strlen(text + sizeof skipped - 1) < sizeof b->skipped_why)
        snprintf(b->skipped_why, sizeof b->skipped_why, "%s", text + sizeof skipped - 1);
    else
        return false;
    return true;
}

void gck_fuzz_finding_command(const gck_fuzz_finding *f, char *buf, size_t len) {
    gck_repro_command(buf, len, f->backend, f->flags, f->repro);
}
/* The shards a report covers: those merged into it, or the campaign's own. */
size_t gck_result_shards(const gck_campaign_result *r, gck_shard_ref *one,
                         const gck_shard_ref **list) {
    *one = (gck_shard_ref){r->seed, r->shard_index, r->shard_count};
    *list = r->nshards ? r->shards : one;
    return r->nshards ? r->nshards : 1;
}

void gck_result_seed_and_shard(const gck_campaign_result *r, char *seed, char *shard, size_t len) {
    gck_shard_ref one;
    const gck_shard_ref *list;
    size_t n = gck_result_shards(r, &one, &list);
    bool one_seed = true;
    for (size_t i = 1; i < n; i++) one_seed = one_seed && list[i].seed == list[0].seed;
    if (one_seed)
        snprintf(seed, len, "%llu", (unsigned long long)list[0].seed);
    else
        snprintf(seed, len, "mixed");
    if (n == 1)
        snprintf(shard, len, "%d/%d", list[0].index, list[0].count);
    else
        snprintf(shard, len, "merged");
}

double gck_matrix_sign_test_p(const gck_matrix_entry *e) {
    const int64_t *s = e->error_signs;
    return gck_sign_test(s[0], s[1], e->sign_ss);
}
/* One line that decides: PASS, PASS with known deviations only, or FAIL. */
const char *gck_verdict_text(int64_t cases, int64_t distinct, int64_t known, int64_t internal,
                             const char *interrupted, char *buf, size_t len) {
    int64_t unknown = distinct - known;
    const char *s = unknown == 1 ? "" : "s";
    if (interrupted && interrupted[0])
        snprintf(buf, len,
                 "INTERRUPTED by %s after %lld cases: not a pass (%lld distinct finding%s not "
                 "known so far)",
                 interrupted, (long long)cases, (long long)unknown, s);
    else if (cases == 0)
        snprintf(buf, len, "NOTHING CHECKED: no case ran");
    else if (internal)
        snprintf(buf, len, "ERROR: %lld internal error(s) of gemmcheck", (long long)internal);
    else if (unknown)
        snprintf(buf, len, "FAIL: %lld distinct finding%s not known", (long long)unknown, s);
    else if (distinct)
        snprintf(buf, len, "PASS: known deviations only (%lld distinct finding%s)",
                 (long long)distinct, distinct == 1 ? "" : "s");
    else
        snprintf(buf, len, "PASS: no findings in %lld cases", (long long)cases);
    bool pass = !(interrupted && interrupted[0]) && cases && !internal && !unknown;
    return !pass ? "bad" : distinct ? "known" : "ok";
}
