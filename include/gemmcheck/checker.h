/* gemmcheck — the checker: finding kinds (docs/FINDINGS.md) and the tolerance model
 * (docs/TOLERANCE.md).
 *
 * The checker compares a backend's D with the oracle element by element, using the
 * arithmetic model the backend declared: a hard bound per element (exceeding it is a finding;
 * where the model rounds D to nearest, D must lie in the rounded interval of the exact value
 * widened by the arithmetic's bound), a bitwise comparison where the case is exact by
 * construction, the non-finite rules, and the statistical tier (an error improbable under
 * round-to-nearest arithmetic on random data, and a sign test of the errors). Errors are computed
 * exactly (MPFR) and bounds with upward rounding, so the checker's own arithmetic cannot create a
 * finding. */
#ifndef GEMMCHECK_CHECKER_H
#define GEMMCHECK_CHECKER_H

#include <stdbool.h>
#include <stddef.h>

#include "gemmcheck/case.h"
#include "gemmcheck/model.h"
#include "gemmcheck/oracle.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Finding kinds; gck_kind_name gives the names of the report contract. */
typedef enum gck_kind {
    GCK_KIND_OUT_OF_TOLERANCE = 0,
    GCK_KIND_NONFINITE_MISMATCH,
    GCK_KIND_OUT_OF_BOUNDS_WRITE,
    GCK_KIND_INPUT_MODIFIED,
    GCK_KIND_CRASH,
    GCK_KIND_HANG,
    GCK_KIND_NONDETERMINISTIC,
    GCK_KIND_UNIMPLEMENTED,
    GCK_KIND_ERROR,
    GCK_KIND_FPENV_MODIFIED,   /**< the call returned with the caller's rounding mode, exception
                                    traps or FTZ/DAZ changed */
    GCK_KIND_IMPROBABLE_ERROR, /**< inside the hard bound but outside the statistical tier
                                    (docs/TOLERANCE.md): an error, or a bias in the errors'
                                    signs, that round-to-nearest arithmetic on random data makes
                                    with probability below 1e-12 */
    GCK_KIND_COUNT
} gck_kind;

/** "out_of_tolerance", "nonfinite_mismatch", ... */
GCK_API const char *gck_kind_name(gck_kind k);
GCK_API bool gck_kind_parse(const char *name, gck_kind *out);

/** One element as the checker saw it. */
typedef struct gck_element_report {
    int64_t batch, i, j;
    double got;      /**< the backend's value */
    double expected; /**< the oracle's value (exact result rounded to D's type) */
    double error;    /**< |got - exact|, rounded up (NaN when a value is not finite) */
    double bound;    /**< the hard bound (0: exact case; Inf: none applies) */
    double ratio;    /**< error / bound */
    double stat;     /**< error / the statistical tier's allowance (NaN: the tier did not
                          apply to this element) */
    bool exact_case; /**< the bound is 0 by the exact-case certificate */
    bool degenerate; /**< gamma is Inf: only the magnitude limit applied (`bound` is it) */
    char rule[96];   /**< which rule decided, e.g. "oracle NaN, result finite" */
} gck_element_report;

/** Whether the statistical tier may assume the operands random (docs/TOLERANCE.md). */
typedef enum gck_stat_data {
    GCK_STAT_AUTO = 0,  /**< a test on a sample of A and B decides (integers, powers of two and
                             repeated values are structured) */
    GCK_STAT_RANDOM,    /**< the caller vouches: A, B and C hold independent values from
                             continuous sign-symmetric distributions (the generator's unif,
                             normal, logu) */
    GCK_STAT_RANDOM_AB, /**< the same of A and B only: the element tier applies, the sign
                             test only when beta = 0 */
    GCK_STAT_OFF        /**< never apply the tier */
} gck_stat_data;

/** Options of a check. */
typedef struct gck_check_options {
    bool strict_ieee;        /**< ignore the zero-skipping leniency of the backend's promises */
    int threads;             /**< <= 0: one per core */
    gck_oracle_kind oracle;  /**< default GCK_ORACLE_EXACT */
    double sample_above;     /**< above this m*n*k*batch, check every element of a sample of
                                  rows and columns (the first and last ones included) instead
                                  of all; <= 0: 2^31 */
    int sample_lines;        /**< random rows and columns in the sample (<= 0: 16) */
    double copy_limit;       /**< bytes for a copy of op(A) and op(B) as doubles along k, which
                                  makes the bounds cheaper (<= 0: 1 GiB); a case that needs more
                                  reads its operands in place */
    gck_stat_data stat_data; /**< whether the operands may be taken as random (default: test) */
} gck_check_options;

/** Bins of gck_check_result.ratio_bins. */
#define GCK_RATIO_BINS 9

