/* The fingerprint's probes and their harness (fp_harness.c), shared by the plan (fingerprint.c)
 * and the probes (fp_order.c, fp_arith.c, fp_special.c) (internal: private to src/certify/). */
#ifndef GEMMCHECK_CERTIFY_FP_INTERNAL_H
#define GEMMCHECK_CERTIFY_FP_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "fingerprint.h"
#include "gemmcheck/backend.h"
#include "gemmcheck/format.h"

/* The layouts the order is probed in besides the plain one (column-major, no transposes, tight
 * leading dimensions): where libraries switch to other packing or kernels. */
typedef enum layout {
    PLAIN = 0,
    ROW_MAJOR,
    A_TRANSPOSED,
    LDA_PADDED,
    LDB_LDC_PADDED,
    BATCHED,
    SKINNY_N /* one pair column and the control column per call: N = 2 */
} layout;

/** One probing session of a row: the backend, the row, why the last call failed, and the tile
 *  shape every call is padded to (0: the probes' own shapes; see gck_fp_run). */
typedef struct gck_fp_probe {
    gck_backend *be;
    const gck_support_row *row;
    char why[GCK_FP_PROBE];
    int64_t tile;
    int64_t copies, differ; /* the tile pass's copies of elements, and those read other bits */
} gck_fp_probe;

/* The tile pass's shape: M and N at least GCK_FP_TILE_MN, K at least GCK_FP_TILE_K. */
enum { GCK_FP_TILE_MN = 128, GCK_FP_TILE_K = 64 };

const gck_format_info *gck_fp_fmt(gck_format f);

bool gck_fp_holds(gck_format f, double x);

/* Run c (any layout) with op(A), op(B), C given as doubles, column-major (exact values of their
 * types; cv may be NULL: zeros), and read D into d (m*n, column-major). false with the reason
 * in pr->why. With pr->tile set, a plain case (column-major, no transposes, one matrix) runs
 * padded to at least tile x tile x GCK_FP_TILE_K: rows of op(A) and C repeated cyclically down
 * to M, columns of op(B) and C across to N, zero terms appended to K (which leave every exact
 * sum, and every rounding of it, as it was); d gets the original block, and every copy of an
 * element is compared with it bit for bit (counted in pr->copies and pr->differ). */
bool gck_fp_run(gck_fp_probe *pr, const gck_case *c, const double *av, const double *bv,
                const double *cv, double *d);

/* Element (r, s) of the logical matrix x of c (rows r < nr, columns s < ns; column-major in
 * v, v NULL: zeros) stored into its buffer, or (load) read from it into v. */
bool gck_fp_place(const gck_case *c, gck_operand x, void *buf, double *v, int64_t nr, int64_t ns,
                  bool load);

/* Measure L(i, j) for the pairs on shape m x (up to MAX_COLS) x k; a column per pair, and a
 * control column of units only in every call. false (why) when a read is not a whole number of
 * units below K or the rows disagree. */
bool gck_fp_order_measure(gck_fp_probe *pr, int64_t m, int64_t k, layout l, const int64_t *ii,
                          const int64_t *jj, int64_t np, int64_t *lca, uint32_t *digest);

/* The pairs probed at K: every pair when K <= FULL_TREE_K, else (0, q) and (q-1, q) for every
 * q and 256 pseudo-random pairs. */
int64_t gck_fp_order_pairs(int64_t k, int64_t **ii, int64_t **jj);

/* The accumulator's bits and rounding, the inputs' bits, where alpha and beta enter, and
 * whether products are fused (with inputs of the bits they keep). Returns the accumulator's
 * bits (0: unknown). */
int gck_fp_probe_accumulator(gck_fp_probe *pr, gck_fingerprint *fp);

/* The orders: K = 16 to 2048 (plain layout; M*N*K from 3e4 to 2e6, across OpenBLAS's
 * small-matrix switch at 1e6), then where libraries switch paths: GEMV-shaped calls (M = 1, and
 * N = 2 with one pair per call), padded ldb and ldc, row-major storage and a strided batch of 3
 * (when the row supports them), op(A) = A^T and a padded lda at K = 64, and K one below and above
 * the first block the K = 2048 probe found (a KC) and one past two blocks. */
void gck_fp_probe_orders(gck_fp_probe *pr, gck_fingerprint *fp, int pacc);

void gck_fp_probe_specials(gck_fp_probe *pr, gck_fingerprint *fp);

void gck_fp_probe_subnormal_inputs(gck_fp_probe *pr, gck_fingerprint *fp);

/* A product whose exact value is a subnormal of D's type that the compute format also holds
 * (or a subnormal of both): kept, or flushed to zero. */
void gck_fp_probe_subnormal_result(gck_fp_probe *pr, gck_fingerprint *fp);

#endif
