/* certify's probes, as tasks that run in workers (src/run/task.h): the backend's header, each
 * row's support and fingerprint, its pinned cases, its memory appetite, and the one-thread run of
 * the thread probe; with the readers of what they emit. The gemmcheck binary registers them at
 * start-up (gck_probe_tasks_register), so that a worker started in task mode finds them
 * (internal: for src/certify/ and src/cli/). */
#ifndef GEMMCHECK_CERTIFY_PROBES_H
#define GEMMCHECK_CERTIFY_PROBES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "gemmcheck/backend.h"

/** The task of one probe (argument: gck_probe_args_text) and of the one-thread run (none). */
#define GCK_PROBE_TASK      "certify-probe"
#define GCK_ONE_THREAD_TASK "certify-one-thread"

/** Register both tasks (before any worker starts, and in the worker itself). */
void gck_probe_tasks_register(void);

/** What one probe does: the header (files loaded, version, availability, every row's tuple and
 *  declaration, unprobed), or one row's support and fingerprint, its pinned cases (a task of
 *  their own, so that a library that crashes on some pinned cases, such as oneDNN 2.6.3 on
 *  K = 0, keeps its fingerprint), or its memory appetite. */
typedef enum gck_probe_part {
    GCK_PROBE_HEADER,
    GCK_PROBE_FINGERPRINT,
    GCK_PROBE_PINNED,
    GCK_PROBE_APPETITE
} gck_probe_part;

/** Which rows get their memory appetite measured (--appetite): none, the rows whose four
 *  operands share one type (the default), or all. */
typedef enum gck_appetite_rows {
    GCK_APPETITE_NONE,
    GCK_APPETITE_PLAIN,
    GCK_APPETITE_ALL
} gck_appetite_rows;

typedef struct gck_probe_args {
    gck_probe_part part;
    size_t row;                 /**< the row probed (not the header) */
    gck_appetite_rows appetite; /**< GCK_PROBE_APPETITE: which rows */
    double appetite_timeout;    /**< each appetite probe's call deadline, seconds */
} gck_probe_args;

/** The probe task's argument text. */
void gck_probe_args_text(const gck_probe_args *a, char *buf, size_t len);

/** The one-thread run's values of the thread probe: per row, NULL when the row was not run. */
typedef struct gck_one_thread {
    double **values;
    size_t rows;
} gck_one_thread;

/** Read the one-thread task's output (what came before a failure included). */
void gck_one_thread_parse(const char *out, size_t len, gck_one_thread *ot);
void gck_one_thread_free(gck_one_thread *ot);

/** A probe task's JSON from its output: {"rows": [...], "row_count": n, ...}, NULL when it is not
 *  JSON. For a fingerprint, the row's "threads" property is added last: its product against
 *  `one` (the one-thread run's values of the row; NULL: `why_one` says why there are none). */
json_t *gck_probe_parse(const char *out, size_t len, const double *one, const char *why_one);

/** The row's types, "f32 f32 f32 f32 | f32": the key by which compare matches rows. */
void gck_certify_tuple(const gck_support_row *row, char *buf, size_t len);

#endif
