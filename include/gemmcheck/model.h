/* gemmcheck — the arithmetic model: what a GEMM implementation declares about how it computes
 * one type tuple (the precision of products and sums, input rounding, accumulation, the format of
 * the alpha/beta epilogue, flushing, and where alpha and beta enter), and one row of a support
 * table: a type tuple, its model and the backend's promises. Backends declare their tables of
 * such rows (backend.h); the checker derives its bounds from a row; a reference GEMM's concrete
 * evaluation (refgemm.h) maps to the model that covers it. The row lives here, in the core, so
 * that the checker reads it without reaching up to the backend interface. */
#ifndef GEMMCHECK_MODEL_H
#define GEMMCHECK_MODEL_H

#include <stdbool.h>

#include "gemmcheck/export.h"
#include "gemmcheck/format.h"

#ifdef __cplusplus
extern "C" {
#endif

/** How the products are accumulated. */
typedef enum gck_accumulation {
    GCK_ACC_SCALAR = 0, /**< one rounding per multiply and per add (or per FMA), in any order */
    GCK_ACC_BLOCK_FMA,  /**< blocks of `block` products fused before one rounding (tensor cores) */
} gck_accumulation;

/** How the final result D is rounded from the value formed in the epilogue format, and how every
 *  rounding of the declared arithmetic rounds. */
typedef enum gck_rounding {
    GCK_ROUND_NEAREST = 0, /**< to nearest, ties to even (IEEE's default; every CPU BLAS, the
                                conversions of cuBLAS and of gemmcheck's kernels): D is the
                                nearest value of D's type to one the declared arithmetic can
                                form, so D lies in [RNE(x_lo), RNE(x_hi)] */
    GCK_ROUND_FAITHFUL,    /**< any faithful rounding: D is one of the two values of D's type
                                around such a value (truncation, round-up, stochastic) */
} gck_rounding;

/** "nearest" or "faithful". */
GCK_API const char *gck_rounding_name(gck_rounding r);

/** The evaluation orders a backend may use, as bits of gck_model.orders: where alpha and beta
 *  enter. The k sum itself may be grouped in any way (k ascending, blocked, pairwise, split
 *  across threads) under every declaration: the bound holds for all of them. 0 means every
 *  order (GCK_ORDERS_ANY), the assumption for a library of unknown make. */
enum {
    GCK_ORDER_ALPHA_ON_SUM = 1u << 0,     /**< alpha times the sum (or block sums) of a*b */
    GCK_ORDER_ALPHA_ON_PRODUCT = 1u << 1, /**< alpha * (a*b) for each term */
    GCK_ORDER_ALPHA_ON_OPERAND = 1u << 2, /**< (alpha*b)*a or (alpha*a)*b (netlib; packing) */
    GCK_ORDER_BETA_LAST = 1u << 3,        /**< beta*c added to alpha*S at the end */
    GCK_ORDER_BETA_FIRST = 1u << 4,       /**< beta*c formed first, every term added into it */
    GCK_ORDER_BETA_OVER_ALPHA = 1u << 5,  /**< D = alpha*(A*B + (beta/alpha)*C) */
    GCK_ORDERS_ANY = (1u << 6) - 1
};

/** The arithmetic a backend declares for one type tuple. */
typedef struct gck_model {
    gck_format compute;      /**< precision of products and sums */
    bool inputs_rounded;     /**< A and B are first rounded to `input_format` */
    gck_format input_format; /**< what inputs are rounded to (tf32 for TF32 tensor cores,
                                  usually `compute`) */
    gck_accumulation acc;    /**< accumulation style */
    int block;               /**< products per fused block (GCK_ACC_BLOCK_FMA), 0 if unknown */
    gck_format epilogue;     /**< format in which alpha*AB + beta*C is formed (usually
                                  `compute`; BLIS rounds AB to C's precision first) */
    bool ftz;                /**< results may be flushed to zero */
    bool daz;                /**< subnormal inputs may be read as zero */
    unsigned orders;         /**< GCK_ORDER_* bits this backend may use (0: any) */
    gck_rounding rounding;   /**< how D is rounded (0: to nearest, the default) */
} gck_model;

/** The declared orders of a model, 0 read as GCK_ORDERS_ANY. */
GCK_API unsigned gck_model_orders(const gck_model *m);

/** Promises, as bits of gck_support_row.promises. */
enum {
    GCK_PROMISE_ALPHA0_NO_READ_AB = 1u << 0, /**< alpha = 0 does not read A or B */
    GCK_PROMISE_BETA0_NO_READ_C = 1u << 1,   /**< beta = 0 does not read C */
    GCK_PROMISE_MAY_SKIP_ZERO = 1u << 2,     /**< may skip terms with an exactly-zero factor */
    GCK_PROMISE_ROW_MAJOR = 1u << 3,         /**< row-major storage is supported */
    GCK_PROMISE_BATCHED = 1u << 4,           /**< strided batches (batch > 1) are supported */
    GCK_PROMISE_D_SEPARATE = 1u << 5,        /**< D may be a buffer separate from C */
    GCK_PROMISE_D_IN_PLACE = 1u << 6,        /**< D may be C itself */
    GCK_PROMISE_SCALE_F32 = 1u << 7,         /**< alpha/beta are taken as f32 */
    GCK_PROMISE_SCALE_F64 = 1u << 8,         /**< alpha/beta are taken as f64 */
    GCK_PROMISE_INT32_DIMS = 1u << 9,        /**< a limit: dimensions and lds must fit in int */
    GCK_PROMISE_SCALE_F16 = 1u << 10,        /**< alpha/beta are taken as f16 (cuBLAS 16F) */
    GCK_PROMISE_PRODUCT_ONLY = 1u << 11,     /**< a limit: alpha = 1 and beta = 0 only, a plain
                                                  product (torch.matmul); C is never read */
    /* (the highest bit: a table with a bit above it is refused; src/backends/backends.c) */
};

/** One row of a support table: a type tuple, its model, its promises, and what is called. */
typedef struct gck_support_row {
    gck_format a, b, c, d; /**< element types */
    gck_format compute;    /**< compute type as the case names it */
    gck_model model;
    unsigned promises;
    const char *entry; /**< the library function this row calls, e.g. "cblas_sgemm" */
} gck_support_row;

#ifdef __cplusplus
}
#endif
#endif
