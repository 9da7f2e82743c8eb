/* gemmcheck fuzz, merge and shrink. */
#define _DEFAULT_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../fuzz/campaign.h"
#include "../fuzz/shrink.h"
#include "cli.h"

static const char fuzz_help[] =
    "usage: gemmcheck fuzz [--backend SPEC]... [--time S | --cases N] [--seed N]\n"
    "                      [--report FILE.json] [--junit FILE.xml] [--findings FILE.jsonl]\n"
    "                      [--corpus DIR] [--shard I/N] [--jobs N] [--types LIST]\n"
    "                      [--rerun-share F] [--concurrency T] [--concurrency-share F]\n"
    "                      [--max-flops X] [--max-bytes X] [--timeout-floor S] [--strict-ieee]\n"
    "                      [--progress | --no-progress] [--stop-on-finding]\n"
    "\n"
    "Throws generated cases (docs/REPRO.md) at backends from worker processes and reports\n"
    "distinct findings with one-line reproducers. Without --backend: ref, openblas, blis,\n"
    "cublas and cublaslt, skipping those that cannot run here; the time is split between them.\n"
    "\n"
    "  --time S            campaign length in seconds (default 60); --cases N: cases per backend\n"
    "  --seed N            the case stream (default: random, printed)\n"
    "  --report FILE       JSON report (summary, environment, findings)\n"
    "  --junit FILE        JUnit XML: one test case per type tuple and check\n"
    "  --findings FILE     JSON Lines, one line per distinct finding as it is found (default:\n"
    "                      REPORT.findings.jsonl, or gemmcheck-findings.jsonl)\n"
    "  --corpus DIR        replay the reproducers saved in DIR first; save new distinct ones\n"
    "  --shard I/N         run the I-th of N disjoint case streams (default from\n"
    "                      SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT, else 1/1)\n"
    "  --jobs N            worker processes (default: one per core)\n"
    "  --types LIST        A,B,C,D[:compute][;...]: these tuples instead of the backend's table;\n"
    "                      one the backend refuses is an `unimplemented` finding\n"
    "  --rerun-share F     share of cases re-run on fresh buffers and compared bitwise (0.1)\n"
    "  --concurrency T     threads of the concurrency check (4); --concurrency-share F (0.05)\n"
    "  --max-flops X       per-case budget for m*n*k*batch (1e6); --max-bytes X (6.4e7)\n"
    "  --timeout-floor S   smallest per-call deadline (3 s; more for costly cases); a call that\n"
    "                      misses it is re-run once in a fresh worker before it is a hang\n"
    "  --strict-ieee       no zero-skipping leniency\n"
    "  --oracle KIND       exact (default: the integer superaccumulator), mpfr, or both (every\n"
    "                      element by both; a difference is an internal error)\n"
    "  --stop-on-finding   end the campaign at the first distinct finding\n"
    "\n"
    "Exit status: 0 no findings, 1 findings, 2 usage or set-up error, 3 internal error.\n";

static const char merge_help[] =
    "usage: gemmcheck merge --report OUT.json [--junit OUT.xml] [--allow-mixed]\n"
    "                       [--allow-overlap] SHARD.json...\n"
    "\n"
    "Merges the JSON reports of shards (gemmcheck fuzz --shard I/N) into one: counts add up,\n"
    "findings are deduplicated by signature keeping the smallest reproducer. Every input is\n"
    "checked against the report's schema and invariants first. Any number of inputs.\n"
    "\n"
    "  --allow-mixed     merge shards of different seeds or gemmcheck versions (refused:\n"
    "                    they are not parts of one campaign)\n"
    "  --allow-overlap   merge the same shard twice, or shards of one seed whose case\n"
    "                    streams share cases (refused: their cases would count twice)\n"
    "\n"
    "Shards of a seed missing from the inputs are noted on stderr.\n"
    "Exit status: 0 no findings, 1 findings, 2 bad input.\n";

