/* Campaign results and reports: the JSON report (docs/FUZZING.md, docs/report.schema.json), JSON
 * Lines streaming of findings, and the summary table. JSON goes through jansson; every string
 * that did not come from gemmcheck's own tables is cleaned to valid UTF-8 first (jansson refuses
 * invalid UTF-8, and a refused string would silently vanish from the report). */
#define _DEFAULT_SOURCE 1
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "causes.h"
#include "environment.h"
#include "gemmcheck/version.h"
#include "html.h"
#include "known.h"
#include "output.h"
#include "report.h"
#include "result.h"
#include "text.h"
#include "wire.h"

/* JSON numbers must be finite: non-finite values become strings ("nan", "inf", "-inf"). */
static json_t *jnum(double v) {
    if (isfinite(v)) return json_real(v);
    return json_string(isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
}

static json_t *finding_json(const gck_fuzz_finding *f) {
    json_t *o = json_object();
    json_object_set_new(o, "kind", json_string(gck_kind_name(f->kind)));
    json_object_set_new(o, "case", gck_json_text(f->repro));
    json_object_set_new(o, "backend", gck_json_text(f->backend));
    json_object_set_new(o, "details", gck_json_text(f->detail));
    json_object_set_new(o, "time_s", jnum(f->time_s));
    json_object_set_new(o, "count", json_integer(f->count));
    json_object_set_new(o, "signature", gck_json_text(f->signature));
    json_object_set_new(o, "cost", jnum(f->cost));
    char cmd[3000];
    gck_fuzz_finding_command(f, cmd, sizeof cmd);
    json_object_set_new(o, "repro_flags", gck_json_text(f->flags));
    json_object_set_new(o, "reproduce", gck_json_text(cmd));
    if (f->known[0]) json_object_set_new(o, "known", gck_json_text(f->known));
    if (f->has_element) {
        const gck_element_report *e = &f->element;
        json_t *w = json_object();
        json_object_set_new(w, "batch", json_integer(e->batch));
        json_object_set_new(w, "i", json_integer(e->i));
        json_object_set_new(w, "j", json_integer(e->j));
        json_object_set_new(w, "got", jnum(e->got));
        json_object_set_new(w, "expected", jnum(e->expected));
        json_object_set_new(w, "error", jnum(e->error));
        json_object_set_new(w, "bound", jnum(e->bound));
        json_object_set_new(w, "ratio", jnum(e->ratio));
        json_object_set_new(w, "exact_case", json_boolean(e->exact_case));
        json_object_set_new(w, "rule", gck_json_text(e->rule));
        json_object_set_new(o, "worst", w);
    }
    return o;
}

void gck_report_stream_finding(FILE *f, const gck_fuzz_finding *fd) {
    json_t *o = finding_json(fd);
    char *s = json_dumps(o, JSON_COMPACT);
    if (s) {
        fprintf(f, "%s\n", s);
        fflush(f); /* in the kernel's hands now: a SIGKILL of the supervisor loses nothing */
        free(s);
    }
    json_decref(o);
}

static void shards_json(const gck_campaign_result *r, json_t *sum) {
    char text[32], shard[32];
    gck_result_seed_and_shard(r, text, shard, sizeof text);
    json_object_set_new(sum, "seed", json_string(text));
    json_object_set_new(sum, "shard", json_string(shard));
    gck_shard_ref one;
    const gck_shard_ref *list;
    size_t n = gck_result_shards(r, &one, &list);
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_object();
        snprintf(text, sizeof text, "%llu", (unsigned long long)list[i].seed);
        json_object_set_new(o, "seed", json_string(text));
        snprintf(text, sizeof text, "%d/%d", list[i].index, list[i].count);
        json_object_set_new(o, "shard", json_string(text));
        json_array_append_new(arr, o);
    }
    json_object_set_new(sum, "shards", arr);
}

