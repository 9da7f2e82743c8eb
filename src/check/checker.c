/* The checker: the hard bounds of docs/TOLERANCE.md from the declared model, the exact-case
 * certificate, the non-finite rules, exact errors from the oracle. Bounds are evaluated with the
 * FPU rounding upward (this file is compiled with -frounding-math); every quantity in them is a sum
 * or product of non-negative numbers, so each rounding can only make the bound larger. */
#include "gemmcheck/checker.h"

#include <fenv.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "absprod.h"
#include "decode.h"
#include "format_internal.h"
#include "fpenv.h"
#include "mix.h"
#include "oracle_face.h"
#include "parallel.h"
#include "stash.h"
#include "text.h"
#include "tiles.h"

static const char *const kind_names[GCK_KIND_COUNT] = {"out_of_tolerance",
                                                       "nonfinite_mismatch",
                                                       "out_of_bounds_write",
                                                       "input_modified",
                                                       "crash",
                                                       "hang",
                                                       "nondeterministic",
                                                       "unimplemented",
                                                       "error",
                                                       "fpenv_modified",
                                                       "improbable_error"};

const char *gck_kind_name(gck_kind k) { return (unsigned)k < GCK_KIND_COUNT ? kind_names[k] : "?"; }

bool gck_kind_parse(const char *name, gck_kind *out) {
    for (int k = 0; k < GCK_KIND_COUNT; k++)
        if (strcmp(name, kind_names[k]) == 0) {
            *out = (gck_kind)k;
            return true;
        }
    return false;
}

/* gamma(n, eps) = n eps / (1 - n eps), rounded up; Inf when n eps >= 1. FE_UPWARD only. */
static double gamma_up(double n, double eps) {
    double ne = n * eps;
    if (ne >= 1.0) return INFINITY;
    double den = -(ne - 1.0); /* ne - 1 rounded up, negated: 1 - ne rounded down */
    return ne / den;
}

/* Safety margin on every bound: covers the libm exp() below and leaves room to spare. */
#define MARGIN (1.0 + 0x1p-40)

static double input_eps(const gck_case *c, const gck_model *m) {
    if (!m->inputs_rounded) return 0.0;
    int pin = gck_format_get(m->input_format)->precision;
    int pa = gck_format_get(c->type_a)->precision, pb = gck_format_get(c->type_b)->precision;
    return pin < (pa > pb ? pa : pb) ? gck_format_get(m->input_format)->epsilon : 0.0;
}

/* What gck_bound computes once per case (in upward rounding), so that an element costs only
 * its own terms: the same operations in the same order, hence the same bits. */
typedef struct bound_ctx {
    double eo, aa, ab, one_eo_eta, one_aa, one_ab, over, zero_late, fo_min_normal;
    double growth, in;                /* degenerate (gamma = Inf) */
    double g, t_coef, c_coef, e_coef; /* otherwise; e_coef: the narrower epilogue (0: none) */
    bool degenerate, narrow_epilogue;
} bound_ctx;

static void bound_ctx_init(bound_ctx *b, const gck_case *c, const gck_model *m) {
    int old = fegetround();
    fesetround(FE_UPWARD);
    const gck_format_info *fo = gck_format_get(gck_case_type(c, GCK_D));
    const gck_format_info *fc = gck_format_get(m->compute);
    double eo = fo->epsilon, ec = fc->epsilon, ein = input_eps(c, m);
    double K = (double)c->k, aa = fabs(c->alpha), ab = fabs(c->beta);
    double eta = (m->ftz || m->daz) ? fc->min_normal : 0.5 * fc->min_subnormal;
    double g = gamma_up(2 * K + 4, ec);
    /* Orders that apply alpha after partial sums were rounded (alpha on the sum, or
     * alpha*(A*B + (beta/alpha)*C)) scale those near-zero losses by |alpha|, and the latter
     * also the rounding of (beta/alpha)*c. */
    unsigned ord = gck_model_orders(m);
    double late = (ord & (GCK_ORDER_ALPHA_ON_SUM | GCK_ORDER_BETA_OVER_ALPHA)) ? 1 + aa : 1;
    *b = (bound_ctx){.eo = eo, .aa = aa, .ab = ab, .g = g};
    b->over = (ord & GCK_ORDER_BETA_OVER_ALPHA) ? 1 + aa : 1;
    b->one_eo_eta = (1 + eo) * eta;
    b->one_aa = 1 + aa;
    b->one_ab = 1 + ab;
    b->zero_late = (2 * K + 8) * late;
    b->fo_min_normal = fo->min_normal;
    b->degenerate = isinf(g);
    if (b->degenerate) {
        /* Only a magnitude limit: every partial sum grows by at most (1+ec) per rounding. */
        b->growth = exp((2 * K + 4) * ec);
        b->in = (1 + ein) * (1 + ein);
    } else {
        double gin = ein > 0 ? gamma_up(2, ein) : 0.0;
        b->t_coef = (1 + eo) * (g + gin * (1 + g)) * aa;
        b->c_coef = (1 + eo) * g * ab;
        const gck_format_info *fe = gck_format_get(m->epilogue);
        b->narrow_epilogue = fe->precision < fc->precision; /* alpha*AB rounded to it first */
        if (b->narrow_epilogue) b->e_coef = (1 + eo) * gamma_up(3, fe->epsilon);
    }
    fesetround(old);
}

/* The parts of the bound that are not D's own rounding (call in upward rounding; not for a
 * degenerate bound): the arithmetic's error (*core) and what the near-zero losses and a
 * narrower epilogue add to it (*det). */
static void inner_of(const bound_ctx *b, const gck_bound_terms *t, double *core, double *det) {
    double near_zero =
        b->one_eo_eta * (b->one_aa * t->sum_ab + b->one_ab * t->abs_c * b->over + b->zero_late);
    *core = b->t_coef * t->T + b->c_coef * t->abs_c;
    *det = near_zero;
    if (b->narrow_epilogue) *det += b->e_coef * (b->aa * t->T * (1 + b->g) + b->ab * t->abs_c);
}

/* The bound of one element's terms (call in upward rounding). */
static double bound_of(const bound_ctx *b, const gck_bound_terms *t, bool *degenerate) {
    double aa = b->aa, ab = b->ab;
    double near_zero =
        b->one_eo_eta * (b->one_aa * t->sum_ab + b->one_ab * t->abs_c * b->over + b->zero_late);
    double bound;
    *degenerate = b->degenerate;
    if (b->degenerate) {
        bound = b->growth * (aa * t->T * b->in + ab * t->abs_c) * (1 + b->eo) + near_zero +
                b->fo_min_normal;
    } else {
        bound = b->eo * t->abs_d * (1 + b->eo) + b->t_coef * t->T + b->c_coef * t->abs_c +
                near_zero + b->fo_min_normal;
        if (b->narrow_epilogue) bound += b->e_coef * (aa * t->T * (1 + b->g) + ab * t->abs_c);
    }
    return bound * MARGIN;
}

static double element_bound(const gck_case *c, const gck_model *m, const gck_bound_terms *t,
                            bool *degenerate) {
    gck_case k = *c;
    k.k = t->k; /* the terms' own K */
    bound_ctx b;
    bound_ctx_init(&b, &k, m);
    int old = fegetround();
    fesetround(FE_UPWARD);
    double bound = bound_of(&b, t, degenerate);
    fesetround(old);
    return bound;
}

/* Exponent of the lowest set bit of x; x must be finite and non-zero. Inline: the line facts
 * take it of every value. */
static inline __attribute__((always_inline)) int lsb_exp(double x) {
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    bool special;
    return strip(decode_raw(u, 52, 11, &special)).e; /* the shared decoder of stored values */
}

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

/* The operands prepared for gather: line facts, and op(A) and op(B) as doubles laid out along k
 * (op(A)[member][i][k], op(B)[member][j][k]; NULL above the options' copy_limit: read in
 * place). */
