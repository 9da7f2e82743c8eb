/* gemmcheck merge: every input is checked against the report's schema and invariants (a report
 * that is not one gemmcheck could have written is refused with the field named, and nothing is
 * written), shards of different campaigns and shards merged twice are refused unless the user
 * says so, and any number of inputs is read (a finding in the 1030th of 1100 is kept). */
#define _DEFAULT_SOURCE 1
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

static char dir[] = "/tmp/gck_merge_XXXXXX";
static void setup(void) { cr_assert_not_null(mkdtemp(dir)); }
static void teardown(void) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

static const char *at(const char *name) {
    static char buf[8][512];
    static int slot;
    char *p = buf[slot++ % 8];
    snprintf(p, 512, "%s/%s", dir, name);
    return p;
}

static json_t *load(const char *path) {
    json_error_t e;
    json_t *j = json_load_file(path, 0, &e);
    cr_assert_not_null(j, "%s: %s", path, e.text);
    return j;
}

static void save(json_t *j, const char *path) {
    cr_assert_eq(json_dump_file(j, path, JSON_COMPACT), 0, "%s", path);
}

/* A real shard report of a campaign on ref, or on a faulty test backend of the given mode. */
static void campaign(const char *mode, int cases, int seed, const char *shard, const char *out) {
    char args[2048], text[1 << 16], backend[1024];
    if (!strcmp(mode, "ref"))
        snprintf(backend, sizeof backend, "ref");
    else
        snprintf(backend, sizeof backend, "plugin:%s:%s", GCK_FAULTY_PLUGIN, mode);
    snprintf(args, sizeof args,
             "fuzz --backend %s --cases %d --seed %d --shard %s --jobs 1 "
             "--report %s --findings %s.jsonl --no-progress",
             backend, cases, seed, shard, out, out);
    int rc = run_gemmcheck(args, text, sizeof text);
    cr_assert(rc == 0 || rc == 1, "exit %d: %s", rc, text);
}

#define SUM(r) json_object_get(r, "summary")
#define F0(r)  json_array_get(json_object_get(r, "findings"), 0)

static json_int_t summary_int(json_t *r, const char *key) {
    return json_integer_value(json_object_get(json_object_get(r, "summary"), key));
}

/* Set the shard a report says it is (the `shard` field, the `shards` list and the shard of its
 * environment record). */
static void set_shard(json_t *r, int seed, int index, int count) {
    char s[32], sh[32];
    snprintf(s, sizeof s, "%d", seed);
    snprintf(sh, sizeof sh, "%d/%d", index, count);
    json_t *sum = json_object_get(r, "summary");
    json_object_set_new(sum, "seed", json_string(s));
    json_object_set_new(sum, "shard", json_string(sh));
    json_t *one = json_pack("[{s:s, s:s}]", "seed", s, "shard", sh);
    json_object_set_new(sum, "shards", one);
    json_t *env = json_array_get(json_object_get(r, "shard_environments"), 0);
    json_object_set_new(env, "seed", json_string(s));
    json_object_set_new(env, "shard", json_string(sh));
}

static int merge(const char *inputs, char *out, size_t len) {
    char args[8192];
    unlink(at("merged.json"));
    snprintf(args, sizeof args, "merge --report %s %s", at("merged.json"), inputs);
    return run_gemmcheck(args, out, len);
}