/* summary: counts, outcomes, kinds, time, shards, and the support matrix. */
static json_t *summary_json(const gck_campaign_result *r) {
    json_t *sum = json_object();
    json_object_set_new(sum, "cases", json_integer(r->cases));
    json_t *outc = json_object();
    json_object_set_new(outc, "pass", json_integer(r->pass));
    json_object_set_new(outc, "unsupported", json_integer(r->unsupported));
    json_object_set_new(outc, "findings", json_integer(r->with_findings));
    json_object_set_new(sum, "outcomes", outc);
    json_t *byk = json_object();
    for (int k = 0; k < GCK_KIND_COUNT; k++)
        json_object_set_new(byk, gck_kind_name((gck_kind)k), json_integer(r->kind_cases[k]));
    json_object_set_new(sum, "cases_by_kind", byk);
    json_object_set_new(sum, "distinct_findings", json_integer((json_int_t)r->nfindings));
    json_object_set_new(sum, "known_findings",
                        json_integer((json_int_t)(r->nfindings - gck_result_unknown_findings(r))));
    json_t *stale = json_array();
    for (size_t i = 0; i < r->nstale; i++) json_array_append_new(stale, gck_json_text(r->stale[i]));
    json_object_set_new(sum, "stale_known", stale);
    json_object_set_new(sum, "internal_errors", json_integer(r->internal_errors));
    json_t *internal = json_array();
    for (size_t i = 0; i < r->ninternal; i++)
        json_array_append_new(internal, gck_json_text(r->internal[i]));
    json_object_set_new(sum, "internal_error_texts", internal);
    json_object_set_new(sum, "deadline_retries", json_integer(r->deadline_retries));
    json_object_set_new(sum, "seconds", jnum(r->seconds));
    json_object_set_new(sum, "cases_per_second", jnum(r->seconds > 0 ? r->cases / r->seconds : 0));
    shards_json(r, sum);
    json_object_set_new(sum, "shards_merged", json_integer(r->shards_merged));
    json_object_set_new(sum, "interrupted",
                        r->interrupted[0] ? json_string(r->interrupted) : json_null());
    json_t *mat = json_array();
    for (size_t i = 0; i < r->nmatrix; i++) {
        const gck_matrix_entry *e = &r->matrix[i];
        json_t *o = json_object();
        json_object_set_new(o, "backend", gck_json_text(e->backend));
        json_object_set_new(o, "types", json_string(e->types));
        json_object_set_new(o, "compute", json_string(e->compute));
        json_object_set_new(o, "pass", json_integer(e->pass));
        json_object_set_new(o, "fail", json_integer(e->fail));
        json_object_set_new(o, "unsupported", json_integer(e->unsupported));
        json_object_set_new(o, "max_stat_ratio", jnum(e->max_stat));
        json_object_set_new(o, "stat_elements", json_integer(e->stat_elements));
        json_object_set_new(o, "improbable_elements", json_integer(e->improbable));
        json_t *signs = json_array();
        for (int q = 0; q < 4; q++) json_array_append_new(signs, json_integer(e->error_signs[q]));
        json_object_set_new(o, "error_signs", signs);
        json_object_set_new(o, "refused_under_limits", json_integer(e->refused));
        json_object_set_new(o, "sign_test_ss", jnum(e->sign_ss));
        json_object_set_new(o, "sign_test_p", jnum(gck_matrix_sign_test_p(e)));
        json_t *bins = json_array();
        for (int b = 0; b < GCK_RATIO_BINS; b++)
            json_array_append_new(bins, json_integer(e->ratio_bins[b]));
        json_object_set_new(o, "ratio_bins", bins);
        json_object_set_new(o, "seconds", jnum(e->seconds));
        json_object_set_new(o, "fuzzed", json_boolean(e->fuzzed));
        json_array_append_new(mat, o);
    }
    json_object_set_new(sum, "support_matrix", mat);
    return sum;
}

/* environment: the machine (or what the shards' machines have in common) and every backend
 * with its status. */
static json_t *environment_json(const gck_campaign_result *r) {
    json_t *env = gck_environment_merged(r);
    json_t *bes = json_array();
    for (int b = 0; b < r->nbackends; b++) {
        json_t *o = json_object();
        json_object_set_new(o, "backend", gck_json_text(r->backends[b].spec));
        json_object_set_new(o, "version", gck_json_text(r->backends[b].version));
        json_object_set_new(o, "oracle", json_string(r->backends[b].oracle));
        char status[512];
        gck_backend_status(&r->backends[b], status, sizeof status);
        json_object_set_new(o, "status", gck_json_text(status));
        json_object_set_new(o, "cases", json_integer(r->backends[b].cases));
        json_object_set_new(o, "seconds", jnum(r->backends[b].seconds));
        json_array_append_new(bes, o);
    }
    json_object_set_new(env, "backends", bes);
    return env;
}