static const char shrink_help[] =
    "usage: gemmcheck shrink --backend SPEC [--kind KIND] [--time S] [--timeout S]\n"
    "                        [--strict-ieee] [--verbose] 'gck1 ...'\n"
    "\n"
    "  --timeout S   deadline of one backend call (default: from the call's multiply-adds and\n"
    "                the bytes it may touch, at least 10 s)\n"
    "\n"
    "Minimises a failing case (dimensions, K, leading dimensions, offsets, batch, values towards\n"
    "simpler distributions) while it keeps failing with the same kind (--kind, default: the\n"
    "first kind it shows), and prints the minimal reproducer.\n"
    "Exit status: 1 minimised (the case fails), 0 the case does not fail, 2 usage or set-up.\n";

/* Shards beyond this are refused, not wrapped. */

/* A decimal count >= 1 in the first n bytes of s (at most 12 digits). */
static bool parse_count(const char *s, size_t n, long long *out) {
    if (n == 0 || n > 12) return false;
    long long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return v >= 1;
}

/* The same, 0 allowed (Slurm task ids may start at 0). */
static bool parse_count0(const char *s, long long *out) {
    if (!strcmp(s, "0")) {
        *out = 0;
        return true;
    }
    return parse_count(s, strlen(s), out);
}

static bool parse_real(const char *cmd, const char *opt, const char *v, double lo, double *out) {
    if (!gck_parse_double(v, out) || *out < lo) {
        gck_cli_usage_error(cmd, "%s '%s' must be a number >= %g", opt, v, lo);
        return false;
    }
    return true;
}