typedef struct gather_plan {
    line_facts *fa, *fb;
    double *a, *b;
    /* large products: sum_k |a||b| of every element by a GEMM, and each line's sum_k |x| (both
     * rounded up, over finite values); NULL: summed per element */
    gck_absprod *abs;
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

static void gather_plan_free(gather_plan *g) {
    if (!g) return;
    free(g->fa);
    free(g->fb);
    free(g->a);
    free(g->b);
    gck_absprod_free(g->abs);
    free(g->suma);
    free(g->sumb);
    free(g);
}

/* sum_k |x| of each of n lines of K doubles, over finite values, rounded up; the lines cut
 * among the cores. */
typedef struct sums_job {
    const double *x;
    int64_t k;
    double *s;
} sums_job;

static void sums_part(void *arg, int part, int64_t lo, int64_t hi) {
    (void)part;
    const sums_job *j = arg;
    int old = fegetround();
    fesetround(FE_UPWARD);
    for (int64_t l = lo; l < hi; l++) {
        const double *x = j->x + l * j->k;
        double t = 0;
        for (int64_t k = 0; k < j->k; k++) t += isfinite(x[k]) ? fabs(x[k]) : 0.0;
        j->s[l] = t;
    }
    fesetround(old);
}

static double *line_sums(const double *x, int64_t n, int64_t K) {
    double *s = malloc((size_t)(n > 0 ? n : 1) * sizeof *s);
    if (!s) return NULL;
    sums_job j = {x, K, s};
    gck_parallel_for(gck_parallel_parts(n, K), n, &j, sums_part);
    return s;
}

/* The lines of operand x (GCK_A or GCK_B) of every stored batch member: facts, and the values
 * into `dense` when given; the lines cut among the cores. Runs in the default rounding mode. */
typedef struct facts_job {
    const gck_case *c;
    const gck_model *m;
    gck_format t, infmt;
    const char *X;
    int64_t lines, ls, ks, stride;
    double in_max;
    bool kept; /* every finite value of t is kept by the input and compute formats */
    line_facts *facts;
    double *dense;
} facts_job;

/* facts_part for operands stored as `fmt` (a constant where facts_part calls it). */
static inline __attribute__((always_inline)) void facts_as(const facts_job *j, int64_t lo,
                                                           int64_t hi, gck_format fmt) {
    const gck_model *m = j->m;
    for (int64_t t = lo; t < hi; t++) {
        int64_t b = t / j->lines, l = t % j->lines;
        const char *base = j->X + b * j->stride;
        line_facts f = {0, INT32_MAX, true, false, false, false};
        double *d = j->dense ? j->dense + t * j->c->k : NULL;
        for (int64_t k = 0; k < j->c->k; k++) {
            double v = gck_fmt_load_as(base, fmt, l * j->ls + k * j->ks), av = fabs(v);
            if (d) d[k] = v;
            if (isfinite(av) && av > j->in_max) f.over = true;
            if (isinf(av)) f.has_inf = true;
            if (!isfinite(av)) f.special = true;
            if (av > f.maxabs) f.maxabs = av;
            if (!f.repr) continue;
            if (!isfinite(v) || (!j->kept && (gck_fmt_round_to(v, j->infmt) != v ||
                                              gck_fmt_round_to(v, m->compute) != v)))
                f.repr = false;
            else if (v != 0 && lsb_exp(v) < f.qmin)
                f.qmin = lsb_exp(v);
        }
        j->facts[t] = f;
    }
}

static void facts_part(void *arg, int part, int64_t lo, int64_t hi) {
    (void)part;
    GCK_FOR_EACH_STORED(((const facts_job *)arg)->t, facts_as, arg, lo, hi)
}

static void line_facts_of(const gck_case *c, const gck_model *m, gck_operand x, const void *X,
                          int64_t members, line_facts *facts, double *dense) {
    facts_job j = {.c = c, .m = m, .X = X, .facts = facts, .dense = dense};
    j.t = x == GCK_A ? c->type_a : c->type_b;
    j.lines = x == GCK_A ? c->m : c->n;
    int64_t rs, cs;
    gck_case_op_strides(c, x, &rs, &cs);
    j.ls = x == GCK_A ? rs : cs, j.ks = x == GCK_A ? cs : rs; /* (line, k) at line·ls+k·ks */
    j.stride = (x == GCK_A ? c->stride_a : c->stride_b) * gck_format_get(j.t)->storage_bytes;
    const gck_format_info *fc = gck_format_get(m->compute);
    j.infmt = m->inputs_rounded ? m->input_format : m->compute;
    const gck_format_info *fin = gck_format_get(j.infmt);
    j.in_max = fin->max < fc->max ? fin->max : fc->max;
    /* every finite value of t is kept by a format at least as precise with at least its range:
     * then no value needs rounding to be tried */
    const gck_format_info *ft = gck_format_get(j.t);
    j.kept = fin->precision >= ft->precision && fc->precision >= ft->precision &&
             fin->emax >= ft->emax && fc->emax >= ft->emax &&
             fin->min_subnormal <= ft->min_subnormal && fc->min_subnormal <= ft->min_subnormal;
    gck_parallel_for(gck_parallel_parts(members * j.lines, c->k), members * j.lines, &j,
                     facts_part);
}

/* The smallest precision of the formats a result passes through, the lowest exponent of the
 * grid they all keep, and the largest finite value they all hold. */
static void result_grid(const gck_case *c, const gck_model *m, int *p, int *qmin, double *lim) {
    const gck_format_info *fc = gck_format_get(m->compute);
    const gck_format_info *fin = gck_format_get(m->inputs_rounded ? m->input_format : m->compute);
    const gck_format_info *fo = gck_format_get(gck_case_type(c, GCK_D));
    const gck_format_info *fe = gck_format_get(m->epilogue);
    *p = fc->precision < fo->precision ? fc->precision : fo->precision;
    if (fe->precision < *p) *p = fe->precision;
    if (m->inputs_rounded && fin->precision < *p) *p = fin->precision;
    *qmin = fc->emin - fc->precision + 1;
    int qo = fo->emin - fo->precision + 1;
    if (qo > *qmin) *qmin = qo;
    if (m->ftz || m->daz) *qmin = fc->emin > fo->emin ? fc->emin : fo->emin;
    *lim = fmin(fc->max, fmin(fo->max, fe->max));
}

/* The per-case facts each element's gather and decide use, looked up once. */
static void case_consts(gather_plan *g, const gck_case *c, const gck_model *m) {
    g->ab_exact = gck_fmt_round_to(c->alpha, m->epilogue) == c->alpha &&
                  gck_fmt_round_to(c->beta, m->epilogue) == c->beta;
    result_grid(c, m, &g->grid_p, &g->grid_qmin, &g->grid_lim);
    g->qal = c->alpha != 0 ? lsb_exp(c->alpha) : INT32_MAX;
    bound_ctx_init(&g->bc, c, m);
    const gck_format_info *fc = gck_format_get(m->compute);
    const gck_format_info *fo = gck_format_get(gck_case_type(c, GCK_D));
    g->fc_max = fc->max;
    g->fo_max = fo->max;
    /* overflow_of's growth is a model quantity, not a bound to round up: to nearest. It takes
     * the input rounding too: A and B rounded to a narrower format (bf16, tf32) can grow each
     * product by (1 + eps_in)^2, enough to carry a sum just below the largest finite value
     * over it (cuBLAS's FAST_16BF and FAST_TF32 compute types did, on an H100). */
    g->ovf_thr = fmin(fc->max, fo->max);
    int old = fegetround();
    fesetround(FE_TONEAREST);
    g->ovf_growth =
        exp((2 * (double)c->k + 4) * fc->epsilon + 2 * input_eps(c, m)) * MARGIN * MARGIN;
    fesetround(old);
    g->fo = fo;
    g->nearest = m->rounding == GCK_ROUND_NEAREST;
    g->ftz = m->ftz;
    g->ord = gck_model_orders(m);
    g->rab = gck_case_reads_ab(c);
    g->rc = gck_case_reads_c(c);
    gck_case_op_strides(c, GCK_A, &g->ars, &g->acs);
    gck_case_op_strides(c, GCK_B, &g->brs, &g->bcs);
    gck_case_op_strides(c, GCK_C, &g->crs, &g->ccs);
    g->a_member = c->stride_a * gck_format_get(c->type_a)->storage_bytes;
    g->b_member = c->stride_b * gck_format_get(c->type_b)->storage_bytes;
    g->c_member = c->stride_c * gck_format_get(c->type_c)->storage_bytes;
}

/* The statistical tier's lambda: with it, an element's false alarm probability is at most
 * 3.381 e^(-0.55 c) + 2 e^(-lambda^2 / (2 c)) at c = lambda / sqrt(1.1), below 1e-12
 * (docs/TOLERANCE.md derives it). */
#define STAT_LAMBDA 56.0
/* The sign test's threshold on its p-value bound. */
#define BIAS_P 1e-12
/* Whether a sample of the operands looks random: few integers, few powers of two, few
 * repeated values among their non-zero finite values (the generator's int, cancellation-free
 * structured data and hand-made matrices fail it). mixed[0] and mixed[1]: A's and B's sample
 * holds between a quarter and three quarters negative values (the sign test takes an operand
 * with mixed signs for sign-symmetric; all-positive data, such as activations after a ReLU,
 * give errors that lean under round to nearest). */
static bool looks_random(const gck_case *c, const void *A, const void *B, bool mixed[2]) {
    enum { N = 256 };
    double v[2 * N];
    int n = 0, ints = 0, pows = 0, nx[2] = {0, 0}, neg[2] = {0, 0};
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)c->k;
    for (int x = 0; x < 2; x++) {
        int64_t rs, cs, lines = x == 0 ? c->m : c->n;
        gck_case_op_strides(c, x == 0 ? GCK_A : GCK_B, &rs, &cs);
        for (int y = 0; y < N; y++) {
            h = h * 6364136223846793005ull + 1442695040888963407ull;
            int64_t l = (int64_t)((h >> 33) % (uint64_t)lines),
                    k = (int64_t)((h >> 11) % (uint64_t)c->k);
            double a = x == 0 ? gck_fmt_load(A, c->type_a, l * rs + k * cs)
                              : gck_fmt_load(B, c->type_b, k * rs + l * cs);
            if (a == 0 || !isfinite(a)) continue;
            int e;
            ints += a == nearbyint(a);
            pows += fabs(frexp(a, &e)) == 0.5;
            nx[x]++;
            neg[x] += a < 0;
            v[n++] = a;
        }
    }
    for (int x = 0; x < 2; x++)
        mixed[x] = nx[x] >= 16 && 4 * neg[x] >= nx[x] && 4 * neg[x] <= 3 * nx[x];
    if (n < 16 || 2 * ints > n || 4 * pows > n) return false;
    int distinct = 0; /* values met once before among the first 64 compared */
    for (int y = 0; y < n; y++) {
        bool seen = false;
        for (int z = y > 64 ? y - 64 : 0; z < y && !seen; z++) seen = v[z] == v[y];
        distinct += !seen;
    }
    return 4 * distinct >= n;
}

