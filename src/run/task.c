/* A function in a child process under a deadline (task.h). */
#define _GNU_SOURCE 1
#include "task.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "wire.h"

static void child(void (*fn)(void *, int), void *arg, int fd, pid_t parent) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (getppid() != parent) _exit(126); /* the parent is already gone */
    fn(arg, fd);
    _exit(0);
}

/* Read what the child writes until it closes its end or the deadline passes; false then. */
static bool collect(int fd, double deadline, gck_task_result *r) {
    size_t cap = 0;
    for (;;) {
        double left = deadline - gck_wire_now();
        if (left <= 0) return false;
        struct pollfd p = {fd, POLLIN, 0};
        int ready = poll(&p, 1, (int)(left * 1000) + 1);
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) continue; /* the deadline is checked above */
        if (r->len + 65537 > cap) {
            char *grown = realloc(r->out, cap = 2 * cap + 65537);
            if (!grown) return true; /* out of memory: what came so far */
            r->out = grown;
        }
        ssize_t n = read(fd, r->out + r->len, cap - r->len - 1);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return true;
        r->len += (size_t)n;
        r->out[r->len] = '\0';
    }
}

/* The child's end, waited for until the deadline (it may hang after closing its descriptor). */
static bool ended(pid_t pid, double deadline, int *st) {
    for (;;) {
        pid_t w = waitpid(pid, st, WNOHANG);
        if (w == pid) return true;
        if (w < 0 && errno != EINTR) return true;
        if (gck_wire_now() >= deadline) return false;
        usleep(2000);
    }
}

gck_task_end gck_run_task(void (*fn)(void *arg, int fd), void *arg, double timeout,
                          gck_task_result *r) {
    memset(r, 0, sizeof *r);
    int fd[2];
    if (pipe(fd) != 0) return r->end = GCK_TASK_NOT_STARTED;
    fflush(NULL);
    pid_t parent = getpid(), pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return r->end = GCK_TASK_NOT_STARTED;
    }
    if (pid == 0) {
        close(fd[0]);
        child(fn, arg, fd[1], parent);
    }
    setpgid(pid, pid); /* also here: no window in which the group kill misses it */
    close(fd[1]);
    double deadline = gck_wire_now() + timeout;
    int st = 0;
    bool in_time = collect(fd[0], deadline, r) && ended(pid, deadline, &st);
    close(fd[0]);
    kill(-pid, SIGKILL); /* at the deadline; and whatever the task left in its group */
    if (!in_time) {
        waitpid(pid, &st, 0);
        r->end = GCK_TASK_HUNG;
    } else if (WIFSIGNALED(st)) {
        r->end = GCK_TASK_CRASHED;
        r->code = WTERMSIG(st);
    } else {
        r->code = WIFEXITED(st) ? WEXITSTATUS(st) : st;
        r->end = r->code == 0 ? GCK_TASK_DONE : GCK_TASK_FAILED;
    }
    return r->end;
}

void gck_task_why(const gck_task_result *r, double timeout, char *buf, size_t len) {
    switch (r->end) {
    case GCK_TASK_DONE: snprintf(buf, len, "finished"); break;
    case GCK_TASK_FAILED: snprintf(buf, len, "exited with status %d", r->code); break;
    case GCK_TASK_CRASHED:
        snprintf(buf, len, "died of signal %d (%s)", r->code, strsignal(r->code));
        break;
    case GCK_TASK_HUNG: snprintf(buf, len, "did not finish within %.0f s (a hang)", timeout); break;
    default: snprintf(buf, len, "could not start a process: %s", strerror(errno));
    }
}
