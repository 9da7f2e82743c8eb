/* The oracle of one check, behind one face: which
 * oracle evaluates (the integer superaccumulator with its Ozaki splitting, MPFR, or both and
 * compared), the operands decoded once, one evaluator per thread, and the elements where the
 * two oracles disagreed, returned to the checker rather than written into its result (internal: for
 * oracles/ and src/check/). */
#ifndef GEMMCHECK_ORACLES_ORACLE_FACE_H
#define GEMMCHECK_ORACLES_ORACLE_FACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gemmcheck/oracle.h"
#include "oracle_internal.h"

/** The oracle of one check on one GEMM's operands (shared, read-only, by every thread). */
typedef struct gck_oracle_plan gck_oracle_plan;
/** One thread's evaluator on a plan. */
typedef struct gck_oracle_thread gck_oracle_thread;

/** The first element where the exact and MPFR oracles differ (GCK_ORACLE_BOTH). */
typedef struct gck_oracle_disagreement {
    int64_t batch, i, j;
    double mpfr, exact;             /**< the two values */
    double mpfr_error, exact_error; /**< the two errors of the backend's result */
} gck_oracle_disagreement;

/** The plan of `kind` for the case's operands (the pointers are kept, not copied); NULL when
 *  memory runs out. */
gck_oracle_plan *gck_oracle_plan_new(gck_oracle_kind kind, const gck_case *c, const void *A,
                                     const void *B, const void *C);
void gck_oracle_plan_free(gck_oracle_plan *p);
/** One line on how the plan sums the products ("MPFR" when MPFR alone evaluates). */
void gck_oracle_plan_describe(const gck_oracle_plan *p, char *buf, size_t len);
/** Whether its sums come from splitting the product into GEMMs (then every element of D costs
 *  little more than the GEMMs already run). */
bool gck_oracle_plan_split(const gck_oracle_plan *p);
/** The side of the square tiles of D best evaluated together (tiles.h). */
int64_t gck_oracle_plan_tile(const gck_oracle_plan *p);

/** A thread's evaluator; NULL when memory runs out. */
gck_oracle_thread *gck_oracle_thread_new(const gck_oracle_plan *p);
void gck_oracle_thread_free(gck_oracle_thread *t);
/** Element (bi, i, j), as gck_oracle_eval_element: with skip_zero, terms with an exactly-zero
 *  factor dropped; with `got`, its exact error. Under GCK_ORACLE_BOTH a difference of the two
 *  oracles is counted (gck_oracle_thread_disagreements) and the exact one's value returned. */
void gck_oracle_thread_eval(gck_oracle_thread *t, int64_t bi, int64_t i, int64_t j, bool skip_zero,
                            const double *got, gck_oracle_eval *out);
/** Elements i0 <= i < i1 of column j of member bi into out[0 .. i1 - i0), as
 *  gck_oracle_thread_eval without skip_zero one by one (got: NULL, or one result per element). */
void gck_oracle_thread_eval_run(gck_oracle_thread *t, int64_t bi, int64_t i0, int64_t i1, int64_t j,
                                const double *got, gck_oracle_eval *out);
/** How many of this thread's elements the two oracles disagreed on, and the first. */
int64_t gck_oracle_thread_disagreements(const gck_oracle_thread *t, gck_oracle_disagreement *first);

#endif
