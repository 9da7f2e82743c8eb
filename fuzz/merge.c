/* Merging shard reports. Each input is read completely and checked against the report's schema
 * and its invariants (counts are whole and add up, kinds are known, reproducers parse, strings
 * fit) before anything of it is added; the shards must be disjoint parts of one campaign — one
 * seed and gemmcheck version, no shard twice, no two case streams that share an index — unless
 * the user says otherwise. */
#define _DEFAULT_SOURCE 1
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "environment.h"
#include "gemmcheck/spec.h"
#include "merge.h"
#include "report.h"
#include "result.h"

/* ---- reading with checks ------------------------------------------------------------------ */

typedef struct reader {
    const char *path;
    char *msg;
    size_t len;
    bool bad; /* the first problem is in msg */
} reader;

static bool fail(reader *rd, const char *fmt, ...) {
    if (rd->bad) return false;
    rd->bad = true;
    int n = snprintf(rd->msg, rd->len, "%s: invalid gemmcheck report: ", rd->path);
    if (n < 0 || (size_t)n >= rd->len) return false;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rd->msg + n, rd->len - (size_t)n, fmt, ap);
    va_end(ap);
    return false;
}

static json_t *get(reader *rd, const json_t *o, const char *where, const char *key) {
    json_t *v = json_object_get(o, key);
    if (!v) fail(rd, "%s%s is missing", where, key);
    return v;
}

static json_t *get_object(reader *rd, const json_t *o, const char *where, const char *key) {
    json_t *v = get(rd, o, where, key);
    if (v && !json_is_object(v)) fail(rd, "%s%s is not an object", where, key);
    return json_is_object(v) ? v : NULL;
}

static json_t *get_array(reader *rd, const json_t *o, const char *where, const char *key) {
    json_t *v = get(rd, o, where, key);
    if (v && !json_is_array(v)) fail(rd, "%s%s is not an array", where, key);
    return json_is_array(v) ? v : NULL;
}

/* A count: a JSON integer, not negative (1e300 or 2.5 cases are not counts). */
static int64_t get_count(reader *rd, const json_t *o, const char *where, const char *key) {
    json_t *v = get(rd, o, where, key);
    if (!v) return 0;
    if (json_is_integer(v) && json_integer_value(v) >= 0) return (int64_t)json_integer_value(v);
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    fail(rd, "%s%s is %.40s, not a whole number of at least 0", where, key, s ? s : "?");
    free(s);
    return 0;
}

/* A string that fits a buffer of `size` bytes (gemmcheck never writes a longer one). */
static const char *get_string(reader *rd, const json_t *o, const char *where, const char *key,
                              size_t size) {
    json_t *v = get(rd, o, where, key);
    if (!v) return "";
    if (!json_is_string(v)) {
        fail(rd, "%s%s is not a string", where, key);
        return "";
    }
    if (json_string_length(v) >= size || strlen(json_string_value(v)) != json_string_length(v)) {
        fail(rd, "%s%s is %zu bytes long or holds a NUL; gemmcheck writes at most %zu", where, key,
             json_string_length(v), size - 1);
        return "";
    }
    return json_string_value(v);
}

/* A number as the writer stores it: finite JSON numbers, or "nan", "inf", "-inf". */
static double get_number(reader *rd, const json_t *o, const char *where, const char *key) {
    json_t *v = get(rd, o, where, key);
    if (!v) return NAN;
    if (json_is_number(v)) return json_number_value(v);
    const char *s = json_string_value(v);
    if (s && !strcmp(s, "nan")) return NAN;
    if (s && !strcmp(s, "inf")) return INFINITY;
    if (s && !strcmp(s, "-inf")) return -INFINITY;
    fail(rd, "%s%s is not a number", where, key);
    return NAN;
}

/* A time or cost: finite and not negative. */
static double get_amount(reader *rd, const json_t *o, const char *where, const char *key) {
    double d = get_number(rd, o, where, key);
    if (!(d >= 0 && isfinite(d))) {
        fail(rd, "%s%s is %g, not a finite amount of at least 0", where, key, d);
        return 0;
    }
    return d;
}

static bool add_to(int64_t *acc, int64_t v) { return !__builtin_add_overflow(*acc, v, acc); }

