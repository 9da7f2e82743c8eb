/* gemmcheck — the MPFR oracle: D_exact = alpha * sum_k a_ik * b_kj + beta * c_ij rounded once
 * to D's element type (round to nearest even, gradual underflow, overflow to ±Inf), with the
 * BLAS and IEEE semantics of docs/SEMANTICS.md (quick return for M or N = 0, C not read when beta =
 * 0, A and B not read when alpha = 0 or K = 0, NaN/Inf rules, the sign of exact zeros). */
#ifndef GEMMCHECK_ORACLE_H
#define GEMMCHECK_ORACLE_H

#include <stdbool.h>
#include <stddef.h>

#include "gemmcheck/case.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Which oracle computes the exact results. */
typedef enum gck_oracle_kind {
    GCK_ORACLE_EXACT = 0, /**< the integer superaccumulator (default) */
    GCK_ORACLE_MPFR,      /**< MPFR, the trust anchor */
    GCK_ORACLE_BOTH       /**< both on every element; any difference is an internal error */
} gck_oracle_kind;

/** "exact", "mpfr", "both". */
GCK_API bool gck_oracle_kind_parse(const char *name, gck_oracle_kind *out);
/** The name gck_oracle_kind_parse takes for k. */
GCK_API const char *gck_oracle_kind_name(gck_oracle_kind k);

/** Whether the environment variable GEMMCHECK_OZAKI, which picks how the exact oracle sums the
 *  products (auto, the default: by a cost model; always: f64 slices; never: one by one; int8:
 *  int8 slices; residues: int8 residues), is unset or one of those names; if not, why (into
 *  why). The oracle reads an unknown value as auto and gives the same values in every mode; the
 *  command line refuses one (exit 2). */
GCK_API bool gck_oracle_env_ok(char *why, size_t why_len);

/** The bytes of memory gemmcheck keeps between calls in this process: blocks of 4 MiB or more
 *  of the exact oracle's and the checker's large arrays, freed at the end of one call and kept
 *  for the next array of about their size (fresh memory's first touches are slow on virtual
 *  machines: 0.3-1 s per GB measured). At most 24 blocks and an eighth of the machine's memory
 *  (at most 4 GiB); all given back by itself when an allocation fails. */
GCK_API size_t gck_memory_kept(void);
/** Gives every kept block back to the system (for a process that checks a large product once,
 *  then needs the memory elsewhere); returns the bytes given back. Thread-safe; later calls keep
 *  blocks again. */
GCK_API size_t gck_memory_release(void);

/** Compute D for every batch member and every valid element of D; nothing else in D's buffer
 *  is written. A, B and C point at the first element of the first batch member in the layout
 *  the case describes (C may be NULL when beta == 0; A and B may be NULL when they are not
 *  read). With c->d_is_c, D must equal C. `threads` <= 0 means one per online core.
 *  Returns GCK_EINVAL (message in msg) for an invalid case. */
GCK_API gck_status gck_oracle_mpfr(const gck_case *c, const void *A, const void *B, const void *C,
                                   void *D, int threads, char *msg, size_t msg_len);

/** The same result as gck_oracle_mpfr, bit for bit, computed with an integer superaccumulator
 *  (A and B decoded once, products added exactly, one rounding from the integer); tens of times
 *  faster. The default oracle of the checker and of `gemmcheck oracle`. */
GCK_API gck_status gck_oracle_exact(const gck_case *c, const void *A, const void *B, const void *C,
                                    void *D, int threads, char *msg, size_t msg_len);

/** One element: the oracle's value of D(i, j) of batch member `b`, as an exact double holding
 *  the value of D's type. The case must be valid. */
GCK_API double gck_oracle_mpfr_element(const gck_case *c, const void *A, const void *B,
                                       const void *C, int64_t b, int64_t i, int64_t j);

#ifdef __cplusplus
}
#endif
#endif
