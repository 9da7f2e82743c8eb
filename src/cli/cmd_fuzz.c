/* gemmcheck fuzz: a campaign from the command line (fuzz/campaign.c runs it). */
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

#include "call_limits.h"
#include "campaign.h"
#include "cli.h"
#include "generator.h"
#include "known.h"
#include "mix.h"
#include "result.h"

static const char fuzz_help[] =
    "usage: gemmcheck fuzz [--backend SPEC]... [--skip-unavailable] [--time S | --cases N]\n"
    "                      [--seed N] [--report FILE.json] [--junit FILE.xml] [--html F.html]\n"
    "                      [--matrix-csv FILE] [--backends-csv FILE] [--findings FILE.jsonl]\n"
    "                      [--corpus DIR] [--shard I/N] [--jobs N] [--types LIST]\n"
    "                      [--rerun-share F] [--concurrency T] [--concurrency-share F]\n"
    "                      [--max-flops X] [--max-bytes X] [--timeout-floor S] [--strict-ieee]\n"
    "                      [--progress | --no-progress] [--log-every S] [--stop-on-finding]\n"
    "                      [--tier T] [--known FILE]... [--baseline REPORT.json]...\n"
    "                      [--memory-budget B[:B2]] [--thread-limit N[:N2]]\n"
    "\n"
    "Throws generated cases (docs/REPRO.md) at backends from worker processes and reports\n"
    "distinct findings with one-line reproducers. Without --backend: ref, kernels, openblas,\n"
    "blis, cublas and cublaslt, skipping those that cannot run here; the time is split between\n"
    "them.\n"
    "\n"
    "  --skip-unavailable  a --backend that cannot run here is skipped with its reason (as the\n"
    "                      default set is), not an error: one command for GPU and CPU runners\n"
    "  --time S            campaign length in seconds (default 60); --cases N: cases per backend\n"
    "  --seed N            the case stream (default: random, printed)\n"
    "  --report FILE       JSON report (summary, environment, findings)\n"
    "  --junit FILE        JUnit XML: a test suite per backend, a test case per declared type\n"
    "                      tuple (skipped with the reason when no case reached it)\n"
    "  --html FILE         one self-contained HTML page: backends, findings by cause with\n"
    "                      reproducers, the support matrix coloured by outcome with a histogram\n"
    "                      of error/bound per type tuple, the environment\n"
    "  --matrix-csv FILE   CSV, one row per backend and type tuple (the support matrix)\n"
    "  --backends-csv FILE CSV, one row per backend (the summary)\n"
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
    "  --memory-budget B[:B2]  each case's first call may allocate at most a budget drawn\n"
    "                      log-uniformly from B..B2 bytes (K, M, G: powers of 1024); an error\n"
    "                      it returns is counted, not a finding, and the next call, without\n"
    "                      limits, must be right (docs/RESOURCES.md)\n"
    "  --thread-limit N[:N2]  each case's first call may start at most N..N2 threads\n"
    "  --oracle KIND       exact (default: the integer superaccumulator), mpfr, or both (every\n"
    "                      element by both; a difference is an internal error)\n"
    "  --progress          a one-line display on stderr, redrawn in place (the default on a\n"
    "                      terminal outside CI); --no-progress: no display and no log\n"
    "                      lines, whatever --log-every says\n"
    "  --log-every S       piped or in CI (the default there: every 30 s): one plain line\n"
    "                      per S seconds on stderr (elapsed, backend, cases, rate, findings\n"
    "                      by kind, time left), no carriage returns or escape codes; 0: none\n"
    "  --stop-on-finding   end the campaign at the first distinct finding\n"
    "  --tier stat|hard    stat (default): improbable_error (the statistical tier,\n"
    "                      docs/TOLERANCE.md) is a finding; hard: it is counted per type tuple\n"
    "                      (improbable_elements) and not a finding\n"
    "  --known FILE        known findings (docs/KNOWN.md; fuzz/known/debian12.txt lists the\n"
    "                      documented deviations of Debian 12's libraries): a finding an entry\n"
    "                      covers is reported as known with the entry's reference and does not\n"
    "                      fail the run; entries that covered nothing are listed as stale\n"
    "  --baseline REPORT   the causes of an earlier JSON report are known: fail only on new ones\n"
    "\n"
    "Exit status: 0 no findings (or known ones only), 1 findings, 2 usage or set-up error, 3\n"
    "internal error, 128 + the signal (130, 143) when SIGINT or SIGTERM stopped the campaign.\n";

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