/* The array of n counts under key added into `into`; false (with the reader failed) when it is
 * not one. An absent key fails only when `required` (ratio_bins is absent in older reports). */
static bool read_counts(reader *rd, const json_t *o, const char *where, const char *key,
                        int64_t *into, int n, bool required) {
    const json_t *a = required ? get(rd, o, where, key) : json_object_get(o, key);
    if (!a) return !rd->bad;
    if (!json_is_array(a) || json_array_size(a) != (size_t)n)
        return fail(rd, "%s%s is not an array of %d counts", where, key, n);
    for (int q = 0; q < n; q++) {
        const json_t *c = json_array_get(a, (size_t)q);
        if (!json_is_integer(c) || json_integer_value(c) < 0 ||
            !add_to(&into[q], json_integer_value(c)))
            return fail(rd, "%s%s[%d] is not a count", where, key, q);
    }
    return true;
}

/* ---- shards -------------------------------------------------------------------------------- */

static bool parse_shard(const char *s, int *index, int *count) {
    char *end;
    unsigned long i = strtoul(s, &end, 10), n;
    if (end == s || *end != '/' || s[0] == '-' || s[0] == '+') return false;
    const char *t = end + 1;
    if (*t == '-' || *t == '+') return false;
    n = strtoul(t, &end, 10);
    if (end == t || *end || i < 1 || n > GCK_MAX_SHARDS || i > n) return false;
    *index = (int)i;
    *count = (int)n;
    return true;
}

static bool parse_seed(const char *s, uint64_t *seed) {
    if (!*s || *s == '-' || *s == '+' || strlen(s) > 20) return false;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || (v == ULLONG_MAX && strcmp(s, "18446744073709551615") != 0)) return false;
    *seed = (uint64_t)v;
    return true;
}

bool gck_result_add_shard(gck_campaign_result *r, uint64_t seed, int index, int count) {
    if (r->nshards == r->cap_shards) {
        size_t cap = r->cap_shards ? 2 * r->cap_shards : 8;
        gck_shard_ref *p = realloc(r->shards, cap * sizeof *p);
        if (!p) return false;
        r->shards = p;
        r->cap_shards = cap;
    }
    r->shards[r->nshards++] = (gck_shard_ref){seed, index, count};
    return true;
}

/* The shards a report covers: `summary.shards`. */
static bool read_shards(reader *rd, const json_t *sum, gck_campaign_result *part) {
    json_t *list = json_object_get(sum, "shards");
    if (!json_is_array(list) || json_array_size(list) == 0) {
        fail(rd, "summary.shards is not a non-empty array");
        return !rd->bad;
    }
    size_t k;
    json_t *e;
    json_array_foreach(list, k, e) {
        char where[64];
        snprintf(where, sizeof where, "summary.shards[%zu].", k);
        uint64_t seed = 0;
        int i = 0, n = 0;
        const char *s = get_string(rd, e, where, "seed", 32);
        const char *sh = get_string(rd, e, where, "shard", 32);
        if (rd->bad) return !rd->bad;
        if (!parse_seed(s, &seed)) return fail(rd, "%sseed '%s' is not a seed", where, s);
        if (!parse_shard(sh, &i, &n)) return fail(rd, "%sshard '%s' is not I/N", where, sh);
        if (!gck_result_add_shard(part, seed, i, n)) return fail(rd, "out of memory");
    }
    if ((int64_t)part->nshards != part->shards_merged)
        fail(rd, "summary.shards lists %zu shards but shards_merged is %d", part->nshards,
             part->shards_merged);
    return !rd->bad;
}

/* ---- the summary, the environment and the findings ------------------------------------------ */

/* summary.internal_error_texts: strings, no more than the internal errors it counts. */
static void read_internal_texts(reader *rd, const json_t *sum, gck_campaign_result *part) {
    const json_t *a = get_array(rd, sum, "summary.", "internal_error_texts");
    if (rd->bad) return;
    if ((int64_t)json_array_size(a) > part->internal_errors) {
        fail(rd, "summary.internal_error_texts holds %zu texts for %" PRId64 " internal errors",
             json_array_size(a), part->internal_errors);
        return;
    }
    size_t k;
    const json_t *v;
    json_array_foreach(a, k, v) {
        if (!json_is_string(v)) {
            fail(rd, "summary.internal_error_texts[%zu] is not a string", k);
            return;
        }
        if (!gck_result_keep_internal(part, json_string_value(v))) {
            fail(rd, "out of memory");
            return;
        }
    }
}

