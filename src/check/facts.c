/* The facts of an element gathered from its lines (check_internal.h): the bound's terms, the
 * exact-case certificate, the overflow rules' facts and the statistical tier's allowance; the
 * operands prepared once per check (line facts, dense copies, the sums of a large product's
 * |a||b| by a GEMM). The sums are taken with the FPU rounding upward. */
#include <fenv.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bigmem.h"
#include "check_internal.h"
#include "decode.h"
#include "fpenv.h"
#include "gemmcheck/kernels.h"
#include "mix.h"
#include "parallel.h"
#include "stash.h"
#include "text.h"
#include "tiles.h"

/* Row i of op(A) and column j of op(B) of member bi among all members' stored lines (a member
 * stride of 0: every member shares member 0's). */
static inline int64_t row_of_a(const gck_case *c, int64_t bi, int64_t i) {
    return (c->stride_a == 0 ? 0 : bi) * c->m + i;
}
static inline int64_t col_of_b(const gck_case *c, int64_t bi, int64_t j) {
    return (c->stride_b == 0 ? 0 : bi) * c->n + j;
}

/* Exponent of the lowest set bit of x; x must be finite and non-zero. Inline: the line facts
 * take it of every value. */
static inline __attribute__((always_inline)) int lsb_exp(double x) {
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    bool special;
    return strip(decode_raw(u, 52, 11, &special)).e; /* the shared decoder of stored values */
}

void gck_gather_plan_free(gather_plan *g) {
    if (!g) return;
    free(g->fa);
    free(g->fb);
    gck_big_free(g->a);
    gck_big_free(g->b);
    gck_absprod_free(g->abs);
    free(g->suma);
    free(g->sumb);
    free(g);
}

/* sum_k |x| of each of n lines of K doubles (floats when xf), over finite values, rounded up;
 * the lines cut among the cores. */
typedef struct sums_job {
    const void *x;
    bool xf;
    int64_t k;
    double *s;
} sums_job;

static void sums_part(void *arg, int part, int64_t lo, int64_t hi) {
    (void)part;
    const sums_job *j = arg;
    int old = fegetround();
    fesetround(FE_UPWARD);
    for (int64_t l = lo; l < hi; l++) {
        double t = 0;
        if (j->xf) {
            const float *x = (const float *)j->x + l * j->k;
            for (int64_t k = 0; k < j->k; k++) t += isfinite(x[k]) ? fabs((double)x[k]) : 0.0;
        } else {
            const double *x = (const double *)j->x + l * j->k;
            for (int64_t k = 0; k < j->k; k++) t += isfinite(x[k]) ? fabs(x[k]) : 0.0;
        }
        j->s[l] = t;
    }
    fesetround(old);
}

static double *line_sums(const void *x, bool xf, int64_t n, int64_t K) {
    double *s = malloc((size_t)(n > 0 ? n : 1) * sizeof *s);
    if (!s) return NULL;
    sums_job j = {x, xf, K, s};
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
    bool kept;   /* every finite value of t is kept by the input and compute formats */
    bool floats; /* facts_of_floats may serve (not switched off by gck_facts_floats) */
    line_facts *facts;
    void *dense;
    bool dense_f; /* dense holds floats (else doubles) */
} facts_job;

/* Tests: facts_of_floats used where it applies (on) or never, and the lines it has served. */
static _Atomic bool floats_off;
static _Atomic long floats_lines;
bool gck_facts_floats(bool on) { return !atomic_exchange(&floats_off, !on); }
long gck_facts_floats_lines(void) { return atomic_load(&floats_lines); }

/* The facts of a line of K floats of a format whose every finite value the input and compute
 * formats keep (no rounding to try, and none beyond their range), as facts_as finds them value
 * by value: the largest |x| apart from NaN, the smallest lowest-set-bit exponent of the non-zero
 * values before the first NaN or Inf, and the flags; from the values' bits, without a branch
 * per value. */