/* The sign test. Under round to nearest (an odd function, ties to even included), negating
 * row i of op(A) together with row i of C negates the exact value of row i of D and every
 * rounding on the way to it (whatever the order of evaluation, the input rounding, or a
 * rounding shared along a line), so each error of that row changes sign. When A's entries are
 * independent and sign-symmetric (and C's, when C is read), the rows of errors are therefore
 * independent given B, and each as likely as its negation: conditioned on the sums R_u of the
 * error signs (+1 above the exact value, -1 below) of each unit u of rows, the signs of the R_u
 * are fair coins, and Hoeffding's inequality bounds P(|sum R_u| >= t) by
 * 2 exp(-t^2 / (2 sum R_u^2)). This holds for any dependence between the elements of a row
 * (they share A's row) and between rows (they share B). The same holds for columns with B
 * sign-symmetric; the test takes the side with more units (a choice made from the shape alone,
 * so no correction is owed). Errors nearer to or farther from zero are counted, not tested: no
 * symmetry makes them equally likely, and they are not (terms absorbed by a larger partial sum
 * share its sign more often than not: 1948 of 3434 errors toward zero on a correct bf16
 * accumulation of log-uniform data, with 1695 above and 1739 below). */

/* Whether the sign test applies: alpha != 0, K > 0, C sign-symmetric when it is read (declared
 * random), and A or B sign-symmetric (vouched for by the caller, else a sample with mixed
 * signs). */
static bool bias_conditions(const gather_plan *g, const gck_case *c, gck_stat_data d,
                            const bool mixed[2]) {
    return c->k > 0 && c->alpha != 0 && (mixed[0] || mixed[1]) &&
           (d == GCK_STAT_RANDOM || !g->rc || c->beta == 0);
}

/* How the batch members' lines form the sign test's units for operand x (A: rows, B:
 * columns): one unit per line shared by every member (x broadcast), one per line of each
 * member (x's members disjoint), or the first member's lines only (x's members overlap, or C
 * is read and a unit would not own its elements of C). */
typedef enum { UNITS_SHARED, UNITS_PER_MEMBER, UNITS_FIRST } unit_mode;

static unit_mode units_of(const gather_plan *g, const gck_case *c, gck_operand x) {
    if (c->batch <= 1) return UNITS_SHARED;
    int64_t s = llabs(gck_case_stride(c, x)), sc = llabs(gck_case_stride(c, GCK_C));
    bool c_own = !g->rc || c->beta == 0 || sc >= gck_case_footprint(c, GCK_C);
    if (s == 0) return c_own || sc == 0 ? UNITS_SHARED : UNITS_FIRST;
    return s >= gck_case_footprint(c, x) && c_own ? UNITS_PER_MEMBER : UNITS_FIRST;
}

/* The sign test's side and units (bias_conditions has said it applies). */
static void choose_units(gather_plan *g, const gck_case *c, const bool mixed[2]) {
    unit_mode ma = units_of(g, c, GCK_A), mb = units_of(g, c, GCK_B);
    int64_t ua = mixed[0] ? (ma == UNITS_PER_MEMBER ? c->batch : 1) * c->m : 0,
            ub = mixed[1] ? (mb == UNITS_PER_MEMBER ? c->batch : 1) * c->n : 0;
    g->bias_rows = ua >= ub;
    unit_mode mode = g->bias_rows ? ma : mb;
    g->bias_units = g->bias_rows ? ua : ub;
    g->bias_per_member = mode == UNITS_PER_MEMBER;
    g->bias_first_only = mode == UNITS_FIRST;
}

/* The statistical tier's per-case constants, and whether it applies (else why not, in note). */
static void stat_consts(gather_plan *g, const gck_case *c, const gck_model *m, gck_stat_data d,
                        const void *A, const void *B, char *note, size_t len) {
    const char *why = NULL;
    if (m->rounding != GCK_ROUND_NEAREST)
        why = "the model declares faithful rounding, not to nearest";
    else if (m->acc != GCK_ACC_SCALAR)
        why = "the model declares block-FMA accumulation";
    else if (d == GCK_STAT_OFF)
        why = "turned off: the operands are structured (int, cancel, sub, big) or declared not "
              "random";
    bool mixed[2] = {d != GCK_STAT_AUTO, d != GCK_STAT_AUTO}; /* vouched for by the caller */
    if (!why && d == GCK_STAT_AUTO && g->rab && c->k > 0 && !looks_random(c, A, B, mixed))
        why = "A and B do not look random (integers, powers of two or repeated values)";
    if (d == GCK_STAT_AUTO) d = GCK_STAT_RANDOM_AB; /* C is not tested */
    if (why) {
        snprintf(note, len, "%s", why);
        return;
    }
    g->stat_on = true;
    const gck_format_info *fc = gck_format_get(m->compute);
    double K = (double)c->k, ein = input_eps(c, m);
    int old = fegetround();
    fesetround(FE_UPWARD);
    g->stat_lu = STAT_LAMBDA * ldexp(fc->epsilon, -1);
    g->kq = (K + 1) / 2;
    g->ks = K > 0 ? (K + 1) * (2 * K + 1) / (6 * K) : 0;
    g->in2 = ein > 0 ? 2 * (ein / fc->epsilon) * (ein / fc->epsilon) : 0;
    fesetround(old);
    g->beta_sums = (gck_model_orders(m) & GCK_ORDER_BETA_FIRST) && g->rc && c->beta != 0;
    g->bias_on = bias_conditions(g, c, d, mixed);
    if (g->bias_on) choose_units(g, c, mixed);
}

static gather_plan *gather_plan_new(const gck_case *c, const gck_model *m, const void *A,
                                    const void *B, const gck_check_options *opt, char *note,
                                    size_t len) {
    double copy_limit = opt->copy_limit;
    gather_plan *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    case_consts(g, c, m);
    stat_consts(g, c, m, opt->stat_data, A, B, note, len);
    if (!g->rab) return g;
    int64_t ma = c->stride_a == 0 ? 1 : c->batch, mb = c->stride_b == 0 ? 1 : c->batch;
    int64_t la = ma * c->m, lb = mb * c->n;
    g->fa = malloc((size_t)la * sizeof *g->fa);
    g->fb = malloc((size_t)lb * sizeof *g->fb);
    if (!g->fa || !g->fb) {
        gather_plan_free(g);
        return NULL;
    }
    double limit = copy_limit > 0 ? copy_limit : 1073741824.0;
    if ((double)(la + lb) * (double)c->k * (double)sizeof(double) <= limit) {
        g->a = malloc((size_t)(la * c->k) * sizeof *g->a);
        g->b = malloc((size_t)(lb * c->k) * sizeof *g->b);
        if (!g->a || !g->b) { /* not needed: values are then read in place */
            free(g->a);
            free(g->b);
            g->a = g->b = NULL;
        }
    }
    line_facts_of(c, m, GCK_A, A, ma, g->fa, g->a);
    line_facts_of(c, m, GCK_B, B, mb, g->fb, g->b);
    if ((g->abs = gck_absprod_new(c, g->a, g->b)) &&
        (!(g->suma = line_sums(g->a, la, c->k)) || !(g->sumb = line_sums(g->b, lb, c->k)))) {
        gck_absprod_free(g->abs); /* out of memory: summed per element */
        g->abs = NULL;
    }
    return g;
}

/* Where one element's inputs are: row i of op(A) and column j of op(B) along k, as doubles laid
 * out by the plan or read in place. */
typedef struct elem_lines {
    const gck_case *c;
    const char *Ab, *Bb;
    const double *da, *db;
    int64_t ars, acs, brs, bcs, i, j;
} elem_lines;

static inline double line_a(const elem_lines *e, int64_t k) {
    return e->da ? e->da[k] : gck_fmt_load(e->Ab, e->c->type_a, e->i * e->ars + k * e->acs);
}
static inline double line_b(const elem_lines *e, int64_t k) {
    return e->db ? e->db[k] : gck_fmt_load(e->Bb, e->c->type_b, k * e->brs + e->j * e->bcs);
}

