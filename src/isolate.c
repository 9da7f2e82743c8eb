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

enum { MSG_SETUP = 1, MSG_CALLING, MSG_CALLED, MSG_RESULT, MSG_INTERNAL };

typedef struct wire_msg {
    int tag;
    char text[1024];
} wire_msg;

static int wire_fd = -1;

static void send_msg(int tag, const char *text) {
    wire_msg m = {.tag = tag};
    snprintf(m.text, sizeof m.text, "%s", text ? text : "");
    ssize_t w = write(wire_fd, &m, sizeof m);
    (void)w;
}

static void on_calling(void *ctx) {
    (void)ctx;
    send_msg(MSG_CALLING, NULL);
}

static void on_called(void *ctx) {
    (void)ctx;
    send_msg(MSG_CALLED, NULL);
}

static void child_main(const char *backend, const gck_spec *s, const gck_run_options *base) {
    /* A fault in the backend must kill the worker by its signal, whatever handlers the parent
     * (a test framework, a sanitizer runtime) installed. */
    static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++) signal(fatal[i], SIG_DFL);
    char msg[1024];
    gck_backend be;
    if (gck_backend_open(&be, backend, msg, sizeof msg) != GCK_OK) {
        send_msg(MSG_SETUP, msg);
        _exit(0);
    }
    char why[512];
    if (!be.ops->available(be.state, why, sizeof why)) {
        snprintf(msg, sizeof msg, "backend %s is %s%s", backend,
                 strncmp(why, "unavailable", 11) == 0 ? "" : "unavailable: ", why);
        send_msg(MSG_SETUP, msg);
        _exit(0);
    }
    gck_run_options o = *base;
    o.before_call = on_calling;
    o.after_call = on_called;
    gck_run_result *r = malloc(sizeof *r);
    if (!r) {
        send_msg(MSG_SETUP, "out of memory");
        _exit(0);
    }
    gck_status st = gck_run_spec(&be, s, &o, r, msg, sizeof msg);
    if (st != GCK_OK) {
        send_msg(st == GCK_EINTERNAL ? MSG_INTERNAL : MSG_SETUP, msg);
        _exit(0);
    }
    char version[256];
    be.ops->version(be.state, version, sizeof version);
    send_msg(MSG_RESULT, version);
    ssize_t w = write(wire_fd, r, sizeof *r);
    (void)w;
    _exit(0);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Read exactly n bytes before `deadline` (<= 0: none): 1 done, 0 end of file, -1 timeout. */
static int read_full(int fd, void *buf, size_t n, double deadline) {
    size_t got = 0;
    while (got < n) {
        int wait_ms = -1;
        if (deadline > 0) {
            double left = deadline - now();
            if (left <= 0) return -1;
            wait_ms = (int)(left * 1000) + 1;
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int pr = poll(&p, 1, wait_ms);
        if (pr < 0 && errno == EINTR) continue;
        if (pr == 0) continue; /* re-check the deadline */
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return 0;
        got += (size_t)r;
    }
    return 1;
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
    double deadline = now() + call_timeout + 30.0;
    wire_msg m;
    while (!done) {
        int got = read_full(fds[0], &m, sizeof m, deadline);
        if (got < 0) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            if (in_call) {
                out->status = GCK_ISOLATED_HANG;
                snprintf(out->message, sizeof out->message,
                         "the call did not return within %.1f s; the worker was killed",
                         call_timeout);
            } else {
                out->status = GCK_ISOLATED_SETUP_ERROR;
                snprintf(out->message, sizeof out->message,
                         "backend set-up did not finish within %.0f s", call_timeout + 30.0);
            }
            break;
        }
        if (got == 0) {
            int st = 0;
            waitpid(pid, &st, 0);
            const char *where = in_call  ? "inside the backend call"
                                : called ? "after the backend call returned"
                                         : "while setting up the backend";
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
        case MSG_CALLING:
            in_call = true;
            deadline = now() + call_timeout;
            break;
        case MSG_CALLED:
            in_call = false;
            called = true;
            deadline = 0; /* checking is gemmcheck's own work: no deadline */
            break;
        case MSG_SETUP:
        case MSG_INTERNAL:
            out->status = m.tag == MSG_SETUP ? GCK_ISOLATED_SETUP_ERROR : GCK_ISOLATED_INTERNAL;
            snprintf(out->message, sizeof out->message, "%s", m.text);
            waitpid(pid, NULL, 0);
            done = true;
            break;
        case MSG_RESULT:
            snprintf(out->version, sizeof out->version, "%.255s", m.text);
            if (read_full(fds[0], &out->run, sizeof out->run, 0) != 1) {
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