int gck_cmd_fuzz(int argc, char **argv) {
    const char *cmd = "fuzz";
    gck_campaign_options o;
    memset(&o, 0, sizeof o);
    o.time_limit = 60;
    o.rerun_share = 0.1;
    o.concurrency = 4;
    o.concurrency_share = 0.05;
    o.max_flops = 1e6;
    o.max_bytes = 64e6;
    o.timeout_floor = 3;
    o.progress = isatty(STDERR_FILENO) && !getenv("CI");
    o.jobs = (int)sysconf(_SC_NPROCESSORS_ONLN);
    const char *time_s = NULL, *cases = NULL, *seed = NULL, *shard = NULL, *jobs = NULL,
               *rerun = NULL, *conc = NULL, *conc_share = NULL, *flops = NULL, *bytes = NULL,
               *tfloor = NULL, *backend_opt = NULL;
    gck_opt_scan sc = {cmd, argc, argv, 1, false};
    for (; sc.i < argc; sc.i++) {
        const char *a = argv[sc.i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(fuzz_help, stdout);
            return GCK_EXIT_OK;
        }
        if (!strcmp(a, "--strict-ieee"))
            o.strict_ieee = true;
        else if (!strcmp(a, "--progress"))
            o.progress = true;
        else if (!strcmp(a, "--no-progress"))
            o.progress = false;
        else if (!strcmp(a, "--stop-on-finding"))
            o.stop_on_finding = true;
        else if (gck_opt_value(&sc, "--backend", &backend_opt)) {
            if (sc.error) return GCK_EXIT_USAGE;
            if (o.nbackends == GCK_MAX_BACKENDS)
                return gck_cli_usage_error(cmd, "at most %d --backend options", GCK_MAX_BACKENDS);
            o.backends[o.nbackends++] = backend_opt;
            backend_opt = NULL; /* may be repeated */
        } else if (gck_opt_value(&sc, "--time", &time_s) || gck_opt_value(&sc, "--cases", &cases) ||
                   gck_opt_value(&sc, "--seed", &seed) || gck_opt_value(&sc, "--shard", &shard) ||
                   gck_opt_value(&sc, "--jobs", &jobs) ||
                   gck_opt_value(&sc, "--report", &o.report_path) ||
                   gck_opt_value(&sc, "--junit", &o.junit_path) ||
                   gck_opt_value(&sc, "--findings", &o.jsonl_path) ||
                   gck_opt_value(&sc, "--corpus", &o.corpus_dir) ||
                   gck_opt_value(&sc, "--types", &o.types) ||
                   gck_opt_value(&sc, "--rerun-share", &rerun) ||
                   gck_opt_value(&sc, "--concurrency", &conc) ||
                   gck_opt_value(&sc, "--concurrency-share", &conc_share) ||
                   gck_opt_value(&sc, "--max-flops", &flops) ||
                   gck_opt_value(&sc, "--max-bytes", &bytes) ||
                   gck_opt_value(&sc, "--timeout-floor", &tfloor) ||
                   gck_opt_value(&sc, "--oracle", &o.oracle)) {
            if (sc.error) return GCK_EXIT_USAGE;
        } else {
            return gck_cli_usage_error(cmd, "unknown argument '%s' (see gemmcheck fuzz --help)", a);
        }
    }
    if (time_s && !parse_real(cmd, "--time", time_s, 0, &o.time_limit)) return GCK_EXIT_USAGE;
    long long n;
    if (cases) {
        if (!gck_parse_count(cases, &n) || n < 1)
            return gck_cli_usage_error(cmd, "--cases '%s' must be a positive count", cases);
        o.max_cases = n;
        if (!time_s) o.time_limit = 1e9;
    }
    if (jobs) {
        if (!gck_parse_count(jobs, &n) || n < 1 || n > 64)
            return gck_cli_usage_error(cmd, "--jobs '%s' must be a count from 1 to 64", jobs);
        o.jobs = (int)n;
    }
    if (o.jobs > 64) o.jobs = 64;
    if (o.jobs < 1) o.jobs = 1;
    if (rerun && (!parse_real(cmd, "--rerun-share", rerun, 0, &o.rerun_share) || o.rerun_share > 1))
        return gck_cli_usage_error(cmd, "--rerun-share must be between 0 and 1");
    if (conc_share &&
        (!parse_real(cmd, "--concurrency-share", conc_share, 0, &o.concurrency_share) ||
         o.concurrency_share > 1))
        return gck_cli_usage_error(cmd, "--concurrency-share must be between 0 and 1");
    if (conc) {
        if (!gck_parse_count(conc, &n) || n < 2 || n > 64)
            return gck_cli_usage_error(
                cmd, "--concurrency '%s' must be a thread count from 2 to 64", conc);
        o.concurrency = (int)n;
    }
    if (flops && !parse_real(cmd, "--max-flops", flops, 1, &o.max_flops)) return GCK_EXIT_USAGE;
    if (bytes && !parse_real(cmd, "--max-bytes", bytes, 4096, &o.max_bytes)) return GCK_EXIT_USAGE;
    if (tfloor && !parse_real(cmd, "--timeout-floor", tfloor, 0.1, &o.timeout_floor))
        return GCK_EXIT_USAGE;
    gck_oracle_kind ok;
    if (o.oracle && !gck_oracle_kind_parse(o.oracle, &ok))
        return gck_cli_usage_error(cmd, "--oracle '%s' must be exact, mpfr or both", o.oracle);
    /* shards: --shard I/N, else a Slurm job array */
    o.shard_index = o.shard_count = 1;
    if (shard) {
        long long i, c;
        const char *slash = strchr(shard, '/');
        if (!slash || !parse_count(shard, (size_t)(slash - shard), &i) ||
            !parse_count(slash + 1, strlen(slash + 1), &c) || c > GCK_MAX_SHARDS || i > c)
            return gck_cli_usage_error(cmd, "--shard '%s' must be I/N with 1 <= I <= N <= %d",
                                       shard, GCK_MAX_SHARDS);
        o.shard_index = (int)i;
        o.shard_count = (int)c;
    } else if (getenv("SLURM_ARRAY_TASK_ID") && getenv("SLURM_ARRAY_TASK_COUNT")) {
        const char *sid = getenv("SLURM_ARRAY_TASK_ID"), *smin = getenv("SLURM_ARRAY_TASK_MIN");
        const char *scount = getenv("SLURM_ARRAY_TASK_COUNT");
        long long id, min = 0, count;
        bool valid = parse_count0(sid, &id) && (!smin || parse_count0(smin, &min)) &&
                     parse_count(scount, strlen(scount), &count) && count <= GCK_MAX_SHARDS &&
                     id >= min && id - min < count;
        if (!valid)
            return gck_cli_usage_error(
                cmd,
                "SLURM_ARRAY_TASK_ID=%s, SLURM_ARRAY_TASK_MIN=%s, SLURM_ARRAY_TASK_COUNT=%s do "
                "not name one of at most %d shards (give --shard I/N)",
                sid, smin ? smin : "(unset)", scount, GCK_MAX_SHARDS);
        o.shard_index = (int)(id - min) + 1;
        o.shard_count = (int)count;
    }
    if (o.corpus_dir) {
        struct stat st;
        if (stat(o.corpus_dir, &st) == 0 && !S_ISDIR(st.st_mode))
            return gck_cli_usage_error(cmd, "--corpus '%s' is not a directory", o.corpus_dir);
    }
    if (seed) {
        char *end;
        errno = 0;
        if (!*seed || *seed == '-' || *seed == '+' || (o.seed = strtoull(seed, &end, 10), *end) ||
            errno == ERANGE)
            return gck_cli_usage_error(cmd, "--seed '%s' must be an unsigned integer below 2^64",
                                       seed);
    } else {
        int fd = open("/dev/urandom", O_RDONLY);
        if (fd < 0 || read(fd, &o.seed, sizeof o.seed) != (ssize_t)sizeof o.seed)
            o.seed = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull;
        if (fd >= 0) close(fd);
        o.seed >>= 1; /* keep it readable as a signed 64-bit number too */
        fprintf(stderr, "gemmcheck fuzz: seed %" PRIu64 " (replay with --seed %" PRIu64 ")\n",
                o.seed, o.seed);
    }
    if (o.nbackends == 0) {
        static const char *const defaults[] = {"ref", "openblas", "blis", "cublas", "cublaslt"};
        for (size_t b = 0; b < sizeof defaults / sizeof defaults[0]; b++)
            o.backends[o.nbackends++] = defaults[b];
    } else {
        o.backends_explicit = true;
    }
    static char jsonl[PATH_MAX + 32];
    if (!o.jsonl_path) {
        if (o.report_path)
            snprintf(jsonl, sizeof jsonl, "%s.findings.jsonl", o.report_path);
        else
            snprintf(jsonl, sizeof jsonl, "gemmcheck-findings.jsonl");
        o.jsonl_path = jsonl;
    }
    char cmdline[4096] = "gemmcheck";
    size_t pos = strlen(cmdline);
    for (int i = 0; i < argc && pos < sizeof cmdline - 2; i++)
        pos += (size_t)snprintf(cmdline + pos, sizeof cmdline - pos, " %s", argv[i]);
    o.command_line = cmdline;
    return gck_campaign_run(&o);
}