Test(merge, refuses_a_report_gemmcheck_could_not_have_written, .init = setup, .fini = teardown,
     .timeout = 120) {
    campaign("tolerance", 12, 5, "1/1", at("good.json"));
    char out[1 << 16];
    cr_assert_eq(merge(at("good.json"), out, sizeof out), 1, "%s", out);
    json_t *good = load(at("good.json"));
    cr_assert(json_array_size(json_object_get(good, "findings")) > 0);

    /* each: a whole file, or an edit of the good report; and what the refusal must name */
    struct {
        const char *expect;
        const char *json; /* a whole file instead of an edit */
        int edit;
    } cases[] = {
        {"not a gemmcheck report", "{\"summary\":{},\"findings\":[]}", 0},
        {"schema_version none", "{\"gemmcheck\":\"0.1.0\",\"summary\":{},\"findings\":[]}", 0},
        {"summary.cases is missing",
         "{\"schema_version\":4,\"gemmcheck\":\"0.1.0\",\"summary\":{},\"findings\":[]}", 0},
        {"a report of schema_version 1 (gemmcheck 0.1.0); this gemmcheck reads schema_version 4",
         NULL, 14},
        {"shard_environments[0] is not of seed 5 shard 1/1", NULL, 15},
        {"shard_environments[0] has a timestamp that is not of the form", NULL, 16},
        {"shard_environments has 0 records for 1 shards", NULL, 17},
        {"summary.support_matrix[0].fuzzed is not true or false", NULL, 18},
        {"summary.cases is 1.0000000000000001e300, not a whole number", NULL, 1},
        {"summary.cases is -1", NULL, 2},
        {"do not add up", NULL, 3},
        {"is not a finding kind", NULL, 4},
        {"case is not a reproducer", NULL, 5},
        {"distinct_findings", NULL, 6},
        {"bytes long", NULL, 7},
        {"summary.interrupted", NULL, 8},
        {"signature", NULL, 9},
        {"support matrix counts", NULL, 10},
        {"worst.ratio is not a number", NULL, 11},
        {"summary.shards[0].shard '0/3' is not I/N", NULL, 12},
        {"duplicate object key", "{\"gemmcheck\":\"0.1.0\",\"gemmcheck\":\"0.1.0\"}", 0},
        {"count is 0", NULL, 13},
        {"command is not a string of at most 4095 bytes", NULL, 19},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *path = at("bad.json");
        if (cases[c].json) {
            FILE *f = fopen(path, "w");
            fputs(cases[c].json, f);
            fclose(f);
        } else {
            json_t *r = json_deep_copy(good);
            json_t *sum = SUM(r), *f0 = F0(r);
            char longcase[5000];
            switch (cases[c].edit) {
            case 1: json_object_set_new(sum, "cases", json_real(1e300)); break;
            case 2: json_object_set_new(sum, "cases", json_integer(-1)); break;
            case 3:
                json_object_set_new(sum, "cases", json_integer(summary_int(r, "cases") + 1));
                break;
            case 4: json_object_set_new(f0, "kind", json_string("bogus")); break;
            case 5: json_object_set_new(f0, "case", json_string("gck1 m=1")); break;
            case 6:
                json_object_set_new(sum, "distinct_findings",
                                    json_integer(summary_int(r, "distinct_findings") + 1));
                break;
            case 7:
                memset(longcase, 'x', sizeof longcase - 1);
                longcase[sizeof longcase - 1] = '\0';
                json_object_set_new(f0, "case", json_string(longcase));
                break;
            case 8: json_object_set_new(sum, "interrupted", json_string("SIGFOO")); break;
            case 9: json_object_set_new(f0, "signature", json_string("other|crash|x")); break;
            case 10: {
                json_t *m0 = json_array_get(json_object_get(sum, "support_matrix"), 0);
                json_object_set_new(
                    m0, "pass", json_integer(json_integer_value(json_object_get(m0, "pass")) + 1));
                break;
            }
            case 11:
                json_object_set_new(json_object_get(f0, "worst"), "ratio", json_string("lots"));
                break;
            case 12:
                json_object_set_new(sum, "shards",
                                    json_pack("[{s:s, s:s}]", "seed", "5", "shard", "0/3"));
                break;
            case 13: json_object_set_new(f0, "count", json_integer(0)); break;
            case 14: json_object_set_new(r, "schema_version", json_integer(1)); break;
            case 15:
                json_object_set_new(json_array_get(json_object_get(r, "shard_environments"), 0),
                                    "shard", json_string("2/2"));
                break;
            case 16:
                json_object_set_new(json_array_get(json_object_get(r, "shard_environments"), 0),
                                    "timestamp", json_string("yesterday"));
                break;
            case 17: json_object_set_new(r, "shard_environments", json_array()); break;
            case 18:
                json_object_set_new(json_array_get(json_object_get(sum, "support_matrix"), 0),
                                    "fuzzed", json_integer(1));
                break;
            case 19: /* a command line longer than the campaign's buffer can hold */
                memset(longcase, 'x', sizeof longcase - 1);
                longcase[sizeof longcase - 1] = '\0';
                json_object_set_new(r, "command", json_string(longcase));
                break;
            }
            save(r, path);
            json_decref(r);
        }
        char inputs[1200];
        snprintf(inputs, sizeof inputs, "%s %s", at("good.json"), path);
        int rc = merge(inputs, out, sizeof out);
        cr_expect_eq(rc, 2, "case %zu (%s): exit %d: %s", c, cases[c].expect, rc, out);
        cr_expect(strstr(out, cases[c].expect) != NULL, "case %zu: '%s' lacks '%s'", c, out,
                  cases[c].expect);
        cr_expect(strstr(out, path) != NULL, "case %zu: the file is not named: %s", c, out);
        cr_expect(strchr(out, '\n') == strrchr(out, '\n'), "case %zu: not one line: %s", c, out);
        cr_expect_neq(access(at("merged.json"), F_OK), 0, "case %zu: a report was written", c);
    }
    /* a FIFO (or any file that is not regular) is refused at once: reading it would block */
    const char *fifo = at("fifo.json");
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    char inputs[1200];
    snprintf(inputs, sizeof inputs, "%s %s", at("good.json"), fifo);
    cr_expect_eq(merge(inputs, out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "not a regular file") != NULL, "%s", out);
    json_decref(good);
}

