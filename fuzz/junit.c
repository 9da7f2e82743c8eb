/* Reports for CI tools: JUnit XML (tests/junit.xsd describes what is written) and CSV.
 *
 * The JUnit test set is stable: one test suite per backend and one test case per type tuple the
 * backend declares, whatever the campaign found and whatever its seed (the generator takes the
 * tuples in turn, so any run of as many cases as there are tuples reaches each); the tuples a
 * campaign too short for that did not reach are one skipped summary test case, those its --types
 * left out another, and a backend that could not run one skipped test case. A test case holds at
 * most one <failure> (common CI reporters show only the first), whose body says everything: the
 * worst element with its error and bound, the reproducer, the cause it belongs to and the other
 * kinds seen in the tuple. */
#define _DEFAULT_SOURCE 1
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "causes.h"
#include "environment.h"
#include "gemmcheck/version.h"
#include "output.h"
#include "report.h"
#include "result.h"
#include "text.h"

/* The order in which a tuple's failure picks its finding: what stops a program first. */
static int severity(gck_kind k) {
    static const gck_kind order[] = {GCK_KIND_CRASH,
                                     GCK_KIND_HANG,
                                     GCK_KIND_OUT_OF_BOUNDS_WRITE,
                                     GCK_KIND_INPUT_MODIFIED,
                                     GCK_KIND_FPENV_MODIFIED,
                                     GCK_KIND_ERROR,
                                     GCK_KIND_NONFINITE_MISMATCH,
                                     GCK_KIND_OUT_OF_TOLERANCE,
                                     GCK_KIND_NONDETERMINISTIC,
                                     GCK_KIND_UNIMPLEMENTED};
    for (int i = 0; i < (int)(sizeof order / sizeof order[0]); i++)
        if (order[i] == k) return i;
    return GCK_KIND_COUNT;
}

/* Is finding f one of test case e's (its backend and type tuple)? */
static bool of_entry(const gck_fuzz_finding *f, const gck_matrix_entry *e) {
    char prefix[800];
    snprintf(prefix, sizeof prefix, "%s|%s|%s:%s|", e->backend, gck_kind_name(f->kind), e->types,
             e->compute);
    return !strcmp(f->backend, e->backend) && !strncmp(f->signature, prefix, strlen(prefix));
}

/* The finding a tuple's failure shows: the most severe kind, then the smallest reproducer. */
static const gck_fuzz_finding *primary(const gck_campaign_result *r, const gck_matrix_entry *e) {
    const gck_fuzz_finding *best = NULL;
    for (size_t i = 0; i < r->nfindings; i++) {
        const gck_fuzz_finding *f = &r->findings[i];
        if (!of_entry(f, e)) continue;
        if (!best || severity(f->kind) < severity(best->kind) ||
            (f->kind == best->kind && f->cost < best->cost))
            best = f;
    }
    return best;
}

/* Whether every finding of test case e is known (and it has some): the tuple passes, naming
 * them. */
static bool known_only(const gck_campaign_result *r, const gck_matrix_entry *e) {
    bool any = false;
    for (size_t i = 0; i < r->nfindings; i++) {
        if (!of_entry(&r->findings[i], e)) continue;
        if (!r->findings[i].known[0]) return false;
        any = true;
    }
    return any;
}

