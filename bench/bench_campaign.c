/* Campaign speed of two backends on the same cases: the cost of checking a backend as a
 * campaign's worker pays it (gck_run_spec: guarded operands, the call, the check, a share of
 * reruns and concurrency checks), per case, with the backend's own call time apart.
 *
 * `gemmcheck fuzz --backend X` draws its cases from X's support table: a backend that promises
 * batches or D apart from C gets batched and separate-D cases, which hold more elements, so two
 * campaigns' cases/s compare different work. Here one stream is drawn from the peer's table (the
 * second backend: every case is one both serve) and each case runs on both, alternating which
 * goes first; then, for reference, the first backend's own stream (as its campaign draws it),
 * with its elements per case.
 *
 * usage: bench_campaign [--cases N] [--seed S] [--types LIST] [--backends X,PEER]
 *        defaults: 4000 cases, seed 77, "f32,f32,f32,f32:f32;f64,f64,f64,f64:f64",
 *        kernels,openblas.  Prints a Markdown table. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "campaign.h"
#include "gemmcheck/gemmcheck.h"
#include "gemmcheck/runner.h"
#include "generator.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void die(const char *what, const char *detail) {
    fprintf(stderr, "bench_campaign: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    exit(2);
}

typedef struct tally {
    double seconds, call_seconds;
    int64_t cases, elements, not_passed;
} tally;

/* Case `index` of the stream on backend be, as a campaign's worker runs it (one thread), with the
 * rerun and the concurrency check the campaign `co` would add to it. */
static void run_case(gck_backend *be, const gck_spec *s, const gck_campaign_options *co,
                     uint64_t index, tally *t) {
    static gck_run_result r; /* large: not on the stack */
    gck_run_options o = {.check = {.threads = 1}};
    gck_campaign_case_checks(co, index, &o.determinism, &o.concurrency);
    char msg[512];
    double t0 = now();
    gck_status st = gck_run_spec(be, s, &o, &r, msg, sizeof msg);
    t->seconds += now() - t0;
    if (st != GCK_OK) die("a case could not run", msg);
    t->call_seconds += r.call_seconds;
    t->cases++;
    t->elements += r.check.elements;
    if (r.outcome != GCK_OUTCOME_PASS) t->not_passed++;
}

static size_t targets_of(gck_backend *be, const char *types, gck_fuzz_target *t, size_t cap) {
    const gck_support_row *rows;
    size_t nrows = be->ops->table(be->state, &rows);
    char msg[512];
    size_t n = gck_fuzz_parse_types(types, rows, nrows, t, cap, msg, sizeof msg);
    if (!n) die("--types", msg);
    return n;
}

static void row(const char *stream, const char *name, const tally *t, const tally *peer) {
    printf("| %s | %s | %lld | %.1f | %.1f | %.2f | %.0f | %lld |", stream, name,
           (long long)t->cases, (double)t->cases / t->seconds, 1e3 * t->seconds / (double)t->cases,
           100.0 * t->call_seconds / t->seconds, (double)t->elements / (double)t->cases,
           (long long)t->not_passed);
    if (peer)
        printf(" %.3fx |\n", peer->seconds / t->seconds);
    else
        printf(" |\n");
}

int main(int argc, char **argv) {
    long cases = 4000;
    gck_campaign_options co; /* gemmcheck fuzz's defaults: shares, per-case budgets */
    gck_campaign_defaults(&co);
    co.seed = 77;
    const char *types = "f32,f32,f32,f32:f32;f64,f64,f64,f64:f64";
    char names[2][256] = {"kernels", "openblas"};
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!strcmp(argv[i], "--cases") && v) {
            cases = strtol(v, &end, 10);
            if (*end || cases < 1 || cases > 100000000) die("--cases takes 1 to 1e8", v);
        } else if (!strcmp(argv[i], "--seed") && v) {
            co.seed = strtoull(v, &end, 10);
            if (*end || !*v) die("--seed takes an unsigned integer", v);
        } else if (!strcmp(argv[i], "--types") && v)
            types = v;
        else if (!strcmp(argv[i], "--backends") && v) {
            const char *comma = strchr(v, ',');
            if (!comma || comma == v || !comma[1] || (size_t)(comma - v) >= sizeof names[0] ||
                strlen(comma + 1) >= sizeof names[1])
                die("--backends takes two backend specs: X,PEER", v);
            snprintf(names[0], sizeof names[0], "%.*s", (int)(comma - v), v);
            snprintf(names[1], sizeof names[1], "%s", comma + 1);
        } else
            die("unknown or incomplete argument (usage: bench_campaign [--cases N] [--seed S] "
                "[--types LIST] [--backends X,PEER])",
                argv[i]);
        i++;
    }
    gck_backend be[2];
    char msg[512];
    for (int b = 0; b < 2; b++) {
        if (gck_backend_open(&be[b], names[b], msg, sizeof msg) != GCK_OK) die(names[b], msg);
        char why[512];
        if (!be[b].ops->available(be[b].state, why, sizeof why)) die(names[b], why);
    }
    static gck_fuzz_target peer_t[GCK_FUZZ_MAX_TARGETS], own_t[GCK_FUZZ_MAX_TARGETS];
    gck_fuzz_config shared = {
        .seed = co.seed, .max_flops = co.max_flops, .max_bytes = co.max_bytes};
    gck_fuzz_config own = shared;
    shared.targets = peer_t;
    shared.ntargets = targets_of(&be[1], types, peer_t, GCK_FUZZ_MAX_TARGETS);
    own.targets = own_t;
    own.ntargets = targets_of(&be[0], types, own_t, GCK_FUZZ_MAX_TARGETS);

    tally t[3] = {{0}};
    for (long i = 0; i < cases; i++) {
        gck_spec s;
        gck_fuzz_generate(&shared, (uint64_t)i, &s);
        int first = (int)(i & 1); /* alternate which backend runs the case first */
        run_case(&be[first], &s, &co, (uint64_t)i, &t[first]);
        run_case(&be[1 - first], &s, &co, (uint64_t)i, &t[1 - first]);
    }
    for (long i = 0; i < cases; i++) {
        gck_spec s;
        gck_fuzz_generate(&own, (uint64_t)i, &s);
        run_case(&be[0], &s, &co, (uint64_t)i, &t[2]);
    }
    printf("bench_campaign: seed %llu, types %s, one thread, rerun share %.2f, concurrency share "
           "%.2f (%d threads)\n\n",
           (unsigned long long)co.seed, types, co.rerun_share, co.concurrency_share,
           co.concurrency);
    printf("| stream | backend | cases | cases/s | ms per case | in the call (%%) | elements per "
           "case | not passed | speed vs %s |\n",
           names[1]);
    printf("|---|---|---|---|---|---|---|---|---|\n");
    char stream[300];
    snprintf(stream, sizeof stream, "drawn from %s (shared)", names[1]);
    row(stream, names[0], &t[0], &t[1]);
    row(stream, names[1], &t[1], NULL);
    snprintf(stream, sizeof stream, "drawn from %s", names[0]);
    row(stream, names[0], &t[2], NULL);
    for (int b = 0; b < 2; b++) gck_backend_close(&be[b]);
    return t[0].not_passed || t[1].not_passed || t[2].not_passed ? 1 : 0;
}
