/* The exact sums S_ij = sum_k a_ik b_kj of a whole GEMM by error-free splitting (the Ozaki
 * scheme), for the exact oracle.
 *
 * Every row of op(A) and column of op(B) is scaled by a power of two and its values cut into
 * slices of `beta` bits, small enough that each slice-by-slice product is an exact f64 GEMM; the
 * products of equal weight are added in int64, so that each element of D gets a handful of
 * integer terms whose weighted sum, with the products of the few values' bits below the slices
 * (tails), is exactly S (oracles/oracle_ozaki.c says why) (internal: private to oracles/). */
#ifndef GEMMCHECK_ORACLES_ORACLE_OZAKI_H
#define GEMMCHECK_ORACLES_ORACLE_OZAKI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gemmcheck/case.h"

typedef struct gck_ozaki gck_ozaki;

/** When to split: GCK_OZAKI_AUTO when it is expected to be faster than summing the products one
 *  by one (large products, few slices), ALWAYS whenever the values can be split (tests), NEVER;
 *  INT8 as ALWAYS, on slices of 7 bits multiplied by the exact int8 GEMM (gck_igemm_s8) instead
 *  of slices of up to 26 bits by the f64 GEMM (K at most GCK_IGEMM_MAX_K); RESIDUES as INT8, a
 *  line's digits taken as one integer, multiplied modulo small moduli by one int8 GEMM each and
 *  rebuilt by the Chinese remainder theorem (ozaki_residues.c). */
typedef enum {
    GCK_OZAKI_AUTO,
    GCK_OZAKI_ALWAYS,
    GCK_OZAKI_NEVER,
    GCK_OZAKI_INT8,
    GCK_OZAKI_RESIDUES
} gck_ozaki_mode;

/** What a plan is built with: when to split, and (tests only) a fault to plant. */
typedef struct gck_ozaki_options {
    gck_ozaki_mode mode;
    int64_t corrupt; /**< tests: the plan's first slice product has its element index mod M·N
                          off by one, which the check must refuse (< 0: none) */
    double rate_f64, rate_int8; /**< tests: the GEMMs' rates AUTO's cost model weighs (GFLOP/s,
                                     GOPS; 0: as measured in this process) */
    double rate_one_by_one;     /**< products the exact oracle sums one by one per second on one
                                     thread, in G (gck_exact_one_by_one_rate); 0: priced at
                                     OZ_ONE_BY_ONE f64 multiply-adds each */
    bool portable_slices;       /**< tests: cut the slices value by value, not 8 at a time with
                                     AVX-512 where the CPU has it (the two give the same digits) */
} gck_ozaki_options;

/** Whether this CPU cuts slices 8 values at a time (AVX-512F and DQ, F16C), unless
 *  portable_slices. */
bool gck_ozaki_simd_slices(void);

/** The process's options: the mode of gck_ozaki_set_mode, else
 *  GEMMCHECK_OZAKI=auto|always|never|int8|residues, else AUTO (an unknown value too: the
 *  command line refuses one first, gck_oracle_env_ok); nothing planted. */
gck_ozaki_options gck_ozaki_defaults(void);

/** The process's mode (gck_ozaki_defaults), for the paths that build plans without options (the
 *  public oracle and the checker); for tests. Set it while no plan is being built. */
void gck_ozaki_set_mode(gck_ozaki_mode m);

/** The sums of every element of the case's products, or NULL when splitting does not apply or
 *  does not pay (the caller sums the products itself); *why then says which. A NaN or Inf input
 *  counts as 0 here (the caller decides such elements from the IEEE rules first). */
gck_ozaki *gck_ozaki_new(const gck_case *c, const void *A, const void *B,
                         const gck_ozaki_options *opt, char *why, size_t why_len);
void gck_ozaki_free(gck_ozaki *o);
/** The passes of gck_ozaki_new, in the order they run, for the time each took (bench_floor). */
typedef enum {
    GCK_OZ_COPY,   /**< strided lines of the operands copied line by line */
    GCK_OZ_SCALES, /**< each line's scale and slice count, the slicing plan (and int8's) */
    GCK_OZ_TAILS,  /**< the bits below the slices gathered, and their products summed ahead */
    GCK_OZ_SLICES, /**< the slices cut (and made bytes), with their Freivalds vectors */
    GCK_OZ_GEMM,   /**< the slice products */
    GCK_OZ_ACCUM,  /**< each product added into its elements' terms */
    GCK_OZ_VERIFY, /**< Freivalds' test of the terms */
    GCK_OZ_PASSES
} gck_oz_pass;
/** The pass's name ("copy", "scales", ...). */
const char *gck_oz_pass_name(gck_oz_pass p);
/** Seconds the pass took in building o (wall time, all threads together). */
double gck_ozaki_seconds(const gck_ozaki *o, gck_oz_pass p);

