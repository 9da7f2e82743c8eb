/* gemmcheck repro: run one reproducer string on one backend in a child process
 * (gck_run_isolated), so that a backend that crashes or hangs is reported as `crash` or `hang`
 * and never takes gemmcheck down. */
#define _DEFAULT_SOURCE 1
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gemmcheck/runner.h"
#include "wire.h"

static const char repro_help[] =
    "usage: gemmcheck repro --backend SPEC [--dump DIR] [--strict-ieee] [--rerun | --no-rerun]\n"
    "                       [--concurrency N] [--repeat N] [--no-guard-page]\n"
    "                       [--timeout SECONDS] [--threads N] [--oracle KIND] [--tier T]\n"
    "                       [--memory-budget BYTES] [--thread-limit N]\n"
    "                       'gck1 ...' | FILE | -\n"
    "\n"
    "Runs one case (a reproducer string, docs/REPRO.md) on one backend in a child process and\n"
    "prints the verdict: pass, unsupported, or its findings with the worst elements and the\n"
    "bound that decided them. A backend that dies is reported as `crash`, one that does not\n"
    "return before the deadline as `hang`. The case is the string itself, or the first\n"
    "reproducer in FILE (a corpus file, a findings .jsonl, a script; also @FILE) or on\n"
    "standard input (-).\n"
    "\n"
    "  --backend SPEC     ref, kernels[:path], openblas, blis, cblas:/path/lib.so, cublas,\n"
    "                     cublaslt, plugin:/path/lib.so[:name]\n"
    "  --dump DIR         write A, B, C, D_expected, D_got (.npy), case.txt and verify.sh\n"
    "                     (the gemmcheck verify command that re-checks D_got) into DIR\n"
    "  --strict-ieee      no zero-skipping leniency, whatever the backend declares\n"
    "  --rerun            a second call on fresh buffers, compared bit for bit (determinism\n"
    "                     check; the default)\n"
    "  --no-rerun         skip the second call\n"
    "  --concurrency N    also the concurrency check: N variants of the case called one at a\n"
    "                     time, then from N threads at once (2 to 64; a `hang` in a concurrency\n"
    "                     check names the N to use)\n"
    "  --memory-budget B  the first call may allocate at most B bytes (K, M, G: powers of\n"
    "                     1024); --thread-limit N: start at most N threads (the case's mem=\n"
    "                     and thr=, docs/RESOURCES.md)\n"
    "  --repeat N         run the case up to N times (1 to 100000) in the same process, the\n"
    "                     library's state carried over as in a campaign's worker, and stop at\n"
    "                     the first run with a finding: for a race that shows only now and\n"
    "                     then, or only after the library has served some calls (default 1)\n"
    "  --no-guard-page    end operands 4 KiB (or 64 lines of the widest leading dimension, if\n"
    "                     more) before their guard pages: a crash that goes away\n"
    "                     is a read past the end of an operand\n"
    "  --timeout SECONDS  deadline of one backend call (default: from the call's multiply-adds\n"
    "                     and the bytes it may touch, at least 10 s; times N for the N\n"
    "                     concurrent calls). Only backend calls are timed.\n"
    "  --threads N        checker threads (default: one per core)\n"
    "  --oracle KIND      exact (default), mpfr, or both (a difference is an internal error)\n"
    "  --tier stat|hard   stat (default): improbable_error (the statistical tier,\n"
    "                     docs/TOLERANCE.md) is a finding; hard: it is only counted\n"
    "\n"
    "Exit status: 0 pass or unsupported, 1 findings, 2 usage or set-up error (bad string,\n"
    "unknown or unavailable backend, a backend whose init crashes or does not return within\n"
    "--timeout), 3 internal error.\n";

static const char *const cmd = "repro";

static void print_element(const char *label, const gck_element_report *e) {
    printf("  %s D[%" PRId64 "](%" PRId64 ",%" PRId64 "): got %.17g expected %.17g error %.4g "
           "bound %.4g ratio %.4g%s%s\n",
           label, e->batch, e->i, e->j, e->got, e->expected, e->error, e->bound, e->ratio,
           e->exact_case ? " (exact case: bitwise)" : "",
           e->degenerate ? " (gamma = Inf: magnitude limit only)" : "");
}

static void print_repro(const char *backend, const char *flags, const char *repro) {
    char line[3000];
    gck_repro_command(line, sizeof line, backend, flags, repro);
    printf("repro:    %s\n", line);
}