Test(merge, refuses_other_campaigns_and_repeated_shards_unless_told, .init = setup,
     .fini = teardown, .timeout = 120) {
    campaign("tolerance", 10, 5, "1/2", at("a1.json"));
    campaign("tolerance", 10, 5, "2/2", at("a2.json"));
    char out[1 << 16], in[2048];
    json_t *a2 = load(at("a2.json"));

    /* the two halves of one campaign: merged, nothing noted missing */
    snprintf(in, sizeof in, "%s %s", at("a1.json"), at("a2.json"));
    cr_expect_eq(merge(in, out, sizeof out), 1, "%s", out);
    cr_expect(strstr(out, "not among the inputs") == NULL, "%s", out);
    json_t *m = load(at("merged.json"));
    json_t *a1 = load(at("a1.json"));
    cr_expect_eq(summary_int(m, "cases"), summary_int(a1, "cases") + summary_int(a2, "cases"));
    cr_expect_eq(summary_int(m, "shards_merged"), 2);
    cr_expect_str_eq(json_string_value(json_object_get(SUM(m), "seed")), "5");
    cr_expect_str_eq(json_string_value(json_object_get(SUM(m), "shard")), "merged");
    cr_expect_eq(json_array_size(json_object_get(SUM(m), "shards")), 2);
    /* each shard's machine is kept (here one host made both: the common fields are its) */
    json_t *envs = json_object_get(m, "shard_environments");
    cr_expect_eq(json_array_size(envs), 2);
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(envs, 1), "shard")), "2/2");
    cr_expect(json_equal(json_object_get(json_object_get(m, "environment"), "host"),
                         json_object_get(json_array_get(envs, 0), "host")));
    json_decref(m);

    /* shards from two machines: the merged environment says "mixed" where they differ and
     * keeps the earliest start; the records keep each machine's own */
    json_t *elsewhere = json_deep_copy(a2);
    json_t *env2 = json_array_get(json_object_get(elsewhere, "shard_environments"), 0);
    json_object_set_new(env2, "host", json_string("other-host"));
    json_object_set_new(env2, "timestamp", json_string("2000-01-01T00:00:00Z"));
    save(elsewhere, at("elsewhere.json"));
    json_decref(elsewhere);
    snprintf(in, sizeof in, "%s %s", at("a1.json"), at("elsewhere.json"));
    cr_expect_eq(merge(in, out, sizeof out), 1, "%s", out);
    m = load(at("merged.json"));
    json_t *menv = json_object_get(m, "environment");
    cr_expect_str_eq(json_string_value(json_object_get(menv, "host")), "mixed");
    cr_expect_str_eq(json_string_value(json_object_get(menv, "timestamp")), "2000-01-01T00:00:00Z");
    envs = json_object_get(m, "shard_environments");
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(envs, 1), "host")),
                     "other-host");
    cr_expect_str_neq(json_string_value(json_object_get(json_array_get(envs, 0), "host")),
                      "other-host");
    json_decref(m);

    /* a merged report merges again with a shard it does not hold, not with one it does */
    json_t *b3 = json_deep_copy(a2);
    set_shard(b3, 5, 3, 4); /* 3/4 shares indices with 1/2 (both even): overlap */
    save(b3, at("b3.json"));
    json_t *b4 = json_deep_copy(a2);
    set_shard(b4, 5, 4, 4); /* 4/4: indices 3, 7, ...: odd, like 2/2 */
    save(b4, at("b4.json"));
    json_t *b6 = json_deep_copy(a2);
    set_shard(b6, 5, 2, 6); /* 2/6: indices 1, 7, 13: odd, not in 1/2 */
    save(b6, at("b6.json"));
    /* an incomplete set is refused (a lost shard must not look like a pass), named, no report */
    snprintf(in, sizeof in, "%s %s", at("a1.json"), at("b6.json"));
    cr_expect_eq(merge(in, out, sizeof out), 2, "disjoint 1/2 and 2/6: %s", out);
    cr_expect(strstr(out, "5 of the 6 shards of seed 5") != NULL, "%s", out);
    cr_expect(strstr(out, "1 of the 2 shards of seed 5") != NULL, "%s", out);
    cr_expect(strstr(out, "--allow-missing-shards") != NULL, "%s", out);
    cr_expect_neq(access(at("merged.json"), F_OK), 0, "a report was written");
    snprintf(in, sizeof in, "--allow-missing-shards %s %s", at("a1.json"), at("b6.json"));
    cr_expect_eq(merge(in, out, sizeof out), 1, "disjoint 1/2 and 2/6: %s", out);
    cr_expect(strstr(out, "note: 5 of the 6 shards of seed 5") != NULL, "%s", out);
    /* one shard of a pair alone: the same */
    cr_expect_eq(merge(at("a2.json"), out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "1 of the 2 shards of seed 5 are not among the inputs (the first: 1/2)"),
              "%s", out);

    static const struct {
        const char *a, *b, *expect;
    } refused[] = {
        {"a1.json", "a1.json", "shard 1/2 of seed 5 is in both"},
        {"a1.json", "b3.json", "run some of the same cases"},
        {"a2.json", "b4.json", "run some of the same cases"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        snprintf(in, sizeof in, "%s %s", at(refused[i].a), at(refused[i].b));
        cr_expect_eq(merge(in, out, sizeof out), 2, "%s + %s: %s", refused[i].a, refused[i].b, out);
        cr_expect(strstr(out, refused[i].expect) != NULL, "%s", out);
        cr_expect(strstr(out, "--allow-overlap") != NULL, "%s", out);
        char args[2100];
        snprintf(args, sizeof args, "--allow-overlap --allow-missing-shards %s", in);
        cr_expect_eq(merge(args, out, sizeof out), 1, "%s", out);
    }
    snprintf(in, sizeof in, "--allow-overlap --allow-missing-shards %s %s", at("a1.json"),
             at("a1.json"));
    cr_expect_eq(merge(in, out, sizeof out), 1, "%s", out);
    m = load(at("merged.json"));
    cr_expect_eq(summary_int(m, "cases"), 2 * summary_int(a1, "cases"));
    /* a merged report that holds 1/2 twice: merging it again needs the flag again */
    save(m, at("twice.json"));
    json_decref(m);
    cr_expect_eq(merge(at("twice.json"), out, sizeof out), 2, "%s", out);

    /* another seed, another gemmcheck version */
    json_t *other = json_deep_copy(a2);
    set_shard(other, 6, 2, 2);
    save(other, at("seed6.json"));
    json_t *older = json_deep_copy(a2);
    json_object_set_new(older, "gemmcheck", json_string("0.0.9"));
    save(older, at("older.json"));
    snprintf(in, sizeof in, "%s %s", at("a1.json"), at("seed6.json"));
    cr_expect_eq(merge(in, out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "different campaigns") != NULL, "%s", out);
    snprintf(in, sizeof in, "--allow-mixed --allow-missing-shards %s %s", at("a1.json"),
             at("seed6.json"));
    cr_expect_eq(merge(in, out, sizeof out), 1, "%s", out);
    m = load(at("merged.json"));
    cr_expect_str_eq(json_string_value(json_object_get(SUM(m), "seed")), "mixed");
    json_decref(m);
    snprintf(in, sizeof in, "%s %s", at("a1.json"), at("older.json"));
    cr_expect_eq(merge(in, out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "gemmcheck 0.0.9") != NULL, "%s", out);
    snprintf(in, sizeof in, "--allow-mixed --allow-missing-shards %s %s", at("a1.json"),
             at("older.json"));
    cr_expect_eq(merge(in, out, sizeof out), 1, "%s", out);

    json_decref(a1);
    json_decref(a2);
    json_decref(b3);
    json_decref(b4);
    json_decref(b6);
    json_decref(other);
    json_decref(older);
}

