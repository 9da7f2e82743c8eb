/* The minimiser: shrink a failing case while it keeps failing with the same kind (internal: for
 * fuzz/ and src/cli/). */
#ifndef GEMMCHECK_FUZZ_SHRINK_H
#define GEMMCHECK_FUZZ_SHRINK_H

#include "gemmcheck/checker.h"
#include "gemmcheck/spec.h"

typedef struct gck_shrink_options {
    const char *backend;
    double time_limit;   /**< seconds for the whole minimisation */
    double call_timeout; /**< per backend call; <= 0: gck_call_deadline(case, calls, 10) */
    bool strict_ieee;
    bool verbose;
} gck_shrink_options;

typedef enum gck_shrink_status {
    GCK_SHRINK_DONE = 0,    /**< *best is the smallest failing case found */
    GCK_SHRINK_NOT_FAILING, /**< the start case does not fail with the kind */
    GCK_SHRINK_SETUP_ERROR, /**< the backend cannot run (msg says why) */
} gck_shrink_status;

/** Minimise `start`. `*kind` is the kind to keep (GCK_KIND_COUNT: the first kind the start case
 *  shows, written back). Reports the number of runs. */
gck_shrink_status gck_shrink(const gck_shrink_options *o, const gck_spec *start, gck_kind *kind,
                             gck_spec *best, int *runs, char *msg, size_t len);

#endif
