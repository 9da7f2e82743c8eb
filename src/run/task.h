/* Work on a backend that is not one case: a function run in a child process under a deadline,
 * its output collected (for the layers above the library's run layer: certify's probes). The
 * child is what a worker is to a case: its own process group, killed with the supervisor and at
 * its deadline, group and all, so a backend that hangs, crashes, ignores signals or leaves
 * processes behind costs the caller the task, not the run (internal: for src/run/ and src/cli/). */
#ifndef GEMMCHECK_RUN_TASK_H
#define GEMMCHECK_RUN_TASK_H

#include <stddef.h>

/** How a task ended. */
typedef enum gck_task_end {
    GCK_TASK_DONE = 0,    /**< fn returned (the child exited 0) */
    GCK_TASK_FAILED,      /**< the child exited with another status (fn called _exit) */
    GCK_TASK_CRASHED,     /**< the child died of a signal it did not get from the deadline */
    GCK_TASK_HUNG,        /**< the deadline passed: the child's group was killed */
    GCK_TASK_NOT_STARTED, /**< no pipe or no process (why says so) */
} gck_task_end;

typedef struct gck_task_result {
    gck_task_end end;
    int code;   /**< the exit status (DONE, FAILED) or the signal (CRASHED) */
    char *out;  /**< what fn wrote to its descriptor, NUL-terminated (free it), or NULL */
    size_t len; /**< its length */
} gck_task_result;

/** Run fn(arg, fd) in a child process and collect what it writes to fd, for at most `timeout`
 *  seconds from its start. Returns r->end; r->out is the caller's to free in every case. */
gck_task_end gck_run_task(void (*fn)(void *arg, int fd), void *arg, double timeout,
                          gck_task_result *r);

/** One line on how a task that did not finish ended ("died of signal 11 (Segmentation fault)",
 *  "did not finish within 30 s (a hang)", "exited with status 3"). */
void gck_task_why(const gck_task_result *r, double timeout, char *buf, size_t len);

#endif