/* Whether an Inf meets a finite non-zero partner that input rounding or DAZ makes 0. */
static bool inf_meets_flushed(const elem_lines *e, const gck_model *m) {
    gck_format infmt = m->inputs_rounded ? m->input_format : m->compute;
    double min_normal = gck_format_get(infmt)->min_normal;
    for (int64_t k = 0; k < e->c->k; k++) {
        double fa = fabs(line_a(e, k)), fb = fabs(line_b(e, k));
        if (isinf(fa) == isinf(fb)) continue;
        double partner = isinf(fa) ? fb : fa;
        if (partner != 0 && ((m->inputs_rounded && gck_fmt_round_to(partner, infmt) == 0) ||
                             (m->daz && partner < min_normal)))
            return true;
    }
    return false;
}

/* The sums over k the bound and the overflow rules use (call in upward rounding): T, sum_ab,
 * the scaled terms by sign, the unscaled products by sign, and the largest quantity a declared
 * order forms from a term. */
static void sum_terms(const elem_lines *e, unsigned ord, bool skip_zero, elem_facts *f) {
    double aa = fabs(e->c->alpha);
    bool alpha_neg = signbit(e->c->alpha);
    bool unscaled = ord & (GCK_ORDER_ALPHA_ON_SUM | GCK_ORDER_ALPHA_ON_PRODUCT),
         on_operand = ord & GCK_ORDER_ALPHA_ON_OPERAND;
    double T = 0, sum_ab = 0, pos = 0, neg = 0, pos_u = 0, neg_u = 0, max_term = 0, q2 = 0;
    for (int64_t k = 0; k < e->c->k; k++) {
        double a = line_a(e, k), b = line_b(e, k);
        if (skip_zero && (a == 0 || b == 0)) continue;
        double fa = fabs(a), fb = fabs(b), ab = fa * fb, sab = aa * ab;
        T += ab;
        q2 += ab * ab;
        sum_ab += fa + fb;
        if (isfinite(a) && isfinite(b)) { /* terms of finite inputs, by sign (an Inf here
                                           * means the term overflows double: possible) */
            /* selected, not branched on: random signs would mispredict half the time
             * (adding +0 changes no sum, which never holds -0) */
            bool neg_ab = (bool)signbit(a) != (bool)signbit(b), neg_s = neg_ab != alpha_neg;
            neg += neg_s ? sab : 0.0;
            pos += neg_s ? 0.0 : sab;
            neg_u += neg_ab ? ab : 0.0;
            pos_u += neg_ab ? 0.0 : ab;
            /* the largest quantity a declared order forms from this term (no NaN here) */
            double q = sab;
            if (on_operand) q = fmax(q, fmax(aa * fa, aa * fb));
            if (unscaled && ab > q) q = ab;
            if (q > max_term) max_term = q;
        }
    }
    f->t.T = T;
    f->t.sum_ab = sum_ab;
    f->q2 = q2;
    f->pos = pos;
    f->neg = neg;
    f->pos_u = pos_u;
    f->neg_u = neg_u;
    f->max_term = max_term;
}

/* What the exact-case certificate needs beyond the element facts. */
typedef struct exact_in {
    int qa, qb;        /* lowest-set-bit exponents of the element's lines (INT32_MAX: none) */
    double maxa, maxb; /* their largest magnitudes */
    double cv, bc;     /* c and |beta c| */
    double r, rcv;     /* |beta/alpha| and |(beta/alpha) c|, rounded up (beta over alpha only) */
    bool over_alpha, rc;
} exact_in;

/* Whether 0 <= M < 2^E, 2^E formed from its bits (no libm call per element). */
static bool below_pow2(double M, int64_t E) {
    if (E > 1023) return !isnan(M) && M < INFINITY;
    if (E < -1074) return false;
    uint64_t bits = E >= -1022 ? (uint64_t)(E + 1023) << 52 : UINT64_C(1) << (E + 1074);
    double p;
    memcpy(&p, &bits, sizeof p);
    return M < p;
}

/* The exact-case certificate (call in upward rounding; p: the smallest precision, qmin: the
 * lowest grid exponent any format involved keeps): every quantity any evaluation order forms
 * (inputs, products of subsets of {alpha, a, b} and of {beta, c}, partial sums) is a multiple of
 * 2^q and at most M in magnitude; with M < 2^(q+p) and 2^q on both grids, all are
 * representable. */
static bool exact_certificate(const gck_case *c, const gck_model *m, const gather_plan *g,
                              const exact_in *x, const elem_facts *f) {
    int p = g->grid_p, qmin = g->grid_qmin;
    double lim = g->grid_lim, aa = fabs(c->alpha);
    /* the smallest sum over the non-empty subsets of {a, b, alpha} whose exponents are set: the
     * negative ones together, or the smallest when none is negative */
    const int cand[] = {x->qa, x->qb, g->qal};
    int q = INT32_MAX;
    long neg = 0;
    bool any_neg = false;
    for (int y = 0; y < 3; y++) {
        if (cand[y] == INT32_MAX) continue;
        if (cand[y] < 0)
            neg += cand[y], any_neg = true;
        else if (cand[y] < q)
            q = cand[y];
    }
    if (any_neg) q = (int)neg;
    if (x->rc && x->cv != 0) {
        int qc = lsb_exp(x->cv), qbe = lsb_exp(c->beta);
        if (qc < q) q = qc;
        if (qbe < q) q = qbe;
        if (qc + qbe < q) q = qc + qbe;
    }
    /* M below is at least T and q only falls: a T at or above 2^(q+p) already settles it (the
     * common case of a long sum, decided without the rest) */
    if (q != INT32_MAX && !isnan(f->t.T) && !below_pow2(f->t.T, (int64_t)q + p)) return false;
    double M = fmax(aa * f->t.T + x->bc, f->t.T);
    if (x->over_alpha) {
        /* beta/alpha must itself be exact; then (beta/alpha)*c and the partial sums of
         * A*B + (beta/alpha)*c join the grid and the range */
        double rq = c->beta / c->alpha, up = fma(rq, c->alpha, -c->beta);
        fesetround(FE_DOWNWARD);
        double down = fma(rq, c->alpha, -c->beta); /* both 0: rq*alpha == beta exactly */
        fesetround(FE_TONEAREST);
        bool ok = up == 0 && down == 0 && gck_fmt_round_to(rq, m->compute) == rq &&
                  gck_fmt_round_to(rq, m->epilogue) == rq;
        fesetround(FE_UPWARD);
        if (!ok) return false;
        int qr = lsb_exp(rq);
        if (qr < q) q = qr;
        if (x->cv != 0 && qr + lsb_exp(x->cv) < q) q = qr + lsb_exp(x->cv);
        M = fmax(M, fmax(x->r, f->t.T + x->rcv));
    }
    M = fmax(M, fmax(aa * x->maxa, aa * x->maxb));
    M = fmax(M, fmax(fmax(x->maxa, x->maxb), aa));
    if (x->rc) M = fmax(M, fmax(fmax(fabs(c->beta), f->t.abs_c), x->bc));
    if (q == INT32_MAX) q = qmin; /* everything is zero */
    return q >= qmin && M <= lim && below_pow2(M, (int64_t)q + p);
}

/* The term beta*c (call in upward rounding) into the sums by sign and the largest quantity;
 * under beta over alpha also (beta/alpha)*c into the unscaled sums. */
static void add_c_term(const gck_case *c, exact_in *x, elem_facts *f) {
    x->bc = fabs(c->beta) * f->t.abs_c;
    if (!isfinite(x->cv)) return;
    if (x->bc > f->max_term) f->max_term = x->bc;
    if ((signbit(x->cv) != signbit(c->beta)))
        f->neg += x->bc;
    else
        f->pos += x->bc;
    if (x->over_alpha) { /* the unscaled sum A*B + (beta/alpha)*c, and beta/alpha */
        x->r = fabs(c->beta) / fabs(c->alpha);
        x->rcv = x->r * f->t.abs_c;
        f->max_term = fmax(f->max_term, fmax(x->r, x->rcv));
        bool neg_r = (signbit(x->cv) != signbit(c->beta)) != (bool)signbit(c->alpha);
        f->neg_u += neg_r ? x->rcv : 0.0;
        f->pos_u += neg_r ? 0.0 : x->rcv;
    }
}

/* Whether a correct implementation could overflow, or form Inf - Inf, in some evaluation
 * order: the growth of a partial sum through its roundings ((1 + eps)^n <= e^(n eps)) against
 * the largest finite value of the compute and output formats. */
typedef struct overflow_facts {
    double growth, thr;
    bool unscaled; /* A*B summed before alpha is applied (|alpha| < 1 then hides an overflow) */
    bool possible; /* some order overflows */
    bool nan;      /* some order forms Inf - Inf or Inf * 0 */
} overflow_facts;

static overflow_facts overflow_of(const gather_plan *gp, const elem_facts *f) {
    overflow_facts x;
    x.thr = gp->ovf_thr;
    x.growth = gp->ovf_growth;
    double g = x.growth, thr = x.thr;
    x.unscaled = (f->pos_u + f->neg_u) * g >= thr;
    x.possible =
        f->input_overflow || f->max_term >= thr || x.unscaled || (f->pos + f->neg) * g >= thr;
    x.nan = f->input_overflow || f->max_term >= thr || (f->pos * g >= thr && f->neg * g >= thr) ||
            (f->pos_u * g >= thr && f->neg_u * g >= thr) ||
            (x.unscaled && (f->pos + f->neg) * g >= thr);
    return x;
}