static bool read_summary(reader *rd, const json_t *sum, gck_campaign_result *part,
                         size_t *distinct_findings) {
    const char *w = "summary.";
    part->cases = get_count(rd, sum, w, "cases");
    json_t *outc = get_object(rd, sum, w, "outcomes");
    if (rd->bad) return !rd->bad;
    part->pass = get_count(rd, outc, "summary.outcomes.", "pass");
    part->unsupported = get_count(rd, outc, "summary.outcomes.", "unsupported");
    part->with_findings = get_count(rd, outc, "summary.outcomes.", "findings");
    json_t *byk = get_object(rd, sum, w, "cases_by_kind");
    for (int k = 0; k < GCK_KIND_COUNT && !rd->bad; k++)
        part->kind_cases[k] = get_count(rd, byk, "summary.cases_by_kind.", gck_kind_name(k));
    part->internal_errors = get_count(rd, sum, w, "internal_errors");
    part->deadline_retries = get_count(rd, sum, w, "deadline_retries");
    part->seconds = get_amount(rd, sum, w, "seconds");
    int64_t merged = get_count(rd, sum, w, "shards_merged");
    int64_t distinct = get_count(rd, sum, w, "distinct_findings");
    json_t *intr = get(rd, sum, w, "interrupted");
    if (rd->bad) return !rd->bad;
    if (merged < 1 || merged > INT32_MAX)
        return fail(rd, "summary.shards_merged is %" PRId64, merged);
    part->shards_merged = (int)merged;
    *distinct_findings = (size_t)distinct;
    const char *sig = json_string_value(intr);
    if (!json_is_null(intr) && !(sig && (!strcmp(sig, "SIGINT") || !strcmp(sig, "SIGTERM"))))
        return fail(rd, "summary.interrupted is neither null, \"SIGINT\" nor \"SIGTERM\"");
    if (sig) snprintf(part->interrupted, sizeof part->interrupted, "%s", sig);
    int64_t sum_outcomes = part->pass;
    if (!add_to(&sum_outcomes, part->unsupported) || !add_to(&sum_outcomes, part->with_findings) ||
        sum_outcomes != part->cases)
        return fail(rd,
                    "the outcomes (%" PRId64 " pass, %" PRId64 " unsupported, %" PRId64
                    " with findings) do not add up to its %" PRId64 " cases",
                    part->pass, part->unsupported, part->with_findings, part->cases);
    for (int k = 0; k < GCK_KIND_COUNT; k++)
        if (part->kind_cases[k] > part->with_findings)
            return fail(rd,
                        "summary.cases_by_kind.%s (%" PRId64 ") exceeds the %" PRId64
                        " cases with findings",
                        gck_kind_name(k), part->kind_cases[k], part->with_findings);
    read_internal_texts(rd, sum, part);
    read_shards(rd, sum, part);
    return !rd->bad;
}