/* One line of a failure's body: the text as character data, then a line break. */
static void body_line(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void body_line(FILE *f, const char *fmt, ...) {
    char line[4000];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    gck_text_xml(f, line);
    fputc('\n', f);
}

/* The findings of test case e of kind k other than `skip`: how many shape classes, how many
 * cases, and the smallest reproducer among them (NULL when there are none). */
static const gck_fuzz_finding *others_of_kind(const gck_campaign_result *r,
                                              const gck_matrix_entry *e, gck_kind k,
                                              const gck_fuzz_finding *skip, size_t *n,
                                              int64_t *cases) {
    const gck_fuzz_finding *best = NULL;
    *n = 0;
    *cases = 0;
    for (size_t i = 0; i < r->nfindings; i++) {
        const gck_fuzz_finding *o = &r->findings[i];
        if (o == skip || o->kind != k || !of_entry(o, e)) continue;
        ++*n;
        *cases += o->count;
        if (!best || o->cost < best->cost) best = o;
    }
    return best;
}

static void failure_body(FILE *f, const gck_campaign_result *r, const gck_matrix_entry *e,
                         const gck_fuzz_finding *p, const gck_cause *causes, size_t nc) {
    char cmd[3000];
    gck_fuzz_finding_command(p, cmd, sizeof cmd);
    body_line(f, "%s: %s", gck_kind_name(p->kind), p->detail);
    body_line(f, "reproduce: %s", cmd);
    if (p->has_element) {
        const gck_element_report *w = &p->element;
        body_line(f,
                  "worst element: D[batch %lld][%lld,%lld] = %.17g, exact %.17g, error %.3e, "
                  "bound %.3e, error/bound %.3g%s%s",
                  (long long)w->batch, (long long)w->i, (long long)w->j, w->got, w->expected,
                  w->error, w->bound, w->ratio, w->rule[0] ? "; rule: " : "", w->rule);
    }
    body_line(f, "failing cases of this tuple: %lld of %lld", (long long)e->fail,
              (long long)(e->pass + e->fail));
    for (int k = 0; k < GCK_KIND_COUNT; k++) {
        size_t n;
        int64_t cases;
        const gck_fuzz_finding *o = others_of_kind(r, e, (gck_kind)k, p, &n, &cases);
        if (!o) continue;
        gck_fuzz_finding_command(o, cmd, sizeof cmd);
        body_line(f, "%s %s in this tuple: %zu more shape class%s, %lld case%s; smallest: %s",
                  o->kind == p->kind ? "also" : "and", gck_kind_name(o->kind), n,
                  n == 1 ? "" : "es", (long long)cases, cases == 1 ? "" : "s", cmd);
    }
    size_t k = gck_cause_of(r, causes, nc, (size_t)(p - r->findings));
    if (k < nc) {
        const gck_fuzz_finding *s = &r->findings[causes[k].first];
        char rule[128];
        gck_cause_rule(s, rule, sizeof rule);
        gck_fuzz_finding_command(s, cmd, sizeof cmd);
        body_line(f,
                  "cause %zu of %zu of the campaign (%s in this backend%s%s): %lld cases, %zu "
                  "tuples, %zu shape classes; its smallest reproducer: %s",
                  k + 1, nc, gck_kind_name(s->kind), rule[0] ? ", " : "", rule,
                  (long long)causes[k].cases, causes[k].ntuples, causes[k].nshapes, cmd);
    }
}

/* How a declared tuple appears in the JUnit file: a test case of its own once a case of it ran
 * (or the backend refused its cases), else counted into one of the backend's two summary test
 * cases, so that which tuples a short campaign reached adds no test cases of its own. */
enum { OWN_CASE, NOT_REACHED, NOT_FUZZED };
static int placement(const gck_matrix_entry *e) {
    if (e->pass + e->fail > 0 || e->unsupported > 0) return OWN_CASE;
    return e->fuzzed ? NOT_REACHED : NOT_FUZZED;
}

/* Why a tuple's own test case with no case run is skipped: the backend refused them all. */
static void skip_reason(const gck_matrix_entry *e, char *buf, size_t len) {
    snprintf(buf, len, "no case of this tuple ran: the backend refused all %lld as unsupported",
             (long long)e->unsupported);
}

static void testcase(FILE *f, const gck_campaign_result *r, const gck_matrix_entry *e,
                     const gck_cause *causes, size_t nc) {
    fputs("    <testcase classname=\"", f);
    gck_text_xml(f, e->backend);
    fprintf(f, "\" name=\"%s:%s\" time=\"%.3f\">\n", e->types, e->compute, e->seconds);
    const gck_fuzz_finding *p = e->fail ? primary(r, e) : NULL;
    char msg[1200];
    if (p && known_only(r, e)) {
        fputs("      <system-out>", f);
        body_line(f, "%lld of %lld cases had known findings only (they do not fail the run):",
                  (long long)e->fail, (long long)(e->pass + e->fail));
        for (size_t i = 0; i < r->nfindings; i++) {
            const gck_fuzz_finding *o = &r->findings[i];
            char cmd[3000];
            gck_fuzz_finding_command(o, cmd, sizeof cmd);
            if (of_entry(o, e))
                body_line(f, "known %s (%s): %s", gck_kind_name(o->kind), o->known, cmd);
        }
        fputs("</system-out>\n", f);
    } else if (p) {
        snprintf(msg, sizeof msg, "%s in %lld of %lld cases: %s", gck_kind_name(p->kind),
                 (long long)e->fail, (long long)(e->pass + e->fail), p->detail);
        fprintf(f, "      <failure type=\"%s\" message=\"", gck_kind_name(p->kind));
        gck_text_xml(f, msg);
        fputs("\">", f);
        failure_body(f, r, e, p, causes, nc);
        fputs("</failure>\n", f);
    } else if (e->fail) {
        fprintf(f,
                "      <failure type=\"finding\" message=\"%lld cases failed; the report holds "
                "no finding of this tuple\"/>\n",
                (long long)e->fail);
    } else if (e->pass == 0) {
        skip_reason(e, msg, sizeof msg);
        fputs("      <skipped message=\"", f);
        gck_text_xml(f, msg);
        fputs("\"/>\n", f);
    }
    fputs("    </testcase>\n", f);
}

static void property(FILE *f, const char *name, const char *value) {
    fprintf(f, "      <property name=\"%s\" value=\"", name);
    gck_text_xml(f, value);
    fputs("\"/>\n", f);
}

/* A test suite's counts: test cases, failures, skipped. */
static void suite_counts(const gck_campaign_result *r, const gck_backend_info *b, size_t *tests,
                         size_t *failures, size_t *skipped) {
    size_t own = 0, unsup = 0, fail = 0;
    bool summary[3] = {false};
    for (size_t m = 0; m < r->nmatrix; m++) {
        const gck_matrix_entry *e = &r->matrix[m];
        if (strcmp(e->backend, b->spec)) continue;
        int p = placement(e);
        summary[p] = true;
        if (p != OWN_CASE) continue;
        own++;
        unsup += e->pass + e->fail == 0;
        fail += e->fail && !known_only(r, e);
    }
    *tests = own + summary[NOT_REACHED] + summary[NOT_FUZZED];
    *failures = fail;
    *skipped = unsup + summary[NOT_REACHED] + summary[NOT_FUZZED];
    if (*tests == 0) *tests = *skipped = 1; /* the backend's one skipped test case */
}

/* The backend's summary test case of the tuples placed `which` (NOT_REACHED, NOT_FUZZED): one
 * skipped test case naming how many and the first of them. */
static void summary_case(FILE *f, const gck_campaign_result *r, const gck_backend_info *b,
                         int which) {
    size_t n = 0, total = 0;
    char list[700] = "";
    for (size_t m = 0; m < r->nmatrix; m++) {
        const gck_matrix_entry *e = &r->matrix[m];
        if (strcmp(e->backend, b->spec)) continue;
        total++;
        if (placement(e) != which) continue;
        size_t o = strlen(list);
        if (n++ < 12)
            snprintf(list + o, sizeof list - o, "%s%s:%s", o ? ", " : "", e->types, e->compute);
    }
    if (!n) return;
    char msg[1000];
    snprintf(msg, sizeof msg,
             which == NOT_REACHED
                 ? "%zu of %zu declared tuples: the campaign ran fewer cases than the backend "
                   "declares tuples (a run of as many cases after its edge cases reaches every "
                   "one: more --time or --cases): %s%s"
                 : "%zu of %zu declared tuples left out by the campaign's --types: %s%s",
             n, total, list, n > 12 ? ", ..." : "");
    fputs("    <testcase classname=\"", f);
    gck_text_xml(f, b->spec);
    fprintf(f, "\" name=\"%s\" time=\"0.000\">\n      <skipped message=\"",
            which == NOT_REACHED ? "(declared tuples no case reached)"
                                 : "(declared tuples left out by --types)");
    gck_text_xml(f, msg);
    fputs("\"/>\n    </testcase>\n", f);
}

/* What every test suite states of the campaign: its start, host, build and CPU (what the shards'
 * machines have in common), seed and shard. */
typedef struct suite_facts {
    char stamp[64], host[300], commit[128], cpu[300], seed[32], shard[48];
} suite_facts;

static void campaign_facts(const gck_campaign_result *r, suite_facts *s) {
    json_t *env = gck_environment_merged(r);
    gck_environment_field(env, "timestamp", s->stamp, sizeof s->stamp);
    s->stamp[strcspn(s->stamp, "Z")] = '\0'; /* JUnit's timestamp has no zone; it is UTC */
    gck_environment_field(env, "host", s->host, sizeof s->host);
    gck_environment_field(env, "gemmcheck_commit", s->commit, sizeof s->commit);
    gck_environment_field(env, "cpu", s->cpu, sizeof s->cpu);
    json_decref(env);
    gck_result_seed_and_shard(r, s->seed, s->shard, sizeof s->seed);
    if (!strcmp(s->shard, "merged"))
        snprintf(s->shard, sizeof s->shard, "%zu shards merged", r->nshards);
}

static void testsuite(FILE *f, const gck_campaign_result *r, const gck_backend_info *b,
                      const suite_facts *sf, const gck_cause *causes, size_t nc) {
    size_t tests, failures, skipped;
    suite_counts(r, b, &tests, &failures, &skipped);
    fputs("  <testsuite name=\"", f);
    gck_text_xml(f, b->spec);
    fprintf(f,
            "\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" skipped=\"%zu\" time=\"%.3f\" "
            "timestamp=\"%s\" hostname=\"",
            tests, failures, skipped, b->seconds, sf->stamp);
    gck_text_xml(f, sf->host);
    fputs("\">\n    <properties>\n", f);
    char status[512];
    property(f, "gemmcheck", GEMMCHECK_VERSION);
    property(f, "gemmcheck_commit", sf->commit);
    property(f, "cpu", sf->cpu);
    property(f, "seed", sf->seed);
    property(f, "shard", sf->shard);
    property(f, "backend_version", b->version);
    property(f, "oracle", b->oracle);
    gck_backend_status(b, status, sizeof status);
    property(f, "status", status);
    fputs("    </properties>\n", f);
    bool any = false;
    for (size_t m = 0; m < r->nmatrix; m++)
        if (!strcmp(r->matrix[m].backend, b->spec)) {
            if (placement(&r->matrix[m]) == OWN_CASE) testcase(f, r, &r->matrix[m], causes, nc);
            any = true;
        }
    summary_case(f, r, b, NOT_REACHED);
    summary_case(f, r, b, NOT_FUZZED);
    if (!any) {
        fputs("    <testcase classname=\"", f);
        gck_text_xml(f, b->spec);
        fputs("\" name=\"(backend)\" time=\"0.000\">\n      <skipped message=\"", f);
        gck_text_xml(f, b->ran ? "the backend ran no case" : b->skipped_why);
        fputs("\"/>\n    </testcase>\n", f);
    }
    fputs("    <system-out/>\n    <system-err/>\n  </testsuite>\n", f);
}

static bool render_junit(FILE *f, const void *ctx) {
    const gck_campaign_result *r = ctx;
    gck_cause *causes;
    size_t nc = gck_result_causes(r, &causes);
    suite_facts sf;
    campaign_facts(r, &sf);
    size_t tests = 0, failures = 0, skipped = 0;
    for (int b = 0; b < r->nbackends; b++) {
        size_t t, fl, s;
        suite_counts(r, &r->backends[b], &t, &fl, &s);
        tests += t;
        failures += fl;
        skipped += s;
    }
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(f,
            "<testsuites name=\"gemmcheck fuzz\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" "
            "skipped=\"%zu\" time=\"%.3f\" timestamp=\"%s\">\n",
            tests, failures, skipped, r->seconds, sf.stamp);
    for (int b = 0; b < r->nbackends; b++) testsuite(f, r, &r->backends[b], &sf, causes, nc);
    fprintf(f, "</testsuites>\n");
    free(causes);
    return true;
}

bool gck_report_write_junit(const gck_campaign_result *r, const char *path, char *msg, size_t len) {
    return gck_output_write(path, render_junit, r, msg, len);
}

/* ---- CSV (RFC 4180: fields with a comma, quote or line break are quoted, quotes doubled) ---- */

static void csv_field(FILE *f, const char *s, bool last) {
    char *clean = gck_text_cleaned(s);
    const char *t = clean ? clean : "";
    if (strpbrk(t, ",\"\r\n")) {
        fputc('"', f);
        for (const char *p = t; *p; p++) {
            if (*p == '"') fputc('"', f);
            fputc(*p, f);
        }
        fputc('"', f);
    } else {
        fputs(t, f);
    }
    fputs(last ? "\r\n" : ",", f);
    free(clean);
}

static bool render_matrix_csv(FILE *f, const void *ctx) {
    const gck_campaign_result *r = ctx;
    fputs("backend,a,b,c,d,compute,status,cases,pass,fail,unsupported,max_stat_ratio,"
          "stat_elements,improbable_elements,sign_test_p,seconds,kinds\r\n",
          f);
    for (size_t m = 0; m < r->nmatrix; m++) {
        const gck_matrix_entry *e = &r->matrix[m];
        char ty[4][16] = {{0}}, num[64], kinds[256] = "";
        sscanf(e->types, "%15[^,],%15[^,],%15[^,],%15s", ty[0], ty[1], ty[2], ty[3]);
        csv_field(f, e->backend, false);
        for (int i = 0; i < 4; i++) csv_field(f, ty[i], false);
        csv_field(f, e->compute, false);
        csv_field(f,
                  e->fail          ? "fail"
                  : e->pass        ? "pass"
                  : !e->fuzzed     ? "not fuzzed"
                  : e->unsupported ? "unsupported"
                                   : "not reached",
                  false);
        long long counts[4] = {e->pass + e->fail + e->unsupported, e->pass, e->fail,
                               e->unsupported};
        for (int i = 0; i < 4; i++) {
            snprintf(num, sizeof num, "%lld", counts[i]);
            csv_field(f, num, false);
        }
        snprintf(num, sizeof num, "%.6g", e->max_stat);
        csv_field(f, num, false);
        snprintf(num, sizeof num, "%lld", (long long)e->stat_elements);
        csv_field(f, num, false);
        snprintf(num, sizeof num, "%lld", (long long)e->improbable);
        csv_field(f, num, false);
        snprintf(num, sizeof num, "%.3g", gck_matrix_sign_test_p(e));
        csv_field(f, num, false);
        snprintf(num, sizeof num, "%.3f", e->seconds);
        csv_field(f, num, false);
        for (int k = 0; k < GCK_KIND_COUNT; k++)
            for (size_t i = 0; i < r->nfindings; i++)
                if (r->findings[i].kind == (gck_kind)k && of_entry(&r->findings[i], e)) {
                    snprintf(kinds + strlen(kinds), sizeof kinds - strlen(kinds), "%s%s",
                             kinds[0] ? " " : "", gck_kind_name((gck_kind)k));
                    break;
                }
        csv_field(f, kinds, true);
    }
    return true;
}

bool gck_report_write_matrix_csv(const gck_campaign_result *r, const char *path, char *msg,
                                 size_t len) {
    return gck_output_write(path, render_matrix_csv, r, msg, len);
}

static bool render_backends_csv(FILE *f, const void *ctx) {
    const gck_campaign_result *r = ctx;
    fputs("backend,version,status,cases,pass,fail,unsupported,tuples,tuples_failing,"
          "distinct_findings,seconds,cases_per_second\r\n",
          f);
    for (int b = 0; b < r->nbackends; b++) {
        const gck_backend_info *bi = &r->backends[b];
        gck_backend_totals t = gck_result_backend_totals(r, bi->spec);
        long long distinct = 0;
        for (size_t i = 0; i < r->nfindings; i++)
            distinct += !strcmp(r->findings[i].backend, bi->spec);
        char status[512], num[64];
        gck_backend_status(bi, status, sizeof status);
        csv_field(f, bi->spec, false);
        csv_field(f, bi->version, false);
        csv_field(f, status, false);
        long long counts[7] = {bi->cases, t.pass,    t.fail,  t.unsupported,
                               t.tuples,  t.failing, distinct};
        for (int i = 0; i < 7; i++) {
            snprintf(num, sizeof num, "%lld", counts[i]);
            csv_field(f, num, false);
        }
        snprintf(num, sizeof num, "%.3f", bi->seconds);
        csv_field(f, num, false);
        snprintf(num, sizeof num, "%.1f", bi->seconds > 0 ? (double)bi->cases / bi->seconds : 0.0);
        csv_field(f, num, true);
    }
    return true;
}

bool gck_report_write_backends_csv(const gck_campaign_result *r, const char *path, char *msg,
                                   size_t len) {
    return gck_output_write(path, render_backends_csv, r, msg, len);
}
