/* gemmcheck — test specs and reproducer strings (docs/REPRO.md).
 *
 * A spec is a case plus everything needed to make its operands: base-pointer offsets, the
 * value distributions and their seed. Every value is a pure function of (seed, operand, batch
 * member, logical row, logical column), so a spec is fully determined by its reproducer string:
 *
 *   gck1 m=3 n=4 k=5 order=col ta=N tb=T types=f16,f16,f32,f32 compute=f32 scale=f32
 *        alpha=1 beta=0 lda=3 ldb=4 ldc=3 ldd=3 d=c batch=1 sa=0 sb=0 sc=0 sd=0
 *        off=0,0,0,0 vab=unif vc=unif sp=0 cnan=0 seed=1
 *
 * (one line; docs/REPRO.md specifies every key and every distribution). */
#ifndef GEMMCHECK_SPEC_H
#define GEMMCHECK_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gemmcheck/case.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Value distributions (docs/REPRO.md gives the exact formulas). */
typedef enum gck_dist {
    GCK_DIST_INT = 0,   /**< "int": integers in [-4, 4] (exact cases) */
    GCK_DIST_UNIFORM,   /**< "unif": uniform in [-1, 1] */
    GCK_DIST_NORMAL,    /**< "normal": standard normal */
    GCK_DIST_LOGU,      /**< "logu": sign * (1+u) * 2^e, e uniform in [-20, 20] */
    GCK_DIST_CANCEL,    /**< "cancel": products cancel in pairs up to a small remainder */
    GCK_DIST_SUBNORMAL, /**< "sub": subnormals and the smallest normals of the element type */
    GCK_DIST_BIG,       /**< "big": products and C near the overflow threshold of D's type */
    GCK_DIST_COUNT
} gck_dist;

GCK_API const char *gck_dist_name(gck_dist d);
GCK_API bool gck_dist_parse(const char *name, gck_dist *out);

/** One test: a case, its operand placement and its values. */
typedef struct gck_spec {
    gck_case c;
    int64_t offset[4]; /**< element offsets of A, B, C, D from a 256-byte boundary */
    gck_dist dist_ab;  /**< distribution of A and B */
    gck_dist dist_c;   /**< distribution of C */
    int special_pm;    /**< per mille of A, B, C elements replaced by NaN, +-Inf or +-0 */
    bool c_nan;        /**< every element of C is NaN (tests beta = 0 semantics) */
    uint64_t seed;
    /** Resources the backend's first call may take (docs/RESOURCES.md): bytes it may allocate
     *  (0: no budget; `mem=` in the reproducer), and, when limit_threads, how many threads it
     *  may start (`thr=`). */
    int64_t mem_budget;
    bool limit_threads;
    int max_threads;
} gck_spec;

/** A spec for the case with tight layout, no offsets, uniform values, seed 1. */
GCK_API void gck_spec_init(gck_spec *s, const gck_case *c);

/** The reproducer string (one line, no quotes or shell metacharacters but spaces). */
GCK_API void gck_spec_format(const gck_spec *s, char *buf, size_t len);
/** Parse a reproducer string strictly; on error one line in msg naming the problem. */
GCK_API gck_status gck_spec_parse(const char *text, gck_spec *s, char *msg, size_t len);

/** The value of logical element (row, col) of operand x (A: op(A)(i,k), B: op(B)(k,j),
 *  C: (i,j)) in batch member b, as a value of the operand's element type. */
GCK_API double gck_spec_value(const gck_spec *s, gck_operand x, int64_t b, int64_t row,
                              int64_t col);

/** Write the valid elements of operand x (all batch members) into `base` (the first element
 *  of the first batch member, laid out as the case describes). Padding is not touched. */
GCK_API void gck_spec_fill(const gck_spec *s, gck_operand x, void *base);

#ifdef __cplusplus
}
#endif
#endif
