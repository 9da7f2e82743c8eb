/* The fuzz supervisor: generates cases, feeds them to worker processes, watches for crashes and
 * hangs, deduplicates findings, streams them to disk as they happen, and writes the reports. */
#define _DEFAULT_SOURCE 1
#include "campaign.h"
#include "environment.h"
#include "report.h"
#include "result.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exitcode.h"
#include "generator.h"
#include "known.h"
#include "mix.h"
#include "parallel.h"
#include "watch.h"
#include "wire.h"
#include "worker.h"

#define MAX_JOBS 64

static volatile sig_atomic_t stop_requested, stop_signal;

static void on_stop_signal(int sig) {
    stop_requested = 1;
    stop_signal = sig;
}

typedef struct slot {
    gck_worker w;
    bool alive, busy;
    gck_case_watch watch; /* the case in flight: phase, call, deadlines */
    double sent;          /* when it was handed to the worker */
    uint64_t case_no;
    gck_spec spec;
    bool requested;
    int concurrency;    /* the concurrency check's threads for the case in flight (0: none) */
    bool confirming;    /* re-running a case that missed its deadline once */
    bool retry_pending; /* dispatch s->spec again (in a fresh worker) instead of a new case */
    bool resend;        /* the worker did not take s->spec: send it to a fresh one, as it was */
    int served;         /* cases this worker has finished */
    gck_spec prev;      /* the last case it finished */
    bool lingering;     /* the worker died before the case in flight made a call, after
                           earlier cases: s->spec is re-run in a fresh worker to tell whose */
} slot;

typedef struct run_ctx {
    const gck_campaign_options *o;
    gck_campaign_result *res;
    const char *backend;
    gck_backend_info *info;
    double t0;    /* campaign start */
    double began; /* this backend's start */
    double end;   /* this backend's end */
    FILE *jsonl;
    gck_support_row rows[GCK_FUZZ_MAX_TARGETS];
    char entries[GCK_FUZZ_MAX_TARGETS][96], entries_tmp[GCK_FUZZ_MAX_TARGETS][96];
    size_t nrows;
    gck_fuzz_target targets[GCK_FUZZ_MAX_TARGETS];
    size_t ntargets;
    gck_fuzz_config gen;
    gck_spec *prelude; /* edge cases and corpus, run first */
    size_t nprelude, next_prelude;
    uint64_t next_index;
    int64_t dispatched;
    char setup_error[1024];
    gck_run_result *result; /* the case's result as a worker sent it (large: on the heap) */
} run_ctx;

/* Start a worker (its handshake is read by `handshake`); false with a reason. */
static bool start(run_ctx *x, slot *s) {
    /* a fresh worker; the case fields survive (a retry runs the same case again) */
    s->alive = s->busy = false;
    s->served = 0;
    gck_worker_options wo = {x->backend, x->o->strict_ieee, x->o->oracle, stderr, 50, false};
    return gck_worker_spawn(&s->w, &wo, x->setup_error, sizeof x->setup_error);
}

/* Read a started worker's handshake (READY, TABLE, rows) before `deadline`; false with a
 * reason (the worker is killed). */
static bool handshake(run_ctx *x, slot *s, double deadline) {
    double began = gck_wire_now();
    gck_support_row rows[GCK_FUZZ_MAX_TARGETS];
    size_t n;
    char why[1024];
    gck_handshake hs = gck_worker_handshake(&s->w, deadline, rows, x->entries_tmp,
                                            GCK_FUZZ_MAX_TARGETS, &n, why, sizeof why);
    if (hs != GCK_HANDSHAKE_READY) {
        snprintf(x->setup_error, sizeof x->setup_error, "backend %.200s: %.700s", x->backend, why);
        if (hs != GCK_HANDSHAKE_BROKEN) snprintf(x->setup_error, sizeof x->setup_error, "%s", why);
        if (hs == GCK_HANDSHAKE_BROKEN && !stop_requested && gck_wire_now() >= deadline)
            snprintf(x->setup_error + strlen(x->setup_error),
                     sizeof x->setup_error - strlen(x->setup_error),
                     " (waited %.0f s, as long as --time allows: an init that hangs?)",
                     deadline - began);
        gck_worker_kill(&s->w);
        return false;
    }
    snprintf(x->info->oracle, sizeof x->info->oracle, "%s", s->w.oracle);
    snprintf(x->info->version, sizeof x->info->version, "%s", s->w.version);
    if (x->nrows == 0) { /* the first worker's table is kept; respawns send the same */
        for (size_t r = 0; r < n; r++) {
            x->rows[r] = rows[r];
            memcpy(x->entries[r], x->entries_tmp[r], sizeof x->entries[r]);
            x->rows[r].entry = x->entries[r];
        }
        x->nrows = n;
    }
    s->alive = true;
    return true;
}

static bool spawn(run_ctx *x, slot *s, double deadline) {
    return start(x, s) && handshake(x, s, deadline);
}

void gck_campaign_defaults(gck_campaign_options *o) {
    memset(o, 0, sizeof *o);
    o->time_limit = 60;
    o->rerun_share = 0.1;
    o->concurrency = 4;
    o->concurrency_share = 0.05;
    o->max_flops = 1e6;
    o->max_bytes = 64e6;
    o->timeout_floor = 3;
    o->jobs = gck_online_cores();
}