static line_facts facts_of_floats(const float *x, int64_t K) {
    uint32_t amax = 0, inf = 0, nonfinite = 0;
    int32_t qmin = INT32_MAX;
    for (int64_t k = 0; k < K; k++) {
        uint32_t u;
        memcpy(&u, &x[k], sizeof u);
        uint32_t a = u & 0x7fffffffu, fin = a < 0x7f800000u;
        bool special;
        int32_t q = strip(decode_raw(a, 23, 8, &special)).e; /* lsb_exp of a non-zero finite */
        q = fin && !nonfinite && a != 0 ? q : INT32_MAX;
        qmin = q < qmin ? q : qmin;
        amax = a <= 0x7f800000u && a > amax ? a : amax;
        inf |= a == 0x7f800000u;
        nonfinite |= !fin;
    }
    float m;
    memcpy(&m, &amax, sizeof m);
    return (line_facts){(double)m, qmin, !nonfinite, false, inf != 0, nonfinite != 0};
}

/* Line l of a member (at base) into df as floats, or where the lines lie side by side in memory
 * (ls = 1: each k a run of lines) the lines l .. l + r - 1, r <= max, of the same member: one
 * run of r values converted per k, FLOATS_BLOCK steps into a block in L1, then each line's
 * steps of the block written together (the values read in memory's order, not K strided reads
 * per line; f16 4096^3 on a Zen 4, op(A)'s lines: 0.047 s one step at a time, 0.035 s so).
 * Returns r. */
#define FLOATS_BLOCK 64
static int64_t floats_of_lines(const facts_job *j, gck_format fmt, const char *base, int64_t l,
                               int64_t max, float *df) {
    int64_t K = j->c->k, es = gck_format_get(fmt)->storage_bytes;
    int64_t r = j->ls == 1 && j->ks != 1 ? FLOATS_BLOCK : 1;
    if (r > max) r = max;
    if (r > j->lines - l) r = j->lines - l;
    if (r == 1) {
        gck_kfloats(df, base + l * j->ls * es, fmt, j->ks, K);
        return 1;
    }
    float run[FLOATS_BLOCK][FLOATS_BLOCK]; /* [k - k0][y]: FLOATS_BLOCK steps of the r lines */
    for (int64_t k0 = 0; k0 < K; k0 += FLOATS_BLOCK) {
        int64_t kn = K - k0 < FLOATS_BLOCK ? K - k0 : FLOATS_BLOCK;
        for (int64_t q = 0; q < kn; q++)
            gck_kfloats(run[q], base + (l + (k0 + q) * j->ks) * es, fmt, 1, r);
        /* each line's kn values written together (lines K floats apart: one value a line at a
         * time would touch r lines a power of two apart for every step) */
        for (int64_t y = 0; y < r; y++)
            for (int64_t q = 0; q < kn; q++) df[y * K + k0 + q] = run[q][y];
    }
    return r;
}