/* The sums from the plan's GEMM, for an element of a large product whose lines hold no NaN or
 * Inf (call in upward rounding): T and sum_ab rounded up, and for the overflow rules values no
 * smaller than the true ones: every rule compares them with the overflow threshold, and when
 * one could reach it (near_overflow) the element is summed term by term instead. False when
 * the element is not covered. */
static bool fast_terms(const gck_case *c, const gather_plan *g, const exact_in *x, int64_t ra,
                       int64_t cb, int64_t bi, int64_t i, int64_t j, unsigned ord, elem_facts *f) {
    if (!g->abs || g->fa[ra].special || g->fb[cb].special) return false;
    double T = gck_absprod_bound(g->abs, bi, i, j), aa = fabs(c->alpha);
    if (!isfinite(T)) return false;
    f->t.T = T;
    f->t.sum_ab = g->suma[ra] + g->sumb[cb];
    f->q2 = x->maxa * x->maxb * T; /* (ab)^2 <= max|a| max|b| |ab| */
    f->pos = f->neg = aa * T;
    f->pos_u = f->neg_u = T;
    double q = aa * x->maxa * x->maxb; /* no term exceeds these */
    if (ord & GCK_ORDER_ALPHA_ON_OPERAND) q = fmax(q, aa * fmax(x->maxa, x->maxb));
    if (ord & (GCK_ORDER_ALPHA_ON_SUM | GCK_ORDER_ALPHA_ON_PRODUCT)) q = fmax(q, x->maxa * x->maxb);
    f->max_term = q;
    return true;
}

/* Whether an overflow rule could fire on these sums: then bounds from above do not settle it. */
static bool near_overflow(const gather_plan *g, const elem_facts *f) {
    overflow_facts x = overflow_of(g, f);
    return x.possible || x.nan;
}

/* What gather's first pass leaves for its second. */
typedef struct gather_in {
    exact_in x;
    elem_lines e;
    int64_t ra, cb; /* the element's row of op(A) and column of op(B) among all members' */
    bool exact;     /* the exact-case certificate is still possible */
} gather_in;

/* The facts of element (bi, i, j) whose oracle value is `oracle`; with skip_zero, of the sum
 * without the terms that have an exactly-zero factor (what a zero-skipping BLAS computes). In
 * two passes: gather_lines in the default rounding mode, gather_sums in upward rounding (so
 * that a column of elements changes the mode twice, not each element). */
static void gather_lines(const gck_case *c, const gck_support_row *row, const gather_plan *g,
                         const void *A, const void *B, const void *C, int64_t bi, int64_t i,
                         int64_t j, double oracle, elem_facts *f, gather_in *w) {
    const gck_model *m = &row->model;
    static const elem_facts none; /* copied by vector moves; a memset here compiled to a string
                                   * store (rep stos), whose start-up cost took 40% of this
                                   * function's samples */
    *f = none;
    f->t.k = c->k;
    f->t.abs_d = fabs(oracle);
    bool rab = g->rab, rc = g->rc;
    unsigned ord = g->ord;
    exact_in x = {INT32_MAX, INT32_MAX, 0, 0, 0, 0, 0, 0, false, rc};
    x.over_alpha = (ord & GCK_ORDER_BETA_OVER_ALPHA) && rc && c->alpha != 0;
    bool exact = g->ab_exact;

    elem_lines e = {.c = c, .i = i, .j = j};
    int64_t ra = 0, cb = 0;
    if (rab) {
        e.ars = g->ars, e.acs = g->acs, e.brs = g->brs, e.bcs = g->bcs;
        e.Ab = (const char *)A + bi * g->a_member;
        e.Bb = (const char *)B + bi * g->b_member;
        ra = (c->stride_a == 0 ? 0 : bi) * c->m + i;
        cb = (c->stride_b == 0 ? 0 : bi) * c->n + j;
        if (g->a) {
            e.da = g->a + ra * c->k;
            e.db = g->b + cb * c->k;
        }
        /* Pass 1, from the line facts: what input rounding does. */
        const line_facts *la = &g->fa[ra], *lb = &g->fb[cb];
        f->input_overflow = la->over || lb->over;
        x.maxa = la->maxabs;
        x.maxb = lb->maxabs;
        if (exact && la->repr && lb->repr) {
            x.qa = la->qmin;
            x.qb = lb->qmin;
        } else
            exact = false;
        if (la->has_inf || lb->has_inf) f->inf_times_flushed = inf_meets_flushed(&e, m);
    }
    if (rc) {
        const char *Cb = (const char *)C + bi * g->c_member;
        x.cv = gck_fmt_load(Cb, c->type_c, i * g->crs + j * g->ccs);
        f->t.abs_c = fabs(x.cv);
        if (isfinite(x.cv) && f->t.abs_c > g->fc_max) f->input_overflow = true;
        if (!isfinite(x.cv) || gck_fmt_round_to(x.cv, m->epilogue) != x.cv) exact = false;
    }
    *w = (gather_in){x, e, ra, cb, exact};
}

/* The statistical tier's allowance of an element, D's own rounding aside (call in upward
 * rounding; docs/TOLERANCE.md derives it): lambda u sqrt(V) + det, where V bounds the sum of
 * the squared quantities each rounding of the arithmetic is relative to, under round to nearest
 * and random data: the products (twice: alpha may be applied to each), the partial sums (the
 * mean square of any summation tree's sums of exchangeable terms), the epilogue's three
 * roundings and the inputs' rounding; det holds the near-zero and narrower-epilogue parts,
 * which are not random. */
static double stat_of(const gck_case *c, const gather_plan *g, const elem_facts *f, double det) {
    double aa = fabs(c->alpha), bc = fabs(c->beta) * f->t.abs_c, K = (double)f->t.k;
    double Q = aa * aa * f->q2;                                    /* sum of t_k^2 */
    double X = f->t.abs_d * (1 + g->bc.eo) + g->fo->min_subnormal; /* >= |exact D| */
    double S = X + bc;                                             /* >= |alpha sum a b| */
    double E0 = g->kq * Q + g->ks * S * S;
    double sums = g->beta_sums ? 2 * E0 + 2 * K * bc * bc : E0;
    double V = (2 + g->in2) * Q + sums + S * S + X * X + bc * bc;
    double a = (g->stat_lu * sqrt(V) + det) * MARGIN;
    return isfinite(a) ? a : -1; /* beyond double's range: the tier does not apply */
}

/* Pass 2 (call in upward rounding): the sums the bound and the overflow rules use, the
 * certificate and the bound. */
static void gather_sums(const gck_case *c, const gck_support_row *row, const gather_plan *g,
                        int64_t bi, bool skip_zero, elem_facts *f, gather_in *w) {
    const gck_model *m = &row->model;
    unsigned ord = g->ord;
    bool rab = g->rab, rc = g->rc;
    exact_in *x = &w->x;
    bool fast = rab && !skip_zero && fast_terms(c, g, x, w->ra, w->cb, bi, w->e.i, w->e.j, ord, f);
    if (rab && !fast) sum_terms(&w->e, ord, skip_zero, f);
    if (rc) add_c_term(c, x, f);
    if (fast && near_overflow(g, f)) { /* sums that settle the overflow rules */
        sum_terms(&w->e, ord, skip_zero, f);
        if (rc) add_c_term(c, x, f);
    }
    /* a backend that never sums unscaled products cannot overflow there */
    if (!((ord & GCK_ORDER_ALPHA_ON_SUM) || x->over_alpha)) f->pos_u = f->neg_u = 0.0;
    if (w->exact) f->exact_case = exact_certificate(c, m, g, x, f);
    f->bound = bound_of(&g->bc, &f->t, &f->degenerate);
    f->stat = -1;
    if (f->degenerate) return;
    double core, det;
    inner_of(&g->bc, &f->t, &core, &det);
    f->inner = (core + det) * MARGIN;
    if (g->stat_on && !f->exact_case) f->stat = stat_of(c, g, f, det);
}

/* Both passes for one element. */
static void gather(const gck_case *c, const gck_support_row *row, const gather_plan *g,
                   const void *A, const void *B, const void *C, int64_t bi, int64_t i, int64_t j,
                   bool skip_zero, double oracle, elem_facts *f) {
    gather_in w;
    gather_lines(c, row, g, A, B, C, bi, i, j, oracle, f, &w);
    int old = fegetround();
    fesetround(FE_UPWARD);
    gather_sums(c, row, g, bi, skip_zero, f, &w);
    fesetround(old);
}