void gck_campaign_case_checks(const gck_campaign_options *o, uint64_t case_no, bool *determinism,
                              int *concurrency) {
    uint64_t h = gck_splitmix64(o->seed ^ gck_splitmix64(case_no + 77));
    *determinism = (double)(h % 10000) < o->rerun_share * 10000.0;
    *concurrency =
        (double)((h >> 20) % 10000) < o->concurrency_share * 10000.0 ? o->concurrency : 0;
}

static double case_cost(const gck_case *c) {
    return (double)c->m * (double)c->n * (double)c->k * (double)c->batch;
}

static void types_of(const gck_case *c, char *types, size_t tl, char *compute, size_t cl) {
    snprintf(types, tl, "%s,%s,%s,%s", gck_format_get(c->type_a)->name,
             gck_format_get(c->type_b)->name, gck_format_get(c->type_c)->name,
             gck_format_get(gck_case_type(c, GCK_D))->name);
    snprintf(compute, cl, "%s", gck_format_get(c->compute)->name);
}

static void save_corpus(const run_ctx *x, const gck_fuzz_finding *f) {
    if (!x->o->corpus_dir) return;
    mkdir(x->o->corpus_dir, 0777);
    uint64_t h = 1469598103934665603ull;
    for (const char *p = f->signature; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s-%016llx.txt", x->o->corpus_dir, gck_kind_name(f->kind),
             (unsigned long long)h);
    FILE *fp = fopen(path, "w");
    if (!fp) return;
    fprintf(fp, "%s\n", f->repro);
    fclose(fp);
}

static void record(run_ctx *x, gck_kind kind, const gck_spec *s, const char *detail,
                   const char *flags, const gck_element_report *e) {
    gck_fuzz_finding f;
    memset(&f, 0, sizeof f);
    f.kind = kind;
    char types[64], compute[8], shape[32];
    types_of(&s->c, types, sizeof types, compute, sizeof compute);
    gck_fuzz_shape_class(&s->c, shape, sizeof shape);
    snprintf(f.signature, sizeof f.signature, "%s|%s|%s:%s|%s", x->backend, gck_kind_name(kind),
             types, compute, shape);
    snprintf(f.backend, sizeof f.backend, "%s", x->backend);
    gck_spec_format(s, f.repro, sizeof f.repro);
    snprintf(f.flags, sizeof f.flags, "%s", flags);
    f.cost = case_cost(&s->c);
    snprintf(f.detail, sizeof f.detail, "%s", detail);
    if (e) {
        f.has_element = true;
        f.element = *e;
    }
    f.count = 1;
    f.time_s = gck_wire_now() - x->t0;
    size_t before = x->res->nfindings;
    if (gck_result_add_finding(x->res, &f)) {
        if (x->o->stop_on_finding && x->res->nfindings > before) stop_requested = 1;
        /* stream the record as it is now (new, or with a smaller reproducer) */
        for (size_t i = 0; i < x->res->nfindings; i++)
            if (!strcmp(x->res->findings[i].signature, f.signature)) {
                if (x->jsonl) gck_report_stream_finding(x->jsonl, &x->res->findings[i]);
                save_corpus(x, &x->res->findings[i]);
                break;
            }
    }
}

/* Count a case's outcome in the summary and its tuple's entry; `seconds` is the time from handing
 * it to a worker to its result. */
static void count_case(run_ctx *x, const gck_spec *s, gck_outcome outcome, const bool *kinds,
                       const gck_check_result *check, double seconds, bool refused) {
    gck_campaign_result *r = x->res;
    r->cases++;
    x->info->cases++;
    char types[64], compute[8];
    types_of(&s->c, types, sizeof types, compute, sizeof compute);
    gck_matrix_entry *e = gck_result_matrix(r, x->backend, types, compute);
    if (e) {
        e->fuzzed = true;
        e->seconds += seconds;
        e->refused += refused;
    }
    if (outcome == GCK_OUTCOME_PASS) {
        r->pass++;
        if (e) e->pass++;
    } else if (outcome == GCK_OUTCOME_UNSUPPORTED) {
        r->unsupported++;
        if (e) e->unsupported++;
    } else {
        r->with_findings++;
        if (e) e->fail++;
        for (int k = 0; k < GCK_KIND_COUNT; k++)
            if (kinds[k]) r->kind_cases[k]++;
    }
    if (!e || !check) return;
    for (int b = 0; b < GCK_RATIO_BINS; b++) e->ratio_bins[b] += check->ratio_bins[b];
    if (check->max_stat > e->max_stat) e->max_stat = check->max_stat;
    e->stat_elements += check->stat_elements;
    e->improbable += check->count[GCK_KIND_IMPROBABLE_ERROR];
    const int64_t signs[4] = {check->bias_up, check->bias_down, check->bias_toward0,
                              check->bias_away};
    for (int q = 0; q < 4; q++) e->error_signs[q] += signs[q];
    e->sign_ss += check->bias_ss;
}