/* causes: the findings grouped by backend, kind and rule, each with its smallest reproducer. */
static json_t *causes_json(const gck_campaign_result *r) {
    gck_cause *c;
    size_t nc = gck_result_causes(r, &c);
    json_t *arr = json_array();
    for (size_t i = 0; i < nc; i++) {
        const gck_fuzz_finding *f = &r->findings[c[i].first];
        json_t *o = json_object();
        json_object_set_new(o, "backend", gck_json_text(f->backend));
        json_object_set_new(o, "kind", json_string(gck_kind_name(f->kind)));
        char rule[128];
        gck_cause_rule(f, rule, sizeof rule);
        json_object_set_new(o, "rule", gck_json_text(rule));
        json_object_set_new(o, "findings", json_integer((json_int_t)c[i].nfindings));
        json_object_set_new(o, "tuples", json_integer((json_int_t)c[i].ntuples));
        json_object_set_new(o, "shapes", json_integer((json_int_t)c[i].nshapes));
        json_object_set_new(o, "cases", json_integer(c[i].cases));
        json_object_set_new(o, "signature", gck_json_text(f->signature));
        json_object_set_new(o, "case", gck_json_text(f->repro));
        char cmd[3000];
        gck_fuzz_finding_command(f, cmd, sizeof cmd);
        json_object_set_new(o, "reproduce", gck_json_text(cmd));
        const char *known = gck_cause_known(r, c, nc, i);
        if (known) json_object_set_new(o, "known", gck_json_text(known));
        json_array_append_new(arr, o);
    }
    free(c);
    return arr;
}

/* The report as JSON (what --report writes and the HTML page shows). */
static json_t *report_json(const gck_campaign_result *r, const char *command) {
    json_t *root = json_object();
    json_object_set_new(root, "schema_version", json_integer(GCK_REPORT_SCHEMA_VERSION));
    json_object_set_new(root, "gemmcheck", json_string(GEMMCHECK_VERSION));
    json_object_set_new(root, "command", gck_json_text(command ? command : ""));
    json_object_set_new(root, "summary", summary_json(r));
    json_object_set_new(root, "environment", environment_json(r));
    json_object_set_new(root, "shard_environments", gck_environment_records(r));
    json_object_set_new(root, "causes", causes_json(r));
    json_t *fs = json_array();
    for (size_t i = 0; i < r->nfindings; i++)
        json_array_append_new(fs, finding_json(&r->findings[i]));
    json_object_set_new(root, "findings", fs);
    return root;
}

bool gck_report_write_json(const gck_campaign_result *r, const char *path, const char *command,
                           char *msg, size_t len) {
    json_t *root = report_json(r, command);
    bool ok = gck_output_json(root, path, JSON_INDENT(2) | JSON_ENSURE_ASCII, msg, len);
    json_decref(root);
    return ok;
}

/* The findings as the summary shows them: one line per cause with its smallest reproducer,
 * the known ones marked with their reference. */
static void print_causes(const gck_campaign_result *r, FILE *out) {
    char seed[32], shard[32];
    gck_result_seed_and_shard(r, seed, shard, sizeof seed);
    gck_cause *c;
    size_t nc = gck_result_causes(r, &c), nknown = 0;
    for (size_t i = 0; i < nc; i++) nknown += gck_cause_known(r, c, nc, i) != NULL;
    fprintf(out, "seed %s, %s%s, %.1f s, %zu distinct finding%s", seed,
            strcmp(shard, "merged") ? "shard " : "",
            strcmp(shard, "merged") ? shard : "merged shards", r->seconds, r->nfindings,
            r->nfindings == 1 ? "" : "s");
    if (r->nfindings)
        fprintf(out, " from %zu cause%s (backend, kind and rule)%s", nc, nc == 1 ? "" : "s",
                nknown ? "" : ":");
    if (nknown) fprintf(out, ", %zu of them known (they do not fail the run):", nknown);
    fprintf(out, "\n");
    const size_t shown = 12;
    for (size_t i = 0; i < nc && i < shown; i++) {
        const gck_fuzz_finding *f = &r->findings[c[i].first];
        char rule[128];
        gck_cause_rule(f, rule, sizeof rule);
        const char *known = gck_cause_known(r, c, nc, i);
        fprintf(out, "  %s%s%s%s in %s: %lld case%s, %zu tuple%s, %zu shape class%s%s%s\n",
                known ? "known (" : "", known ? known : "", known ? "): " : "",
                gck_kind_name(f->kind), f->backend, (long long)c[i].cases,
                c[i].cases == 1 ? "" : "s", c[i].ntuples, c[i].ntuples == 1 ? "" : "s",
                c[i].nshapes, c[i].nshapes == 1 ? "" : "es", rule[0] ? "; " : "", rule);
        char cmd[3000];
        gck_fuzz_finding_command(f, cmd, sizeof cmd);
        fprintf(out, "    smallest: %s\n    %s\n", f->detail, cmd);
    }
    if (nc > shown) fprintf(out, "  ... and %zu more causes (in the JSON report)\n", nc - shown);
    if (r->nfindings > nc)
        fprintf(out, "  (each distinct finding, by type tuple and shape class: the JSON report and "
                     "the JSON Lines file)\n");
    for (size_t i = 0; i < r->nstale; i++)
        fprintf(out, "%s%s\n", i ? "  " : "known entries that covered nothing in this run:\n  ",
                r->stale[i]);
    free(c);
}

