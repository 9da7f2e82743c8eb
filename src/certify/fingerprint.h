/* The numeric fingerprint of one row of a backend: properties of its arithmetic found by
 * probing it with crafted inputs (after Fasi, Higham, Mikaitis and Pranesh, "Numerical behavior
 * of NVIDIA tensor cores", PeerJ Comput. Sci. 7:e330, 2021, and FPRev, Xie et al., which reveals
 * a summation order from outside), not by trusting the row's declaration.
 *
 * The summation-order probe: with every product 1·u but two, +M at k = i and -M at k = j, M so
 * large that a partial sum holding one of them absorbs every unit added to it, D equals u times
 * the number of leaves outside the subtree rooted at the lowest common ancestor of i and j in the
 * evaluation tree: D = u·(K - L(i, j)). L over all pairs determines the tree; over a sample of
 * pairs it confirms or refutes a candidate tree (sequential, blocked, interleaved, pairwise)
 * (internal: for src/certify/ and src/cli/). */
#ifndef GEMMCHECK_CERTIFY_FINGERPRINT_H
#define GEMMCHECK_CERTIFY_FINGERPRINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gemmcheck/backend.h"

/** The row's case of shape m x n x k: column-major, no transposes, tight leading dimensions,
 *  D separate when the row allows it, alpha = 1, beta = 0. */
gck_case gck_fp_row_case(const gck_support_row *row, int64_t m, int64_t n, int64_t k);

enum { GCK_FP_MAX_PROPS = 56, GCK_FP_NAME = 48, GCK_FP_VALUE = 200, GCK_FP_PROBE = 240 };

/** One property: its name ("order K=64 (4x64)"), its value ("sequential, k ascending") or,
 *  when the probe could not decide, "undecided", and the probe that decided it with its
 *  evidence (or why it could not). */
typedef struct gck_fp_prop {
    char name[GCK_FP_NAME];
    char value[GCK_FP_VALUE];
    char probe[GCK_FP_PROBE];
} gck_fp_prop;

typedef struct gck_fingerprint {
    gck_fp_prop props[GCK_FP_MAX_PROPS];
    int count;
} gck_fingerprint;

/** A candidate evaluation tree of a sum of K terms, k ascending within each part: blocks of
 *  consecutive terms ending (exclusive) at ends[0] < ends[1] < ... < ends[nblocks-1] = K, whose
 *  sums are added in order; within a block, `ways` interleaved accumulators (term k goes to
 *  accumulator (k - block start) mod ways), each sequential, combined as `comb` says;
 *  `ways` = 0 means a pairwise sum of the block: recursive halves (the left one of n terms
 *  has n/2, rounded down) down to parts of at most `leaf` terms, each summed sequentially. */
enum { GCK_FP_MAX_BLOCKS = 256 };
typedef enum gck_fp_comb {
    GCK_FP_IN_ORDER = 0, /**< ((acc0 + acc1) + acc2) + ... */
    GCK_FP_HALVES,       /**< recursive halves: (acc0 + acc1) + (acc2 + acc3) ... */
    GCK_FP_FOLDING,      /**< a SIMD reduction: acc r + acc r+w/2 first, then r + r+w/4, ... */
} gck_fp_comb;
typedef struct gck_fp_tree {
    int64_t ends[GCK_FP_MAX_BLOCKS];
    int nblocks;
    int ways;
    gck_fp_comb comb;
    int leaf;
    bool odd_first; /**< ways = 1: each pair (2i, 2i+1) of the block visited odd term first
                         (the pair order of VDPBF16PS) */
} gck_fp_tree;

/** L(i, j), i < j < K: the number of terms under the lowest common ancestor of i and j. */
int64_t gck_fp_tree_lca(const gck_fp_tree *t, int64_t i, int64_t j);
/** The tree in words: "sequential, k ascending", "blocks of 320, 320, 184, 176 terms, ...". */
void gck_fp_tree_describe(const gck_fp_tree *t, char *buf, size_t len);
/** Uniform blocks of b terms (b >= K: one block) over K terms. */
void gck_fp_tree_uniform(gck_fp_tree *t, int64_t k, int64_t b, int ways, gck_fp_comb comb);

/** Which of the candidate trees (simplest first) gives L(i, j) = lca[p] for every pair
 *  (ii[p], jj[p]); false when none does. Candidates: one block or the blocks the profile
 *  L(0, q) suggests (a block's end is L(0, q) for every q of a later block); within them
 *  sequential, 2 to 64 interleaved accumulators combined in order, by halves or by folding, or
 *  pairwise. */
bool gck_fp_tree_match(int64_t k, const int64_t *ii, const int64_t *jj, const int64_t *lca,
                       int64_t npairs, gck_fp_tree *out);

/** Probe one row of an open backend on the shapes of the default plan. Never fails: a probe
 *  that cannot run or decide records why. */
void gck_fingerprint_row(gck_backend *be, const gck_support_row *row, gck_fingerprint *fp);

/** The thread-count probe: a GCK_FP_THREADS_M x N x K product run once with the backend's
 *  threads as the environment sets them and once in a process whose threading variables are all
 *  1 (OPENBLAS_NUM_THREADS, OMP_NUM_THREADS, BLIS_NUM_THREADS, ...). Rows probed: one element
 *  type throughout (the BLAS-like rows). */
enum { GCK_FP_THREADS_M = 256, GCK_FP_THREADS_N = 256, GCK_FP_THREADS_K = 768 };
bool gck_fp_threads_row(const gck_support_row *row);
/** Run the product on the row; D's values (M*N, column-major) into d; false with why. */
bool gck_fp_threads_run(gck_backend *be, const gck_support_row *row, double *d, char *why,
                        size_t len);
/** The "threads" property from the two runs' values (either NULL: undecided, with why). */
void gck_fp_threads_add(gck_fingerprint *fp, const double *dflt, const double *one,
                        const char *why);

/** Add a property (printf-style value). */
void gck_fp_add(gck_fingerprint *fp, const char *name, const char *probe, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
