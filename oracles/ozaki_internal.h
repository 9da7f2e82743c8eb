/* The Ozaki splitting's parts, shared by its plan and term building (oracle_ozaki.c), the
 * slicing of the operands (ozaki_slices.c) and the tails (ozaki_tails.c) (internal: private to
 * oracles/). */
#ifndef GEMMCHECK_ORACLES_OZAKI_INTERNAL_H
#define GEMMCHECK_ORACLES_OZAKI_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "decode.h"
#include "oracle_ozaki.h"

/* Splitting is used in AUTO mode from this many products (per GEMM), and in any mode while its
 * arrays take at most OZ_MAX_BYTES. */
#define OZ_MIN_PRODUCTS (INT64_C(1) << 22)
/* From this many products (1024^3), AUTO prices summing one by one at its measured rate
 * (gck_exact_plan_new_rated); below, at OZ_ONE_BY_ONE f64 multiply-adds a product. The cost
 * model leaves out the splitting's fixed costs (first touches of its arrays, a pass per slice),
 * which outweigh its savings in smaller products: on a Zen 5, f64 256^3 split took 0.019 s
 * against 0.008 one by one, 512^3 0.066 against 0.063, 1024^3 0.32 against 0.38. */
#define OZ_RATED_PRODUCTS (INT64_C(1) << 30)
#define OZ_MAX_BYTES      (INT64_C(4) << 30)
#define OZ_MAX_BITS       120 /* slices·beta: a value's significand shifted into an __int128 */

/* One operand as lines (rows of op(A), columns of op(B)) along k. */
typedef struct lines {
    const void *base;
    gck_format type;
    layout lay;
    int64_t stride, members, count, k, ls, ks; /* element (line, k) at line·ls + k·ks */
    int64_t member_bytes;                      /* from one member to the next */
} lines;

/* A value's bits below its line's slices: m·2^e with the value's sign, at step k; v the same
 * as a double (exact: m has at most 53 bits and e >= -1074). */
typedef struct tailv {
    int64_t k;
    uint64_t m;
    int32_t e, neg;
    double v;
} tailv;

/* Where a line's tails lie: every tail is a multiple of 2^lo, and their magnitudes add up to
 * less than 2^up. */
typedef struct tail_span {
    int32_t lo, up;
} tail_span;

/* The moduli of the residues (ozaki_residues.c): count of them, each p with 1/p, the inverse of
 * P/p modulo p, and P/p and P modulo 2^128. */
#define OZ_MODULI 20
typedef struct gck_oz_crt {
    int count;
    int p[OZ_MODULI], inv[OZ_MODULI];
    double ip[OZ_MODULI];
    unsigned __int128 mu[OZ_MODULI], P;
} gck_oz_crt;

struct gck_ozaki {
    int64_t m, n, k, pairs;    /* pairs: members with their own sums (1 when A and B are shared) */
    bool a_batched, b_batched; /* a member of A (B) per batch member, else one for all */
    int sa, sb, beta, nd;      /* nd = sa + sb - 1 terms, term d of weight 2^-(beta·d) */
    /* the terms as kept: nq of them, each `group` consecutive terms d = g·group + r added in
     * int64 at 2^(beta·(group - 1 - r)) (int8 mode: each term at most min(SA, SB)·K·127², as
     * many as keep the sum below 2^62, five at K = 2048; f64 mode: group 1, nq = nd) */
    int group, nq;
    bool int8;        /* slices of 7 bits multiplied by gck_igemm_s8 (GCK_OZAKI_INT8) */
    bool res;         /* int8 mode, its digits multiplied as residues (GCK_OZAKI_RESIDUES) */
    bool simd;        /* the slices cut 8 values at a time (gck_ozaki_simd_slices) */
    int64_t corrupt;  /* gck_ozaki_options' planted fault (tests; < 0: none) */
    int32_t *ea, *eb; /* per member and row of op(A) / column of op(B): the scale exponent */
    uint8_t *need_a, *need_b; /* as ea, eb: the most slices a value of the line needs */
    uint8_t *spec_a, *spec_b; /* as ea, eb: the line holds a NaN or an infinity */
    uint16_t *gap_a, *gap_b;  /* as ea, eb: the largest gap below the scale (gck_oz_line_scales) */
    int64_t *hgap_a, *hgap_b; /* the histograms of the gaps, OZ_NEED_TAB bins each */
    int64_t *q;               /* [pair][j][i][d]: the terms of each element */
    int32_t lowest, width;
    /* the tails: the bits of a value below its line's SA (SB) slices, kept exactly, per line
     * (member·lines + line) in order of k; their products are added one by one */
    lines va, vb;
    int64_t *ta_start, *tb_start;
    tailv *ta, *tb;
    tail_span *sp_a, *sp_b;  /* per line, as ta_start */
    void *va_copy, *vb_copy; /* va, vb line by line, when the operands' lines are strided */
    lines va_given;          /* op(A) as the caller stores it (va before its copy) */
    /* [pair][j][i]: each element's tail products, tail_a·b + a·tail_b - tail_a·tail_b, summed in
     * doubles; exact where gck_oz_tails_exact says so (else the element adds them one by one) */
    double *tsum;
    int32_t low_a, low_b; /* the lowest set bit of any value of op(A), op(B) */
    int64_t ntail_a, ntail_b;
    double sec[GCK_OZ_PASSES]; /* the time of each pass of gck_ozaki_new */
    gck_oz_crt crt;            /* res: the moduli */
};