void gck_report_print_verdict(const gck_campaign_result *r, FILE *out) {
    char text[300];
    gck_verdict_text(r->cases, (int64_t)r->nfindings,
                     (int64_t)(r->nfindings - gck_result_unknown_findings(r)), r->internal_errors,
                     r->interrupted, text, sizeof text);
    fprintf(out, "%s\n", text);
}

void gck_report_print_summary(const gck_campaign_result *r, FILE *out) {
    int w = 24; /* the backend column fits the longest name: names are never cut */
    for (int b = 0; b < r->nbackends; b++)
        if ((int)strlen(r->backends[b].spec) > w) w = (int)strlen(r->backends[b].spec);
    fprintf(out, "\n%-*s %9s %9s %9s %9s %9s\n", w, "backend", "cases", "pass", "unsupp.",
            "findings", "cases/s");
    for (int b = 0; b < r->nbackends; b++) {
        const gck_backend_info *bi = &r->backends[b];
        gck_backend_totals t = gck_result_backend_totals(r, bi->spec);
        if (!bi->ran && bi->cases == 0) {
            char status[512];
            gck_backend_status(bi, status, sizeof status);
            fprintf(out, "%-*s %s\n", w, bi->spec, status);
            continue;
        }
        fprintf(out, "%-*s %9lld %9lld %9lld %9lld %9.1f\n", w, bi->spec, (long long)bi->cases,
                (long long)t.pass, (long long)t.unsupported, (long long)t.fail,
                bi->seconds > 0 ? (double)bi->cases / bi->seconds : 0.0);
    }
    fprintf(out, "%-*s %9lld %9lld %9lld %9lld %9.1f\n", w, "total", (long long)r->cases,
            (long long)r->pass, (long long)r->unsupported, (long long)r->with_findings,
            r->seconds > 0 ? (double)r->cases / r->seconds : 0.0);
    for (int b = 0; b < r->nbackends; b++) {
        gck_backend_totals t = gck_result_backend_totals(r, r->backends[b].spec);
        if (t.refused)
            fprintf(out,
                    "under limits: %s refused %lld first call(s) with an error (counted, not "
                    "findings: the next call, without limits, was checked)\n",
                    r->backends[b].spec, (long long)t.refused);
    }
    print_causes(r, out);
    if (r->deadline_retries)
        fprintf(out,
                "%lld call(s) missed their deadline once and met it when run again in a fresh "
                "worker (a busy machine; not findings)\n",
                (long long)r->deadline_retries);
    if (!r->internal_errors) return;
    fprintf(out, "%lld internal error(s) of gemmcheck (not findings of a backend):\n",
            (long long)r->internal_errors);
    for (size_t i = 0; i < r->ninternal; i++) fprintf(out, "  %s\n", r->internal[i]);
    if ((size_t)r->internal_errors > r->ninternal)
        fprintf(out, "  ... %lld more (the report keeps the first %d texts)\n",
                (long long)r->internal_errors - (long long)r->ninternal, GCK_INTERNAL_KEPT);
}

bool gck_report_write_html(const gck_campaign_result *r, const char *path, const char *command,
                           char *msg, size_t len) {
    json_t *root = report_json(r, command);
    bool ok = gck_html_campaign_file(root, path, msg, len);
    json_decref(root);
    return ok;
}