/* The sum over a report's support matrix of a count, or of an array of counts. */
static long long matrix_sum(json_t *report, const char *key) {
    long long t = 0;
    size_t i, b;
    json_t *e, *v;
    json_array_foreach(json_object_get(SUM(report), "support_matrix"), i, e) {
        json_t *x = json_object_get(e, key);
        if (json_is_array(x)) {
            json_array_foreach(x, b, v) t += json_integer_value(v);
        } else {
            t += json_integer_value(x);
        }
    }
    return t;
}

/* A copy of report r whose support matrix keeps only the rows its cases reached (the others count
 * nothing). A campaign on
 * ref lists all 560 of ref's rows, about 360 KB of JSON per shard; written 1100 times, then
 * read, that was 400 MB and most of this suite's time (26 s, 109 s under ASan). */
static json_t *reached_rows_only(const json_t *r) {
    json_t *c = json_deep_copy(r), *mat = json_object_get(SUM(c), "support_matrix");
    for (size_t i = json_array_size(mat); i-- > 0;) {
        json_t *e = json_array_get(mat, i);
        if (json_integer_value(json_object_get(e, "pass")) +
                json_integer_value(json_object_get(e, "fail")) +
                json_integer_value(json_object_get(e, "unsupported")) ==
            0)
            json_array_remove(mat, i);
    }
    return c;
}

