/* Fuzz workers: the process side and the supervisor's spawning of it. */
#define _DEFAULT_SOURCE 1
#include "worker.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gemmcheck/runner.h"
#include "wire.h"

static void on_calling(void *ctx, const gck_call_info *call) {
    (void)ctx;
    gck_wire_send_call(GCK_WORKER_OUT_FD, GCK_WIRE_CALLING, call);
}

static void on_called(void *ctx, const gck_call_info *call) {
    (void)ctx;
    gck_wire_send_call(GCK_WORKER_OUT_FD, GCK_WIRE_CALLED, call);
}

int gck_worker_main(int argc, char **argv) {
    const char *backend = NULL;
    bool strict = false;
    gck_oracle_kind oracle = GCK_ORACLE_EXACT;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--backend") && i + 1 < argc)
            backend = argv[++i];
        else if (!strcmp(argv[i], "--strict-ieee"))
            strict = true;
        else if (!strcmp(argv[i], "--oracle") && i + 1 < argc &&
                 !gck_oracle_kind_parse(argv[++i], &oracle)) {
            gck_wire_send(GCK_WORKER_OUT_FD, GCK_WIRE_SETUP, "unknown --oracle for the worker");
            return 2;
        }
    }
    signal(SIGPIPE, SIG_IGN);
    char msg[1024];
    gck_backend be;
    if (!backend || gck_backend_open(&be, backend, msg, sizeof msg) != GCK_OK) {
        gck_wire_send(GCK_WORKER_OUT_FD, GCK_WIRE_SETUP, backend ? msg : "no --backend");
        return 2;
    }
    char why[512];
    if (!be.ops->available(be.state, why, sizeof why)) {
        snprintf(msg, sizeof msg, "backend %s is %s%s", backend,
                 strncmp(why, "unavailable", 11) == 0 ? "" : "unavailable: ", why);
        gck_wire_send(GCK_WORKER_OUT_FD, GCK_WIRE_SETUP, msg);
        return 2;
    }
    /* READY carries the oracle this worker checks with, then the backend's version */
    char version[256], ready[300];
    be.ops->version(be.state, version, sizeof version);
    snprintf(ready, sizeof ready, "%s %s", gck_oracle_kind_name(oracle), version);
    gck_wire_send(GCK_WORKER_OUT_FD, GCK_WIRE_READY, ready);
    const gck_support_row *rows;
    size_t n = be.ops->table(be.state, &rows);
    char count[32];
    snprintf(count, sizeof count, "%zu", n);
    gck_wire_send(GCK_WORKER_OUT_FD, GCK_WIRE_TABLE, count);
    for (size_t r = 0; r < n; r++) {
        gck_wire_row wr = {.row = rows[r]};
        snprintf(wr.entry, sizeof wr.entry, "%s", rows[r].entry ? rows[r].entry : "");
        wr.row.entry = NULL;
        gck_wire_write(GCK_WORKER_OUT_FD, &wr, sizeof wr);
    }
    gck_run_result *res = malloc(sizeof *res);
    gck_fuzz_request *req = malloc(sizeof *req);
    if (!res || !req) return 3;
    for (;;) {
        if (gck_wire_read(GCK_WORKER_IN_FD, req, sizeof *req, 0) != 1) break; /* supervisor gone */
        gck_spec s;
        if (gck_spec_parse(req->repro, &s, msg, sizeof msg) != GCK_OK) {
            gck_wire_send(GCK_WORKER_OUT_FD, GCK_WIRE_INTERNAL, msg);
            continue;
        }
        gck_run_options o = {.check = {.strict_ieee = strict, .threads = 1, .oracle = oracle},
                             .determinism = req->determinism != 0,
                             .concurrency = req->concurrency,
                             .before_call = on_calling,
                             .after_call = on_called};
        gck_status st = gck_run_spec(&be, &s, &o, res, msg, sizeof msg);
        if (st != GCK_OK) {
            gck_wire_send(GCK_WORKER_OUT_FD, GCK_WIRE_INTERNAL, msg);
            continue;
        }
        gck_wire_send(GCK_WORKER_OUT_FD, GCK_WIRE_RESULT, version);
        gck_wire_write(GCK_WORKER_OUT_FD, res, sizeof *res);
    }
    free(res);
    free(req);
    gck_backend_close(&be);
    return 0;
}

bool gck_worker_spawn(gck_worker *w, const char *exe, const char *backend, bool strict,
                      const char *oracle) {
    int req[2], out[2];
    if (pipe(req) != 0) return false;
    if (pipe(out) != 0) {
        close(req[0]);
        close(req[1]);
        return false;
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(req[0]);
        close(req[1]);
        close(out[0]);
        close(out[1]);
        return false;
    }
    if (pid == 0) {
        /* the child: requests on fd 3, messages on fd 4, stdout to /dev/null (libraries that
         * print must not disturb the supervisor's output), stderr kept */
        int r = fcntl(req[0], F_DUPFD, 10), o = fcntl(out[1], F_DUPFD, 10); /* above 4 */
        dup2(r, GCK_WORKER_IN_FD);
        dup2(o, GCK_WORKER_OUT_FD);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) dup2(devnull, STDOUT_FILENO);
        for (int fd = 5; fd < 1024; fd++) close(fd);
        signal(SIGINT, SIG_IGN); /* the supervisor decides when a campaign ends */
        execl(exe, exe, "__worker", "--backend", backend, "--oracle", oracle ? oracle : "exact",
              strict ? "--strict-ieee" : NULL, (char *)NULL);
        _exit(127);
    }
    close(req[0]);
    close(out[1]);
    fcntl(req[1], F_SETFD, FD_CLOEXEC);
    fcntl(out[0], F_SETFD, FD_CLOEXEC);
    w->pid = pid;
    w->to = req[1];
    w->from = out[0];
    return true;
}

void gck_worker_kill(gck_worker *w) {
    if (w->pid > 0) {
        kill(w->pid, SIGKILL);
        waitpid(w->pid, NULL, 0);
    }
    if (w->to >= 0) close(w->to);
    if (w->from >= 0) close(w->from);
    w->pid = -1;
    w->to = w->from = -1;
}
