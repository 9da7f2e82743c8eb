/* The checker's parts: the bound (bound.c), the facts of an
 * element gathered from its lines (facts.c), the verdict of one element (verdict.c) and the
 * driver that runs the oracle and the verdict over D's tiles (checker.c) (internal: private to
 * src/check/). */
#ifndef GEMMCHECK_CHECK_CHECK_INTERNAL_H
#define GEMMCHECK_CHECK_CHECK_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "absprod.h"
#include "format_internal.h"
#include "gemmcheck/checker.h"
#include "oracle_face.h"

/* Safety margin on every bound: covers the libm exp() below and leaves room to spare. */
#define MARGIN (1.0 + 0x1p-40)

/* What gck_bound computes once per case (in upward rounding), so that an element costs only
 * its own terms: the same operations in the same order, hence the same bits. */
typedef struct bound_ctx {
    double eo, aa, ab, one_eo_eta, one_aa, one_ab, over, zero_late, fo_min_normal;
    double growth, in;                /* degenerate (gamma = Inf) */
    double g, t_coef, c_coef, e_coef; /* otherwise; e_coef: the narrower epilogue (0: none) */
    bool degenerate, narrow_epilogue;
} bound_ctx;

typedef struct elem_facts {
    gck_bound_terms t;
    double max_term;     /* max over k of |alpha a|, |alpha b|, |a b|, |alpha a b|, and |beta c| */
    double pos, neg;     /* sums of the positive and negative scaled terms, magnitudes */
    double pos_u, neg_u; /* the same for the unscaled products a*b (alpha applied after) */
    bool input_overflow; /* an input exceeds the range it is converted to */
    bool inf_times_flushed; /* an Inf meets a partner that input rounding or DAZ makes 0 */
    bool exact_case;
    double q2;       /* sum_k (a b)^2, or a value above it (rounded up) */
    double bound;    /* the bound of the terms t (bound_of), rounded up */
    double inner;    /* ... without D's own rounding: the arithmetic's part (rounded up) */
    double stat;     /* the statistical tier's allowance without D's rounding (-1: none) */
    bool degenerate; /* ... which is only a magnitude limit (gamma = Inf) */
    bool t_rounded;  /* T from the rounded road (gck_absprod_rounded): a verdict within the band
                      * is settled by the element's own sums (checker.c) */
} elem_facts;

/* What pass 1 of gather needs from one line (a row of op(A), a column of op(B)), computed once
 * per check instead of once per element. */
typedef struct line_facts {
    double maxabs; /* largest |x| (Inf when the line holds one) */
    int32_t qmin;  /* smallest lowest-set-bit exponent of a non-zero value (INT32_MAX: none) */
    bool repr;     /* every value finite and kept by rounding to the input and compute formats */
    bool over;     /* a finite value above what the inputs are converted to */
    bool has_inf;  /* an infinity (then the pairs are looked at: Inf times a flushed partner) */
    bool special;  /* a NaN or an infinity */
} line_facts;

/* The operands prepared for gather: line facts, and op(A) and op(B) as doubles (or floats)
 * laid out along k (op(A)[member][i][k], op(B)[member][j][k]; NULL above the options'
 * copy_limit: read in place). */
typedef struct gather_plan {
    line_facts *fa, *fb;
    void *a, *b;
    bool dense_f; /* a and b hold floats (every value of both input formats is one), else doubles */
    /* large products: sum_k |a||b| of every element by a GEMM, and each line's sum_k |x| (both
     * rounded up, over finite values); NULL: summed per element */
    gck_absprod *abs;
    bool abs_rounded; /* gck_absprod_rounded(abs) */
    double *suma, *sumb;
    bool ab_exact; /* alpha and beta are exact in the epilogue format */
    /* per-case constants of gather: the result grid of the exact-case certificate (see
     * result_grid) */
    int grid_p, grid_qmin;
    double grid_lim;
    /* D's rounding: its format, to nearest (else faithful), flushing allowed */
    const gck_format_info *fo;
    bool nearest, ftz;
    /* the statistical tier (stat_consts): whether it applies, lambda times the compute
     * format's unit roundoff, the weights of sum_k t_k^2 and of S^2 in the partial sums'
     * mean square, beta*c inside every partial sum, the input rounding's weight */
    bool stat_on, beta_sums;
    double stat_lu, kq, ks, in2;
    bool bias_on;               /* the sign test applies (bias_conditions) ... */
    bool bias_rows;             /* ... on units of rows (else of columns): choose_units */
    bool bias_per_member;       /* one unit per line of each member (else shared) */
    bool bias_first_only;       /* only the first member's elements are counted */
    int64_t bias_units;         /* the number of units */
    int qal;                    /* alpha's lowest set bit (INT32_MAX: alpha = 0) */
    bound_ctx bc;               /* the bound's per-case part */
    double ovf_thr, ovf_growth; /* the overflow rules' threshold and growth (see overflow_of) */
    double fc_max, fo_max;      /* the compute and output formats' largest finite values */
    unsigned ord;               /* the model's evaluation orders */
    bool rab, rc;               /* the case reads A and B, C */
    int64_t ars, acs, brs, bcs, crs, ccs; /* op(A), op(B) and C element strides */
    int64_t a_member, b_member, c_member; /* bytes from one batch member to the next */
} gather_plan;

