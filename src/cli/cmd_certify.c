/* gemmcheck certify: one self-describing certificate of a backend on this machine — the
 * environment, the library files loaded (with their SHA-256), each row exercised once, each
 * row's numeric fingerprint found by probing, and a campaign. `gemmcheck compare` reads two. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <jansson.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "campaign.h"
#include "certify.h"
#include "cli.h"
#include "environment.h"
#include "gemmcheck/backend.h"
#include "gemmcheck/version.h"
#include "known.h"
#include "output.h"
#include "probes.h"
#include "result.h"
#include "task.h"

static const char certify_help[] =
    "usage: gemmcheck certify --backend SPEC --out CERT.json [--html CERT.html] [--time S]\n"
    "                         [--seed N] [--known FILE] [--probe-timeout S]\n"
    "                         [--appetite plain|all|none] [--appetite-timeout S]\n"
    "\n"
    "Writes one certificate of the backend on this machine: the environment (CPU and its\n"
    "instruction-set flags, OS, libc, the variables that change GEMM arithmetic or threading),\n"
    "the library files the backend loaded with their SHA-256, every row of its support table\n"
    "exercised once (runs, unimplemented or error), each row's numeric fingerprint found by\n"
    "probing with crafted inputs (the bits the inputs and the accumulator keep, the rounding of\n"
    "the accumulation, normalisation per addition or per block, products fused or rounded,\n"
    "where alpha and beta enter, the summation order as a tree at K = 16 to 2048 and where\n"
    "libraries switch paths, thread-count dependence, subnormal inputs and results, alpha = 0 /\n"
    "beta = 0 reads, Inf*0, run-to-run bits; the arithmetic again at a tile shape of at least\n"
    "128x128x64, where libraries run other kernels (cuBLAS: tensor cores), and whether every\n"
    "place in it computes alike; each property names the probe that decided it, or\n"
    "says why it could not), about 2,000 pinned cases (reproducer, digest of D, error/bound,\n"
    "ulps), and a campaign of S seconds (default 30; 0: none) with seed N (default 1).\n"
    "--time bounds the campaign only: the probes and pinned cases come first and take from\n"
    "seconds (a few rows) to minutes (ref's 560 rows: 3.5 to 5 min on 2 cores), 30 minutes\n"
    "at most. The probes run in workers (the header, each row's fingerprint, each row's pinned\n"
    "cases), each killed with its process group after --probe-timeout seconds (600; a row\n"
    "that hangs or crashes is said in the certificate, the other rows go on). The\n"
    "fingerprint's key facts (products, normalisation, accumulator, threads) are\n"
    "printed on stdout, rows with the same facts together.\n"
    "--appetite: each row's memory appetite, the smallest budget at which its 256x256x256\n"
    "case succeeds in a fresh worker, bisected to an eighth of an octave, and what the row\n"
    "does just below it (docs/RESOURCES.md); plain (default): the rows whose four operands\n"
    "share one type; all; none. --appetite-timeout S: each probe's call deadline (5 s; a\n"
    "call that hangs under a budget costs that).\n"
    "--html writes the certificate as one self-contained page as well. --known FILE marks the\n"
    "campaign's findings a known-findings file covers (docs/KNOWN.md): compare then counts a\n"
    "new finding that the new certificate marks known as no regression.\n"
    "Compare two certificates with `gemmcheck compare OLD.json NEW.json`.\n"
    "\n"
    "Exit status: 0 written; 2 bad arguments or a backend that cannot be opened; 3 internal.\n";

/* ---- the probes, each a task in a worker (probes.h, src/run/task.h) ------------------------ */

static gck_appetite_rows appetite_mode = GCK_APPETITE_PLAIN;
static double appetite_timeout = 5; /* --appetite-timeout: each probe's call deadline */

/* Lines of a probing worker's stdout and stderr shown (labelled, on stderr) per task. */
#define PROBE_OUTPUT_LINES 20

/* The one-thread run: what it gave (rows it could not run: NULL), and why a row has none. */
static void one_thread_run(const char *spec, unsigned timeout, gck_one_thread *ot, char *why,
                           size_t wlen) {
    gck_task_request q = {spec, GCK_ONE_THREAD_TASK, "", timeout, stderr, PROBE_OUTPUT_LINES};
    gck_task_result t;
    if (gck_run_task(&q, &t) != GCK_TASK_DONE) {
        char how[600];
        gck_task_why(&t, timeout, how, sizeof how);
        snprintf(why, wlen, "the one-thread run %s", how);
    } else {
        snprintf(why, wlen, "the one-thread run could not run the product");
    }
    gck_one_thread_parse(t.out, t.len, ot); /* what came before a failure counts */
    free(t.out);
}