static bool read_matrix(reader *rd, const json_t *sum, gck_campaign_result *part) {
    json_t *mat = get_array(rd, sum, "summary.", "support_matrix");
    size_t k;
    json_t *v;
    int64_t pass = 0, fail_ = 0, unsup = 0;
    json_array_foreach(mat, k, v) {
        char w[64];
        snprintf(w, sizeof w, "summary.support_matrix[%zu].", k);
        if (!json_is_object(v)) return fail(rd, "summary.support_matrix[%zu] is not an object", k);
        const char *be = get_string(rd, v, w, "backend", sizeof part->matrix[0].backend);
        const char *ty = get_string(rd, v, w, "types", sizeof part->matrix[0].types);
        const char *co = get_string(rd, v, w, "compute", sizeof part->matrix[0].compute);
        int64_t p = get_count(rd, v, w, "pass"), f = get_count(rd, v, w, "fail"),
                u = get_count(rd, v, w, "unsupported");
        double t = get_number(rd, v, w, "max_stat_ratio");
        double secs = get_amount(rd, v, w, "seconds"), ss = get_amount(rd, v, w, "sign_test_ss");
        json_t *fz = get(rd, v, w, "fuzzed");
        if (fz && !json_is_boolean(fz)) fail(rd, "%sfuzzed is not true or false", w);
        if (rd->bad) return !rd->bad;
        if (!add_to(&pass, p) || !add_to(&fail_, f) || !add_to(&unsup, u))
            return fail(rd, "the support matrix's counts overflow");
        gck_matrix_entry *e = gck_result_matrix(part, be, ty, co);
        if (!e) return fail(rd, "out of memory");
        if (!add_to(&e->pass, p) || !add_to(&e->fail, f) || !add_to(&e->unsupported, u))
            return fail(rd, "the support matrix's counts overflow");
        if (isfinite(t) && t > e->max_stat) e->max_stat = t;
        int64_t se = get_count(rd, v, w, "stat_elements"),
                ie = get_count(rd, v, w, "improbable_elements"),
                rf = get_count(rd, v, w, "refused_under_limits");
        if (rd->bad) return !rd->bad;
        if (!add_to(&e->stat_elements, se) || !add_to(&e->improbable, ie) ||
            !add_to(&e->refused, rf))
            return fail(rd, "the support matrix's counts overflow");
        if (!read_counts(rd, v, w, "error_signs", e->error_signs, 4, true) ||
            !read_counts(rd, v, w, "ratio_bins", e->ratio_bins, GCK_RATIO_BINS, false))
            return !rd->bad;
        e->seconds += secs;
        e->sign_ss += ss;
        e->fuzzed = e->fuzzed || json_is_true(fz);
    }
    if (!rd->bad &&
        (pass != part->pass || fail_ != part->with_findings || unsup != part->unsupported))
        fail(rd,
             "the support matrix counts %" PRId64 " pass, %" PRId64 " fail, %" PRId64
             " unsupported; the summary %" PRId64 ", %" PRId64 ", %" PRId64,
             pass, fail_, unsup, part->pass, part->with_findings, part->unsupported);
    return !rd->bad;
}

static bool read_backends(reader *rd, const json_t *root, gck_campaign_result *part) {
    json_t *env = get_object(rd, root, "", "environment");
    json_t *bes = get_array(rd, env, "environment.", "backends");
    size_t k;
    json_t *v;
    int64_t cases = 0;
    const size_t nmax = sizeof part->backends / sizeof part->backends[0];
    json_array_foreach(bes, k, v) {
        if (rd->bad) return !rd->bad;
        char w[64];
        snprintf(w, sizeof w, "environment.backends[%zu].", k);
        if (k >= nmax) return fail(rd, "more than %zu backends", nmax);
        gck_backend_info *b = &part->backends[part->nbackends++];
        snprintf(b->spec, sizeof b->spec, "%s", get_string(rd, v, w, "backend", sizeof b->spec));
        snprintf(b->version, sizeof b->version, "%s",
                 get_string(rd, v, w, "version", sizeof b->version));
        snprintf(b->oracle, sizeof b->oracle, "%s",
                 get_string(rd, v, w, "oracle", sizeof b->oracle));
        const char *status = get_string(rd, v, w, "status", 512);
        if (!rd->bad && !gck_backend_status_parse(status, b))
            return fail(rd, "%sstatus '%.60s' is neither \"ran\" nor \"skipped: <why>\"", w,
                        status);
        b->cases = get_count(rd, v, w, "cases");
        b->seconds = get_amount(rd, v, w, "seconds");
        if (!add_to(&cases, b->cases)) return fail(rd, "the backends' case counts overflow");
    }
    if (!rd->bad && cases != part->cases)
        fail(rd, "its backends ran %" PRId64 " cases, its summary counts %" PRId64, cases,
             part->cases);
    return !rd->bad;
}

