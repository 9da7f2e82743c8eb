/* The oracle's per-element interface for the checker: the oracle value, whether special
 * inputs decided it, and the exact error of a result (internal: private to oracles/). */
#ifndef GEMMCHECK_ORACLES_ORACLE_INTERNAL_H
#define GEMMCHECK_ORACLES_ORACLE_INTERNAL_H

#include <stdbool.h>

#include "gemmcheck/case.h"

typedef struct gck_oracle_ws gck_oracle_ws;

/** A workspace for elements with up to k terms; one per thread. NULL when out of memory. */
gck_oracle_ws *gck_oracle_ws_new(int64_t k);
void gck_oracle_ws_free(gck_oracle_ws *w);

typedef struct gck_oracle_eval {
    double value;       /**< the exact result rounded once to D's type */
    bool special_input; /**< a used input is NaN or Inf: the value comes from IEEE rules */
    double abs_error;   /**< |got - exact| rounded up; NaN when not computed */
    int err_sign;       /**< the sign of got - exact (-1, 0, +1; 0 also when not computed) */
} gck_oracle_eval;

/** Evaluate element (b, i, j); with skip_zero, terms with an exactly-zero factor are dropped.
 *  When got is given, finite, and no special input is involved, also its exact error. */
void gck_oracle_eval_element(gck_oracle_ws *w, const gck_case *c, const void *A, const void *B,
                             const void *C, int64_t b, int64_t i, int64_t j, bool skip_zero,
                             const double *got, gck_oracle_eval *out);

/** The exact error of another got for the element w evaluated last (its exact terms are kept):
 *  sets out's abs_error and err_sign as gck_oracle_eval_element would, leaves its value. */
void gck_oracle_eval_again(gck_oracle_ws *w, const double *got, gck_oracle_eval *out);

#endif
