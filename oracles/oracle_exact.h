/* The fast exact oracle's per-element interface for the checker (internal: private to oracles/). */
#ifndef GEMMCHECK_ORACLES_ORACLE_EXACT_H
#define GEMMCHECK_ORACLES_ORACLE_EXACT_H

#include "gemmcheck/oracle.h"
#include "oracle_internal.h"
#include "oracle_ozaki.h"

/** A GEMM's operands decoded once (shared, read-only, by every thread). */
typedef struct gck_exact_plan gck_exact_plan;
/** One thread's accumulators. */
typedef struct gck_exact_ws gck_exact_ws;

/** The plan of the case's operands, splitting as the process's options say (gck_ozaki_defaults). */
gck_exact_plan *gck_exact_plan_new(const gck_case *c, const void *A, const void *B, const void *C);
/** The same with the splitting's options given (tests plant a fault through them). */
gck_exact_plan *gck_exact_plan_new_with(const gck_case *c, const void *A, const void *B,
                                        const void *C, const gck_ozaki_options *opt);
/** The plan as the public oracle and the checker make it: gck_exact_plan_new, with the splitting
 *  weighed in AUTO mode against summing one by one at its measured rate (exact_rate.c). */
gck_exact_plan *gck_exact_plan_new_rated(const gck_case *c, const void *A, const void *B,
                                         const void *C);
/** Products the plan sums one by one per second on one thread, in G, for inputs ta x tb: every
 *  element of a 32 x 32 x 512 product of standard normal values, the best of three after a
 *  warm-up, measured once per process and pair of types (a few milliseconds); 0 when out of
 *  memory or for a type out of range. */
double gck_exact_one_by_one_rate(gck_format ta, gck_format tb);
void gck_exact_plan_free(gck_exact_plan *p);
gck_exact_ws *gck_exact_ws_new(const gck_exact_plan *p);
void gck_exact_ws_free(gck_exact_ws *w);

/** Which accumulation the plan chose: "zero", "fix64", "fix128", "bucket64", "bucket128" or
 * "ozaki". */
const char *gck_exact_plan_path(const gck_exact_plan *p);
/** One line on how the plan sums the products: the Ozaki splitting and its slices, or the path
 *  and why splitting was not used. */
void gck_exact_plan_describe(const gck_exact_plan *p, char *buf, size_t len);
/** The side T of the T x T tiles of D whose elements are best evaluated together: their rows of
 *  op(A) and columns of op(B), as the plan decoded them, stay in a core's L2. */
int64_t gck_exact_plan_tile(const gck_exact_plan *p);

/** Fold the exponent buckets into the accumulator after at most `products` products per
 *  bucket copy (tests use it to cross many folds with small K). */
void gck_exact_plan_limit_block(gck_exact_plan *p, int64_t products);

/** The same contract as gck_oracle_eval_element, computed with integers. */
void gck_exact_eval(const gck_exact_plan *p, gck_exact_ws *w, int64_t bi, int64_t i, int64_t j,
                    bool skip_zero, const double *got, gck_oracle_eval *out);
/** Elements i0 <= i < i1 of column j of member bi into out[0 .. i1 - i0), as gck_exact_eval
 *  without skip_zero would give them one by one (got: NULL, or the results, one per element);
 *  the facts the elements share are looked up once. */
void gck_exact_eval_run(const gck_exact_plan *p, gck_exact_ws *w, int64_t bi, int64_t i0,
                        int64_t i1, int64_t j, const double *got, gck_oracle_eval *out);
/** How many of this workspace's elements took the 128-bit lane (a split product's element whose
 *  value and error fit one __int128: no limbs); for tests. */
long gck_exact_ws_lane(const gck_exact_ws *w);
/** How many of the 128-bit lane's elements were finished in doubles: a value alpha·S + beta·c
 *  that is a double or the exact sum of two, and its error from the result a double rounded up
 *  exactly (TwoSum); for tests. */
long gck_exact_ws_lane_double(const gck_exact_ws *w);
/** How many took the 256-bit lane (a split product's element without tails whose terms span more
 *  than 128 bits: f64 inputs); for tests. */
long gck_exact_ws_lane256(const gck_exact_ws *w);
/** How many of this workspace's tries of the 128-bit lane met a tail (a value's bits below its
 *  line's slices), and how many of those had their tail products summed ahead in doubles (the
 *  others added them one by one); for tests. */
void gck_exact_ws_tails(const gck_exact_ws *w, int64_t *met, int64_t *ahead);

#endif