/* shard_environments: one record per shard of summary.shards, in its order. */
static bool read_environments(reader *rd, const json_t *root, gck_campaign_result *part) {
    json_t *envs = get_array(rd, root, "", "shard_environments");
    if (rd->bad) return false;
    if (json_array_size(envs) != part->nshards)
        return fail(rd, "shard_environments has %zu records for %zu shards", json_array_size(envs),
                    part->nshards);
    size_t k;
    json_t *v;
    json_array_foreach(envs, k, v) {
        char seed[32], shard[32], why[200];
        snprintf(seed, sizeof seed, "%" PRIu64, part->shards[k].seed);
        snprintf(shard, sizeof shard, "%d/%d", part->shards[k].index, part->shards[k].count);
        if (!gck_environment_check(v, seed, shard, why, sizeof why))
            return fail(rd, "shard_environments[%zu] %s", k, why);
        char *text = json_dumps(v, JSON_COMPACT);
        bool ok = text && gck_result_add_environment(part, text);
        free(text);
        if (!ok) return fail(rd, "out of memory");
    }
    return true;
}

static void read_worst(reader *rd, const json_t *w, const char *where, gck_element_report *e) {
    char at[96];
    snprintf(at, sizeof at, "%sworst.", where);
    e->batch = get_count(rd, w, at, "batch");
    e->i = get_count(rd, w, at, "i");
    e->j = get_count(rd, w, at, "j");
    e->got = get_number(rd, w, at, "got");
    e->expected = get_number(rd, w, at, "expected");
    e->error = get_number(rd, w, at, "error");
    e->bound = get_number(rd, w, at, "bound");
    e->ratio = get_number(rd, w, at, "ratio");
    json_t *x = get(rd, w, at, "exact_case");
    if (x && !json_is_boolean(x)) fail(rd, "%sexact_case is not true or false", at);
    e->exact_case = json_is_true(x);
    snprintf(e->rule, sizeof e->rule, "%s", get_string(rd, w, at, "rule", sizeof e->rule));
}

static bool read_finding(reader *rd, const json_t *v, size_t k, gck_fuzz_finding *f) {
    char w[64];
    snprintf(w, sizeof w, "findings[%zu].", k);
    if (!json_is_object(v)) return fail(rd, "findings[%zu] is not an object", k);
    memset(f, 0, sizeof *f);
    const char *kind = get_string(rd, v, w, "kind", 64);
    if (!rd->bad && !gck_kind_parse(kind, &f->kind))
        return fail(rd, "%skind '%s' is not a finding kind", w, kind);
    snprintf(f->signature, sizeof f->signature, "%s",
             get_string(rd, v, w, "signature", sizeof f->signature));
    snprintf(f->backend, sizeof f->backend, "%s",
             get_string(rd, v, w, "backend", sizeof f->backend));
    snprintf(f->repro, sizeof f->repro, "%s", get_string(rd, v, w, "case", sizeof f->repro));
    snprintf(f->flags, sizeof f->flags, "%s", get_string(rd, v, w, "repro_flags", sizeof f->flags));
    snprintf(f->detail, sizeof f->detail, "%s", get_string(rd, v, w, "details", sizeof f->detail));
    const char *known = json_string_value(json_object_get(v, "known")); /* optional */
    snprintf(f->known, sizeof f->known, "%s", known ? known : "");
    f->cost = get_amount(rd, v, w, "cost");
    f->count = get_count(rd, v, w, "count");
    f->time_s = get_amount(rd, v, w, "time_s");
    if (rd->bad) return !rd->bad;
    if (f->count < 1) return fail(rd, "%scount is 0", w);
    /* the signature starts "backend|kind|": the JUnit writer and deduplication rely on it */
    size_t nb = strlen(f->backend);
    if (!nb || strncmp(f->signature, f->backend, nb) || f->signature[nb] != '|' ||
        strncmp(f->signature + nb + 1, kind, strlen(kind)) ||
        f->signature[nb + 1 + strlen(kind)] != '|')
        return fail(rd, "%ssignature '%s' does not start with its backend and kind", w,
                    f->signature);
    gck_spec s;
    char why[256];
    if (gck_spec_parse(f->repro, &s, why, sizeof why) != GCK_OK)
        return fail(rd, "%scase is not a reproducer: %s", w, why);
    json_t *worst = json_object_get(v, "worst");
    if (worst) {
        if (!json_is_object(worst)) return fail(rd, "%sworst is not an object", w);
        f->has_element = true;
        read_worst(rd, worst, w, &f->element);
    }
    return !rd->bad;
}