/* 1100 shards, the only finding in the 1030th: every file is read, the finding kept. The first
 * shard lists every row of ref's table, the others only the rows their cases reached; the merged
 * matrix has them all. */
Test(merge, reads_any_number_of_shards, .init = setup, .fini = teardown, .timeout = 300) {
    campaign("ref", 3, 7, "1/1", at("clean.json"));
    campaign("segv", 2, 7, "1/1", at("crash.json"));
    json_t *clean = load(at("clean.json")), *crash = load(at("crash.json"));
    json_t *clean_rows = reached_rows_only(clean), *crash_rows = reached_rows_only(crash);
    cr_assert_eq(json_array_size(json_object_get(clean, "findings")), 0);
    cr_assert(json_array_size(json_object_get(crash, "findings")) > 0);
    enum { N = 1100, CRASH = 1030 };
    size_t cap = (size_t)N * 64 + 256, pos = 0;
    char *in = malloc(cap);
    for (int i = 1; i <= N; i++) {
        json_t *r = json_deep_copy(i == 1 ? clean : i == CRASH ? crash_rows : clean_rows);
        set_shard(r, 7, i, N);
        char name[64];
        snprintf(name, sizeof name, "s%d.json", i);
        save(r, at(name));
        json_decref(r);
        pos += (size_t)snprintf(in + pos, cap - pos, " %s", name);
    }
    char args[512], out[1 << 16];
    /* relative names keep the command line short; run in the directory */
    char *cmd = malloc(cap + 1024);
    snprintf(cmd, cap + 1024, "cd '%s' && '%s' merge --report all.json --junit all.xml%s 2>&1", dir,
             GCK_BINARY, in);
    int rc = run_shell(cmd, out, sizeof out);
    cr_expect_eq(rc, 1, "exit %d: %.2000s", rc, out);
    cr_expect(strstr(out, "not among the inputs") == NULL, "%s", out);
    json_t *m = load(at("all.json"));
    cr_expect_eq(summary_int(m, "shards_merged"), N);
    cr_expect_eq(summary_int(m, "cases"),
                 (N - 1) * summary_int(clean, "cases") + summary_int(crash, "cases"));
    cr_expect_eq(json_array_size(json_object_get(SUM(m), "shards")), N);
    /* every row of ref's table, from the first shard, and the crashing backend's reached rows */
    size_t rows = json_array_size(json_object_get(SUM(clean), "support_matrix")),
           crashed = json_array_size(json_object_get(SUM(crash_rows), "support_matrix"));
    cr_expect_gt(rows, 500);
    cr_expect_gt(crashed, 0);
    cr_expect_eq(json_array_size(json_object_get(SUM(m), "support_matrix")), rows + crashed);
    size_t i;
    json_t *f;
    int crashes = 0;
    json_array_foreach(json_object_get(m, "findings"), i, f) crashes +=
        !strcmp(json_string_value(json_object_get(f, "kind")), "crash");
    cr_expect_gt(crashes, 0, "the crash in shard %d was lost", CRASH);
    /* the per-tuple counts add up: the error/bound histogram and the statistical tier's */
    cr_expect_eq(matrix_sum(m, "ratio_bins"),
                 (N - 1) * matrix_sum(clean, "ratio_bins") + matrix_sum(crash, "ratio_bins"));
    cr_expect_eq(matrix_sum(m, "stat_elements"),
                 (N - 1) * matrix_sum(clean, "stat_elements") + matrix_sum(crash, "stat_elements"));
    cr_expect_gt(matrix_sum(clean, "stat_elements"), 0);
    /* the merged report is itself a valid input */
    snprintf(args, sizeof args, "merge --report %s %s", at("again.json"), at("all.json"));
    cr_expect_eq(run_gemmcheck(args, out, sizeof out), 1, "%s", out);
    json_decref(m);
    json_decref(clean);
    json_decref(crash);
    json_decref(clean_rows);
    json_decref(crash_rows);
    free(in);
    free(cmd);
}

