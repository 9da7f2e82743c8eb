/* Following one case or one task in a worker: the one
 * place where a worker's frames, deadlines and death are interpreted. Every command that runs
 * cases in workers (repro, shrink, known-finding checks and certify's appetite through
 * gck_run_isolated in isolate.c; fuzz's campaigns in fuzz/campaign.c) feeds each event of
 * gck_worker_next to gck_watch_step and acts on what it returns; certify's probes, tasks run by
 * gck_run_task (task.c), go through gck_watch_task_step; none reads a frame's tag. The
 * frames of a worker's opening (READY, TABLE, ROW) are read here too, by gck_worker_handshake
 * (declared in worker.h).
 *
 * The blame follows the phase the watch is in: a death, corrupted message or missed deadline
 * inside a backend call, or after one returned, is the backend's (`crash`, `hang`); one while
 * gemmcheck prepares the case, before any call, is gemmcheck's own (an internal error) (internal:
 * for src/run/ and fuzz/). */
#ifndef GEMMCHECK_RUN_WATCH_H
#define GEMMCHECK_RUN_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gemmcheck/runner.h"
#include "gemmcheck/spec.h"
#include "task.h"
#include "wire.h"
#include "worker.h"

/** gemmcheck's own work for one case (allocation, filling, checks): bounded, never timed
 *  against the backend; running over is an internal error. */
#define GCK_OWN_WORK_SECONDS 600.0

/** One case in a worker, as its supervisor follows it: which phase, which call, deadlines. */
typedef struct gck_case_watch {
    const gck_case *c;
    int64_t mem_budget; /**< the case's limits on its first call (gck_spec) */
    bool limit_threads;
    int max_threads;
    double call_timeout; /**< > 0: each call's deadline (times calls in flight) */
    double floor;        /**< else gck_call_deadline's floor */
    bool in_call, called;
    gck_call_info call;
    double limit;    /**< the call's deadline, seconds */
    double deadline; /**< when the phase under way times out (CLOCK_MONOTONIC) */
} gck_case_watch;

/** What one event means for the case in flight. */
typedef enum gck_watch_end {
    GCK_WATCH_GOING = 0, /**< a call began or returned: the case goes on */
    GCK_WATCH_RESULT,    /**< the case's result arrived, checked, in the caller's buffer */
    GCK_WATCH_SETUP,     /**< the worker refused the case as a set-up error (its text) */
    GCK_WATCH_INTERNAL,  /**< gemmcheck's own failure: the worker's message, a death before any
                              backend call (`early`), or its own work past GCK_OWN_WORK_SECONDS */
    GCK_WATCH_HANG,      /**< a backend call ran past its deadline: the worker must be killed */
    GCK_WATCH_CRASH,     /**< the backend killed the worker or corrupted its messages */
} gck_watch_end;

/** The end of a case, as gck_watch_step reports it. */
typedef struct gck_watch_outcome {
    gck_watch_end end;
    bool early;        /**< INTERNAL: the worker died before the case's first backend call (in a
                            worker that served earlier cases, possibly their damage) */
    bool overran;      /**< INTERNAL: gemmcheck's own work overran (the worker must be killed) */
    char detail[1024]; /**< the finding's detail, or the internal error's / set-up error's text */
    char flags[64];    /**< repro flags that repeat the calls (crash, hang) */
} gck_watch_outcome;

/** A case was sent: the watch starts in gemmcheck's own set-up. */
void gck_watch_start(gck_case_watch *w, const gck_spec *s, double call_timeout, double floor);

/** One event of gck_worker_next (`ev`, with its frame `f` or its reason `why`) for the case
 *  in flight in worker `wk`; GCK_WORKER_NOTHING means the watch's deadline passed. A RESULT
 *  frame is copied into `result` and checked (gck_wire_check_result) before it counts. Returns
 *  out->end: GOING while the case goes on. */
gck_watch_end gck_watch_step(gck_case_watch *w, const gck_worker *wk, gck_worker_event ev,
                             const gck_wire_frame *f, const char *why, gck_run_result *result,
                             gck_watch_outcome *out);

/** One event of gck_worker_next for a task in worker `wk` (task.h): output appended to r->out,
 *  or the task's end set in r (its end, a hang when the deadline passed, a crash or a failure
 *  with r->why). True once the task has ended. */
bool gck_watch_task_step(const gck_worker *wk, gck_worker_event ev, const gck_wire_frame *f,
                         const char *why, gck_task_result *r);

#endif