/* Read and check one report completely into `part`. */
static bool read_report(reader *rd, gck_campaign_result *part, char *version, size_t vlen) {
    struct stat st;
    if (stat(rd->path, &st) == 0 && !S_ISREG(st.st_mode)) {
        /* a FIFO or a device would block the read, or never end */
        snprintf(rd->msg, rd->len, "%s: not a regular file", rd->path);
        return false;
    }
    json_error_t err;
    json_t *root = json_load_file(rd->path, JSON_REJECT_DUPLICATES, &err);
    if (!root) {
        snprintf(rd->msg, rd->len, "%s: not a gemmcheck report: %s (line %d)", rd->path, err.text,
                 err.line);
        return false;
    }
    json_t *sum = json_object_get(root, "summary"), *fs = json_object_get(root, "findings");
    const char *ver = json_string_value(json_object_get(root, "gemmcheck"));
    if (!json_is_object(sum) || !json_is_array(fs) || !ver) {
        snprintf(rd->msg, rd->len,
                 "%s: not a gemmcheck report (it lacks the gemmcheck version, summary or findings)",
                 rd->path);
        json_decref(root);
        return false;
    }
    json_t *schema = json_object_get(root, "schema_version");
    if (!json_is_integer(schema) || json_integer_value(schema) != GCK_REPORT_SCHEMA_VERSION) {
        char *s = schema ? json_dumps(schema, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
        snprintf(rd->msg, rd->len,
                 "%s: a report of schema_version %.20s (gemmcheck %.40s); this gemmcheck reads "
                 "schema_version %d only",
                 rd->path, s ? s : "none (before gemmcheck wrote one)", ver,
                 GCK_REPORT_SCHEMA_VERSION);
        free(s);
        json_decref(root);
        return false;
    }
    snprintf(version, vlen, "%s", ver);
    size_t distinct = 0;
    if (read_summary(rd, sum, part, &distinct) && read_matrix(rd, sum, part) &&
        read_backends(rd, root, part))
        read_environments(rd, root, part);
    json_t *cmd = json_object_get(root, "command");
    if (!rd->bad && (!json_is_string(cmd) || json_string_length(cmd) >= GCK_COMMAND_LINE_MAX))
        fail(rd, "command is not a string of at most %d bytes (what gemmcheck writes)",
             GCK_COMMAND_LINE_MAX - 1);
    if (!rd->bad && !json_is_array(json_object_get(root, "causes")))
        fail(rd, "causes is missing or not an array");
    if (!rd->bad && json_array_size(fs) != distinct)
        fail(rd, "summary.distinct_findings is %zu but it has %zu findings", distinct,
             json_array_size(fs));
    size_t k;
    json_t *v;
    json_array_foreach(fs, k, v) {
        if (rd->bad) break;
        gck_fuzz_finding f;
        read_finding(rd, v, k, &f);
        if (rd->bad) break;
        size_t before = part->nfindings;
        gck_result_add_finding(part, &f);
        if (part->nfindings == before)
            fail(rd, "findings[%zu] repeats the signature '%s'", k, f.signature);
    }
    json_decref(root);
    return !rd->bad;
}

/* ---- disjoint shards ------------------------------------------------------------------------ */

/* The shards of one seed and one shard count: which indices are in. */
typedef struct gck_merge_group {
    uint64_t seed;
    int count;
    int covered;
    unsigned char *in; /* [count + 1] */
    const char **from; /* [count + 1]: the input file that brought each index */
} gck_merge_group;

static gck_merge_group *group_of(gck_merge *m, uint64_t seed, int count) {
    for (size_t g = 0; g < m->ngroups; g++)
        if (m->groups[g].seed == seed && m->groups[g].count == count) return &m->groups[g];
    gck_merge_group *p = realloc(m->groups, (m->ngroups + 1) * sizeof *p);
    if (!p) return NULL;
    m->groups = p;
    gck_merge_group *g = &p[m->ngroups];
    *g = (gck_merge_group){seed, count, 0, calloc((size_t)count + 1, 1),
                           calloc((size_t)count + 1, sizeof(char *))};
    if (!g->in || !g->from) {
        free(g->in);
        free(g->from);
        return NULL;
    }
    m->ngroups++;
    return g;
}

static int gcd(int a, int b) {
    while (b) {
        int t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Shard I/N runs case indices I-1 + kN; two shards of one seed share an index exactly when
 * I ≡ I' (mod gcd(N, N')), and shard 1 of any count runs the edge cases and the corpus. */
static bool check_disjoint(const gck_merge *m, const gck_shard_ref *s, const char *path, char *msg,
                           size_t len) {
    for (size_t g = 0; g < m->ngroups; g++) {
        const gck_merge_group *G = &m->groups[g];
        if (G->seed != s->seed) continue;
        if (G->count == s->count) {
            if (!G->in[s->index]) continue;
            snprintf(msg, len,
                     "shard %d/%d of seed %" PRIu64 " is in both %s and %s (--allow-overlap "
                     "merges it twice)",
                     s->index, s->count, s->seed, G->from[s->index], path);
            return false;
        }
        int d = gcd(G->count, s->count);
        for (int i = 1; i <= G->count; i++)
            if (G->in[i] && (i - s->index) % d == 0) {
                snprintf(msg, len,
                         "shard %d/%d of seed %" PRIu64 " (%s) and shard %d/%d (%s) run some of "
                         "the same cases (--allow-overlap merges them anyway)",
                         s->index, s->count, s->seed, path, i, G->count, G->from[i]);
                return false;
            }
    }
    return true;
}

/* ---- merging -------------------------------------------------------------------------------- */

static bool add_counts(gck_campaign_result *r, const gck_campaign_result *p) {
    bool ok = add_to(&r->cases, p->cases) && add_to(&r->pass, p->pass) &&
              add_to(&r->unsupported, p->unsupported) &&
              add_to(&r->with_findings, p->with_findings) &&
              add_to(&r->internal_errors, p->internal_errors) &&
              add_to(&r->deadline_retries, p->deadline_retries);
    for (int k = 0; k < GCK_KIND_COUNT; k++) ok = ok && add_to(&r->kind_cases[k], p->kind_cases[k]);
    ok = ok && !__builtin_add_overflow(r->shards_merged, p->shards_merged, &r->shards_merged);
    if (p->seconds > r->seconds) r->seconds = p->seconds; /* shards run side by side */
    if (p->interrupted[0] && !r->interrupted[0])
        snprintf(r->interrupted, sizeof r->interrupted, "%s", p->interrupted);
    return ok;
}

static bool add_parts(gck_campaign_result *r, const gck_campaign_result *p) {
    for (size_t i = 0; i < p->nmatrix; i++) {
        const gck_matrix_entry *s = &p->matrix[i];
        gck_matrix_entry *e = gck_result_matrix(r, s->backend, s->types, s->compute);
        if (!e || !add_to(&e->pass, s->pass) || !add_to(&e->fail, s->fail) ||
            !add_to(&e->unsupported, s->unsupported))
            return false;
        if (s->max_stat > e->max_stat) e->max_stat = s->max_stat;
        bool ok = add_to(&e->stat_elements, s->stat_elements) &&
                  add_to(&e->improbable, s->improbable) && add_to(&e->refused, s->refused);
        for (int q = 0; ok && q < 4; q++) ok = add_to(&e->error_signs[q], s->error_signs[q]);
        for (int b = 0; ok && b < GCK_RATIO_BINS; b++)
            ok = add_to(&e->ratio_bins[b], s->ratio_bins[b]);
        if (!ok) return false;
        e->seconds += s->seconds;
        e->sign_ss += s->sign_ss;
        e->fuzzed = e->fuzzed || s->fuzzed;
    }
    for (size_t i = 0; i < p->nenvironments; i++)
        if (!gck_result_add_environment(r, p->environments[i])) return false;
    const int nmax = (int)(sizeof r->backends / sizeof r->backends[0]);
    for (int i = 0; i < p->nbackends; i++) {
        int b;
        for (b = 0; b < r->nbackends; b++)
            if (!strcmp(r->backends[b].spec, p->backends[i].spec)) break;
        if (b == r->nbackends) {
            if (b == nmax) return false;
            r->backends[r->nbackends++] = p->backends[i];
            continue;
        }
        if (!add_to(&r->backends[b].cases, p->backends[i].cases)) return false;
        if (p->backends[i].seconds > r->backends[b].seconds)
            r->backends[b].seconds = p->backends[i].seconds;
    }
    for (size_t i = 0; i < p->nfindings; i++) {
        gck_fuzz_finding *g = NULL;
        for (size_t j = 0; j < r->nfindings && !g; j++)
            if (!strcmp(r->findings[j].signature, p->findings[i].signature)) g = &r->findings[j];
        if (g && p->findings[i].count > INT64_MAX - g->count) return false;
        if (!gck_result_add_finding(r, &p->findings[i]) && !g) return false;
    }
    for (size_t i = 0; i < p->nshards; i++)
        if (!gck_result_add_shard(r, p->shards[i].seed, p->shards[i].index, p->shards[i].count))
            return false;
    for (size_t i = 0; i < p->ninternal; i++) /* counted by add_counts */
        if (!gck_result_keep_internal(r, p->internal[i])) return false;
    return true;
}

bool gck_merge_add(gck_merge *m, const char *path, char *msg, size_t len) {
    gck_campaign_result part;
    memset(&part, 0, sizeof part);
    reader rd = {path, msg, len, false};
    char version[64];
    bool ok = read_report(&rd, &part, version, sizeof version);
    if (ok && !m->allow_mixed) {
        if (!m->first_path) {
            m->first_path = path;
            m->seed = part.shards[0].seed;
            snprintf(m->version, sizeof m->version, "%s", version);
        }
        for (size_t i = 0; ok && i < part.nshards; i++)
            if (part.shards[i].seed != m->seed) {
                snprintf(msg, len,
                         "%s is of seed %" PRIu64 ", %s of seed %" PRIu64
                         ": shards of different campaigns (--allow-mixed merges them anyway)",
                         m->first_path, m->seed, path, part.shards[i].seed);
                ok = false;
            }
        if (ok && strcmp(version, m->version) != 0) {
            snprintf(
                msg, len,
                "%s was written by gemmcheck %s, %s by gemmcheck %s: their case streams differ "
                "(--allow-mixed merges them anyway)",
                m->first_path, m->version, path, version);
            ok = false;
        }
    }
    /* one at a time: a merged input that holds a shard twice is refused as well */
    for (size_t i = 0; ok && i < part.nshards; i++) {
        if (!m->allow_overlap && !check_disjoint(m, &part.shards[i], path, msg, len)) {
            ok = false;
            break;
        }
        gck_merge_group *g = group_of(m, part.shards[i].seed, part.shards[i].count);
        if (!g) {
            snprintf(msg, len, "out of memory");
            ok = false;
        } else if (!g->in[part.shards[i].index]) {
            g->in[part.shards[i].index] = 1;
            g->from[part.shards[i].index] = path;
            g->covered++;
        }
    }
    if (ok && (!add_counts(&m->total, &part) || !add_parts(&m->total, &part))) {
        snprintf(msg, len, "%s: its counts overflow the merged report's, or memory ran out", path);
        ok = false;
    }
    gck_result_free(&part);
    return ok;
}

int gck_merge_missing(const gck_merge *m, FILE *out, bool as_error) {
    int missing = 0;
    for (size_t g = 0; g < m->ngroups; g++) {
        const gck_merge_group *G = &m->groups[g];
        if (G->covered == G->count) continue;
        int first = 1;
        while (G->in[first]) first++;
        missing += G->count - G->covered;
        fprintf(out,
                "gemmcheck merge: %s%d of the %d shards of seed %" PRIu64
                " are not among the inputs (the first: %d/%d)%s\n",
                as_error ? "" : "note: ", G->count - G->covered, G->count, G->seed, first, G->count,
                as_error ? "; --allow-missing-shards merges the others anyway" : "");
    }
    return missing;
}

void gck_merge_free(gck_merge *m) {
    for (size_t g = 0; g < m->ngroups; g++) {
        free(m->groups[g].in);
        free(m->groups[g].from);
    }
    free(m->groups);
    gck_result_free(&m->total);
    memset(m, 0, sizeof *m);
}