int gck_cmd_merge(int argc, char **argv) {
    const char *cmd = "merge", *report = NULL, *junit = NULL;
    gck_opt_scan sc = {cmd, argc, argv, 1, false};
    gck_merge m;
    memset(&m, 0, sizeof m);
    int nin = 0;
    for (; sc.i < argc; sc.i++) {
        const char *a = argv[sc.i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(merge_help, stdout);
            return GCK_EXIT_OK;
        }
        if (gck_opt_value(&sc, "--report", &report) || gck_opt_value(&sc, "--junit", &junit)) {
            if (sc.error) return GCK_EXIT_USAGE;
        } else if (!strcmp(a, "--allow-mixed")) {
            m.allow_mixed = true;
        } else if (!strcmp(a, "--allow-overlap")) {
            m.allow_overlap = true;
        } else if (a[0] == '-' && a[1] == '-' && a[2]) {
            return gck_cli_usage_error(cmd, "unknown option '%s'", a);
        } else {
            nin++;
        }
    }
    if (!report) return gck_cli_usage_error(cmd, "missing --report OUT.json");
    if (nin == 0) return gck_cli_usage_error(cmd, "no shard reports given");
    char msg[1200];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--report") || !strcmp(a, "--junit")) {
            i++;
            continue;
        }
        if (!strncmp(a, "--", 2) && a[2]) continue;
        if (!gck_merge_add(&m, a, msg, sizeof msg)) {
            gck_merge_free(&m);
            return gck_cli_usage_error(cmd, "%s", msg);
        }
    }
    gck_merge_print_missing(&m, stderr);
    gck_campaign_result *r = &m.total;
    if (!gck_report_write_json(r, report, "gemmcheck merge", msg, sizeof msg) ||
        (junit && !gck_report_write_junit(r, junit, msg, sizeof msg))) {
        gck_merge_free(&m);
        return gck_cli_usage_error(cmd, "%s", msg);
    }
    gck_report_print_summary(r, stdout);
    int rc = r->nfindings ? GCK_EXIT_FINDINGS : GCK_EXIT_OK;
    gck_merge_free(&m);
    return rc;
}

