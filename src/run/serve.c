/* Worker processes, the worker's side (worker.h): open the backend, announce it (READY and its
 * support rows), then serve the cases its supervisor sends, one at a time, sending CALLING and
 * CALLED around every backend call and the checked result; strays the backend leaves are
 * reaped, and a lifeline thread ends the worker when its supervisor goes. In task mode: run the
 * one task the supervisor names (task.h), its output sent in frames. */
#define _GNU_SOURCE 1
#include "worker.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backends.h"
#include "exitcode.h"
#include "fpenv.h"
#include "gemmcheck/kernels.h"
#include "gemmcheck/runner.h"
#include "task.h"
#include "text.h"

static uint32_t out_seq; /* frames this worker has sent */

static void send_text(int tag, const char *text) {
    char clean[GCK_WIRE_TEXT_MAX];
    gck_text_clean(clean, sizeof clean, text, strlen(text));
    gck_wire_send_text(GCK_WORKER_OUT_FD, &out_seq, tag, clean);
}

/* READY: "<oracle>\t<version>\t<availability note>", each part cleaned (no tabs left). */
static void send_ready(gck_oracle_kind oracle, const char *version, const char *note) {
    char v[512], n[300], text[GCK_WIRE_TEXT_MAX];
    gck_text_clean(v, sizeof v, version, strlen(version));
    gck_text_clean(n, sizeof n, note, strlen(note));
    snprintf(text, sizeof text, "%s\t%s\t%s", gck_oracle_kind_name(oracle), v, n);
    gck_wire_send_text(GCK_WORKER_OUT_FD, &out_seq, GCK_WIRE_READY, text);
}

static void on_calling(void *ctx, const gck_call_info *call) {
    (void)ctx;
    gck_wire_send_call(GCK_WORKER_OUT_FD, &out_seq, GCK_WIRE_CALLING, call);
}

static void on_called(void *ctx, const gck_call_info *call) {
    (void)ctx;
    gck_wire_send_call(GCK_WORKER_OUT_FD, &out_seq, GCK_WIRE_CALLED, call);
}

#define MAX_KIDS 256

/* The worker's live children: /proc/self/task/T/children of every thread T. */
static size_t list_children(pid_t *kids, size_t max) {
    size_t n = 0;
    DIR *d = opendir("/proc/self/task");
    if (!d) return 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        if (e->d_name[0] == '.') continue;
        char path[300];
        snprintf(path, sizeof path, "/proc/self/task/%s/children", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        long p;
        while (n < max && fscanf(f, "%ld", &p) == 1) kids[n++] = (pid_t)p;
        fclose(f);
    }
    closedir(d);
    return n;
}

static bool listed(const pid_t *set, size_t n, pid_t p) {
    for (size_t i = 0; i < n; i++)
        if (set[i] == p) return true;
    return false;
}

/* Kill the processes a backend left behind during a case (children started after the backend
 * was opened, and their orphans, which come back to the worker as subreaper); reap the dead. */
static void reap_strays(const pid_t *keep, size_t nkeep) {
    for (int round = 0; round < 64; round++) {
        while (waitpid(-1, NULL, WNOHANG) > 0) {
        }
        pid_t kids[MAX_KIDS];
        size_t n = list_children(kids, MAX_KIDS), killed = 0;
        for (size_t i = 0; i < n; i++)
            if (!listed(keep, nkeep, kids[i])) {
                kill(kids[i], SIGKILL);
                waitpid(kids[i], NULL, 0);
                killed++;
            }
        if (killed == 0) return;
    }
}

/* The worker cannot serve: the reason to the supervisor, the FP environment as it was. */
static int refuse(const gck_fpenv *env, int tag, const char *text) {
    gck_fpenv_restore(env, NULL, 0);
    send_text(tag, text);
    return GCK_EXIT_USAGE;
}

/* The supervisor's lifeline: a thread that kills the worker's process group (the worker and
 * what its backend started in it) as soon as the worker's parent is no longer the supervisor
 * that started it. The parent-death signal does the same at once, but a backend can clear it
 * (prctl(PR_SET_PDEATHSIG, 0)) or ignore SIGTERM; short of killing the process it cannot stop
 * this thread. It looks every 50 ms, and at once when the request pipe hangs up (a copy of its
 * read end, placed high among the descriptors; a backend that closes it only costs the early
 * wake-up). docs/ISOLATION.md states the limits. */
static pid_t lifeline_parent;
static int lifeline_fd = -1;