/* gemmcheck's own failures keep their texts (with their cases) through a merge: the merged
 * report counts them all, keeps each text, says them in its summary and its exit status (3);
 * a report with more texts than internal errors, or a text that is not a string, is refused. */
Test(merge, keeps_the_texts_of_internal_errors, .init = setup, .fini = teardown, .timeout = 120) {
    campaign("ref", 3, 9, "1/1", at("one.json"));
    json_t *r = load(at("one.json"));
    cr_assert_eq(summary_int(r, "internal_errors"), 0);
    cr_assert_eq(json_array_size(json_object_get(SUM(r), "internal_error_texts")), 0);
    static const char *texts[2][2] = {{"out of memory on 'ref f32 ... 1x1x1'", "lost on 'x'"},
                                      {"the exact and MPFR oracles disagree on 'y'", NULL}};
    for (int s = 0; s < 2; s++) {
        json_t *c = json_deep_copy(r);
        set_shard(c, 9, s + 1, 2);
        json_t *a = json_array();
        for (int t = 0; t < 2 && texts[s][t]; t++)
            json_array_append_new(a, json_string(texts[s][t]));
        json_object_set_new(SUM(c), "internal_errors", json_integer(s ? 3 : 2)); /* 1 untold */
        json_object_set_new(SUM(c), "internal_error_texts", a);
        save(c, at(s ? "b.json" : "a.json"));
        json_decref(c);
    }
    char in[1024], out[1 << 14];
    snprintf(in, sizeof in, "%s %s", at("a.json"), at("b.json"));
    cr_expect_eq(merge(in, out, sizeof out), 3, "%s", out);
    cr_expect(strstr(out, "5 internal error(s) of gemmcheck") != NULL, "%s", out);
    cr_expect(strstr(out, "  the exact and MPFR oracles disagree on 'y'\n") != NULL, "%s", out);
    json_t *m = load(at("merged.json"));
    cr_expect_eq(summary_int(m, "internal_errors"), 5);
    json_t *kept = json_object_get(SUM(m), "internal_error_texts");
    cr_assert_eq(json_array_size(kept), 3);
    cr_expect_str_eq(json_string_value(json_array_get(kept, 1)), "lost on 'x'");
    json_decref(m);
    /* more texts than errors; a text not a string */
    json_t *c = load(at("a.json"));
    json_object_set_new(SUM(c), "internal_errors", json_integer(1));
    save(c, at("bad.json"));
    cr_expect_eq(merge(at("bad.json"), out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "holds 2 texts for 1 internal errors") != NULL, "%s", out);
    json_array_set_new(json_object_get(SUM(c), "internal_error_texts"), 0, json_integer(7));
    json_object_set_new(SUM(c), "internal_errors", json_integer(2));
    save(c, at("bad.json"));
    cr_expect_eq(merge(at("bad.json"), out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "internal_error_texts[0] is not a string") != NULL, "%s", out);
    json_decref(c);
    json_decref(r);
}