static int report(const char *backend, const char *flags, const char *repro, const char *version,
                  const gck_run_result *r) {
    printf("case:     %s\n", repro);
    printf("backend:  %s (%s)\n", backend, version);
    if (r->outcome == GCK_OUTCOME_UNSUPPORTED) {
        printf("verdict:  unsupported: %s\n", r->note);
        return GCK_EXIT_OK;
    }
    printf("row:      %s\n", r->row);
    if (r->outcome == GCK_OUTCOME_PASS)
        printf("verdict:  pass\n");
    else {
        printf("verdict:  FINDINGS:");
        for (int f = 0; f < r->nfindings; f++)
            printf("%s %s", f ? "," : "", gck_kind_name(r->findings[f].kind));
        printf("\n");
    }
    for (int f = 0; f < r->nfindings; f++) {
        const gck_finding *fd = &r->findings[f];
        printf("  %s: %s\n", gck_kind_name(fd->kind), fd->detail);
        if (fd->has_element) print_element("worst", &fd->element);
    }
    const gck_check_result *c = &r->check;
    if (c->elements) {
        printf("checked:  %" PRId64 " elements (%" PRId64 " exact-case bitwise, %" PRId64
               " magnitude-only, %" PRId64 " passed by a declared leniency)\n",
               c->elements, c->exact_elements, c->degenerate, c->lenient);
        char st[400];
        gck_stat_describe(c, st, sizeof st);
        printf("stat:     %s\n", st);
        if (c->sampled)
            printf("sampled:  %" PRId64 " of %" PRId64 " elements (%.2f%%): every element of the "
                   "first and last and of random rows and columns\n",
                   c->elements, c->total_elements,
                   100.0 * (double)c->elements /
                       (double)(c->total_elements ? c->total_elements : 1));
        if (isfinite(c->max_ratio.error)) print_element("max error/bound", &c->max_ratio);
        if (c->oracle_path[0]) printf("sums:     %s\n", c->oracle_path);
    }
    printf("call:     %.6f s\n", r->call_seconds);
    if (r->refused)
        printf("limits:   the first call was refused (counted, not a finding): %s; the verdict is "
               "the next call's, without limits\n",
               r->refusal);
    if (r->threads_refused)
        printf("limits:   %d thread(s) refused to the first call\n", r->threads_refused);
    if (r->outcome == GCK_OUTCOME_FINDINGS) print_repro(backend, flags, repro);
    return r->outcome == GCK_OUTCOME_FINDINGS ? GCK_EXIT_FINDINGS : GCK_EXIT_OK;
}

static int crash_or_hang(const char *backend, const char *flags, const char *repro, gck_kind kind,
                         const char *detail) {
    printf("case:     %s\n", repro);
    printf("backend:  %s\n", backend);
    printf("verdict:  FINDINGS: %s\n", gck_kind_name(kind));
    printf("  %s: %s\n", gck_kind_name(kind), detail);
    print_repro(backend, flags, repro);
    return GCK_EXIT_FINDINGS;
}

/* The options, as given. */
typedef struct repro_args {
    const char *backend, *dump, *timeout, *threads, *text, *oracle, *conc, *repeat, *tier, *mem,
        *thr;
    bool strict, rerun, no_guard, help;
} repro_args;

static int scan(int argc, char **argv, repro_args *g) {
    g->rerun = true;
    const gck_opt opts[] = {{"--strict-ieee", .flag = &g->strict, .flag_value = true},
                            {"--no-rerun", .flag = &g->rerun, .flag_value = false},
                            {"--rerun", .flag = &g->rerun, .flag_value = true},
                            {"--no-guard-page", .flag = &g->no_guard, .flag_value = true},
                            {"--backend", .value = &g->backend},
                            {"--dump", .value = &g->dump},
                            {"--timeout", .value = &g->timeout},
                            {"--threads", .value = &g->threads},
                            {"--oracle", .value = &g->oracle},
                            {"--concurrency", .value = &g->conc},
                            {"--repeat", .value = &g->repeat},
                            {"--tier", .value = &g->tier},
                            {"--memory-budget", .value = &g->mem},
                            {"--thread-limit", .value = &g->thr}};
    gck_opt_spec spec = {cmd, opts, (int)(sizeof opts / sizeof opts[0]), &g->text, 1, GCK_ONE_CASE};
    int nargs;
    return gck_opt_parse(&spec, argc, argv, &nargs, &g->help);
}

/* The numeric options into the run options, each checked against its range. */
static int parse_numbers(const repro_args *g, gck_run_options *o, double *limit) {
    *limit = 0;
    if (g->timeout && (!gck_parse_double(g->timeout, limit) || *limit <= 0))
        return gck_cli_usage_error(cmd, "--timeout '%s' is not a positive number of seconds",
                                   g->timeout);
    if (g->oracle && !gck_oracle_kind_parse(g->oracle, &o->check.oracle))
        return gck_cli_usage_error(cmd, "--oracle '%s' must be exact, mpfr or both", g->oracle);
    long long n = 0;
    if (g->threads && (!gck_parse_count(g->threads, &n) || n > 4096))
        return gck_cli_usage_error(cmd, "--threads '%s' is not a count from 0 to 4096", g->threads);
    o->check.threads = (int)n;
    n = 0;
    if (g->conc && (!gck_parse_count(g->conc, &n) || n < 2 || n > 64))
        return gck_cli_usage_error(cmd, "--concurrency '%s' is not a thread count from 2 to 64",
                                   g->conc);
    o->concurrency = (int)n;
    n = 1;
    if (g->repeat && (!gck_parse_count(g->repeat, &n) || n < 1 || n > 100000))
        return gck_cli_usage_error(cmd, "--repeat '%s' is not a count from 1 to 100000", g->repeat);
    o->repeat = (int)n;
    return GCK_EXIT_OK;
}