static void on_result(run_ctx *x, slot *s, const gck_run_result *in) {
    static _Thread_local gck_run_result dropped; /* large: not on the stack */
    const gck_run_result *rr = in;
    if (x->o->tier_hard) { /* the statistical tier counted, not a finding */
        dropped = *in;
        gck_run_result_drop(&dropped, GCK_KIND_IMPROBABLE_ERROR);
        rr = &dropped;
    }
    bool kinds[GCK_KIND_COUNT] = {false};
    gck_outcome outcome = rr->outcome;
    if (outcome == GCK_OUTCOME_UNSUPPORTED && s->requested) {
        /* a tuple the user asked for and the backend refuses */
        char d[600];
        snprintf(d, sizeof d, "requested type tuple refused: %s", rr->note);
        record(x, GCK_KIND_UNIMPLEMENTED, &s->spec, d, "", NULL);
        kinds[GCK_KIND_UNIMPLEMENTED] = true;
        outcome = GCK_OUTCOME_FINDINGS;
    }
    /* A nondeterminism the concurrency check may have seen needs it in repro as well; a race
     * may show only now and then, or only after the library has served calls (OpenBLAS's serial
     * build), so repro runs the case until it shows, as the worker did. */
    char conc[64];
    gck_wire_repro_flags(conc, sizeof conc, s->concurrency, GCK_NONDET_REPEAT);
    for (int f = 0; f < rr->nfindings; f++) {
        const gck_finding *fd = &rr->findings[f];
        kinds[fd->kind] = true;
        record(x, fd->kind, &s->spec, fd->detail, fd->kind == GCK_KIND_NONDETERMINISTIC ? conc : "",
               fd->has_element ? &fd->element : NULL);
    }
    count_case(x, &s->spec, outcome, kinds, &rr->check, gck_wire_now() - s->sent, rr->refused);
}

/* gemmcheck's own failure on the case in flight: counted, reported with the case, no finding. */
static void internal_error(run_ctx *x, const slot *s, const char *what) {
    char repro[2048], text[3072];
    gck_spec_format(&s->spec, repro, sizeof repro);
    snprintf(text, sizeof text, "%s on '%s'", what, repro);
    fprintf(stderr, "\ngemmcheck fuzz: internal error: %s\n", text);
    if (!gck_result_add_internal(x->res, text)) /* counted; only its text is lost */
        fprintf(stderr, "gemmcheck fuzz: out of memory keeping that error's text\n");
}

/* The end of a worker with a case in flight, as the watch described it (`o`): a hang or crash
 * of the backend, or a death before the case's first call. */
static void on_death(run_ctx *x, slot *s, const gck_watch_outcome *o) {
    gck_worker_kill(&s->w);
    bool kinds[GCK_KIND_COUNT] = {false};
    if (o->early && s->served > 0) {
        /* died before this case's first call, in a worker that had served cases: damage left
         * by an earlier call (a thread still running, a corrupted heap) or gemmcheck's own
         * failure on this case. The case runs again in a fresh worker to tell which. */
        s->lingering = true;
        s->resend = true;
        s->alive = s->busy = false;
        s->served = 0;
        return;
    }
    if (o->early) {
        internal_error(x, s, o->detail);
    } else {
        gck_kind kind = o->end == GCK_WATCH_HANG ? GCK_KIND_HANG : GCK_KIND_CRASH;
        record(x, kind, &s->spec, o->detail, o->flags, NULL);
        kinds[kind] = true;
        count_case(x, &s->spec, GCK_OUTCOME_FINDINGS, kinds, NULL, gck_wire_now() - s->sent, false);
    }
    s->lingering = false;
    s->alive = s->busy = false;
}

/* The limits of case number case_no's first call (--memory-budget, --thread-limit), drawn from
 * the seed and the case number: the same case gets the same limits in every run. */
static void draw_limits(const gck_campaign_options *o, uint64_t case_no, gck_spec *s) {
    uint64_t h = gck_mix64(o->seed ^ gck_mix64(case_no + 0x6c696d6974ull));
    if (o->mem_hi > 0) {
        double lo = log((double)o->mem_lo), hi = log((double)o->mem_hi);
        double u = (double)(h >> 11) * 0x1p-53;
        s->mem_budget = (int64_t)llround(exp(lo + u * (hi - lo)));
        if (s->mem_budget < o->mem_lo) s->mem_budget = o->mem_lo;
        if (s->mem_budget > o->mem_hi) s->mem_budget = o->mem_hi;
    }
    if (o->limit_threads) {
        s->limit_threads = true;
        s->max_threads = o->thr_lo + (int)(gck_mix64(h) % (uint64_t)(o->thr_hi - o->thr_lo + 1));
    }
}

/* The next case to run: prelude (edge cases, corpus), then the generated stream of this shard. */
static bool next_case(run_ctx *x, gck_spec *s, uint64_t *case_no, bool *requested) {
    if (x->next_prelude < x->nprelude) {
        *s = x->prelude[x->next_prelude++];
        *case_no = UINT64_MAX - x->next_prelude;
    } else {
        uint64_t index =
            (uint64_t)(x->o->shard_index - 1) + (uint64_t)x->o->shard_count * x->next_index++;
        gck_fuzz_generate(&x->gen, index, s);
        *case_no = index;
    }
    draw_limits(x->o, *case_no, s);
    *requested = false;
    for (size_t t = 0; t < x->ntargets; t++)
        if (x->targets[t].requested && x->targets[t].a == s->c.type_a &&
            x->targets[t].b == s->c.type_b && x->targets[t].c == s->c.type_c &&
            x->targets[t].d == gck_case_type(&s->c, GCK_D) && x->targets[t].compute == s->c.compute)
            *requested = true;
    return true;
}

