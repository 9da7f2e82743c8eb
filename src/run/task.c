/* Tasks in workers (task.h), the supervisor's side; the worker's side and the registry it reads
 * are in serve.c, and what each of the worker's events means for a task is in watch.c. */
#define _GNU_SOURCE 1
#include "task.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "watch.h"
#include "worker.h"

gck_task_end gck_run_task(const gck_task_request *q, gck_task_result *r) {
    memset(r, 0, sizeof *r);
    gck_worker w;
    gck_worker_options wo = {.backend = q->backend,
                             .output_to = q->output_to,
                             .output_limit = q->output_limit,
                             .task = true};
    if (!gck_worker_spawn(&w, &wo, r->why, sizeof r->why)) return r->end = GCK_TASK_NOT_STARTED;
    double deadline = gck_wire_now() + q->timeout;
    gck_wire_task t;
    memset(&t, 0, sizeof t);
    snprintf(t.name, sizeof t.name, "%s", q->name);
    snprintf(t.arg, sizeof t.arg, "%s", q->arg ? q->arg : "");
    /* not taken: the worker died (seen next) or does not read (its deadline passes) */
    gck_worker_send(&w, GCK_WIRE_TASK, &t, sizeof t, deadline);
    for (;;) {
        gck_wire_frame f;
        char why[256];
        gck_worker_event ev = gck_worker_next(&w, deadline, &f, why, sizeof why);
        if (gck_watch_task_step(&w, ev, &f, why, r)) break;
    }
    gck_worker_kill(&w); /* the worker's group: what the task left running goes too */
    return r->end;
}

void gck_task_why(const gck_task_result *r, double timeout, char *buf, size_t len) {
    switch (r->end) {
    case GCK_TASK_DONE: snprintf(buf, len, "finished"); break;
    case GCK_TASK_FAILED: snprintf(buf, len, "failed (%s)", r->why); break;
    case GCK_TASK_CRASHED: snprintf(buf, len, "crashed (%s)", r->why); break;
    case GCK_TASK_HUNG: snprintf(buf, len, "did not finish within %.0f s (a hang)", timeout); break;
    default: snprintf(buf, len, "%s", r->why); /* "cannot start a worker: ..." */
    }
}