typedef struct chk_job {
    const gck_case *c;
    const gck_support_row *row;
    const gck_check_options *opt;
    const void *A, *B, *C, *D;
    const gck_oracle_plan *plan;
    const gather_plan *gp;
    const uint8_t *rows, *cols; /* sampling masks (NULL: every element) */
    gck_tiles tiles;            /* D's tiles ... */
    int64_t first, last;        /* ... and this job's */
    int64_t drs, dcs, sd;       /* D's element and member strides */
    gck_format td;
    gck_check_result r;
    _Atomic int32_t *units; /* the sign test's unit sums (choose_units); NULL: not made */
    bool ok;
} chk_job;

/* Whether e is worse than the worst kept of its kind: by error/bound, or by error/statistical
 * allowance for improbable errors (the first one of the other kinds is kept). */
static bool worse(gck_kind k, const gck_element_report *e, const gck_element_report *than) {
    return (k == GCK_KIND_OUT_OF_TOLERANCE && e->ratio > than->ratio) ||
           (k == GCK_KIND_IMPROBABLE_ERROR && e->stat > than->stat);
}

static void note_failure(gck_check_result *r, gck_kind k, const gck_element_report *e) {
    bool first = r->count[k]++ == 0;
    if (first || worse(k, e, &r->worst[k])) r->worst[k] = *e;
}

/* A failing verdict of the given kind. */
static bool fails_as(gck_kind *out, gck_kind k) {
    *out = k;
    return false;
}

/* Decide one element against one oracle evaluation: true when it passes, else false with the
 * kind of finding in *kind. */
/* A failing verdict with its rule. */
static bool fails_by(gck_element_report *e, gck_kind *kind, gck_kind k, const char *rule) {
    snprintf(e->rule, sizeof e->rule, "%s", rule);
    return fails_as(kind, k);
}

/* The rules for a NaN or Inf oracle value or result: true when one applies, with the verdict in
 * *pass (and the kind in *kind when it fails). */
static bool decide_nonfinite(const gck_oracle_eval *ev, const elem_facts *f,
                             const overflow_facts *x, double got, gck_element_report *e,
                             gck_kind *kind, bool *pass) {
    const gck_kind K = GCK_KIND_NONFINITE_MISMATCH;
    double o = ev->value, g = x->growth, thr = x->thr;
    bool any = isnan(o) || (isinf(o) && ev->special_input) || isnan(got) || isinf(got);
    if (!any) return false;
    *pass = true;
    if (isnan(o)) {
        if (!isnan(got)) *pass = fails_by(e, kind, K, "oracle NaN, result not NaN");
    } else if (isinf(o) && ev->special_input) {
        /* Inf + (-Inf): the finite terms of the other sign may overflow first in some order */
        if (got != o &&
            !(isnan(got) && ((o > 0 ? f->neg : f->pos) * g >= thr || f->max_term >= thr ||
                             f->input_overflow || x->unscaled || f->inf_times_flushed))) {
            *pass = fails_as(kind, K);
            snprintf(e->rule, sizeof e->rule, "oracle %cInf from an Inf input, result differs",
                     o > 0 ? '+' : '-');
        }
    } else if (isnan(got)) {
        if (!x->nan) *pass = fails_by(e, kind, K, "result NaN, no evaluation order can overflow");
    } else if (isinf(o)) {
        /* the terms of the other sign alone may overflow first in some order */
        if (got != o && !((got > 0 ? f->pos : f->neg) * g >= thr || f->max_term >= thr ||
                          f->input_overflow || x->unscaled)) {
            *pass = fails_as(kind, K);
            snprintf(e->rule, sizeof e->rule,
                     "oracle overflows to %cInf, result has the other "
                     "sign and no order overflows that way",
                     o > 0 ? '+' : '-');
        }
    } else if (!x->possible) {
        *pass = fails_by(e, kind, K, "result Inf, oracle finite and overflow impossible");
    }
    return true;
}

