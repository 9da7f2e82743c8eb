/* What both oracles share: the IEEE special-value pass and the sign of an exact
 * zero, decided before any arithmetic (docs/SEMANTICS.md) (internal: private to oracles/). */
#ifndef GEMMCHECK_ORACLES_ORACLE_COMMON_H
#define GEMMCHECK_ORACLES_ORACLE_COMMON_H

#include <stdbool.h>

#include "gemmcheck/case.h"

typedef struct gck_oracle_pre {
    bool rab, rc;        /**< A/B read (alpha != 0, K > 0), C read (beta != 0) */
    bool special;        /**< a NaN or Inf among the used inputs decides the value */
    double value;        /**< that value (NaN or +-Inf) when special */
    bool any_nonzero;    /**< a non-zero product, or a non-zero c that is read */
    bool ab_absent;      /**< no product term: alpha = 0, K = 0, or (skip_zero) every term
                              dropped; D = beta*c as BLAS defines it */
    bool s_neg_zero;     /**< S is -0: every product a zero of negative sign */
    double cv;           /**< c_ij when read, else 0 */
    const void *Ab, *Bb; /**< batch member bi of A and B (NULL when not read) */
    int64_t ars, acs, brs, bcs;
} gck_oracle_pre;

/** Pass 1 for element (bi, i, j); with skip_zero, terms with an exactly-zero factor are left
 *  out (the value a zero-skipping BLAS computes). */
void gck_oracle_pass1(const gck_case *c, const void *A, const void *B, const void *C, int64_t bi,
                      int64_t i, int64_t j, bool skip_zero, gck_oracle_pre *p);

/** The signed zero IEEE evaluation of alpha*S + beta*c gives when the exact value is 0. */
double gck_oracle_exact_zero(const gck_case *c, const gck_oracle_pre *p);

/** The checks both oracles make before computing: a valid case, D == C when in place, and no
 *  NULL buffer the case reads or writes. *total is the number of elements of D (0: nothing to
 *  do). */
gck_status gck_oracle_check_args(const gck_case *c, const void *A, const void *B, const void *C,
                                 const void *D, int64_t *total, char *msg, size_t msg_len);

/** Pointer to batch member bi of an operand. */
const void *gck_oracle_member(const void *base, gck_format f, int64_t stride, int64_t bi);

#endif