/* One probe task for `part` of row `row`, its worker killed with its process group after
 * `timeout` seconds; its JSON, or NULL with the reason in err. */
static json_t *probe_task(const char *spec, const gck_one_thread *ot, const char *why_one,
                          gck_probe_part part, size_t row, unsigned timeout, char *err,
                          size_t len) {
    gck_probe_args a = {part, row, appetite_mode, appetite_timeout};
    char arg[128];
    gck_probe_args_text(&a, arg, sizeof arg);
    gck_task_request q = {spec, GCK_PROBE_TASK, arg, timeout, stderr, PROBE_OUTPUT_LINES};
    gck_task_result t;
    json_t *o = NULL;
    if (gck_run_task(&q, &t) == GCK_TASK_DONE)
        o = gck_probe_parse(t.out, t.len, row < ot->rows ? ot->values[row] : NULL, why_one);
    if (!o) {
        char why[600];
        if (t.end == GCK_TASK_DONE)
            snprintf(why, sizeof why, "finished with output that is not a probe's");
        else
            gck_task_why(&t, timeout, why, sizeof why);
        snprintf(err, len, "the backend's probes %s", why);
    }
    free(t.out);
    return o;
}

/* Row r probed in two tasks, its fingerprint then its pinned cases (and a third, its appetite),
 * merged into rows[r]; what a task could not give is said in the row ("probe_failure",
 * "pinned_failure", "appetite_failure"). */
static void probe_row(const char *spec, const gck_one_thread *ot, const char *why_one, json_t *rows,
                      size_t r, time_t end, unsigned cap) {
    static const char *const failure[] = {"probe_failure", "pinned_failure", "appetite_failure"};
    static const gck_probe_part parts[] = {GCK_PROBE_FINGERPRINT, GCK_PROBE_PINNED,
                                           GCK_PROBE_APPETITE};
    for (int part = 0; part < (appetite_mode == GCK_APPETITE_NONE ? 2 : 3); part++) {
        time_t left = end - time(NULL);
        left = left > (time_t)cap ? (time_t)cap : left; /* one hanging row: not every row's time */
        char why[1024] = "no time left";
        json_t *next = left > 0 ? probe_task(spec, ot, why_one, parts[part], r, (unsigned)left, why,
                                             sizeof why)
                                : NULL;
        json_t *more = next ? json_object_get(next, "rows") : NULL;
        json_t *got = more && json_array_size(more) == 1 ? json_array_get(more, 0) : NULL;
        if (got && parts[part] == GCK_PROBE_PINNED)
            json_object_set(json_array_get(rows, r), "pinned", json_object_get(got, "pinned"));
        else if (got && parts[part] == GCK_PROBE_APPETITE) {
            json_t *ap = json_object_get(got, "appetite");
            if (ap) json_object_set(json_array_get(rows, r), "appetite", ap);
        } else if (got)
            json_array_set(rows, r, got);
        else /* crashed or hung: said in the row, the others go on */
            json_object_set_new(json_array_get(rows, r), failure[part],
                                gck_json_text(why[0] ? why : "no result"));
        json_decref(next);
    }
}

/* The probes run as tasks in workers, one for the header and two or three per row (probe_row):
 * a backend that crashes or hangs while probed takes its worker down, and the certificate says so
 * in the row, the other rows probed as usual; a row whose calls leave the process unusable (a
 * sticky CUDA error: every later call fails the same way) spoils only itself. Only a header
 * that cannot be read (the backend's opening crashes) or the end of `timeout` seconds for all
 * rows together fails the whole probe. Each child has `cap` seconds at most (a row that hangs
 * costs that, not every later row's time); it is killed with its process group at its end. */