/* The case: the argument itself when it is a reproducer; otherwise the first reproducer in a file
 * (the argument, or `@FILE`) or on standard input (`-`): a corpus file, a findings .jsonl
 * line, a script. It runs from "gck1 " to the end of its line or a closing quote. */
static int case_text(const char *arg, char *buf, size_t len) {
    if (strncmp(arg, "gck1", 4) == 0) {
        snprintf(buf, len, "%s", arg);
        return GCK_EXIT_OK;
    }
    const char *name = arg[0] == '@' ? arg + 1 : arg;
    FILE *f = strcmp(arg, "-") == 0 ? stdin : fopen(name, "r");
    if (!f)
        return gck_cli_usage_error(cmd,
                                   "'%s' is neither a reproducer ('gck1 ...') nor a readable "
                                   "file (%s)",
                                   arg, strerror(errno));
    char line[8192];
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        char *g = strstr(line, "gck1 ");
        if (!g) continue;
        g[strcspn(g, "\n\"'")] = '\0';
        snprintf(buf, len, "%s", g);
        found = true;
    }
    if (f != stdin) fclose(f);
    if (!found)
        return gck_cli_usage_error(cmd, "%s holds no reproducer ('gck1 ...')",
                                   f == stdin ? "standard input" : name);
    return GCK_EXIT_OK;
}

int gck_cmd_repro(int argc, char **argv) {
    repro_args g = {0};
    int rc = scan(argc, argv, &g);
    if (rc) return rc;
    if (g.help) {
        fputs(repro_help, stdout);
        return GCK_EXIT_OK;
    }
    if (!g.backend)
        return gck_cli_usage_error(cmd, "missing --backend (see gemmcheck repro --help)");
    if (!g.text) return gck_cli_usage_error(cmd, "missing the case ('gck1 ...', a file or -)");
    static char text[8192];
    if ((rc = case_text(g.text, text, sizeof text))) return rc;
    gck_spec spec;
    char msg[1024];
    if (gck_spec_parse(text, &spec, msg, sizeof msg) != GCK_OK)
        return gck_cli_usage_error(cmd, "bad case: %s", msg);
    gck_run_options o = {.check = {.strict_ieee = g.strict, .oracle = GCK_ORACLE_EXACT},
                         .determinism = g.rerun,
                         .no_guard_page = g.no_guard,
                         .dump_dir = g.dump};
    double limit;
    if ((rc = parse_numbers(&g, &o, &limit))) return rc;
    int64_t hi;
    if (g.mem && !gck_parse_budget(cmd, g.mem, &spec.mem_budget, &hi)) return GCK_EXIT_USAGE;
    int thi;
    if (g.thr && !gck_parse_thread_limit(cmd, g.thr, &spec.max_threads, &thi))
        return GCK_EXIT_USAGE;
    spec.limit_threads = spec.limit_threads || g.thr;
    if ((g.mem && hi != spec.mem_budget) || (g.thr && thi != spec.max_threads))
        return gck_cli_usage_error(cmd, "--memory-budget and --thread-limit take one value here");
    char repro[2048], flags[96] = "";
    gck_spec_format(&spec, repro, sizeof repro);
    gck_wire_repro_flags(flags, sizeof flags, o.concurrency, o.repeat);
    gck_isolated_result *res = malloc(sizeof *res);
    if (!res) {
        fprintf(stderr, "gemmcheck repro: out of memory\n");
        return GCK_EXIT_INTERNAL;
    }
    bool hard;
    if ((rc = gck_cli_tier(cmd, g.tier, &hard))) {
        free(res);
        return rc;
    }
    gck_run_isolated(g.backend, &spec, &o, limit, res);
    if (hard && res->status == GCK_ISOLATED_RAN)
        gck_run_result_drop(&res->run, GCK_KIND_IMPROBABLE_ERROR);
    if (o.repeat > 1 && res->status == GCK_ISOLATED_RAN)
        printf("attempts: %d of %d%s\n", res->run.attempts, o.repeat,
               res->run.outcome == GCK_OUTCOME_FINDINGS
                   ? " (stopped at the first one with a finding)"
                   : ", none with a finding");
    switch (res->status) {
    case GCK_ISOLATED_RAN:
        rc = report(g.backend, flags, repro, res->version, &res->run);
        if (g.dump) printf("dump:     %s (re-check: sh %s/verify.sh)\n", g.dump, g.dump);
        break;
    case GCK_ISOLATED_SETUP_ERROR:
        fprintf(stderr, "gemmcheck repro: %s\n", res->message);
        rc = GCK_EXIT_USAGE;
        break;
    case GCK_ISOLATED_CRASH:
        rc = crash_or_hang(g.backend, flags, repro, GCK_KIND_CRASH, res->message);
        break;
    case GCK_ISOLATED_HANG:
        rc = crash_or_hang(g.backend, flags, repro, GCK_KIND_HANG, res->message);
        break;
    default:
        fprintf(stderr, "gemmcheck repro: internal error: %s\n", res->message);
        rc = GCK_EXIT_INTERNAL;
    }
    free(res);
    return rc;
}