/* The value of a line at step k, decoded in the shortest form, whose last bit is at or above the
 * operand's lowest set bit (the frame of the tails' products starts there). A NaN or Inf gives
 * m = 0 (such elements are decided by the IEEE rules first). */
static inline __attribute__((always_inline)) dec value_as(const lines *v, layout lay,
                                                          int64_t member, int64_t line, int64_t k) {
    bool sp;
    return strip(decode_raw(raw_at((const char *)v->base + member * v->member_bytes, lay.bytes,
                                   line * v->ls + k * v->ks),
                            lay.fb, lay.eb, &sp));
}

static inline __attribute__((always_inline)) dec value_at(const lines *v, int64_t member,
                                                          int64_t line, int64_t k) {
    return value_as(v, v->lay, member, line, k);
}

/* Bins of the slices-needed histogram, most parts a pass is cut into, and the gaps below a
 * line's scale looked up in a table (from 63·26 up: the last bin). */
#define OZ_NEED_BINS 64
#define OZ_MAX_PARTS 64
#define OZ_NEED_TAB  2048 /* gaps w below a line's scale looked up (from 63·26 up: the last bin) */

/* tsum for every pair; false (tsum freed: every element adds its tail products one by one) when
 * out of memory. */
bool gck_oz_build_tsum(gck_ozaki *o);

/* The tails of the values of v that need more than S slices of beta bits (count of them), line
 * by line in order of k (CSR: start), each line's span and the lowest bit of any tail (*tmin);
 * 8 values at a time where simd; false when out of memory. */
bool gck_oz_collect_tails(const lines *v, const int32_t *E, const uint8_t *need, int beta, int S,
                          int64_t count, int64_t **start, tailv **out, tail_span **span,
                          int32_t *tmin, bool simd);

/* Each line's scale E and the largest gap between E and a value's last bit (gap), the histogram
 * of every value's gap (hist_gap, OZ_NEED_TAB bins, added into), the lowest set bit of any value
 * into *low, and when special is not NULL whether each line holds a NaN or an infinity (8 values
 * at a time where simd: gck_ozaki_simd_slices); false when out of memory. Bin 0 counts no
 * value's gap (zeros may be counted there). */
bool gck_oz_line_scales(const lines *v, int32_t *E, uint8_t *special, uint16_t *gap,
                        int64_t *hist_gap, int32_t *low, bool simd);

/* From the gaps: the most slices of beta bits a value of each of `count` lines needs (need), and
 * the histogram of the slices every value needs (hist, OZ_NEED_BINS bins, written). */
void gck_oz_needs(int beta, const uint16_t *gap, int64_t count, const int64_t *hist_gap,
                  uint8_t *need, int64_t *hist);

/* The most slices any value needs (0: no non-zero finite value). */
int gck_oz_most_needed(const int64_t *hist);

/* Slice s of S of member b's lines as doubles (8 values at a time where simd). */
void gck_oz_slice(const lines *v, const int32_t *E, int64_t b, int beta, int S, int s, bool simd,
                  double *out);
/** The same for slices of 7 bits, each digit (within ±127) written as a byte. */
void gck_oz_slice8(const lines *v, const int32_t *E, int64_t b, int S, int s, bool simd,
                   int8_t *out);

/* ---- int8 residues (ozaki_residues.c) ----
 * The fewest moduli whose product exceeds 2^bits into *c; false when the table has too few or
 * bits > 127 (the sums then do not fit an __int128). */
bool gck_oz_crt_init(gck_oz_crt *c, int bits);
/* The integer of the digits d[s·plane + e] (s < S, digit 0 the most significant, 7 bits apart)
 * for e in [lo, hi), as (S + 3) / 4 signed pieces 28 bits apart, chunks[c·plane + e] (piece 0
 * the least significant), each of magnitude below 2^28. */
void gck_oz_chunks(const int8_t *d, int S, int64_t plane, int64_t lo, int64_t hi, int32_t *chunks);
/* out[e] for e in [lo, hi): the integer of nc pieces (gck_oz_chunks) modulo p, within
 * ±(p-1)/2 (with AVX-512 where simd). */
void gck_oz_residues8(const int32_t *chunks, int nc, int64_t plane, int64_t lo, int64_t hi, int p,
                      bool simd, int8_t *out);