/* The statistical tier's lambda: with it, an element's false alarm probability is at most
 * 3.381 e^(-0.55 c) + 2 e^(-lambda^2 / (2 c)) at c = lambda / sqrt(1.1), below 1e-12
 * (docs/TOLERANCE.md derives it). */
#define STAT_LAMBDA 56.0

/* Where one element's inputs are: row i of op(A) and column j of op(B) along k, as doubles laid
 * out by the plan or read in place. */
typedef struct elem_lines {
    const gck_case *c;
    const char *Ab, *Bb;
    const void *da, *db; /* the plan's copies of the lines: floats when df, else doubles */
    bool df;
    int64_t ars, acs, brs, bcs, i, j;
} elem_lines;

/* What the exact-case certificate needs beyond the element facts. */
typedef struct exact_in {
    int qa, qb;        /* lowest-set-bit exponents of the element's lines (INT32_MAX: none) */
    double maxa, maxb; /* their largest magnitudes */
    double cv, bc;     /* c and |beta c| */
    double r, rcv;     /* |beta/alpha| and |(beta/alpha) c|, rounded up (beta over alpha only) */
    bool over_alpha, rc;
} exact_in;

/* What gather's first pass leaves for its second. */
typedef struct gather_in {
    exact_in x;
    elem_lines e;
    int64_t ra, cb; /* the element's row of op(A) and column of op(B) among all members' */
    bool exact;     /* the exact-case certificate is still possible */
    bool own_sums;  /* the element sums its own terms (no bound from the plan's GEMM) */
} gather_in;

/* Whether a correct implementation could overflow, or form Inf - Inf, in some evaluation
 * order: the growth of a partial sum through its roundings ((1 + eps)^n <= e^(n eps)) against
 * the largest finite value of the compute and output formats. */
typedef struct overflow_facts {
    double growth, thr;
    bool unscaled; /* A*B summed before alpha is applied (|alpha| < 1 then hides an overflow) */
    bool possible; /* some order overflows */
    bool nan;      /* some order forms Inf - Inf or Inf * 0 */
} overflow_facts;

/* The sign test's threshold on its p-value bound. */
#define BIAS_P 1e-12

/* The parts of the bound that are not D's own rounding (call in upward rounding; not for a
 * degenerate bound): the arithmetic's error (*core) and what the near-zero losses and a
 * narrower epilogue add to it (*det). */
void gck_inner_of(const bound_ctx *b, const gck_bound_terms *t, double *core, double *det);

/* The bound of one element's terms (call in upward rounding). */
double gck_bound_of(const bound_ctx *b, const gck_bound_terms *t, bool *degenerate);

void gck_bound_ctx_init(bound_ctx *b, const gck_case *c, const gck_model *m);

double gck_input_eps(const gck_case *c, const gck_model *m);

double gck_element_bound(const gck_case *c, const gck_model *m, const gck_bound_terms *t,
                         bool *degenerate);

/* The facts of element (bi, i, j) whose oracle value is `oracle`; with skip_zero, of the sum
 * without the terms that have an exactly-zero factor (what a zero-skipping BLAS computes). In
 * two passes: gather_lines in the default rounding mode, gather_sums in upward rounding (so
 * that a column of elements changes the mode twice, not each element). */