static json_t *probe_isolated(const char *spec, unsigned timeout, unsigned cap, char *err,
                              size_t len) {
    gck_one_thread ot;
    char why_one[700];
    /* one product per row: a fraction of the probes */
    one_thread_run(spec, timeout / 3 < cap ? timeout / 3 : cap, &ot, why_one, sizeof why_one);
    time_t end = time(NULL) + timeout;
    json_t *o = probe_task(spec, &ot, why_one, GCK_PROBE_HEADER, 0, timeout < cap ? timeout : cap,
                           err, len);
    json_t *rows = o ? json_object_get(o, "rows") : NULL;
    size_t count = o ? (size_t)json_integer_value(json_object_get(o, "row_count")) : 0;
    bool avail = o && json_is_true(json_object_get(o, "available"));
    for (size_t r = 0; avail && rows && r < count && r < json_array_size(rows); r++) {
        time_t left = end - time(NULL);
        if (left <= 0) {
            snprintf(err, len, "the backend's probes did not finish within %u s", timeout);
            json_decref(o);
            o = NULL;
            break;
        }
        probe_row(spec, &ot, why_one, rows, r, end, cap);
    }
    if (o) json_object_del(o, "row_count");
    gck_one_thread_free(&ot);
    return o;
}

/* ---- the fingerprint's key facts on stdout ------------------------------------------------- */

/* A row's key facts in one line: products, normalisation, accumulator bits and rounding,
 * threads (the properties an upgrade most often changes), and whether a tile-shaped product
 * computes as the probes' skinny ones do. */
static void key_facts(const json_t *row, char *buf, size_t len) {
    static const char *const keys[] = {"products",         "normalisation",
                                       "accumulator bits", "accumulator rounding",
                                       "threads",          "tile against skinny"};
    size_t n = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        size_t i;
        const json_t *p;
        json_array_foreach(json_object_get(row, "fingerprint"), i, p) {
            if (strcmp(json_string_value(json_object_get(p, "property")), keys[k]) != 0) continue;
            const char *v = json_string_value(json_object_get(p, "value"));
            n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%s: %.60s", n ? "; " : "",
                                  keys[k], v ? v : "?");
        }
    }
}

/* Rows with the same key facts together: "N rows (first TUPLE): facts". */
static void print_key_facts(const json_t *cert) {
    const json_t *rows = json_object_get(json_object_get(cert, "probed"), "rows");
    size_t nr = json_array_size(rows);
    if (!nr || !json_object_get(json_array_get(rows, 0), "fingerprint")) return;
    char(*facts)[640] = calloc(nr, sizeof *facts);
    if (!facts) return;
    for (size_t r = 0; r < nr; r++) key_facts(json_array_get(rows, r), facts[r], sizeof facts[r]);
    printf("fingerprint, key facts:\n");
    for (size_t r = 0; r < nr; r++) {
        bool seen = false;
        for (size_t q = 0; q < r && !seen; q++) seen = !strcmp(facts[q], facts[r]);
        if (seen) continue;
        size_t same = 0;
        for (size_t q = r; q < nr; q++) same += !strcmp(facts[q], facts[r]);
        printf("  %zu row%s (%s%s): %s\n", same, same == 1 ? "" : "s",
               json_string_value(json_object_get(json_array_get(rows, r), "tuple")),
               same > 1 ? ", ..." : "", facts[r][0] ? facts[r] : "(no fingerprint)");
    }
    free(facts);
}

/* The rows' memory appetites, one line each. */
static void print_appetites(const json_t *cert) {
    const json_t *rows = json_object_get(json_object_get(cert, "probed"), "rows");
    size_t i;
    const json_t *r;
    json_array_foreach(rows, i, r) {
        const json_t *a = json_object_get(r, "appetite");
        if (!a) continue;
        const json_t *b = json_object_get(a, "bytes"), *below = json_object_get(a, "failing_below");
        char size[64] = "none up to 16 GiB";
        if (json_is_integer(b))
            snprintf(size, sizeof size, "%.1f MiB", (double)json_integer_value(b) / 1048576.0);
        printf("memory appetite, %s: %s", json_string_value(json_object_get(r, "tuple")), size);
        if (json_is_object(below))
            printf(" (at %.1f MiB: %s)",
                   (double)json_integer_value(json_object_get(below, "bytes")) / 1048576.0,
                   json_string_value(json_object_get(below, "outcome")));
        printf("\n");
    }
}

/* ---- in this process: hashes, environment, campaign ---------------------------------------- */

static void sha256_file(const char *path, char *hex, size_t len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(hex, len, "unreadable: %s", strerror(errno));
        return;
    }
    struct sha256_ctx ctx;
    sha256_init(&ctx);
    unsigned char buf[1 << 16], dig[SHA256_DIGEST_SIZE];
    size_t r;
    while ((r = fread(buf, 1, sizeof buf, f)) > 0) sha256_update(&ctx, r, buf);
    fclose(f);
    sha256_digest(&ctx, sizeof dig, dig);
    for (int i = 0; i < SHA256_DIGEST_SIZE && (size_t)(2 * i + 2) < len; i++)
        snprintf(hex + 2 * i, 3, "%02x", dig[i]);
}