/** The result of checking one D. */
typedef struct gck_check_result {
    int64_t elements;              /**< elements compared */
    int64_t exact_elements;        /**< of which bound 0 by the exact-case certificate */
    int64_t degenerate;            /**< of which only the magnitude check applied (gamma = Inf) */
    int64_t lenient;               /**< of which passed only through a declared leniency
                                        (zero-skipping, alpha = 0 reading A and B) */
    int64_t count[GCK_KIND_COUNT]; /**< failing elements per numeric kind */
    gck_element_report worst[GCK_KIND_COUNT]; /**< the worst failing element per kind */
    gck_element_report max_ratio;             /**< the element with the largest error/bound among
                                                   finite errors (error NaN: none) */
    double max_stat;       /**< the largest error / statistical allowance (0: none applied) */
    int64_t stat_elements; /**< elements the statistical tier applied to */
    /** The sign test: among the elements the tier applied to with a non-zero error, how many
     *  lie above and below the exact value (and, counted, not tested, nearer to zero and
     *  farther from it: round to nearest leans toward zero); bias_ss is the sum of the squared
     *  sums of the signs (+1 above, -1 below) of each row of op(A) (or column of op(B)), its
     *  units; bias_p = gck_sign_test(bias_up, bias_down, bias_ss) bounds the probability of a
     *  split as lopsided under round to nearest on sign-symmetric data (1: not tested). */
    int64_t bias_up, bias_down, bias_toward0, bias_away;
    double bias_p;
    char stat_note[96];              /**< why the tier did not apply ("" when it did) */
    double bias_ss;                  /**< the sign test's sum of squared unit sums (above) */
    int64_t total_elements;          /**< elements of D (checked or not) */
    bool sampled;                    /**< only a sample of rows and columns was checked */
    int64_t oracle_disagreements;    /**< GCK_ORACLE_BOTH: elements where they differ */
    gck_element_report disagreement; /**< the first (got: MPFR's value, expected: exact's) */
    /** The elements compared by error/bound (those with a finite error): [0] error 0; [1]
     *  error/bound at most 1e-6; [2] .. [7] in (1e-6, 1e-5], ..., (0.1, 1]; [8] above 1 (outside
     *  the bound, failing unless a declared leniency passed them). */
    int64_t ratio_bins[GCK_RATIO_BINS];
    /** How the exact values were summed: e.g. "ozaki: 2 x 2 slices of 20 bits, ..." or
     *  "fix64, products one by one (no splitting: too few products ...)"; "MPFR" for that
     *  oracle alone. A product summed by splitting is checked in full, never sampled. */
    char oracle_path[192];
} gck_check_result;

/** The bin of gck_check_result.ratio_bins for an element with a finite error and its
 *  error/bound (the bins' edges above). */
GCK_API int gck_ratio_bin(double error, double ratio);

/** The sign test's bound of its two-sided p-value (docs/TOLERANCE.md): with up and down errors
 *  above and below the exact value, and ss the sum of the squares of the units' sums of signs
 *  (+1 up, -1 down) whose signs are fair coins under the null hypothesis, Hoeffding's
 *  2 exp(-(up - down)^2 / (2 ss)), at most 1; 1 when ss is 0 (no test). Sums over independent
 *  cases (counts and ss added) are tested the same way: what a campaign reports per tuple. */
GCK_API double gck_sign_test(int64_t up, int64_t down, double ss);

/** One line on the statistical tier of a check: where it applied, its largest ratio (what 1
 *  means) and the sign test; or why it did not apply. */
GCK_API void gck_stat_describe(const gck_check_result *r, char *buf, size_t len);

/** Check D_got (laid out as the case's D) against the exact result of A, B and C (the values
 *  before the call) under the model and promises of the row the backend ran. `opt` may be NULL
 *  (every option at its default). */
GCK_API gck_status gck_check_values(const gck_case *c, const gck_support_row *row,
                                    const gck_check_options *opt, const void *A, const void *B,
                                    const void *C, const void *D_got, gck_check_result *r,
                                    char *msg, size_t len);

/** The bound parameters of one element, exposed for tests and docs. */
typedef struct gck_bound_terms {
    double abs_d;  /**< |D| (the oracle's magnitude) */
    double T;      /**< sum_k |a_ik b_kj| */
    double sum_ab; /**< sum_k (|a_ik| + |b_kj|) */
    double abs_c;  /**< |c_ij| if read, else 0 */
    int64_t k;
} gck_bound_terms;

/** The hard bound (docs/TOLERANCE.md) for one element (upward rounded); *degenerate is set when
 * gamma is infinite, in which case the returned value is the magnitude limit for |D_got| instead.
 */
GCK_API double gck_bound(const gck_case *c, const gck_model *m, const gck_bound_terms *t,
                         bool *degenerate);

#ifdef __cplusplus
}
#endif
#endif