static bool dispatch(run_ctx *x, slot *s) {
    gck_wire_request req;
    memset(&req, 0, sizeof req);
    bool requested = s->requested;
    if (s->retry_pending) {
        s->retry_pending = false; /* the same case again: spec, case number, flags */
        s->confirming = true;
    } else if (s->resend) {
        s->resend = false;
    } else {
        next_case(x, &s->spec, &s->case_no, &requested);
        s->confirming = false;
        x->dispatched++;
    }
    s->requested = requested;
    req.id = s->case_no;
    bool determinism;
    gck_campaign_case_checks(x->o, s->case_no, &determinism, &req.concurrency);
    req.determinism = determinism;
    s->concurrency = req.concurrency;
    req.threads = 1;
    req.repeat = 1;
    gck_spec_format(&s->spec, req.repro, sizeof req.repro);
    gck_watch_start(&s->watch, &s->spec, 0, x->o->timeout_floor);
    s->sent = gck_wire_now();
    if (gck_worker_request(&s->w, &req, gck_wire_now() + 30.0)) {
        s->busy = true;
        return true;
    }
    /* the worker is gone or does not read: the case goes to a fresh one; a worker that died
     * idle, after earlier cases, is looked into as above */
    gck_worker_kill(&s->w);
    s->alive = false;
    s->resend = true;
    if (s->served > 0) s->lingering = true;
    s->served = 0;
    return false;
}

/* The display: on a terminal one line redrawn in place; piped, a plain line each log_every
 * seconds (`line` true). */
static void progress(const run_ctx *x, bool final, bool line) {
    if (!x->o->progress && !line) return;
    double now = gck_wire_now(), el = now - x->t0;
    char kinds[512] = "";
    size_t n = 0;
    for (int k = 0; k < GCK_KIND_COUNT; k++)
        if (x->res->kind_cases[k])
            n += (size_t)snprintf(kinds + n, sizeof kinds - n, " %s=%lld",
                                  gck_kind_name((gck_kind)k), (long long)x->res->kind_cases[k]);
    double left = x->end - now;
    if (line) {
        /* this backend's cases and rate; what bounds it: cases (--cases) or time */
        double bel = now - x->began;
        char bound[64];
        if (x->o->max_cases > 0)
            snprintf(bound, sizeof bound, "of %lld", (long long)x->o->max_cases);
        else
            snprintf(bound, sizeof bound, "(%.0f s left)", left > 0 ? left : 0.0);
        fprintf(stderr, "gemmcheck fuzz: %.0f s: %s: %lld cases %s, %.1f/s, findings:%s\n", el,
                x->backend, (long long)x->info->cases, bound,
                bel > 0 ? (double)x->info->cases / bel : 0.0, n ? kinds : " none");
        return;
    }
    fprintf(stderr, "\r\033[K%s: %.0fs %lld cases %.1f/s findings:%s%s left %.0fs", x->backend, el,
            (long long)x->res->cases, el > 0 ? (double)x->res->cases / el : 0.0,
            n ? kinds : " none", "", left > 0 ? left : 0.0);
    if (final) fputc('\n', stderr);
}

static int load_corpus(run_ctx *x, gck_spec **out, size_t *n, size_t *cap) {
    DIR *d = opendir(x->o->corpus_dir);
    if (!d) return 0;
    struct dirent *e;
    int loaded = 0;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 5 || strcmp(e->d_name + l - 4, ".txt")) continue;
        char path[4096], line[4096], msg[256];
        snprintf(path, sizeof path, "%s/%s", x->o->corpus_dir, e->d_name);
        /* regular files only, opened without blocking: a FIFO or a device is skipped */
        int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        if (fd < 0) continue;
        if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
            fprintf(stderr, "gemmcheck fuzz: corpus entry %s is not a regular file (skipped)\n",
                    path);
            close(fd);
            continue;
        }
        FILE *f = fdopen(fd, "r");
        if (!f) {
            close(fd);
            continue;
        }
        if (fgets(line, sizeof line, f)) {
            line[strcspn(line, "\n")] = '\0';
            gck_spec s;
            if (gck_spec_parse(line, &s, msg, sizeof msg) == GCK_OK) {
                if (*n == *cap) {
                    *cap = *cap ? 2 * *cap : 64;
                    *out = realloc(*out, *cap * sizeof **out);
                }
                (*out)[(*n)++] = s;
                loaded++;
            } else {
                fprintf(stderr, "gemmcheck fuzz: corpus file %s: %s (skipped)\n", path, msg);
            }
        }
        fclose(f);
    }
    closedir(d);
    return loaded;
}

/* The findings file: created or opened without truncating, locked for this campaign (another
 * live campaign writing it is refused), then emptied. NULL with the reason. */
