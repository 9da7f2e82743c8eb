/* A row's memory appetite (docs/RESOURCES.md): the smallest memory budget at which a fixed case
 * of the row succeeds in a fresh worker, found by bisection, and what the row does just below
 * it (an error is the correct answer; a hang, a crash or a wrong result is a defect) (internal: for
 * src/certify/ and src/cli/). */
#ifndef GEMMCHECK_CERTIFY_APPETITE_H
#define GEMMCHECK_CERTIFY_APPETITE_H

#include <stdint.h>

#include "gemmcheck/backend.h"

/** What a row's case did under budgets. */
typedef struct gck_appetite {
    char case_text[512];  /**< the case, without mem= */
    int64_t bytes;        /**< the smallest budget found to succeed (-1: none up to the top) */
    int64_t below;        /**< the largest budget found to fail (0: none tried) */
    char below_what[160]; /**< what the call did there: "refused (MESSAGE)", "hang", ... */
    int probes;           /**< cases run */
} gck_appetite;

/** The smallest budget (bytes) that the first bisection tries, and the largest. */
#define GCK_APPETITE_LOW  ((int64_t)1 << 12)
#define GCK_APPETITE_HIGH ((int64_t)1 << 34)

/** Bisect the budget of the row's 256 x 256 x 256 case (256 x 256 x 64 for f64 inputs) of
 *  backend `spec`, each probe a fresh worker with a `timeout`-second call deadline: first the
 *  power of two, then an eighth of it. */
void gck_appetite_measure(const char *spec, const gck_support_row *row, double timeout,
                          gck_appetite *out);

#endif
