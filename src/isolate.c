/* Running a spec in a forked child: the child opens the backend, runs the case and sends the
 * result over a pipe; the parent watches for death and for calls that do not return. Only the
 * child ever initialises the backend (a CUDA context does not survive fork). */
#define _DEFAULT_SOURCE 1
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gemmcheck/runner.h"
#include "wire.h"

static int wire_fd = -1;

static void on_calling(void *ctx, const gck_call_info *call) {
    (void)ctx;
    gck_wire_send_call(wire_fd, GCK_WIRE_CALLING, call);
}

static void on_called(void *ctx, const gck_call_info *call) {
    (void)ctx;
    gck_wire_send_call(wire_fd, GCK_WIRE_CALLED, call);
}

/* Until the first call: opening the backend and preparing the operands (gemmcheck's own work
 * and the library's start-up, never counted against a call). */
#define SETUP_SECONDS 120.0

static void child_main(const char *backend, const gck_spec *s, const gck_run_options *base) {
    /* A fault in the backend must kill the worker by its signal, whatever handlers the parent
     * (a test framework, a sanitizer runtime) installed. */
    static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++) signal(fatal[i], SIG_DFL);
    char msg[1024];
    gck_backend be;
    if (gck_backend_open(&be, backend, msg, sizeof msg) != GCK_OK) {
        gck_wire_send(wire_fd, GCK_WIRE_SETUP, msg);
        _exit(0);
    }
    char why[512];
    if (!be.ops->available(be.state, why, sizeof why)) {
        snprintf(msg, sizeof msg, "backend %s is %s%s", backend,
                 strncmp(why, "unavailable", 11) == 0 ? "" : "unavailable: ", why);
        gck_wire_send(wire_fd, GCK_WIRE_SETUP, msg);
        _exit(0);
    }
    gck_run_options o = *base;
    o.before_call = on_calling;
    o.after_call = on_called;
    gck_run_result *r = malloc(sizeof *r);
    if (!r) {
        gck_wire_send(wire_fd, GCK_WIRE_SETUP, "out of memory");
        _exit(0);
    }
    gck_status st = gck_run_spec(&be, s, &o, r, msg, sizeof msg);
    if (st != GCK_OK) {
        gck_wire_send(wire_fd, st == GCK_EINTERNAL ? GCK_WIRE_INTERNAL : GCK_WIRE_SETUP, msg);
        _exit(0);
    }
    char version[256];
    be.ops->version(be.state, version, sizeof version);
    gck_wire_send(wire_fd, GCK_WIRE_RESULT, version);
    gck_wire_write(wire_fd, r, sizeof *r);
    _exit(0);
}

gck_status gck_run_isolated(const char *backend, const gck_spec *s, const gck_run_options *o,
                            double call_timeout, gck_isolated_result *out) {
    memset(out, 0, sizeof *out);
    int fds[2];
    if (pipe(fds) != 0) {
        snprintf(out->message, sizeof out->message, "pipe: %s", strerror(errno));
        out->status = GCK_ISOLATED_INTERNAL;
        return GCK_EINTERNAL;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        snprintf(out->message, sizeof out->message, "fork: %s", strerror(errno));
        out->status = GCK_ISOLATED_INTERNAL;
        return GCK_EINTERNAL;
    }
    if (pid == 0) {
        close(fds[0]);
        wire_fd = fds[1];
        child_main(backend, s, o);
    }
    close(fds[1]);
    bool in_call = false, called = false, done = false;
    double deadline = gck_wire_now() + SETUP_SECONDS, limit = 0;
    gck_call_info call = {GCK_CALL_FIRST, 1, 0};
    gck_wire_msg m;
    while (!done) {
        int got = gck_wire_read(fds[0], &m, sizeof m, deadline);
        if (got < 0) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            if (in_call) {
                out->status = GCK_ISOLATED_HANG;
                char flags[64];
                gck_wire_hang_detail(&call, limit, out->message, sizeof out->message, flags,
                                     sizeof flags);
            } else {
                out->status = GCK_ISOLATED_SETUP_ERROR;
                snprintf(out->message, sizeof out->message,
                         "backend set-up and operand preparation did not finish within %.0f s",
                         SETUP_SECONDS);
            }
            break;
        }
        if (got == 0) {
            int st = 0;
            waitpid(pid, &st, 0);
            char where[128];
            snprintf(where, sizeof where, "%s%s",
                     in_call  ? "inside the backend's "
                     : called ? "after the backend call returned"
                              : "while setting up the backend",
                     in_call ? gck_call_mode_name(call.mode) : "");
            if (WIFSIGNALED(st))
                snprintf(out->message, sizeof out->message, "the worker died by signal %d (%s) %s",
                         WTERMSIG(st), strsignal(WTERMSIG(st)), where);
            else
                snprintf(out->message, sizeof out->message, "the worker exited with status %d %s",
                         WIFEXITED(st) ? WEXITSTATUS(st) : -1, where);
            out->status = (in_call || !called) ? GCK_ISOLATED_CRASH : GCK_ISOLATED_INTERNAL;
            break;
        }
        switch (m.tag) {
        case GCK_WIRE_CALLING:
            if (!gck_wire_parse_call(&m, &call)) call = (gck_call_info){GCK_CALL_FIRST, 1, 0};
            in_call = true;
            limit = call_timeout > 0 ? call_timeout * call.calls
                                     : gck_call_deadline(&s->c, call.calls, 10.0);
            deadline = gck_wire_now() + limit;
            break;
        case GCK_WIRE_CALLED:
            in_call = false;
            called = true;
            deadline = 0; /* checking is gemmcheck's own work: no deadline */
            break;
        case GCK_WIRE_SETUP:
        case GCK_WIRE_INTERNAL:
            out->status =
                m.tag == GCK_WIRE_SETUP ? GCK_ISOLATED_SETUP_ERROR : GCK_ISOLATED_INTERNAL;
            snprintf(out->message, sizeof out->message, "%s", m.text);
            waitpid(pid, NULL, 0);
            done = true;
            break;
        case GCK_WIRE_RESULT:
            snprintf(out->version, sizeof out->version, "%.255s", m.text);
            if (gck_wire_read(fds[0], &out->run, sizeof out->run, 0) != 1) {
                out->status = GCK_ISOLATED_INTERNAL;
                snprintf(out->message, sizeof out->message, "the worker's result was truncated");
            } else {
                out->status = GCK_ISOLATED_RAN;
            }
            waitpid(pid, NULL, 0);
            done = true;
            break;
        default:
            out->status = GCK_ISOLATED_INTERNAL;
            snprintf(out->message, sizeof out->message, "unknown message %d from the worker",
                     m.tag);
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            done = true;
        }
    }
    close(fds[0]);
    return GCK_OK;
}