static FILE *open_findings_file(const char *path, char *msg, size_t len) {
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) {
        snprintf(msg, len, "cannot create %s: %s", path, strerror(errno));
        return NULL;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        snprintf(msg, len, "%s is being written by another campaign (it holds the file's lock)",
                 path);
        close(fd);
        return NULL;
    }
    if (ftruncate(fd, 0) != 0 || !(flock(fd, LOCK_EX) == 0)) {
        snprintf(msg, len, "cannot truncate %s: %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    FILE *f = fdopen(fd, "w");
    if (!f) {
        snprintf(msg, len, "cannot open %s: %s", path, strerror(errno));
        close(fd);
    }
    return f;
}

/* Kill every worker of the run. */
static void kill_all(slot *slots, int jobs) {
    for (int j = 0; j < jobs; j++) {
        gck_worker_kill(&slots[j].w);
        slots[j].alive = slots[j].busy = false;
    }
}

/* When a worker started at `now` must have opened the backend: 120 s, but never past `end` (the
 * end of --time, or of this backend's share of it, plus 3 s). */
static double open_by(double now, double end) { return now + 120.0 < end ? now + 120.0 : end; }

/* Start the run's first worker (whether the backend opens at all is a set-up fact, given up
 * to 120 s, and never past this backend's share of --time); the others start in the main loop, one
 * at a time and only while the run accepts cases, so that spawning never outlasts --time. */
static bool start_workers(run_ctx *x, slot *slots, int jobs) {
    for (int j = 0; j < jobs; j++) {
        slots[j].w.pid = -1;
        slots[j].w.dead = true;
    }
    return spawn(x, &slots[0], open_by(gck_wire_now(), x->end + 3.0));
}

/* The case's result arrived (x->result, checked by the watch). */
static void on_returned(run_ctx *x, slot *s) {
    const gck_run_result *rr = x->result;
    if (s->lingering) {
        /* the same case passed in a fresh worker: the death was the earlier case's */
        char d[512];
        snprintf(d, sizeof d,
                 "the worker died after the backend's calls for this case had returned, "
                 "before the next case made a call (a thread the backend left running, or "
                 "heap damage)");
        bool kinds[GCK_KIND_COUNT] = {false};
        kinds[GCK_KIND_CRASH] = true;
        record(x, GCK_KIND_CRASH, &s->prev, d, "", NULL);
        count_case(x, &s->prev, GCK_OUTCOME_FINDINGS, kinds, NULL, 0, false);
        s->lingering = false;
    }
    on_result(x, s, rr);
    s->served++;
    s->prev = s->spec;
    if (s->confirming) x->res->deadline_retries++; /* missed once, met this time */
    s->busy = false;
    /* the device context is gone: the worker is replaced rather than charged with the next
     * cases, each of which would fail the same way */
    if (gck_run_result_device_fault(rr)) {
        gck_worker_kill(&s->w);
        s->alive = false;
        s->served = 0;
    }
}

/* What the watch made of an event of a busy worker. */
static void on_event(run_ctx *x, slot *s, const gck_watch_outcome *o) {
    switch (o->end) {
    case GCK_WATCH_GOING: return;
    case GCK_WATCH_RESULT: on_returned(x, s); return;
    case GCK_WATCH_SETUP:
    case GCK_WATCH_INTERNAL:
        if (o->early) break;
        internal_error(x, s, o->detail);
        s->busy = false;
        if (o->overran) { /* gemmcheck's own work (set-up or checks) overran: not the backend's */
            gck_worker_kill(&s->w);
            s->alive = false;
        }
        return;
    case GCK_WATCH_HANG:
        if (s->confirming) break;
        /* A call that misses its deadline once is run again in a fresh worker before it is
         * called a hang: an overloaded machine can stall a correct call (a spinning BLAS
         * thread pool starved of cores). */
        gck_worker_kill(&s->w);
        s->alive = s->busy = false;
        s->retry_pending = true;
        return;
    case GCK_WATCH_CRASH: break;
    }
    on_death(x, s, o);
}

/* Everything a busy worker has to say now (no waiting), or, `due`, its missed deadline. */
static void service(run_ctx *x, slot *s, bool due) {
    gck_watch_outcome o;
    while (s->busy) {
        gck_wire_frame f;
        char why[256];
        gck_worker_event ev = gck_worker_next(&s->w, 0, &f, why, sizeof why);
        if (ev == GCK_WORKER_NOTHING && !(due && gck_wire_now() > s->watch.deadline)) break;
        gck_watch_step(&s->watch, &s->w, ev, &f, why, x->result, &o);
        on_event(x, s, &o);
    }
    gck_worker_show_output(&s->w);
}

/* The support matrix holds every tuple the backend declares, and every tuple fuzzed, before
 * any case runs: reports list the tuples no case reached (and why) instead of leaving them out. */
static void declare_tuples(run_ctx *x) {
    char types[64], compute[8];
    for (size_t r = 0; r < x->nrows; r++) {
        gck_case c = {.type_a = x->rows[r].a,
                      .type_b = x->rows[r].b,
                      .type_c = x->rows[r].c,
                      .type_d = x->rows[r].d,
                      .compute = x->rows[r].compute};
        types_of(&c, types, sizeof types, compute, sizeof compute);
        gck_result_matrix(x->res, x->backend, types, compute);
    }
    for (size_t t = 0; t < x->ntargets; t++) {
        const gck_fuzz_target *g = &x->targets[t];
        gck_case c = {
            .type_a = g->a, .type_b = g->b, .type_c = g->c, .type_d = g->d, .compute = g->compute};
        types_of(&c, types, sizeof types, compute, sizeof compute);
        gck_matrix_entry *e = gck_result_matrix(x->res, x->backend, types, compute);
        if (e) e->fuzzed = true;
    }
}

/* The targets: the backend's rows, or the user's --types (an error names a bad list); and the
 * generator's configuration over them. */
static bool set_targets(run_ctx *x) {
    char msg[512];
    if (!x->o->types)
        x->ntargets =
            gck_fuzz_targets_from_rows(x->rows, x->nrows, x->targets, GCK_FUZZ_MAX_TARGETS);
    else if ((x->ntargets = gck_fuzz_parse_types(x->o->types, x->rows, x->nrows, x->targets,
                                                 GCK_FUZZ_MAX_TARGETS, msg, sizeof msg)) == 0) {
        snprintf(x->setup_error, sizeof x->setup_error, "%s", msg);
        return false;
    }
    x->gen = (gck_fuzz_config){x->o->seed, x->o->max_flops, x->o->max_bytes,
                               x->targets, x->ntargets,     false};
    declare_tuples(x);
    return true;
}

/* The cases that run before the stream (first shard only): the edge cases, then the corpus. */
static bool set_prelude(run_ctx *x) {
    size_t cap = 64;
    x->prelude = malloc(cap * sizeof *x->prelude);
    x->nprelude = 0;
    if (!x->prelude) {
        snprintf(x->setup_error, sizeof x->setup_error, "out of memory for the edge cases");
        return false;
    }
    if (x->o->shard_index == 1) {
        x->nprelude = gck_fuzz_edge_cases(&x->gen, x->prelude, cap);
        if (x->o->corpus_dir) load_corpus(x, &x->prelude, &x->nprelude, &cap);
    }
    return true;
}

/* Workers (re)started and idle ones given a case while the run serves cases; returns how many
 * are busy, and in *owed how many owe a case a re-run. */
static int fill_slots(run_ctx *x, slot *slots, int jobs, double now, bool in_time, bool accepting,
                      int *owed) {
    int busy = 0;
    *owed = 0;
    for (int j = 0; j < jobs; j++) {
        slot *s = &slots[j];
        /* a case already dispatched that must run again in a fresh worker (a missed deadline,
         * a worker that did not take it) is owed while time remains, even once --cases new
         * cases have been handed out */
        bool owes = in_time && (s->retry_pending || s->resend);
        /* --cases counts cases handed out, so it is looked at again for every slot: two idle
         * workers served in one pass once ran one case over the count */
        bool fresh = accepting && (x->o->max_cases <= 0 || x->dispatched < x->o->max_cases);
        bool serve = fresh || owes;
        double ready_by = open_by(now, x->end + 3.0);
        if (!s->alive && serve && !spawn(x, s, ready_by)) {
            fprintf(stderr, "\ngemmcheck fuzz: %s\n", x->setup_error);
            continue;
        }
        if (s->alive && !s->busy && serve) dispatch(x, s);
        if (s->busy) busy++;
        if (in_time && (s->retry_pending || s->resend)) (*owed)++;
    }
    return busy;
}

/* Wait for the busy workers' messages or deaths (at most 0.2 s, or until the nearest deadline),
 * serve what arrived, and act on deadlines missed. Returns false on a poll failure. */
static bool wait_and_service(run_ctx *x, slot *slots, int jobs, double now) {
    struct pollfd pfd[2 * MAX_JOBS];
    int idx[2 * MAX_JOBS];
    nfds_t np = 0;
    double wake = now + 0.2;
    for (int j = 0; j < jobs; j++)
        if (slots[j].busy) {
            pfd[np] = (struct pollfd){.fd = slots[j].w.from, .events = POLLIN};
            idx[np++] = j;
            pfd[np] = (struct pollfd){.fd = slots[j].w.pidfd, .events = POLLIN};
            idx[np++] = j;
            if (slots[j].watch.deadline < wake) wake = slots[j].watch.deadline;
        }
    int ms = (int)((wake - now) * 1000);
    int pr = poll(pfd, np, ms < 0 ? 0 : ms);
    if (pr < 0 && errno != EINTR) return false;
    for (nfds_t p = 0; pr > 0 && p < np; p++)
        if (pfd[p].revents) service(x, &slots[idx[p]], false);
    now = gck_wire_now();
    for (int j = 0; j < jobs; j++) /* a message that arrived in time is read first: no miss */
        if (slots[j].busy && now > slots[j].watch.deadline) service(x, &slots[j], true);
    return true;
}

/* Run the campaign on one backend until its time is up. Returns false on a set-up error. */
static bool run_backend(run_ctx *x) {
    int jobs = x->o->jobs;
    slot slots[MAX_JOBS];
    memset(slots, 0, sizeof slots);
    x->result = malloc(sizeof *x->result);
    if (!x->result) {
        snprintf(x->setup_error, sizeof x->setup_error, "out of memory");
        return false;
    }
    if (!start_workers(x, slots, jobs)) {
        free(x->result);
        return false;
    }
    if (!set_targets(x) || !set_prelude(x)) {
        kill_all(slots, jobs);
        free(x->result);
        return false;
    }
    x->next_prelude = 0;
    x->next_index = 0;
    x->dispatched = 0;
    double last_progress = 0, last_log = gck_wire_now();
    for (;;) {
        double now = gck_wire_now();
        bool in_time = !stop_requested && now < x->end;
        bool accepting = in_time && (x->o->max_cases <= 0 || x->dispatched < x->o->max_cases);
        int owed, busy = fill_slots(x, slots, jobs, now, in_time, accepting, &owed);
        if (busy == 0 && owed == 0 && !accepting) break;
        if (!accepting && (stop_requested || now > x->end + 3.0)) {
            /* in-flight cases past the grace period (or on a stop) are abandoned, not counted */
            kill_all(slots, jobs);
            break;
        }
        if (!wait_and_service(x, slots, jobs, now)) break;
        now = gck_wire_now();
        if (now - last_progress > 0.5) {
            progress(x, false, false);
            last_progress = now;
        }
        if (x->o->log_every > 0 && now - last_log >= x->o->log_every) {
            progress(x, false, true);
            last_log = now;
        }
    }
    progress(x, true, false);
    kill_all(slots, jobs);
    free(x->prelude);
    x->prelude = NULL;
    free(x->result);
    x->result = NULL;
    return true;
}

static void install_stop_handlers(void) {
    stop_requested = stop_signal = 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    gck_worker_stop_flag(&stop_requested); /* a stop ends every wait, a hanging init's too */
}

/* How long a backend may take to open while the backends are probed: until the whole
 * campaign's end at most. */
static double open_deadline(const gck_campaign_options *o, double t0) {
    return open_by(gck_wire_now(), t0 + o->time_limit + 3.0);
}

/* Which backends can run here: a worker's handshake says (the supervisor itself never opens a
 * backend); why[b] holds the reason of one that cannot. A backend the user named that cannot
 * run ends the campaign before the others run (GCK_EXIT_USAGE). */
static int probe_backends(const gck_campaign_options *o, run_ctx *x, double t0, bool *usable,
                          char (*why)[1024], int *nusable) {
    *nusable = 0;
    for (int b = 0; b < o->nbackends && !stop_requested; b++) {
        memset(x, 0, sizeof *x);
        x->o = o;
        x->backend = o->backends[b];
        gck_backend_info probe_info;
        x->info = &probe_info;
        slot s = {0};
        usable[b] = spawn(x, &s, open_deadline(o, t0));
        if (usable[b]) gck_worker_kill(&s.w);
        if (stop_requested) break; /* interrupted, not a set-up error: finish says so */
        snprintf(why[b], sizeof why[b], "%s", x->setup_error);
        *nusable += usable[b];
        if (!usable[b] && o->backends_explicit && !o->skip_unavailable) {
            fprintf(stderr, "gemmcheck fuzz: %s\n", why[b]);
            return GCK_EXIT_USAGE;
        }
    }
    return GCK_EXIT_OK;
}

/* A backend skipped for `why`: noted in the report; an error if the user named it. */
static int skip_backend(const gck_campaign_options *o, gck_backend_info *bi, const char *spec,
                        const char *why) {
    snprintf(bi->spec, sizeof bi->spec, "%s", spec);
    bi->ran = false;
    /* the report keeps the reason's first 479 bytes (stderr has all of it) */
    size_t n = strnlen(why, sizeof bi->skipped_why - 1);
    memcpy(bi->skipped_why, why, n);
    bi->skipped_why[n] = '\0';
    if (o->backends_explicit && !o->skip_unavailable) {
        fprintf(stderr, "gemmcheck fuzz: %s\n", why);
        return GCK_EXIT_USAGE;
    }
    fprintf(stderr, "gemmcheck fuzz: skipping %s: %s\n", spec, why);
    return GCK_EXIT_OK;
}

/* The usable backends one after the other, the remaining time shared equally between those
 * still to run. *ran counts those that ran. */
static int run_backends(const gck_campaign_options *o, run_ctx *x, gck_campaign_result *res,
                        FILE *jsonl, double t0, const bool *usable, char (*why)[1024], int nusable,
                        int *ran) {
    for (int b = 0, done = 0; b < o->nbackends && !stop_requested; b++) {
        if (!usable[b]) {
            if (skip_backend(o, &res->backends[res->nbackends++], o->backends[b], why[b]))
                return GCK_EXIT_USAGE;
            continue;
        }
        memset(x, 0, sizeof *x);
        x->o = o;
        x->res = res;
        x->backend = o->backends[b];
        x->info = &res->backends[res->nbackends++];
        snprintf(x->info->spec, sizeof x->info->spec, "%s", o->backends[b]);
        x->t0 = t0;
        double now = gck_wire_now();
        x->began = now;
        /* the time left, shared among the backends left, but never less than an even share:
         * a backend whose last case overran its end (by up to the 3 s grace) would otherwise
         * leave the next one nothing (--time 4, two backends: 0 cases for the second) */
        double share = (t0 + o->time_limit - now) / (nusable - done++);
        if (share < o->time_limit / nusable) share = o->time_limit / nusable;
        x->end = now + share;
        x->jsonl = jsonl;
        if (!run_backend(x)) {
            if (skip_backend(o, x->info, x->backend, x->setup_error)) return GCK_EXIT_USAGE;
            continue;
        }
        (*ran)++;
        x->info->ran = true;
        x->info->seconds = gck_wire_now() - now;
    }
    return GCK_EXIT_OK;
}

/* The files the campaign wrote, named at the end of its summary. */
static void print_files(const gck_campaign_options *o, const gck_campaign_result *res) {
    const struct {
        const char *what, *path;
    } f[] = {{"report", o->report_path},
             {"JUnit", o->junit_path},
             {"HTML", o->html_path},
             {"matrix CSV", o->matrix_csv_path},
             {"backends CSV", o->backends_csv_path},
             {"findings (JSON Lines)", res->nbackends ? o->jsonl_path : NULL}};
    const char *sep = "files written: ";
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (f[i].path) {
            printf("%s%s %s", sep, f[i].what, f[i].path);
            sep = ", ";
        }
    if (sep[0] == ',') putchar('\n');
}

/* The end of a campaign: an interruption noted, the reports written, the summary printed; the
 * exit status (a campaign that ran nothing is not a pass). */
static int finish(const gck_campaign_options *o, gck_campaign_result *res, int rc, int ran,
                  double started) {
    if (stop_signal) {
        snprintf(res->interrupted, sizeof res->interrupted, "%s",
                 stop_signal == SIGINT    ? "SIGINT"
                 : stop_signal == SIGTERM ? "SIGTERM"
                                          : "signal");
        fprintf(stderr, "gemmcheck fuzz: interrupted by %s after %lld cases\n", res->interrupted,
                (long long)res->cases);
    } else if (rc == GCK_EXIT_OK && ran == 0) {
        fprintf(stderr, "gemmcheck fuzz: no backend could run\n");
        rc = GCK_EXIT_USAGE;
    } else if (rc == GCK_EXIT_OK && res->cases == 0) {
        fprintf(stderr,
                "gemmcheck fuzz: no case ran in %.1f s: nothing was checked (give more --time)\n",
                res->seconds);
        rc = GCK_EXIT_USAGE;
    }
    /* known findings marked before anything is written (an overread entry re-runs crashes) */
    if (o->known && !gck_known_apply(o->known, res)) {
        fprintf(stderr, "gemmcheck fuzz: out of memory marking known findings\n");
        rc = GCK_EXIT_INTERNAL;
    }
    /* the machine, for the reports (describing it opens the CUDA runtime if there is one) */
    bool reports = o->report_path || o->junit_path || o->matrix_csv_path || o->backends_csv_path ||
                   o->html_path;
    if (reports && !gck_result_capture_environment(res, started))
        fprintf(stderr, "gemmcheck fuzz: out of memory describing the machine\n");
    char msg[512];
    bool written = true;
    if (o->report_path &&
        !gck_report_write_json(res, o->report_path, o->command_line, msg, sizeof msg)) {
        fprintf(stderr, "gemmcheck fuzz: %s\n", msg);
        rc = rc ? rc : GCK_EXIT_USAGE;
        written = false;
    }
    if ((o->junit_path && !gck_report_write_junit(res, o->junit_path, msg, sizeof msg)) ||
        (o->html_path &&
         !gck_report_write_html(res, o->html_path, o->command_line, msg, sizeof msg)) ||
        (o->matrix_csv_path &&
         !gck_report_write_matrix_csv(res, o->matrix_csv_path, msg, sizeof msg)) ||
        (o->backends_csv_path &&
         !gck_report_write_backends_csv(res, o->backends_csv_path, msg, sizeof msg))) {
        fprintf(stderr, "gemmcheck fuzz: %s\n", msg);
        rc = rc ? rc : GCK_EXIT_USAGE;
        written = false;
    }
    gck_report_print_summary(res, stdout);
    if (written) print_files(o, res); /* (a failed write was named above) */
    gck_report_print_verdict(res, stdout);
    if (rc == GCK_EXIT_OK)
        rc = res->internal_errors                   ? GCK_EXIT_INTERNAL
             : gck_result_unknown_findings(res) > 0 ? GCK_EXIT_FINDINGS
                                                    : GCK_EXIT_OK;
    /* an interrupted run is never a pass, nor a plain "findings": 128 + the signal, as a shell
     * reports a command the signal ended (130 for SIGINT, 143 for SIGTERM), its reports written */
    if (stop_signal && rc != GCK_EXIT_INTERNAL) rc = 128 + stop_signal;
    return rc;
}

int gck_campaign_run(const gck_campaign_options *o) {
    gck_campaign_result res;
    memset(&res, 0, sizeof res);
    res.seed = o->seed;
    res.shard_index = o->shard_index;
    res.shard_count = o->shard_count;
    res.shards_merged = 1;
    install_stop_handlers();
    FILE *jsonl = NULL;
    double t0 = gck_wire_now(), started = (double)time(NULL);
    run_ctx *x = calloc(1, sizeof *x);
    if (!x) return GCK_EXIT_INTERNAL;
    bool usable[GCK_MAX_BACKENDS];
    char why[GCK_MAX_BACKENDS][1024];
    int nusable, ran = 0;
    int rc = probe_backends(o, x, t0, usable, why, &nusable);
    /* the findings file is created once the campaign can start: a usage error leaves none */
    if (rc == GCK_EXIT_OK && o->jsonl_path) {
        char msg[600];
        jsonl = open_findings_file(o->jsonl_path, msg, sizeof msg);
        if (!jsonl) {
            fprintf(stderr, "gemmcheck fuzz: %s\n", msg);
            free(x);
            return GCK_EXIT_USAGE;
        }
    }
    if (rc == GCK_EXIT_OK) rc = run_backends(o, x, &res, jsonl, t0, usable, why, nusable, &ran);
    free(x);
    if (jsonl) fclose(jsonl);
    if (rc != GCK_EXIT_OK && ran == 0 && res.nbackends == 0) {
        gck_result_free(&res);
        return rc; /* a named backend cannot run: nothing was started, no report */
    }
    res.seconds = gck_wire_now() - t0;
    rc = finish(o, &res, rc, ran, started);
    gck_result_free(&res);
    return rc;
}
