/* Work on a backend that is not one case, run in a worker (worker.h) as a task: certify's
 * probes, its one-thread run. A task is a function registered by name before any worker starts
 * (the gemmcheck binary registers its tasks at start-up, so that `gemmcheck __worker --task`
 * finds them); the supervisor starts a worker in task mode, sends it the task's name and
 * argument, and collects what the task emits, in checked frames, until the task ends, the
 * worker dies or the deadline passes. The worker opens the backend itself, inside the task (a
 * task may set the environment first). Every defence of a case's worker covers a task: its own
 * process group killed at the end and at the deadline, death with the supervisor, stdout and
 * stderr captured and shown labelled, bytes that are not gemmcheck's frames refused, strays
 * killed (internal: for src/run/ and src/certify/, src/cli/). */
#ifndef GEMMCHECK_RUN_TASK_H
#define GEMMCHECK_RUN_TASK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* ---- the worker's side ---------------------------------------------------------------------- */

/** Where a task writes its output (in the worker: TASK_OUT frames). */
typedef struct gck_task_sink gck_task_sink;

/** A task: run on `backend` with `arg`, its output to `out`; false with why on failure. */
typedef bool (*gck_task_fn)(const char *backend, const char *arg, gck_task_sink *out, char *why,
                            size_t wlen);

/** Register a task under `name` (at most 63 bytes; at most 16 tasks); false when full. */
bool gck_task_register(const char *name, gck_task_fn fn);
/** The task registered under `name`, or NULL. */
gck_task_fn gck_task_find(const char *name);
/** Send len bytes of the task's output; false once the supervisor cannot be reached. */
bool gck_task_emit(gck_task_sink *out, const void *data, size_t len);

/* ---- the supervisor's side ------------------------------------------------------------------ */

/** How a task ended. */
typedef enum gck_task_end {
    GCK_TASK_DONE = 0,    /**< the task returned true */
    GCK_TASK_FAILED,      /**< the task said it failed, or the worker exited before its end */
    GCK_TASK_CRASHED,     /**< the worker died of a signal, or its messages were corrupted */
    GCK_TASK_HUNG,        /**< the deadline passed: the worker's group was killed */
    GCK_TASK_NOT_STARTED, /**< no worker could be started (why says so) */
} gck_task_end;

typedef struct gck_task_result {
    gck_task_end end;
    char why[512]; /**< FAILED, CRASHED, NOT_STARTED: the task's failure, how the worker died
                        (its signal or exit status) or what corrupted its messages, or why no
                        worker started */
    char *out;     /**< what the task emitted, NUL-terminated (free it), or NULL */
    size_t len;    /**< its length */
} gck_task_result;

/** One task to run. */
typedef struct gck_task_request {
    const char *backend, *name, *arg;
    double timeout;   /**< seconds from the worker's start, its opening included */
    FILE *output_to;  /**< where the worker's stdout and stderr are shown (NULL: not shown) */
    int output_limit; /**< lines shown */
} gck_task_request;

/** Run the task in a worker in task mode; returns r->end. r->out is the caller's to free in
 *  every case (what came before a crash or hang is kept). */
gck_task_end gck_run_task(const gck_task_request *q, gck_task_result *r);

/** One line on how a task that did not finish ended ("crashed (the worker died by signal 11
 *  (Segmentation fault) before the task ended)", "did not finish within 30 s (a hang)",
 *  "failed (the task's own reason)"). */
void gck_task_why(const gck_task_result *r, double timeout, char *buf, size_t len);

#endif