/* The next double above x (positive and finite; others unchanged). */
static inline double next_above(double x) {
    if (!(x > 0) || isinf(x)) return x;
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    u++;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* How far a finite result `got` is from the edge of the values that round to it on the exact
 * value's side (sign: that of got - x): half the gap to got's neighbour there under round to
 * nearest, the whole gap under faithful rounding, and for a zero where flushing is declared
 * everything whose rounding is subnormal. Exact. */
static double edge(const gather_plan *g, double got, int sign) {
    const gck_format_info *fo = g->fo;
    double ad = fabs(got), gap = fo->min_subnormal;
    if (ad != 0) {
        int e;
        frexp(ad, &e); /* ad in [2^(e-1), 2^e) */
        int eb = e - 1 < fo->emin ? fo->emin : e - 1;
        gap = ldexp(1.0, eb - fo->precision + 1);
        bool toward_zero = (sign > 0 && got > 0) || (sign < 0 && got < 0);
        if (toward_zero && eb > fo->emin && ad == ldexp(1.0, eb)) gap *= 0.5; /* binade below */
    }
    double h = g->nearest ? 0.5 * gap : gap;
    /* a flushed zero stands for any value whose rounding is subnormal: below the largest
     * subnormal's upper edge, min_normal - min_subnormal / 2 */
    double flushed = fo->min_normal - 0.5 * fo->min_subnormal;
    if (g->ftz && ad == 0 && flushed > h) h = flushed;
    return h;
}

/* How far from the exact value x a finite result may lie, rounded up: `inner` (what the
 * arithmetic may move the value D is rounded from) plus its edge h. RNE being monotone, D may
 * be any value of [RNE(x - inner), RNE(x + inner)] and no other. */
static double allowance(double inner, double h) {
    return next_above(inner + h); /* one rounding of a sum of two positive numbers */
}

/* Decide one element against one oracle evaluation: true when it passes, else false with the
 * kind of finding in *kind. */
static bool decide(const gather_plan *g, const gck_oracle_eval *ev, const elem_facts *f, double got,
                   gck_element_report *e, gck_kind *kind) {
    double o = ev->value, bound = f->bound;
    bool degenerate = f->degenerate;
    overflow_facts x = overflow_of(g, f);
    e->expected = o;
    e->got = got;
    e->error = ev->abs_error;
    e->bound = f->exact_case ? 0.0 : bound;
    e->exact_case = f->exact_case;
    e->ratio = 0;
    e->stat = NAN;
    e->degenerate = degenerate && !f->exact_case;
    bool pass;
    if (decide_nonfinite(ev, f, &x, got, e, kind, &pass)) return pass;
    /* finite result: oracle finite, or overflowed (then the bound of the exact value applies) */
    double err = ev->abs_error;
    if (degenerate && !f->exact_case) {
        e->ratio = bound > 0 ? fabs(got) / bound : (got != 0 ? INFINITY : 0.0);
        if (fabs(got) <= bound) return true;
        return fails_by(e, kind, GCK_KIND_OUT_OF_TOLERANCE,
                        "|result| exceeds the magnitude limit (gamma = Inf)");
    }
    double h = edge(g, got, ev->err_sign);
    if (!f->exact_case) e->bound = allowance(f->inner, h);
    e->ratio = e->bound > 0 ? err / e->bound : (err > 0 ? INFINITY : 0.0);
    if (err > e->bound)
        return fails_by(e, kind, GCK_KIND_OUT_OF_TOLERANCE,
                        f->exact_case ? "exact case: result differs from the exact value"
                        : g->nearest  ? "outside the rounded interval of the exact value "
                                        "widened by the bound"
                                      : "error exceeds the bound");
    if (f->stat < 0) return true;
    /* the ratio: the error beyond D's own rounding over the arithmetic's allowance */
    e->stat = err <= h ? 0.0 : f->stat > 0 ? (err - h) / f->stat : INFINITY;
    if (err <= allowance(f->stat, h)) return true;
    return fails_by(e, kind, GCK_KIND_IMPROBABLE_ERROR,
                    "error improbable under round to nearest on random data (p < 1e-12)");
}

/* Whether a backend that does compute alpha * (A*B) under alpha = 0 can get NaN: 0 * NaN,
 * 0 * Inf, or 0 times a product sum that overflows in some evaluation order. */
static bool alpha0_may_nan(const gck_case *c, const gck_model *m, const void *A, const void *B,
                           int64_t bi, int64_t i, int64_t j) {
    int64_t ars, acs, brs, bcs;
    gck_case_op_strides(c, GCK_A, &ars, &acs);
    gck_case_op_strides(c, GCK_B, &brs, &bcs);
    const char *Ab = (const char *)A + bi * c->stride_a * gck_format_get(c->type_a)->storage_bytes;
    const char *Bb = (const char *)B + bi * c->stride_b * gck_format_get(c->type_b)->storage_bytes;
    const gck_format_info *fc = gck_format_get(m->compute);
    double thr = fmin(fc->max, gck_format_get(gck_case_type(c, GCK_D))->max);
    double in_max =
        fmin(fc->max, gck_format_get(m->inputs_rounded ? m->input_format : m->compute)->max);
    int old = fegetround();
    fesetround(FE_UPWARD);
    double T = 0, growth = exp((2 * (double)c->k + 4) * fc->epsilon + 2 * input_eps(c, m)) * MARGIN;
    bool may = false;
    for (int64_t k = 0; k < c->k && !may; k++) {
        double a = fabs(gck_fmt_load(Ab, c->type_a, i * ars + k * acs));
        double b = fabs(gck_fmt_load(Bb, c->type_b, k * brs + j * bcs));
        if (!isfinite(a) || !isfinite(b) || a > in_max || b > in_max || a * b >= thr) may = true;
        T += a * b;
    }
    may = may || T * growth >= thr;
    fesetround(old);
    return may;
}

static int ratio_bin(double error, double ratio) {
    static const double upper[] = {1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1};
    if (error == 0) return 0;
    for (int b = 0; b < 7; b++)
        if (ratio <= upper[b]) return b + 1;
    return GCK_RATIO_BINS - 1;
}

/* One element of a job, from its result, oracle value and facts: the verdict (with the
 * leniencies a row declares), into the job's result. */
static void conclude(chk_job *job, gck_oracle_thread *o, int64_t bi, int64_t i, int64_t j,
                     bool may_skip, double got, const gck_oracle_eval *ev, const elem_facts *f) {
    const gck_case *c = job->c;
    gck_check_result *r = &job->r;
    static const gck_element_report none; /* as gather_lines' facts: no string store */
    gck_element_report e = none;
    e.batch = bi, e.i = i, e.j = j;
    gck_kind kind = GCK_KIND_COUNT, alt_kind;
    bool pass = decide(job->gp, ev, f, got, &e, &kind);
    if (!pass && isnan(got) && c->alpha == 0 &&
        !(job->row->promises & GCK_PROMISE_ALPHA0_NO_READ_AB) &&
        alpha0_may_nan(c, &job->row->model, job->A, job->B, bi, i, j)) {
        /* The backend does not promise that alpha = 0 leaves A and B unread: it may form
         * 0 * (A*B), which is NaN when A*B holds or overflows to NaN or Inf. */
        pass = true;
        r->lenient++;
    }
    if (!pass && may_skip && isnan(ev->value)) {
        /* The backend may skip terms with a zero factor: the value without them passes,
         * judged by the facts of the terms that remain (the dropped Inf*0 or NaN*0 leaves
         * the bound as well). */
        gck_oracle_eval alt;
        gck_oracle_thread_eval(o, bi, i, j, true, &got, &alt);
        gck_element_report e2 = e;
        elem_facts f2;
        gather(c, job->row, job->gp, job->A, job->B, job->C, bi, i, j, true, alt.value, &f2);
        f2.exact_case = false;
        if (decide(job->gp, &alt, &f2, got, &e2, &alt_kind)) {
            pass = true;
            r->lenient++;
        }
    }
    r->elements++;
    if (f->exact_case) r->exact_elements++;
    if (e.degenerate) r->degenerate++;
    if (!pass) note_failure(r, kind, &e);
    if (isfinite(e.error) && isfinite(e.ratio) &&
        (r->max_ratio.ratio < e.ratio || !isfinite(r->max_ratio.error)))
        r->max_ratio = e;
    if (isfinite(e.error)) r->ratio_bins[ratio_bin(e.error, e.ratio)]++;
    if (isnan(e.stat)) return;
    r->stat_elements++;
    if (e.stat > r->max_stat) r->max_stat = e.stat;
    /* the sign test: each inexact element's sign, added to its unit's sum (choose_units) */
    const gather_plan *g = job->gp;
    if (!g->bias_on || !job->units || ev->err_sign == 0 || ev->value == 0 ||
        (bi > 0 && g->bias_first_only))
        return;
    int64_t line = g->bias_rows ? i : j, lines = g->bias_rows ? c->m : c->n;
    atomic_fetch_add_explicit(&job->units[(g->bias_per_member ? bi * lines : 0) + line],
                              ev->err_sign > 0 ? 1 : -1, memory_order_relaxed);
    r->bias_up += ev->err_sign > 0;
    r->bias_down += ev->err_sign < 0;
    bool toward0 = (ev->err_sign > 0) != (ev->value > 0);
    r->bias_toward0 += toward0;
    r->bias_away += !toward0;
}

/* The elements i0 <= i < i1 of column j that the job checks (at most CHK_RUN): each one's oracle
 * value and first facts, then (in one stretch of upward rounding) their sums and bounds, then
 * their verdicts, in order of i. */
#define CHK_RUN 64
typedef struct chk_elem {
    int64_t i;
    double got;
    gck_oracle_eval ev;
    elem_facts f;
    gather_in w;
} chk_elem;

static void check_run(chk_job *job, gck_oracle_thread *o, int64_t bi, int64_t i0, int64_t i1,
                      int64_t j, bool may_skip, chk_elem *el) {
    const gck_case *c = job->c;
    int n = 0;
    for (int64_t i = i0; i < i1; i++) {
        if (job->rows && !job->rows[i] && !job->cols[j]) continue;
        chk_elem *x = &el[n++];
        x->i = i;
        x->got = gck_fmt_load(job->D, job->td, bi * job->sd + i * job->drs + j * job->dcs);
        gck_oracle_thread_eval(o, bi, i, j, false, &x->got, &x->ev);
        gather_lines(c, job->row, job->gp, job->A, job->B, job->C, bi, i, j, x->ev.value, &x->f,
                     &x->w);
    }
    int old = fegetround();
    fesetround(FE_UPWARD);
    for (int y = 0; y < n; y++) gather_sums(c, job->row, job->gp, bi, false, &el[y].f, &el[y].w);
    fesetround(old);
    for (int y = 0; y < n; y++)
        conclude(job, o, bi, el[y].i, j, may_skip, el[y].got, &el[y].ev, &el[y].f);
}

/* A job's tiles, each column by column: the rows of op(A) and columns of op(B) a tile reads
 * stay in cache while its elements are checked. */
static void *run_chk(void *arg) {
    chk_job *job = arg;
    const gck_case *c = job->c;
    gck_oracle_thread *o = gck_oracle_thread_new(job->plan);
    job->ok = o != NULL;
    bool may_skip = (job->row->promises & GCK_PROMISE_MAY_SKIP_ZERO) && !job->opt->strict_ieee;
    chk_elem *el = malloc(CHK_RUN * sizeof *el);
    job->ok = job->ok && el;
    for (int64_t t = job->first; job->ok && t < job->last; t++) {
        int64_t bi, i0, i1, j0, j1;
        gck_tile_range(&job->tiles, c, t, &bi, &i0, &i1, &j0, &j1);
        for (int64_t j = j0; j < j1; j++)
            for (int64_t i = i0; i < i1; i += CHK_RUN)
                check_run(job, o, bi, i, i1 - i < CHK_RUN ? i1 : i + CHK_RUN, j, may_skip, el);
    }
    free(el);
    gck_oracle_disagreement d;
    if (o && (job->r.oracle_disagreements = gck_oracle_thread_disagreements(o, &d)) > 0)
        job->r.disagreement = (gck_element_report){.batch = d.batch,
                                                   .i = d.i,
                                                   .j = d.j,
                                                   .got = d.mpfr,
                                                   .expected = d.exact,
                                                   .error = d.mpfr_error,
                                                   .bound = d.exact_error};
    gck_oracle_thread_free(o);
    return NULL;
}

static void merge(gck_check_result *into, const gck_check_result *from) {
    for (int b = 0; b < GCK_RATIO_BINS; b++) into->ratio_bins[b] += from->ratio_bins[b];
    into->elements += from->elements;
    into->exact_elements += from->exact_elements;
    into->degenerate += from->degenerate;
    into->lenient += from->lenient;
    for (int k = 0; k < GCK_KIND_COUNT; k++) {
        if (from->count[k] == 0) continue;
        bool take = into->count[k] == 0 || worse((gck_kind)k, &from->worst[k], &into->worst[k]);
        if (take) into->worst[k] = from->worst[k];
        into->count[k] += from->count[k];
    }
    if (isfinite(from->max_ratio.error) &&
        (!isfinite(into->max_ratio.error) || from->max_ratio.ratio > into->max_ratio.ratio))
        into->max_ratio = from->max_ratio;
    if (from->max_stat > into->max_stat) into->max_stat = from->max_stat;
    into->stat_elements += from->stat_elements;
    into->bias_up += from->bias_up;
    into->bias_down += from->bias_down;
    into->bias_toward0 += from->bias_toward0;
    into->bias_away += from->bias_away;
    if (from->oracle_disagreements && !into->oracle_disagreements)
        into->disagreement = from->disagreement;
    into->oracle_disagreements += from->oracle_disagreements;
}

/* The rows and columns a large GEMM is checked on: every element of the first and last rows
 * and columns and of a sample of `lines` more (deterministic: drawn from the case's shape).
 * False when out of memory. */
static bool sample_lines(const gck_case *c, int lines, uint8_t **rows, uint8_t **cols) {
    *rows = calloc((size_t)c->m, 1);
    *cols = calloc((size_t)c->n, 1);
    if (!*rows || !*cols) {
        free(*rows);
        free(*cols);
        *rows = *cols = NULL;
        return false;
    }
    (*rows)[0] = (*rows)[c->m - 1] = (*cols)[0] = (*cols)[c->n - 1] = 1;
    uint64_t h = (uint64_t)c->m * GCK_GOLDEN_GAMMA ^ (uint64_t)c->n ^ (uint64_t)c->k << 20;
    for (int l = 0; l < lines; l++) {
        h = h * 6364136223846793005ull + 1442695040888963407ull;
        (*rows)[(h >> 33) % (uint64_t)c->m] = 1;
        h = h * 6364136223846793005ull + 1442695040888963407ull;
        (*cols)[(h >> 33) % (uint64_t)c->n] = 1;
    }
    return true;
}

/* The tiles of D split into `threads` equal ranges, checked in parallel and merged into r in
 * their order (the first finding of a kind is the first in tile order, whatever the thread
 * count). False when a worker ran out of memory. */
static bool check_in_parallel(const chk_job *proto, int threads, gck_check_result *r) {
    int64_t total = proto->tiles.count;
    if (threads > total) threads = (int)total;
    chk_job *jobs = calloc((size_t)threads, sizeof *jobs);
    if (!jobs) return false;
    for (int t = 0; t < threads; t++) {
        jobs[t] = *proto;
        jobs[t].first = total * t / threads;
        jobs[t].last = total * (t + 1) / threads;
        jobs[t].r.max_ratio.error = NAN; /* none yet */
    }
    bool ok = gck_parallel(jobs, (size_t)threads, sizeof *jobs, run_chk);
    for (int t = 0; t < threads; t++) {
        ok = ok && jobs[t].ok;
        merge(r, &jobs[t].r);
    }
    free(jobs);
    return ok;
}

/* The sign test's p-value bound (Hoeffding) from the counts above and below the exact value
 * and the sum of the squared unit sums: 2 exp(-(up - down)^2 / (2 ss)), at most 1 (1 when ss
 * is 0: not made). */
static double sign_test_p(int64_t up, int64_t down, double ss) {
    double t = (double)up - (double)down;
    if (!(ss > 0) || t == 0) return 1.0;
    double p = 2 * exp(-t * t / (2 * ss));
    return p < 1 ? p : 1.0;
}

/* The sign test of the elements the statistical tier applied to (see bias_conditions): a
 * finding of kind improbable_error when its p-value bound is at most BIAS_P. */
static void sign_test(gck_check_result *r, const gather_plan *g, const _Atomic int32_t *units) {
    double ss = 0;
    for (int64_t u = 0; units && u < g->bias_units; u++) {
        double v = (double)atomic_load_explicit(&units[u], memory_order_relaxed);
        ss += v * v;
    }
    r->bias_ss = ss;
    r->bias_p = sign_test_p(r->bias_up, r->bias_down, ss);
    if (r->bias_p > BIAS_P || !isfinite(r->max_ratio.error)) return;
    gck_kind k = GCK_KIND_IMPROBABLE_ERROR;
    gck_element_report e = r->max_ratio;
    int64_t a = r->bias_up, b = r->bias_down;
    snprintf(e.rule, sizeof e.rule, "sign test: %lld of %lld inexact results %s (p <= %.2g)",
             (long long)(a > b ? a : b), (long long)(a + b),
             a > b ? "above the exact value" : "below the exact value", r->bias_p);
    if (r->count[k] == 0) {
        r->count[k] = a > b ? a : b;
        r->worst[k] = e;
    }
}

static gck_status check_values(const gck_case *c, const gck_support_row *row,
                               const gck_check_options *opt, const void *A, const void *B,
                               const void *C, const void *D_got, gck_check_result *r, char *msg,
                               size_t len) {
    static const gck_check_options defaults;
    if (!opt) opt = &defaults;
    memset(r, 0, sizeof *r);
    r->max_ratio.error = NAN; /* none yet */
    r->bias_p = 1.0;
    gck_status s = gck_case_validate(c, msg, len);
    if (s != GCK_OK) return s;
    int64_t total = c->m * c->n * c->batch;
    if (total == 0) return GCK_OK;
    r->total_elements = total;
    uint8_t *rows = NULL, *cols = NULL;
    gck_oracle_plan *plan = NULL;
    gather_plan *gp = gather_plan_new(c, &row->model, A, B, opt, r->stat_note, sizeof r->stat_note);
    if (!gp || !(plan = gck_oracle_plan_new(opt->oracle, c, A, B, C))) {
        gather_plan_free(gp);
        gck_stash_flush();
        return gck_fail(GCK_ENOMEM, msg, len, "out of memory decoding the operands");
    }
    gck_oracle_plan_describe(plan, r->oracle_path, sizeof r->oracle_path);
    /* a large product is checked on a sample of rows and columns, unless its sums came from
     * splitting (then every element costs little more than the GEMMs already run) */
    double cost = (double)c->m * (double)c->n * (double)c->k * (double)c->batch;
    double above = opt->sample_above > 0 ? opt->sample_above : 2147483648.0;
    bool split = gck_oracle_plan_split(plan);
    if (cost > above && c->m > 2 && c->n > 2 && !split) {
        if (!sample_lines(c, opt->sample_lines > 0 ? opt->sample_lines : 16, &rows, &cols))
            s = gck_fail(GCK_ENOMEM, msg, len, "out of memory");
        r->sampled = true;
    }
    chk_job proto = {.c = c,
                     .row = row,
                     .opt = opt,
                     .A = A,
                     .B = B,
                     .C = C,
                     .D = D_got,
                     .plan = plan,
                     .gp = gp,
                     .rows = rows,
                     .cols = cols,
                     .tiles = gck_tiles_of(c, gck_oracle_plan_tile(plan))};
    if (gp->bias_on && gp->bias_units > 0 &&
        !(proto.units = calloc((size_t)gp->bias_units, sizeof *proto.units)))
        s = gck_fail(GCK_ENOMEM, msg, len, "out of memory");
    gck_case_op_strides(c, GCK_D, &proto.drs, &proto.dcs);
    proto.sd = gck_case_stride(c, GCK_D);
    proto.td = gck_case_type(c, GCK_D);
    if (s == GCK_OK && !check_in_parallel(&proto, gck_thread_count(opt->threads, total), r))
        s = gck_fail(GCK_ENOMEM, msg, len, "out of memory for the oracle (K = %lld)",
                     (long long)c->k);
    if (s == GCK_OK) sign_test(r, gp, proto.units);
    free(proto.units);
    gck_oracle_plan_free(plan);
    gather_plan_free(gp);
    gck_stash_flush(); /* what the bound's GEMM left for the oracle */
    free(rows);
    free(cols);
    if (s == GCK_OK && r->oracle_disagreements) {
        const gck_element_report *e = &r->disagreement;
        s = gck_fail(GCK_EINTERNAL, msg, len,
                     "the exact and MPFR oracles disagree on %lld element(s); first "
                     "D[%lld](%lld,%lld): MPFR %a (error %a), exact %a (error %a)",
                     (long long)r->oracle_disagreements, (long long)e->batch, (long long)e->i,
                     (long long)e->j, e->got, e->error, e->expected, e->bound);
    }
    return s;
}

static void stat_describe(const gck_check_result *r, char *buf, size_t len) {
    if (r->stat_elements == 0) {
        snprintf(buf, len, "not applied (%s)", r->stat_note[0] ? r->stat_note : "no element");
        return;
    }
    int n = snprintf(buf, len,
                     "%lld elements, max statistical ratio %.3g (above 1: p < 1e-12 per element "
                     "for correct round-to-nearest arithmetic on random data); ",
                     (long long)r->stat_elements, r->max_stat);
    if (n < 0 || (size_t)n >= len) return;
    if (r->bias_up + r->bias_down == 0)
        snprintf(buf + n, len - (size_t)n,
                 "sign test not made (alpha = 0, C read but not declared random, neither A nor B "
                 "with mixed signs, or no inexact element)");
    else
        snprintf(buf + n, len - (size_t)n,
                 "error signs %lld up / %lld down (sign test p <= %.2g), %lld toward / %lld "
                 "away from zero (not tested)",
                 (long long)r->bias_up, (long long)r->bias_down, r->bias_p,
                 (long long)r->bias_toward0, (long long)r->bias_away);
}

/* ---- the public functions, in gemmcheck's floating-point environment (fpenv.h) ------------ */

GCK_GUARDED(double, gck_bound, element_bound,
            (const gck_case *c, const gck_model *m, const gck_bound_terms *t, bool *degenerate),
            (c, m, t, degenerate))
GCK_GUARDED(int, gck_ratio_bin, ratio_bin, (double error, double ratio), (error, ratio))
GCK_GUARDED(double, gck_sign_test, sign_test_p, (int64_t up, int64_t down, double ss),
            (up, down, ss))
GCK_GUARDED_VOID(gck_stat_describe, stat_describe,
                 (const gck_check_result *r, char *buf, size_t len), (r, buf, len))
GCK_GUARDED(gck_status, gck_check_values, check_values,
            (const gck_case *c, const gck_support_row *row, const gck_check_options *opt,
             const void *A, const void *B, const void *C, const void *D_got, gck_check_result *r,
             char *msg, size_t len),
            (c, row, opt, A, B, C, D_got, r, msg, len))