/** The GEMM of the slice products: "f64", "int8" or "int8 residue". */
const char *gck_ozaki_gemm(const gck_ozaki *o);
/** The GEMMs per member: one per pair of slices, or one per modulus on residues. */
int gck_ozaki_gemms(const gck_ozaki *o);

/** Slices of op(A) and op(B), and bits per slice. */
void gck_ozaki_shape(const gck_ozaki *o, int *slices_a, int *slices_b, int *beta);

/** How many values of op(A) and of op(B) have a tail: bits below their line's slices, whose
 *  products are added apart from the slices' (gck_ozaki_tail_terms). */
void gck_ozaki_tails(const gck_ozaki *o, int64_t *tails_a, int64_t *tails_b);

/** Whether each row of op(A) and column of op(B) holds a NaN or an infinity (found by the
 *  scales' pass), or-ed into rows[member·M + i] and cols[member·N + j] (members of A, of B). */
void gck_ozaki_line_specials(const gck_ozaki *o, uint8_t *rows, uint8_t *cols);

/** The range of the terms' weights over every element: the lowest bit any term can have and
 *  the number of bits above it any sum needs (carries included). */
void gck_ozaki_range(const gck_ozaki *o, int32_t *lowest, int32_t *width);

/** Element (i, j) of batch member bi: S = sum over d < *count of terms[d]·2^(w0 - step·d)
 *  (step: beta, or a multiple of it where several terms are kept as one integer). */
const int64_t *gck_ozaki_terms(const gck_ozaki *o, int64_t bi, int64_t i, int64_t j, int32_t *w0,
                               int *count, int *step);

/** Element (i, j) of batch member bi beyond its terms: the products of the tails, each exact,
 *  passed to add as (-1)^neg·m·2^e. */
void gck_ozaki_tail_terms(const gck_ozaki *o, int64_t bi, int64_t i, int64_t j,
                          void (*add)(void *ctx, unsigned __int128 m, int32_t e, bool neg),
                          void *ctx);

/** A sum kept exactly in one __int128: s·2^base. Adding a term below 2^base moves the frame
 *  down (s shifted left) where there is room; a term, a shifted sum or the sum reaching 2^125
 *  sets `overflow` (s and base are then unspecified: the caller falls back to its limbs). */
typedef struct gck_sum128 {
    __int128 s;
    int32_t base;
    bool overflow;
} gck_sum128;

/** The top set bit of u (-1 for 0). */
static inline int gck_top128(unsigned __int128 u) {
    uint64_t hi = (uint64_t)(u >> 64), lo = (uint64_t)u;
    return hi ? 127 - __builtin_clzll(hi) : lo ? 63 - __builtin_clzll(lo) : -1;
}

/** x += (-1)^neg·m·2^e. */
static inline void gck_sum128_add(gck_sum128 *x, unsigned __int128 m, int64_t e, bool neg) {
    if (!m || x->overflow) return;
    int64_t sh = e - x->base;
    if (sh < 0) { /* the frame moves down to 2^e */
        unsigned __int128 u = x->s < 0 ? -(unsigned __int128)x->s : (unsigned __int128)x->s;
        if (-sh > 124 || gck_top128(u) - sh > 124) {
            x->overflow = true;
            return;
        }
        x->s = (__int128)((unsigned __int128)x->s << -sh);
        x->base = (int32_t)e;
        sh = 0;
    }
    if (sh > 124 || gck_top128(m) + sh > 124) {
        x->overflow = true;
        return;
    }
    __int128 nm = -(__int128)neg, v = ((__int128)(m << sh) ^ nm) - nm; /* without a branch */
    if (__builtin_add_overflow(x->s, v, &x->s) || x->s >= ((__int128)1 << 125) ||
        x->s <= -((__int128)1 << 125))
        x->overflow = true;
}

/** The same tail products added into *x (gck_sum128_add): false when x overflowed — the caller
 *  then adds them as gck_ozaki_tail_terms gives them. When the element meets a tail,
 *  counts[0] is incremented, and counts[1] too when their sum was made ahead (exactly, in
 *  doubles, for the whole product) rather than product by product. */
bool gck_ozaki_tail_sum128(const gck_ozaki *o, int64_t bi, int64_t i, int64_t j, gck_sum128 *x,
                           int64_t counts[2]);

#endif