void gck_gather_lines(const gck_case *c, const gck_support_row *row, const gather_plan *g,
                      const void *A, const void *B, const void *C, int64_t bi, int64_t i, int64_t j,
                      double oracle, elem_facts *f, gather_in *w);

/* Pass 2 (call in upward rounding): the sums the bound and the overflow rules use, the
 * certificate and the bound. */
void gck_gather_sums(const gck_case *c, const gck_support_row *row, const gather_plan *g,
                     int64_t bi, bool skip_zero, elem_facts *f, gather_in *w);

/* What a plain element's verdict needs (gck_plain_run). */
typedef struct plain_facts {
    double inner; /* the hard bound without D's own rounding, as elem_facts' */
    double stat;  /* the statistical allowance without D's rounding (-1: none), as elem_facts' */
    bool t_rounded;
} plain_facts;

/* Whether the plan's elements may be plain (gck_plain_run): A and B read, C not, the sums
 * of |a b| from a GEMM, a finite gamma. */
bool gck_plain_plan(const gather_plan *g);

/* The elements of a run of column j of member bi (at most GCK_PLAIN_RUN: rows[y], |oracle|
 * abs_d[y]) of a plan that gck_plain_plan admits that are plain (call in upward rounding):
 * plain[y] (on entry: whether the element may be plain) stays true where its lines hold no NaN,
 * Inf or value beyond the input range, no overflow rule could apply, and the exact-case
 * certificate is refused by T alone (by T times GCK_ABSPROD_BAND on the rounded road); there
 * p[y] holds the allowances gck_gather_sums would give, without the element's other facts.
 * Returns how many are plain; gck_gather settles the others. */
#define GCK_PLAIN_RUN 64
int gck_plain_run(const gck_case *c, const gather_plan *g, int64_t bi, int64_t j, int n,
                  const int64_t *rows, const double *abs_d, bool *plain, plain_facts *p);

/* Tests: the line facts of float lines taken from their bits (on, the default) or value by
 * value; returns the setting before. How many lines were taken from their bits. */
bool gck_facts_floats(bool on);
long gck_facts_floats_lines(void);

/* Tests: the plain path used where it applies (on, the default) or never; returns the setting
 * before. How many elements it has settled over the process. */
bool gck_check_plain_path(bool on);
long gck_check_plain_settled(void);

/* The verdict of a plain element (gck_plain_run) whose oracle value and result are finite and
 * whose error was computed: true when it passes, with the allowance (the report's bound), the
 * ratio and the statistical ratio (NaN: the tier does not apply) gck_decide gives it. */
bool gck_decide_plain(const gather_plan *g, const gck_oracle_eval *ev, const plain_facts *p,
                      double got, double *bound, double *ratio, double *stat);

/* Both passes for one element; with own_sums, from its own terms (never the plan's GEMM). */
void gck_gather(const gck_case *c, const gck_support_row *row, const gather_plan *g, const void *A,
                const void *B, const void *C, int64_t bi, int64_t i, int64_t j, bool skip_zero,
                bool own_sums, double oracle, elem_facts *f);

gather_plan *gck_gather_plan_new(const gck_case *c, const gck_model *m, const void *A,
                                 const void *B, const gck_check_options *opt, char *note,
                                 size_t len);

void gck_gather_plan_free(gather_plan *g);

/* Whether e is worse than the worst kept of its kind: by error/bound, or by error/statistical
 * allowance for improbable errors (the first one of the other kinds is kept). */
bool gck_worse(gck_kind k, const gck_element_report *e, const gck_element_report *than);

/* Decide one element against one oracle evaluation: true when it passes, else false with the
 * kind of finding in *kind. */
bool gck_decide(const gather_plan *g, const gck_oracle_eval *ev, const elem_facts *f, double got,
                gck_element_report *e, gck_kind *kind);

/* Whether a backend that does compute alpha * (A*B) under alpha = 0 can get NaN: 0 * NaN,
 * 0 * Inf, or 0 times a product sum that overflows in some evaluation order. */
bool gck_alpha0_may_nan(const gck_case *c, const gck_model *m, const void *A, const void *B,
                        int64_t bi, int64_t i, int64_t j);

void gck_note_failure(gck_check_result *r, gck_kind k, const gck_element_report *e);

int gck_bin_of_ratio(double error, double ratio);

overflow_facts gck_overflow_of(const gather_plan *gp, const elem_facts *f);

#endif