/* Option values parsed after the scan. */
typedef struct fuzz_args {
    const char *time_s, *cases, *seed, *shard, *jobs, *rerun, *conc, *conc_share, *flops, *bytes,
        *tfloor, *oracle, *tier, *log_every, *mem, *thr;
    const char *known[GCK_MAX_KNOWN], *baseline[GCK_MAX_KNOWN];
    int nknown, nbaseline;
    bool help, progress_on, progress_off;
} fuzz_args;

static void default_options(gck_campaign_options *o) {
    gck_campaign_defaults(o);
    o->progress = isatty(STDERR_FILENO) && !getenv("CI");
    o->log_every = o->progress ? 0 : 30; /* piped or in CI: a plain line every 30 s */
}

/* The arguments: flags and strings into the options, the numbers into g. */
static int scan(const char *cmd, int argc, char **argv, gck_campaign_options *o, fuzz_args *g) {
    int nbackends = 0;
    const gck_opt opts[] = {
        {"--strict-ieee", .flag = &o->strict_ieee, .flag_value = true},
        {"--progress", .flag = &g->progress_on, .flag_value = true},
        {"--no-progress", .flag = &g->progress_off, .flag_value = true},
        {"--log-every", .value = &g->log_every},
        {"--stop-on-finding", .flag = &o->stop_on_finding, .flag_value = true},
        {"--skip-unavailable", .flag = &o->skip_unavailable, .flag_value = true},
        {"--backend", .list = o->backends, .count = &nbackends, .max = GCK_MAX_BACKENDS},
        {"--time", .value = &g->time_s},
        {"--cases", .value = &g->cases},
        {"--seed", .value = &g->seed},
        {"--shard", .value = &g->shard},
        {"--jobs", .value = &g->jobs},
        {"--report", .value = &o->report_path},
        {"--junit", .value = &o->junit_path},
        {"--html", .value = &o->html_path},
        {"--matrix-csv", .value = &o->matrix_csv_path},
        {"--backends-csv", .value = &o->backends_csv_path},
        {"--findings", .value = &o->jsonl_path},
        {"--corpus", .value = &o->corpus_dir},
        {"--types", .value = &o->types},
        {"--rerun-share", .value = &g->rerun},
        {"--concurrency", .value = &g->conc},
        {"--concurrency-share", .value = &g->conc_share},
        {"--max-flops", .value = &g->flops},
        {"--max-bytes", .value = &g->bytes},
        {"--timeout-floor", .value = &g->tfloor},
        {"--memory-budget", .value = &g->mem},
        {"--thread-limit", .value = &g->thr},
        {"--oracle", .value = &g->oracle},
        {"--tier", .value = &g->tier},
        {"--known", .list = g->known, .count = &g->nknown, .max = GCK_MAX_KNOWN},
        {"--baseline", .list = g->baseline, .count = &g->nbaseline, .max = GCK_MAX_KNOWN}};
    gck_opt_spec spec = {cmd, opts, (int)(sizeof opts / sizeof opts[0]), NULL, 0, NULL};
    int nargs;
    int rc = gck_opt_parse(&spec, argc, argv, &nargs, &g->help);
    o->nbackends = nbackends;
    for (int b = 0; rc == GCK_EXIT_OK && b < nbackends; b++)
        for (int e = 0; e < b; e++)
            if (!strcmp(o->backends[b], o->backends[e]))
                return gck_cli_usage_error(cmd, "--backend %s given twice", o->backends[b]);
    return rc;
}