int gck_cmd_shrink(int argc, char **argv) {
    const char *cmd = "shrink", *backend = NULL, *kind_s = NULL, *time_s = NULL, *timeout = NULL,
               *text = NULL;
    gck_shrink_options o = {.time_limit = 120, .call_timeout = 0};
    gck_opt_scan sc = {cmd, argc, argv, 1, false};
    for (; sc.i < argc; sc.i++) {
        const char *a = argv[sc.i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(shrink_help, stdout);
            return GCK_EXIT_OK;
        }
        if (!strcmp(a, "--strict-ieee"))
            o.strict_ieee = true;
        else if (!strcmp(a, "--verbose"))
            o.verbose = true;
        else if (gck_opt_value(&sc, "--backend", &backend) ||
                 gck_opt_value(&sc, "--kind", &kind_s) || gck_opt_value(&sc, "--time", &time_s) ||
                 gck_opt_value(&sc, "--timeout", &timeout)) {
            if (sc.error) return GCK_EXIT_USAGE;
        } else if (a[0] == '-' && a[1] == '-') {
            return gck_cli_usage_error(cmd, "unknown option '%s' (see gemmcheck shrink --help)", a);
        } else if (text) {
            return gck_cli_usage_error(cmd, "more than one case given; quote the string");
        } else {
            text = a;
        }
    }
    if (!backend) return gck_cli_usage_error(cmd, "missing --backend");
    if (!text) return gck_cli_usage_error(cmd, "missing the case ('gck1 ...')");
    gck_kind kind = GCK_KIND_COUNT;
    if (kind_s && !gck_kind_parse(kind_s, &kind))
        return gck_cli_usage_error(cmd, "--kind '%s' is not a finding kind", kind_s);
    if (time_s && !parse_real(cmd, "--time", time_s, 0, &o.time_limit)) return GCK_EXIT_USAGE;
    if (timeout && !parse_real(cmd, "--timeout", timeout, 0.1, &o.call_timeout))
        return GCK_EXIT_USAGE;
    gck_spec start, best;
    char msg[1024];
    if (gck_spec_parse(text, &start, msg, sizeof msg) != GCK_OK)
        return gck_cli_usage_error(cmd, "bad case: %s", msg);
    o.backend = backend;
    int runs = 0;
    gck_shrink_status st = gck_shrink(&o, &start, &kind, &best, &runs, msg, sizeof msg);
    if (st == GCK_SHRINK_SETUP_ERROR) return gck_cli_usage_error(cmd, "%s", msg);
    if (st == GCK_SHRINK_NOT_FAILING) {
        printf("not failing: %s on %s%s%s\n", msg, backend, kind_s ? " with kind " : "",
               kind_s ? kind_s : "");
        return GCK_EXIT_OK;
    }
    char repro[2048];
    gck_spec_format(&best, repro, sizeof repro);
    printf(
        "kind:     %s\nruns:     %d\nminimal:  %s\nrepro:    gemmcheck repro --backend %s '%s'\n",
        gck_kind_name(kind), runs, repro, backend, repro);
    return GCK_EXIT_FINDINGS;
}