/* facts_part for operands stored as `fmt` (a constant where facts_part calls it). */
static inline __attribute__((always_inline)) void facts_as(const facts_job *j, int64_t lo,
                                                           int64_t hi, gck_format fmt) {
    const gck_model *m = j->m;
    for (int64_t t = lo; t < hi; t++) {
        int64_t b = t / j->lines, l = t % j->lines;
        const char *base = j->X + b * j->stride;
        line_facts f = {0, INT32_MAX, true, false, false, false};
        double *d = j->dense && !j->dense_f ? (double *)j->dense + t * j->c->k : NULL;
        float *df = j->dense && j->dense_f ? (float *)j->dense + t * j->c->k : NULL;
        if (df && j->kept && j->floats) { /* the lines as floats (F16C where it runs), facts */
            int64_t r = floats_of_lines(j, fmt, base, l, hi - t, df);
            for (int64_t y = 0; y < r; y++)
                j->facts[t + y] = facts_of_floats(df + y * j->c->k, j->c->k);
            atomic_fetch_add_explicit(&floats_lines, r, memory_order_relaxed);
            t += r - 1;
            continue;
        }
        for (int64_t k = 0; k < j->c->k; k++) {
            double v = gck_fmt_load_as(base, fmt, l * j->ls + k * j->ks), av = fabs(v);
            if (d) d[k] = v;
            if (df) df[k] = (float)v; /* exact: a value of a format floats hold */
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
                          int64_t members, line_facts *facts, void *dense, bool dense_f) {
    facts_job j = {.c = c, .m = m, .X = X, .facts = facts, .dense = dense, .dense_f = dense_f};
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
    j.floats = !atomic_load(&floats_off);
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
    gck_bound_ctx_init(&g->bc, c, m);
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
        exp((2 * (double)c->k + 4) * fc->epsilon + 2 * gck_input_eps(c, m)) * MARGIN * MARGIN;
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
    double K = (double)c->k, ein = gck_input_eps(c, m);
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

gather_plan *gck_gather_plan_new(const gck_case *c, const gck_model *m, const void *A,
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
        gck_gather_plan_free(g);
        return NULL;
    }
    double limit = copy_limit > 0 ? copy_limit : 1073741824.0;
    /* floats where every value is one: half the memory, and half the first touches of a fresh
     * process (4096^3: 134 MB less) */
    g->dense_f = gck_fmt_floats_hold(c->type_a) && gck_fmt_floats_hold(c->type_b);
    size_t es = g->dense_f ? sizeof(float) : sizeof(double);
    if ((double)(la + lb) * (double)c->k * (double)es <= limit) {
        g->a = gck_big_alloc((size_t)(la * c->k) * es);
        g->b = gck_big_alloc((size_t)(lb * c->k) * es);
        if (!g->a || !g->b) { /* not needed: values are then read in place */
            gck_big_free(g->a);
            gck_big_free(g->b);
            g->a = g->b = NULL;
        }
    }
    line_facts_of(c, m, GCK_A, A, ma, g->fa, g->a, g->dense_f);
    line_facts_of(c, m, GCK_B, B, mb, g->fb, g->b, g->dense_f);
    g->abs = gck_absprod_new(c, g->a, g->b, g->dense_f);
    if (g->abs && (!(g->suma = line_sums(g->a, g->dense_f, la, c->k)) ||
                   !(g->sumb = line_sums(g->b, g->dense_f, lb, c->k)))) {
        gck_absprod_free(g->abs); /* out of memory: summed per element */
        g->abs = NULL;
    }
    g->abs_rounded = g->abs && gck_absprod_rounded(g->abs);
    return g;
}

static inline double line_a(const elem_lines *e, int64_t k) {
    if (e->da) return e->df ? (double)((const float *)e->da)[k] : ((const double *)e->da)[k];
    return gck_fmt_load(e->Ab, e->c->type_a, e->i * e->ars + k * e->acs);
}
static inline double line_b(const elem_lines *e, int64_t k) {
    if (e->db) return e->df ? (double)((const float *)e->db)[k] : ((const double *)e->db)[k];
    return gck_fmt_load(e->Bb, e->c->type_b, k * e->brs + e->j * e->bcs);
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

/* Whether 0 <= M < 2^E, 2^E formed from its bits (no libm call per element). */
static bool below_pow2(double M, int64_t E) {
    if (E > 1023) return !isnan(M) && M < INFINITY;
    if (E < -1074) return false;
    return M < pow2_bits(E);
}

/* The grid of the products' part of the exact-case certificate: the smallest sum over the
 * non-empty subsets of {a, b, alpha} whose lowest-set-bit exponents are set (INT32_MAX: not
 * set), the negative ones together, or the smallest when none is negative; INT32_MAX when none
 * is set. */
static inline int products_grid(int qa, int qb, int qal) {
    const int cand[] = {qa, qb, qal};
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
    return any_neg ? (int)neg : q;
}

/* The exact-case certificate (call in upward rounding; p: the smallest precision, qmin: the
 * lowest grid exponent any format involved keeps): every quantity any evaluation order forms
 * (inputs, products of subsets of {alpha, a, b} and of {beta, c}, partial sums) is a multiple of
 * 2^q and at most M in magnitude; with M < 2^(q+p) and 2^q on both grids, all are
 * representable. T: the sum of |a b| to use (f->t.T, or a value below it). *t_lim (t_lim may
 * be NULL): where T alone refused it (T at or above 2^(q+p)), 2^(q+p), which any T at or above
 * it meets as well; left as it was otherwise. */
static bool exact_certificate(const gck_case *c, const gck_model *m, const gather_plan *g,
                              const exact_in *x, const elem_facts *f, double T, double *t_lim) {
    int p = g->grid_p, qmin = g->grid_qmin;
    double lim = g->grid_lim, aa = fabs(c->alpha);
    int q = products_grid(x->qa, x->qb, g->qal);
    if (x->rc && x->cv != 0) {
        int qc = lsb_exp(x->cv), qbe = lsb_exp(c->beta);
        if (qc < q) q = qc;
        if (qbe < q) q = qbe;
        if (qc + qbe < q) q = qc + qbe;
    }
    /* M below is at least T and q only falls: a T at or above 2^(q+p) already settles it (the
     * common case of a long sum, decided without the rest) */
    if (q != INT32_MAX && !isnan(T) && !below_pow2(T, (int64_t)q + p)) {
        if (t_lim) *t_lim = ldexp(1, q + p); /* only here: not per element that passes */
        return false;
    }
    double M = fmax(aa * T + x->bc, T);
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
        M = fmax(M, fmax(x->r, T + x->rcv));
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

overflow_facts gck_overflow_of(const gather_plan *gp, const elem_facts *f) {
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
    f->t_rounded = g->abs_rounded;
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

/* Whether an overflow rule could fire on these sums (gck_overflow_of's possible or nan; nan
 * implies possible: each of its sums is at most one that possible compares, all non-negative):
 * then bounds from above do not settle it. Computed here, not through gck_overflow_of's struct,
 * whose flags written as bytes and read as one word stalled the store forwarding (a quarter of
 * gather_sums' samples, 4096^3 f16, Zen 4). */
static inline bool near_overflow(const gather_plan *g, const elem_facts *f) {
    double gr = g->ovf_growth, thr = g->ovf_thr;
    return f->input_overflow || f->max_term >= thr || (f->pos_u + f->neg_u) * gr >= thr ||
           (f->pos + f->neg) * gr >= thr;
}

/* The facts of element (bi, i, j) whose oracle value is `oracle`; with skip_zero, of the sum
 * without the terms that have an exactly-zero factor (what a zero-skipping BLAS computes). In
 * two passes: gather_lines in the default rounding mode, gather_sums in upward rounding (so
 * that a column of elements changes the mode twice, not each element). */
void gck_gather_lines(const gck_case *c, const gck_support_row *row, const gather_plan *g,
                      const void *A, const void *B, const void *C, int64_t bi, int64_t i, int64_t j,
                      double oracle, elem_facts *f, gather_in *w) {
    const gck_model *m = &row->model;
    static const elem_facts none; /* copied by vector moves; a memset here compiled to a string
                                   * store (rep stos), whose start-up cost took 40% of this
                                   * function's samples */
    *f = none;
    f->t.k = c->k;
    f->t.abs_d = fabs(oracle);
    bool rab = g->rab, rc = g->rc;
    unsigned ord = g->ord;
    /* w filled field by field, in place: built aside and copied whole, its flags written as
     * bytes were read back as wider words, stalling the store forwarding (a third of this
     * function's samples, 4096^3 f16, Zen 4) */
    exact_in *x = &w->x;
    x->qa = x->qb = INT32_MAX;
    x->maxa = x->maxb = x->cv = x->bc = x->r = x->rcv = 0;
    x->rc = rc;
    x->over_alpha = (ord & GCK_ORDER_BETA_OVER_ALPHA) && rc && c->alpha != 0;
    bool exact = g->ab_exact;

    elem_lines *e = &w->e;
    e->c = c, e->i = i, e->j = j;
    e->Ab = e->Bb = NULL;
    e->da = e->db = NULL;
    e->df = false;
    e->ars = e->acs = e->brs = e->bcs = 0;
    int64_t ra = 0, cb = 0;
    if (rab) {
        e->ars = g->ars, e->acs = g->acs, e->brs = g->brs, e->bcs = g->bcs;
        e->Ab = (const char *)A + bi * g->a_member;
        e->Bb = (const char *)B + bi * g->b_member;
        ra = row_of_a(c, bi, i);
        cb = col_of_b(c, bi, j);
        if (g->a) {
            size_t es = g->dense_f ? sizeof(float) : sizeof(double);
            e->da = (const char *)g->a + (size_t)(ra * c->k) * es;
            e->db = (const char *)g->b + (size_t)(cb * c->k) * es;
            e->df = g->dense_f;
        }
        /* Pass 1, from the line facts: what input rounding does. */
        const line_facts *la = &g->fa[ra], *lb = &g->fb[cb];
        f->input_overflow = la->over || lb->over;
        x->maxa = la->maxabs;
        x->maxb = lb->maxabs;
        if (exact && la->repr && lb->repr) {
            x->qa = la->qmin;
            x->qb = lb->qmin;
        } else
            exact = false;
        if (la->has_inf || lb->has_inf) f->inf_times_flushed = inf_meets_flushed(e, m);
    }
    if (rc) {
        const char *Cb = (const char *)C + bi * g->c_member;
        x->cv = gck_fmt_load(Cb, c->type_c, i * g->crs + j * g->ccs);
        f->t.abs_c = fabs(x->cv);
        if (isfinite(x->cv) && f->t.abs_c > g->fc_max) f->input_overflow = true;
        if (!isfinite(x->cv) || gck_fmt_round_to(x->cv, m->epilogue) != x->cv) exact = false;
    }
    w->ra = ra, w->cb = cb, w->exact = exact, w->own_sums = false;
}

/* Whether T from the rounded road failed the exact-case certificate where the element's own T,
 * which may be as low as T·GCK_ABSPROD_BAND, could pass it (then its own sums settle it);
 * t_lim: what the certificate's refusal left in it (exact_certificate). */
static bool rounded_uncertified(const gck_case *c, const gck_model *m, const gather_plan *g,
                                const gather_in *w, const elem_facts *f, double t_lim) {
    if (!f->t_rounded || !w->exact || f->exact_case) return false;
    /* upward rounding: T times the band is still at most the exact sum */
    double low = f->t.T * GCK_ABSPROD_BAND;
    return !(low >= t_lim) && exact_certificate(c, m, g, &w->x, f, low, NULL);
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
void gck_gather_sums(const gck_case *c, const gck_support_row *row, const gather_plan *g,
                     int64_t bi, bool skip_zero, elem_facts *f, gather_in *w) {
    const gck_model *m = &row->model;
    unsigned ord = g->ord;
    bool rab = g->rab, rc = g->rc;
    exact_in *x = &w->x;
    bool fast = rab && !skip_zero && !w->own_sums &&
                fast_terms(c, g, x, w->ra, w->cb, bi, w->e.i, w->e.j, ord, f);
    if (rab && !fast) sum_terms(&w->e, ord, skip_zero, f);
    if (rc) add_c_term(c, x, f);
    double t_lim = INFINITY; /* what T the certificate needs below, where T alone refused it */
    if (w->exact) f->exact_case = exact_certificate(c, m, g, x, f, f->t.T, &t_lim);
    if (fast && (near_overflow(g, f) || rounded_uncertified(c, m, g, w, f, t_lim))) {
        /* sums that settle the overflow rules, or the certificate */
        sum_terms(&w->e, ord, skip_zero, f);
        f->t_rounded = false;
        if (rc) add_c_term(c, x, f);
        if (w->exact) f->exact_case = exact_certificate(c, m, g, x, f, f->t.T, NULL);
    }
    /* a backend that never sums unscaled products cannot overflow there */
    if (!((ord & GCK_ORDER_ALPHA_ON_SUM) || x->over_alpha)) f->pos_u = f->neg_u = 0.0;
    f->bound = gck_bound_of(&g->bc, &f->t, &f->degenerate);
    f->stat = -1;
    if (f->degenerate) return;
    double core, det;
    gck_inner_of(&g->bc, &f->t, &core, &det);
    f->inner = (core + det) * MARGIN;
    if (g->stat_on && !f->exact_case) f->stat = stat_of(c, g, f, det);
}

bool gck_plain_plan(const gather_plan *g) {
    return g->rab && !g->rc && g->abs && !g->bc.degenerate;
}

/* Whether element (bi, i, j), whose column's facts are lb, is plain (gck_plain_run); its T,
 * sum_ab and q2 bound into *f. */
static bool plain_one(const gck_case *c, const gather_plan *g, int64_t bi, int64_t i, int64_t j,
                      int64_t cb, const line_facts *lb, elem_facts *f) {
    int64_t ra = row_of_a(c, bi, i);
    const line_facts *la = &g->fa[ra];
    if (la->over || la->has_inf) return false;
    exact_in x = {.maxa = la->maxabs, .maxb = lb->maxabs};
    f->input_overflow = false;
    /* the same sums as gck_gather_sums takes from the GEMM (no NaN line: fast_terms) */
    if (!fast_terms(c, g, &x, ra, cb, bi, i, j, g->ord, f) || near_overflow(g, f)) return false;
    if (g->ab_exact && la->repr && lb->repr) {
        /* the certificate is possible: plain only where T alone refuses it, and on the rounded
         * road T times the band too (rounded_uncertified) */
        int q = products_grid(la->qmin, lb->qmin, g->qal);
        double t = f->t_rounded ? f->t.T * GCK_ABSPROD_BAND : f->t.T;
        if (q == INT32_MAX || below_pow2(t, (int64_t)q + g->grid_p)) return false;
    }
    return true;
}

int gck_plain_run(const gck_case *c, const gather_plan *g, int64_t bi, int64_t j, int n,
                  const int64_t *rows, const double *abs_d, bool *plain, plain_facts *p) {
    int64_t cb = col_of_b(c, bi, j);
    const line_facts *lb = &g->fb[cb];
    bool column = !lb->over && !lb->has_inf;
    int count = 0;
    for (int y = 0; y < n; y++) {
        elem_facts f;
        plain[y] = plain[y] && column && plain_one(c, g, bi, rows[y], j, cb, lb, &f);
        if (!plain[y]) continue;
        count++;
        /* the allowances as gck_gather_sums makes them from the same sums (C not read) */
        f.t.abs_d = abs_d[y];
        f.t.abs_c = 0;
        f.t.k = c->k;
        double core, det;
        gck_inner_of(&g->bc, &f.t, &core, &det);
        p[y].inner = (core + det) * MARGIN;
        p[y].stat = g->stat_on ? stat_of(c, g, &f, det) : -1;
        p[y].t_rounded = f.t_rounded;
    }
    return count;
}

/* Both passes for one element. */
void gck_gather(const gck_case *c, const gck_support_row *row, const gather_plan *g, const void *A,
                const void *B, const void *C, int64_t bi, int64_t i, int64_t j, bool skip_zero,
                bool own_sums, double oracle, elem_facts *f) {
    gather_in w;
    gck_gather_lines(c, row, g, A, B, C, bi, i, j, oracle, f, &w);
    w.own_sums = own_sums;
    int old = fegetround();
    fesetround(FE_UPWARD);
    gck_gather_sums(c, row, g, bi, skip_zero, f, &w);
    fesetround(old);
}