static json_t *hashed_files(json_t *paths) {
    json_t *a = json_array();
    size_t i;
    json_t *p;
    json_array_foreach(paths, i, p) {
        char hex[80];
        json_t *o = json_object();
        const char *path = json_string_value(p);
        char real[4096];
        if (!path || !realpath(path, real)) snprintf(real, sizeof real, "%s", path ? path : "");
        sha256_file(real, hex, sizeof hex);
        json_object_set_new(o, "path", gck_json_text(path ? path : ""));
        json_object_set_new(o, "file", gck_json_text(real));
        json_object_set_new(o, "sha256", json_string(hex));
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *environment_now(void) {
    gck_campaign_result r;
    memset(&r, 0, sizeof r);
    json_t *env = NULL;
    if (gck_result_capture_environment(&r, (double)time(NULL))) {
        json_t *recs = gck_environment_records(&r);
        env = json_incref(json_array_get(recs, 0));
        json_decref(recs);
    }
    gck_result_free(&r);
    return env ? env : json_null();
}

/* The campaign of a certificate: the campaign API on the backend for `seconds` (in this
 * process; its workers are the campaign's, its summary goes to stderr, certify's stdout stays
 * the certificate's), its JSON report read back: summary, findings and the environment. */
static json_t *campaign(const char *spec, const char *seconds, uint64_t seed, gck_known *known,
                        char *err, size_t len) {
    char report[] = "/tmp/gemmcheck-certify-XXXXXX", command[600];
    int fd = mkstemp(report);
    if (fd < 0) return snprintf(err, len, "mkstemp: %s", strerror(errno)), NULL;
    close(fd);
    gck_campaign_options o;
    gck_campaign_defaults(&o);
    o.backends[0] = spec;
    o.nbackends = 1;
    o.backends_explicit = true;
    o.time_limit = strtod(seconds, NULL);
    o.seed = seed;
    o.shard_index = o.shard_count = 1;
    o.report_path = report;
    o.known = known;
    o.log_every = 30;
    snprintf(command, sizeof command, "gemmcheck certify --backend %s --time %s --seed %llu", spec,
             seconds, (unsigned long long)seed);
    o.command_line = command;
    fflush(stdout);
    int saved = dup(1);
    dup2(2, 1); /* the campaign's summary goes to stderr */
    int rc = gck_campaign_run(&o);
    fflush(stdout);
    if (saved >= 0) dup2(saved, 1), close(saved);
    json_error_t je;
    json_t *r = rc <= 1 ? json_load_file(report, 0, &je) : NULL;
    unlink(report);
    if (!r) {
        snprintf(err, len, "the campaign failed (exit status %d)", rc);
        return NULL;
    }
    json_t *out = json_object();
    json_object_set_new(out, "seconds", json_string(seconds));
    char sd[32];
    snprintf(sd, sizeof sd, "%llu", (unsigned long long)seed);
    json_object_set_new(out, "seed", json_string(sd));
    json_object_set(out, "summary", json_object_get(r, "summary"));
    json_object_set(out, "findings", json_object_get(r, "findings"));
    json_object_set(out, "environment", json_object_get(r, "environment"));
    json_decref(r);
    return out;
}

/* --appetite and --appetite-timeout. */
static int parse_appetite(const char *cmd, const char *appetite, const char *atime) {
    if (atime && !gck_parse_real_opt(cmd, "--appetite-timeout", atime, 0.1, &appetite_timeout))
        return GCK_EXIT_USAGE;
    if (!appetite || !strcmp(appetite, "plain")) return GCK_EXIT_OK;
    if (!strcmp(appetite, "none"))
        appetite_mode = GCK_APPETITE_NONE;
    else if (!strcmp(appetite, "all"))
        appetite_mode = GCK_APPETITE_ALL;
    else
        return gck_cli_usage_error(cmd, "--appetite '%s' must be plain, all or none", appetite);
    return GCK_EXIT_OK;
}

int gck_cmd_certify(int argc, char **argv) {
    const char *cmd = "certify", *spec = NULL, *out = NULL, *tm = NULL, *seed = NULL, *html = NULL,
               *known = NULL, *pcap = NULL, *appetite = NULL, *atime = NULL;
    const gck_opt opts[] = {{"--backend", .value = &spec},
                            {"--probe-timeout", .value = &pcap},
                            {"--known", .value = &known},
                            {"--out", .value = &out},
                            {"--html", .value = &html},
                            {"--time", .value = &tm},
                            {"--seed", .value = &seed},
                            {"--appetite", .value = &appetite},
                            {"--appetite-timeout", .value = &atime}};
    gck_opt_spec os = {cmd,  opts, (int)(sizeof opts / sizeof opts[0]),
                       NULL, 0,    "certify takes no plain arguments"};
    int nargs;
    bool help = false;
    int rc = gck_opt_parse(&os, argc, argv, &nargs, &help);
    if (help) return fputs(certify_help, stdout), GCK_EXIT_OK;
    if (rc != GCK_EXIT_OK) return rc;
    double seconds;
    long long sd;
    tm = tm ? tm : "30";
    seed = seed ? seed : "1";
    if (!spec) return gck_cli_usage_error(cmd, "--backend SPEC is required");
    if (!out) return gck_cli_usage_error(cmd, "--out CERT.json is required");
    if (!gck_parse_real_opt(cmd, "--time", tm, 0, &seconds)) return GCK_EXIT_USAGE;
    if ((rc = parse_appetite(cmd, appetite, atime))) return rc;
    if (!gck_parse_count(seed, &sd))
        return gck_cli_usage_error(cmd, "--seed '%s' must be a non-negative integer", seed);
    char err[600] = "";
    gck_known *k = known ? gck_known_open(&known, 1, NULL, 0, err, sizeof err) : NULL;
    if (known && !k) return gck_cli_usage_error(cmd, "%s", err); /* before anything runs */
    double cap = 600;
    if (pcap && !gck_parse_real_opt(cmd, "--probe-timeout", pcap, 1, &cap)) {
        gck_known_free(k);
        return GCK_EXIT_USAGE;
    }
    json_t *probed = probe_isolated(spec, 1800, cap < 1800 ? (unsigned)cap : 1800, err, sizeof err);
    if (probed && json_object_get(probed, "open_error")) {
        gck_cli_usage_error(cmd, "%s", json_string_value(json_object_get(probed, "open_error")));
        json_decref(probed);
        gck_known_free(k);
        return GCK_EXIT_USAGE;
    }
    json_t *cert = json_object();
    json_object_set_new(cert, "certificate_version", json_integer(GCK_CERTIFICATE_VERSION));
    json_object_set_new(cert, "gemmcheck", json_string(GEMMCHECK_VERSION));
    json_object_set_new(cert, "backend", gck_json_text(spec));
    json_t *camp = seconds > 0 ? campaign(spec, tm, (uint64_t)sd, k, err, sizeof err) : NULL;
    gck_known_free(k);
    json_t *env = camp ? json_incref(json_object_get(camp, "environment")) : environment_now();
    if (camp) json_object_del(camp, "environment");
    json_object_set_new(cert, "environment", env);
    if (probed) {
        json_t *files = json_object_get(probed, "library_files");
        json_object_set_new(probed, "library_files", hashed_files(files ? files : json_array()));
        json_object_set_new(cert, "probed", probed);
    } else
        json_object_set_new(cert, "probe_failure", gck_json_text(err));
    json_object_set_new(cert, "campaign", camp ? camp : json_null());
    if (seconds > 0 && !camp) json_object_set_new(cert, "campaign_failure", gck_json_text(err));
    char werr[600];
    rc = gck_output_json(cert, out, JSON_INDENT(1), werr, sizeof werr) ? GCK_EXIT_OK
                                                                       : GCK_EXIT_INTERNAL;
    if (rc != GCK_EXIT_OK)
        fprintf(stderr, "gemmcheck certify: %s\n", werr);
    else if (html && !gck_certify_html(cert, html, err, sizeof err)) {
        fprintf(stderr, "gemmcheck certify: %s\n", err);
        rc = GCK_EXIT_USAGE;
    }
    if (rc == GCK_EXIT_OK) print_key_facts(cert);
    if (rc == GCK_EXIT_OK) print_appetites(cert);
    json_decref(cert);
    if (rc == GCK_EXIT_OK)
        printf("certificate of %s written to %s%s%s\n", spec, out, html ? " and " : "",
               html ? html : "");
    return rc;
}