/* out[e] = (sums[e] mod p_u)·inv_u mod p_u in [0, p_u), for e in [lo, hi). */
void gck_oz_reduce_sums(const gck_oz_crt *c, int u, const int32_t *sums, int64_t lo, int64_t hi,
                        bool simd, uint8_t *out);
/* The integer X (|X| < P/4) whose reductions are t[u·stride] (as gck_oz_reduce_sums gives). */
__int128 gck_oz_crt_value(const gck_oz_crt *c, const uint8_t *t, int64_t stride);
/* The terms q[e·nq ..] of elements e in [lo, hi): X·2^shift (shift < step) in nq pieces `step`
 * bits apart, the first signed and the most significant, the others in [0, 2^step) (the sums
 * vectorised with AVX-512 where simd). */
void gck_oz_crt_terms(const gck_oz_crt *c, const uint8_t *t, int64_t stride, int64_t lo, int64_t hi,
                      int nq, int step, int shift, bool simd, int64_t *q);

/* Values that need more than S slices (those with a tail). */
int64_t gck_oz_tails_beyond(const int64_t *hist, int S);

/* The tails of row i of op(A) and column j of op(B) for batch member bi: *na from *ta, *nb from
 * *tb, each in order of k; *ma and *mb the members they belong to. */
static inline __attribute__((always_inline)) void
gck_oz_tails_at(const gck_ozaki *o, int64_t bi, int64_t i, int64_t j, int64_t *ma, int64_t *mb,
                const tailv **ta, int64_t *na, const tailv **tb, int64_t *nb) {
    *ma = o->a_batched ? bi : 0, *mb = o->b_batched ? bi : 0;
    const int64_t *sa = o->ta ? o->ta_start + *ma * o->m + i : NULL,
                  *sb = o->tb ? o->tb_start + *mb * o->n + j : NULL;
    *ta = sa ? o->ta + sa[0] : NULL, *na = sa ? sa[1] - sa[0] : 0;
    *tb = sb ? o->tb + sb[0] : NULL, *nb = sb ? sb[1] - sb[0] : 0;
}

/* Whether element (i, j) of members ma, mb has its tail products summed exactly in tsum. Its
 * terms (tail_a·b, a·tail_b, tail_a·tail_b) are multiples of 2^L, L the lower of the two sides'
 * lowest bits (a tail's lowest bit plus the partner operand's), and each group adds up to less
 * than 2^U (the side's span times its partner line's scale; tail_a·tail_b less than either), so
 * with 2^(U+2) <= 2^(L+53) every product and partial sum is a multiple of 2^L below 2^(L+53)
 * and representable (L >= -1074, U + 2 <= 1024): no operation rounds, in any order. */
static inline bool gck_oz_tails_exact(const gck_ozaki *o, int64_t ma, int64_t mb, int64_t i,
                                      int64_t j, int64_t na, int64_t nb) {
    int32_t L = INT32_MAX, U = INT32_MIN;
    if (na) {
        const tail_span *sp = o->sp_a + ma * o->m + i;
        L = sp->lo + o->low_b, U = sp->up + o->eb[mb * o->n + j];
    }
    if (nb) {
        const tail_span *sp = o->sp_b + mb * o->n + j;
        int32_t l = sp->lo + o->low_a, u = sp->up + o->ea[ma * o->m + i];
        L = l < L ? l : L, U = u > U ? u : U;
    }
    return L >= -1074 && (int64_t)U + 2 <= ((int64_t)L + 53 < 1024 ? (int64_t)L + 53 : 1024);
}

/* *s += v (a finite double). */
static inline void gck_sum128_add_double(gck_sum128 *s, double v) {
    if (v == 0.0) return;
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    bool special;
    dec d = strip(decode_raw(bits, 52, 11, &special));
    gck_sum128_add(s, d.m, d.e, d.neg);
}

/* Ask for the partner values that the tail products of elements i0 .. i1 - 1 of column j (batch
 * member bi) will read one by one (those not summed ahead), before the first is evaluated: the
 * elements of a tile of D read op(B)'s column j at their rows' own tail steps, a load from memory
 * each, which one element's evaluation after another left to wait one at a time (on a Zen 4, f32
 * 4096^3 on int8 residues, 12% of the exact oracle's time). */
void gck_oz_tails_prefetch(const gck_ozaki *o, int64_t bi, int64_t i0, int64_t i1, int64_t j);

/* The tail products of element (i, j) of members ma, mb, product by product, into *s (its
 * tails ta[0 .. na) and tb[0 .. nb) as gck_oz_tails_at gives them): false when s overflowed. */
bool gck_oz_tails_one_by_one128(const gck_ozaki *o, int64_t ma, int64_t mb, int64_t i, int64_t j,
                                const tailv *ta, int64_t na, const tailv *tb, int64_t nb,
                                gck_sum128 *s);

#endif