static void *lifeline(void *arg) {
    (void)arg;
    for (;;) {
        struct pollfd p = {.fd = lifeline_fd, .events = 0};
        if (lifeline_fd < 0 || poll(&p, 1, 50) < 0 || (p.revents & (POLLNVAL | POLLHUP))) {
            lifeline_fd = -1; /* hung up (the parent is checked below) or gone: poll no more */
            nanosleep(&(struct timespec){.tv_nsec = 50 * 1000 * 1000}, NULL);
        }
        if (getppid() != lifeline_parent) {
            kill(0, SIGKILL); /* the whole process group, this process included */
            _exit(GCK_EXIT_USAGE);
        }
    }
    return NULL;
}

static void start_lifeline(void) {
    lifeline_parent = getppid();
    lifeline_fd = fcntl(GCK_WORKER_IN_FD, F_DUPFD_CLOEXEC, 900);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* signals stay the main thread's */
    pthread_t t;
    if (pthread_create(&t, NULL, lifeline, NULL) == 0) pthread_detach(t);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* What every worker does first: the lifeline, no death by a closed pipe, strays its own. */
static void worker_start(void) {
    start_lifeline();
    signal(SIGPIPE, SIG_IGN);
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    /* The worker's AMX tile state is settled before any of the backend's code runs, in case
     * and task mode alike, asked for only where gemmcheck's own kernels may
     * (gck_kernels_amx_default, GEMMCHECK_AMX). The probes are not run here: each runs when
     * first needed (a forked worker inherits its supervisor's results; their cost at every
     * worker's start: docs/KERNELS.md). */
    gck_kernels_amx_settle();
}

/* ---- task mode ------------------------------------------------------------------------------ */

#define MAX_TASKS 16

static struct {
    char name[64];
    gck_task_fn fn;
} tasks[MAX_TASKS];
static int ntasks;

bool gck_task_register(const char *name, gck_task_fn fn) {
    for (int i = 0; i < ntasks; i++)
        if (!strcmp(tasks[i].name, name)) return tasks[i].fn = fn, true;
    if (ntasks == MAX_TASKS || strlen(name) >= sizeof tasks[0].name) return false;
    snprintf(tasks[ntasks].name, sizeof tasks[0].name, "%s", name);
    tasks[ntasks++].fn = fn;
    return true;
}

gck_task_fn gck_task_find(const char *name) {
    for (int i = 0; i < ntasks; i++)
        if (!strcmp(tasks[i].name, name)) return tasks[i].fn;
    return NULL;
}

struct gck_task_sink {
    bool broken; /* a frame could not be sent: the supervisor is gone or the pipe is closed */
};

bool gck_task_emit(gck_task_sink *out, const void *data, size_t len) {
    const unsigned char *p = data;
    while (!out->broken && len > 0) {
        size_t n = len < GCK_WIRE_CHUNK_MAX ? len : GCK_WIRE_CHUNK_MAX;
        out->broken = !gck_wire_send(GCK_WORKER_OUT_FD, &out_seq, GCK_WIRE_TASK_OUT, p, n);
        p += n;
        len -= n;
    }
    return !out->broken;
}

int gck_worker_serve_task(const char *backend) {
    worker_start();
    gck_wire_task *t = calloc(1, sizeof *t);
    if (!t) return GCK_EXIT_INTERNAL;
    uint32_t in_seq = 0;
    int tag;
    size_t len;
    int got = gck_wire_read_frame(GCK_WORKER_IN_FD, &in_seq, &tag, t, sizeof *t, &len);
    if (got <= 0 || tag != GCK_WIRE_TASK) {
        free(t);
        return GCK_EXIT_USAGE; /* no task, or not the supervisor's: nothing to guess */
    }
    t->name[sizeof t->name - 1] = t->arg[sizeof t->arg - 1] = '\0';
    gck_task_fn fn = gck_task_find(t->name);
    char why[GCK_WIRE_TEXT_MAX] = "";
    gck_task_sink out = {false};
    if (!fn)
        snprintf(why, sizeof why, "no task named '%s' in this gemmcheck", t->name);
    else if (!fn(backend, t->arg, &out, why, sizeof why) && !why[0])
        snprintf(why, sizeof why, "the task '%s' failed", t->name);
    free(t);
    send_text(GCK_WIRE_TASK_END, why);
    return why[0] ? GCK_EXIT_USAGE : GCK_EXIT_OK;
}

/* ---- case mode ------------------------------------------------------------------------------ */

int gck_worker_serve(const char *backend, bool strict, gck_oracle_kind oracle) {
    worker_start();
    char msg[1024];
    gck_backend be;
    gck_fpenv env;
    gck_fpenv_save(&env); /* opening may leave the environment changed: gemmcheck's is kept */
    gck_status st = gck_backend_open(&be, backend, msg, sizeof msg);
    if (st != GCK_OK) return refuse(&env, GCK_WIRE_SETUP, msg);
    char why[512] = "", version[512] = "";
    bool ok = be.ops->available(be.state, why, sizeof why);
    why[sizeof why - 1] = '\0';
    if (!ok) { /* (no version asked: the CUDA backends would load cuBLAS only to discard it) */
        snprintf(msg, sizeof msg, "backend %s is %s%s", backend,
                 strncmp(why, "unavailable", 11) == 0 ? "" : "unavailable: ", why);
        return refuse(&env, GCK_WIRE_UNAVAILABLE, msg);
    }
    be.ops->version(be.state, version, sizeof version);
    version[sizeof version - 1] = '\0';
    const gck_support_row *rows;
    size_t n = be.ops->table(be.state, &rows);
    gck_fpenv_restore(&env, NULL, 0);
    send_ready(oracle, version, why);
    snprintf(msg, sizeof msg, "%zu", n);
    send_text(GCK_WIRE_TABLE, msg);
    for (size_t r = 0; r < n; r++) {
        gck_wire_row wr = {.row = rows[r]};
        gck_text_clean(wr.entry, sizeof wr.entry, rows[r].entry ? rows[r].entry : "",
                       sizeof wr.entry);
        wr.row.entry = NULL;
        gck_wire_send(GCK_WORKER_OUT_FD, &out_seq, GCK_WIRE_ROW, &wr, sizeof wr);
    }
    pid_t keep[MAX_KIDS]; /* processes the backend started while opening: its own business */
    size_t nkeep = list_children(keep, MAX_KIDS);
    gck_run_result *res = malloc(sizeof *res);
    gck_wire_request *req = malloc(sizeof *req);
    if (!res || !req) return GCK_EXIT_INTERNAL;
    uint32_t in_seq = 0;
    int rc = GCK_EXIT_OK;
    for (;;) {
        int tag;
        size_t len;
        int got = gck_wire_read_frame(GCK_WORKER_IN_FD, &in_seq, &tag, req, sizeof *req, &len);
        if (got == 0) break; /* the supervisor is done */
        if (got < 0 || tag != GCK_WIRE_REQUEST) {
            rc = GCK_EXIT_USAGE; /* not the supervisor's request: stop rather than guess */
            break;
        }
        req->repro[sizeof req->repro - 1] = req->dump_dir[sizeof req->dump_dir - 1] = '\0';
        gck_spec s;
        if (gck_spec_parse(req->repro, &s, msg, sizeof msg) != GCK_OK) {
            send_text(GCK_WIRE_INTERNAL, msg);
            continue;
        }
        gck_run_options o = {
            .check = {.strict_ieee = strict, .threads = req->threads, .oracle = oracle},
            .determinism = req->determinism != 0,
            .concurrency = req->concurrency,
            .no_guard_page = req->no_guard_page != 0,
            .dump_dir = req->dump_dir[0] ? req->dump_dir : NULL,
            .repeat = req->repeat,
            .before_call = on_calling,
            .after_call = on_called};
        st = gck_run_spec(&be, &s, &o, res, msg, sizeof msg);
        if (st == GCK_OK)
            gck_wire_send(GCK_WORKER_OUT_FD, &out_seq, GCK_WIRE_RESULT, res, sizeof *res);
        else
            send_text(st == GCK_EINTERNAL ? GCK_WIRE_INTERNAL : GCK_WIRE_SETUP, msg);
        reap_strays(keep, nkeep);
    }
    free(res);
    free(req);
    gck_backend_close(&be);
    return rc;
}

int gck_worker_main(int argc, char **argv) {
    const char *backend = NULL;
    bool strict = false, task = false;
    gck_oracle_kind oracle = GCK_ORACLE_EXACT;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--backend") && i + 1 < argc)
            backend = argv[++i];
        else if (!strcmp(argv[i], "--strict-ieee"))
            strict = true;
        else if (!strcmp(argv[i], "--task"))
            task = true;
        else if (!strcmp(argv[i], "--parent") && i + 1 < argc) {
            /* die with the supervisor; if it is already gone, do not start */
            long parent = strtol(argv[++i], NULL, 10);
            prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
            if (getppid() != (pid_t)parent) return GCK_EXIT_USAGE;
        } else if (!strcmp(argv[i], "--setup-error") && i + 1 < argc) {
            send_text(GCK_WIRE_SETUP, argv[++i]);
            return GCK_EXIT_USAGE;
        } else if (!strcmp(argv[i], "--oracle") && i + 1 < argc &&
                   !gck_oracle_kind_parse(argv[++i], &oracle)) {
            send_text(GCK_WIRE_SETUP, "unknown --oracle for the worker");
            return GCK_EXIT_USAGE;
        }
    }
    if (!backend) {
        send_text(GCK_WIRE_SETUP, "no --backend for the worker");
        return GCK_EXIT_USAGE;
    }
    return task ? gck_worker_serve_task(backend) : gck_worker_serve(backend, strict, oracle);
}