/* The numeric options, each checked against its range. */
static int parse_numbers(const char *cmd, const fuzz_args *g, gck_campaign_options *o) {
    if (g->time_s && !gck_parse_real_opt(cmd, "--time", g->time_s, 0, &o->time_limit))
        return GCK_EXIT_USAGE;
    long long n;
    if (g->cases) {
        if (!gck_parse_count(g->cases, &n) || n < 1)
            return gck_cli_usage_error(cmd, "--cases '%s' must be a positive count", g->cases);
        o->max_cases = n;
        if (!g->time_s) o->time_limit = 1e9;
    }
    if (g->jobs) {
        if (!gck_parse_count(g->jobs, &n) || n < 1 || n > 64)
            return gck_cli_usage_error(cmd, "--jobs '%s' must be a count from 1 to 64", g->jobs);
        o->jobs = (int)n;
    }
    if (o->jobs > 64) o->jobs = 64;
    if (o->jobs < 1) o->jobs = 1;
    if (g->rerun && (!gck_parse_real_opt(cmd, "--rerun-share", g->rerun, 0, &o->rerun_share) ||
                     o->rerun_share > 1))
        return gck_cli_usage_error(cmd, "--rerun-share must be between 0 and 1");
    if (g->conc_share &&
        (!gck_parse_real_opt(cmd, "--concurrency-share", g->conc_share, 0, &o->concurrency_share) ||
         o->concurrency_share > 1))
        return gck_cli_usage_error(cmd, "--concurrency-share must be between 0 and 1");
    if (g->conc) {
        if (!gck_parse_count(g->conc, &n) || n < 2 || n > 64)
            return gck_cli_usage_error(
                cmd, "--concurrency '%s' must be a thread count from 2 to 64", g->conc);
        o->concurrency = (int)n;
    }
    if ((g->flops && !gck_parse_real_opt(cmd, "--max-flops", g->flops, 1, &o->max_flops)) ||
        (g->bytes && !gck_parse_real_opt(cmd, "--max-bytes", g->bytes, 4096, &o->max_bytes)) ||
        (g->tfloor &&
         !gck_parse_real_opt(cmd, "--timeout-floor", g->tfloor, 0.1, &o->timeout_floor)))
        return GCK_EXIT_USAGE;
    if (g->mem && !gck_parse_budget(cmd, g->mem, &o->mem_lo, &o->mem_hi)) return GCK_EXIT_USAGE;
    if (g->thr && !gck_parse_thread_limit(cmd, g->thr, &o->thr_lo, &o->thr_hi))
        return GCK_EXIT_USAGE;
    o->limit_threads = g->thr != NULL;
    o->oracle = GCK_ORACLE_EXACT;
    if (g->oracle && !gck_oracle_kind_parse(g->oracle, &o->oracle))
        return gck_cli_usage_error(cmd, "--oracle '%s' must be exact, mpfr or both", g->oracle);
    return gck_cli_tier(cmd, g->tier, &o->tier_hard);
}

/* A thread limit needs workers whose libraries bind to gemmcheck's pthread_create: this
 * process's kind (the same binary), not a Python interpreter's. */
static int limits_usable(const char *cmd, const gck_campaign_options *o) {
    char why[256];
    if (!o->limit_threads) return GCK_EXIT_OK;
    if (!gck_limits_enforceable(0, 0, why, sizeof why))
        return gck_cli_usage_error(cmd, "--thread-limit: %s", why);
    for (int b = 0; b < o->nbackends; b++)
        if (!strncmp(o->backends[b], "python:", 7))
            return gck_cli_usage_error(cmd,
                                       "--thread-limit cannot be enforced on %s: a Python worker "
                                       "loads libgemmcheck privately, so its libraries start "
                                       "threads with the C library's pthread_create",
                                       o->backends[b]);
    return GCK_EXIT_OK;
}

/* The shard: --shard I/N, else a Slurm job array, else 1/1. Shards beyond GCK_MAX_SHARDS are
 * refused, not wrapped. */
static int parse_shard(const char *cmd, const char *shard, gck_campaign_options *o) {
    o->shard_index = o->shard_count = 1;
    if (shard) {
        long long i, c;
        const char *slash = strchr(shard, '/');
        if (!slash || !parse_count(shard, (size_t)(slash - shard), &i) ||
            !parse_count(slash + 1, strlen(slash + 1), &c) || c > GCK_MAX_SHARDS || i > c)
            return gck_cli_usage_error(cmd, "--shard '%s' must be I/N with 1 <= I <= N <= %d",
                                       shard, GCK_MAX_SHARDS);
        o->shard_index = (int)i;
        o->shard_count = (int)c;
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
        o->shard_index = (int)(id - min) + 1;
        o->shard_count = (int)count;
    }
    return GCK_EXIT_OK;
}

/* --seed, or a random seed that is printed so that the run can be replayed. */
static int pick_seed(const char *cmd, const char *seed, gck_campaign_options *o) {
    if (seed) {
        char *end;
        errno = 0;
        if (!*seed || *seed == '-' || *seed == '+' || (o->seed = strtoull(seed, &end, 10), *end) ||
            errno == ERANGE)
            return gck_cli_usage_error(cmd, "--seed '%s' must be an unsigned integer below 2^64",
                                       seed);
        return GCK_EXIT_OK;
    }
    int fd = open("/dev/urandom", O_RDONLY);
    if (fd < 0 || read(fd, &o->seed, sizeof o->seed) != (ssize_t)sizeof o->seed)
        o->seed = (uint64_t)getpid() * GCK_GOLDEN_GAMMA;
    if (fd >= 0) close(fd);
    o->seed >>= 1; /* keep it readable as a signed 64-bit number too */
    fprintf(stderr, "gemmcheck fuzz: seed %" PRIu64 " (replay with --seed %" PRIu64 ")\n", o->seed,
            o->seed);
    return GCK_EXIT_OK;
}

int gck_cmd_fuzz(int argc, char **argv) {
    const char *cmd = "fuzz";
    gck_campaign_options o;
    default_options(&o);
    fuzz_args g = {0};
    int rc;
    if ((rc = scan(cmd, argc, argv, &o, &g))) return rc;
    if (g.help) {
        fputs(fuzz_help, stdout);
        return GCK_EXIT_OK;
    }
    if ((rc = parse_numbers(cmd, &g, &o)) || (rc = parse_shard(cmd, g.shard, &o))) return rc;
    if ((rc = limits_usable(cmd, &o))) return rc;
    if (g.progress_on && g.progress_off)
        return gck_cli_usage_error(cmd, "--progress and --no-progress together");
    if (g.log_every && !gck_parse_real_opt(cmd, "--log-every", g.log_every, 0, &o.log_every))
        return GCK_EXIT_USAGE;
    if (g.progress_on) o.progress = true, o.log_every = g.log_every ? o.log_every : 0;
    if (g.progress_off) o.progress = false, o.log_every = 0; /* no output of either kind */
    if (o.corpus_dir) {
        struct stat st;
        if (stat(o.corpus_dir, &st) == 0 && !S_ISDIR(st.st_mode))
            return gck_cli_usage_error(cmd, "--corpus '%s' is not a directory", o.corpus_dir);
    }
    if (o.types) { /* a bad list is one usage error, before any backend is probed */
        static gck_fuzz_target targets[GCK_FUZZ_MAX_TARGETS];
        char msg[512];
        if (gck_fuzz_parse_types(o.types, NULL, 0, targets, GCK_FUZZ_MAX_TARGETS, msg,
                                 sizeof msg) == 0)
            return gck_cli_usage_error(cmd, "%s", msg);
    }
    char msg[600];
    o.known = gck_known_open(g.known, g.nknown, g.baseline, g.nbaseline, msg, sizeof msg);
    if (!o.known && msg[0]) return gck_cli_usage_error(cmd, "%s", msg);
    if ((rc = pick_seed(cmd, g.seed, &o))) {
        gck_known_free(o.known);
        return rc;
    }
    if (o.nbackends == 0) {
        /* every built-in backend that needs no argument */
        for (const char *const *b = gck_backend_names(); *b; b++)
            if (!strchr(*b, ':')) o.backends[o.nbackends++] = *b;
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
    char cmdline[GCK_COMMAND_LINE_MAX] = "gemmcheck";
    size_t pos = strlen(cmdline);
    for (int i = 0; i < argc && pos < sizeof cmdline - 2; i++)
        pos += (size_t)snprintf(cmdline + pos, sizeof cmdline - pos, " %s", argv[i]);
    o.command_line = cmdline;
    rc = gck_campaign_run(&o);
    gck_known_free(o.known);
    return rc;
}
