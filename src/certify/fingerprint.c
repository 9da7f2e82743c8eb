/* The probes of a row's numeric fingerprint (fingerprint.h). Every probe builds a small GEMM
 * from crafted values, calls the backend with the row, and reads D; what it decides and the
 * evidence go into one property. */
#include "fingerprint.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fpenv.h"
#include "gemmcheck/format.h"
#include "mix.h"

void gck_fp_add(gck_fingerprint *fp, const char *name, const char *probe, const char *fmt, ...) {
    if (fp->count >= GCK_FP_MAX_PROPS) return;
    gck_fp_prop *p = &fp->props[fp->count++];
    snprintf(p->name, sizeof p->name, "%s", name);
    snprintf(p->probe, sizeof p->probe, "%s", probe);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->value, sizeof p->value, fmt, ap);
    va_end(ap);
}

/* ---- one call ------------------------------------------------------------------------------ */

typedef struct probe {
    gck_backend *be;
    const gck_support_row *row;
    char why[GCK_FP_PROBE];
} probe;

/* The row's case of shape m x n x k: column-major, no transposes, tight leading dimensions,
 * D separate when the row allows it, alpha = 1, beta = 0. */
static gck_case row_case(const gck_support_row *row, int64_t m, int64_t n, int64_t k) {
    gck_case c;
    gck_case_init(&c, m, n, k);
    c.type_a = row->a;
    c.type_b = row->b;
    c.type_c = row->c;
    c.type_d = row->d;
    c.compute = row->compute;
    c.scale_type = (row->promises & GCK_PROMISE_SCALE_F64) ? GCK_F64 : GCK_F32;
    c.d_is_c = !(row->promises & GCK_PROMISE_D_SEPARATE);
    c.lda = m;
    c.ldb = k;
    c.ldc = c.ldd = m;
    c.alpha = 1;
    c.beta = 0;
    return c;
}

/* Run c with A, B, C given as doubles (exact values of their types; cv may be NULL: zeros) and
 * read D into d (m*n, column-major). false with the reason in pr->why. */
static bool run(probe *pr, const gck_case *c, const double *av, const double *bv, const double *cv,
                double *d) {
    char msg[256];
    if (gck_case_validate(c, msg, sizeof msg) != GCK_OK) {
        snprintf(pr->why, sizeof pr->why, "probe case invalid: %.200s", msg);
        return false;
    }
    int64_t na = c->m * c->k, nb = c->k * c->n, nc = c->m * c->n;
    void *a = calloc((size_t)na, 8), *b = calloc((size_t)nb, 8), *cc = calloc((size_t)nc, 8),
         *dd = c->d_is_c ? cc : calloc((size_t)nc, 8);
    bool ok = a && b && cc && dd;
    for (int64_t e = 0; ok && e < na; e++) gck_store(a, c->type_a, e, av[e]);
    for (int64_t e = 0; ok && e < nb; e++) gck_store(b, c->type_b, e, bv[e]);
    for (int64_t e = 0; ok && e < nc; e++) gck_store(cc, c->type_c, e, cv ? cv[e] : 0.0);
    if (!ok) snprintf(pr->why, sizeof pr->why, "out of memory for a %s probe", "GEMM");
    if (ok) {
        gck_operands ops = {a,
                            b,
                            cc,
                            dd,
                            {a, b, cc, dd},
                            {(size_t)na * 8, (size_t)nb * 8, (size_t)nc * 8, (size_t)nc * 8}};
        gck_fpenv env;
        gck_fpenv_save(&env);
        msg[0] = '\0';
        gck_call_status st = pr->be->ops->call(pr->be->state, c, pr->row, &ops, msg, sizeof msg);
        gck_fpenv_restore(&env, NULL, 0);
        if (st != GCK_CALL_OK) {
            snprintf(pr->why, sizeof pr->why, "the call failed (%s): %.150s",
                     st == GCK_CALL_NOT_SUPPORTED ? "not supported" : "error", msg);
            ok = false;
        }
        for (int64_t e = 0; ok && e < nc; e++) d[e] = gck_load(dd, gck_case_type(c, GCK_D), e);
    }
    free(a);
    free(b);
    if (dd != cc) free(dd);
    free(cc);
    return ok;
}

static const gck_format_info *fmt(gck_format f) { return gck_format_get(f); }

/* ---- summation order --------------------------------------------------------------------- */

enum { MAX_COLS = 512, FULL_TREE_K = 64 };

/* The pairs probed at K: every pair when K <= FULL_TREE_K, else (0, q) and (q-1, q) for every
 * q and 256 pseudo-random pairs. */
static int64_t order_pairs(int64_t k, int64_t **ii, int64_t **jj) {
    int64_t n = k <= FULL_TREE_K ? k * (k - 1) / 2 : 2 * (k - 1) + 256 - 1, p = 0;
    *ii = malloc((size_t)n * sizeof **ii);
    *jj = malloc((size_t)n * sizeof **jj);
    if (!*ii || !*jj) return 0;
    if (k <= FULL_TREE_K) {
        for (int64_t i = 0; i < k; i++)
            for (int64_t j = i + 1; j < k; j++) (*ii)[p] = i, (*jj)[p++] = j;
        return p;
    }
    for (int64_t q = 1; q < k; q++) (*ii)[p] = 0, (*jj)[p++] = q;
    for (int64_t q = 2; q < k; q++) (*ii)[p] = q - 1, (*jj)[p++] = q;
    uint64_t z = (uint64_t)k;
    while (p < n) {
        int64_t x = (int64_t)((z = gck_splitmix64(z)) % (uint64_t)k);
        int64_t y = (int64_t)((z = gck_splitmix64(z)) % (uint64_t)k);
        if (x == y) continue;
        (*ii)[p] = x < y ? x : y;
        (*jj)[p++] = x < y ? y : x;
    }
    return p;
}

/* Exponents of M and of the unit so that a partial sum holding +-M absorbs up to K units with
 * three bits to spare beyond the compute format, both in B's type, and K units exact in D. */
static bool order_scale(const gck_case *c, int64_t k, int *em, int *eu, char *why, size_t len) {
    const gck_format_info *fb = fmt(c->type_b), *fc = fmt(c->compute),
                          *fd = fmt(gck_case_type(c, GCK_D));
    int lk = 0;
    while ((1ll << lk) < k) lk++;
    int need = fc->precision + 3 + lk + 1;
    *eu = 0;
    *em = need;
    if (*em > fb->emax - 1) {
        *em = fb->emax - 1;
        *eu = *em - need;
    }
    int emin_sub_b = fb->emin - fb->precision + 1, emin_sub_d = fd->emin - fd->precision + 1;
    if (*eu < emin_sub_b) {
        snprintf(why, len,
                 "%s inputs span 2^%d..2^%d: too narrow for +-M to absorb %lld units "
                 "in %s (2^%d needed)",
                 fb->name, emin_sub_b, fb->emax, (long long)k, fc->name, need);
        return false;
    }
    if (lk > fd->precision || *eu < emin_sub_d || *eu + lk > fd->emax) {
        snprintf(why, len, "%s cannot hold every count of up to %lld units exactly", fd->name,
                 (long long)k);
        return false;
    }
    return true;
}

/* Measure L(i, j) for the pairs on shape m x (up to MAX_COLS) x k; a column per pair, and a
 * control column of units only in every call. false (why) when a read is not a whole number of
 * units below K or the rows disagree. */
static bool order_measure(probe *pr, int64_t m, int64_t k, const int64_t *ii, const int64_t *jj,
                          int64_t np, int64_t *lca, uint32_t *digest) {
    gck_case c0 = row_case(pr->row, m, 1, k);
    int em, eu;
    if (!order_scale(&c0, k, &em, &eu, pr->why, sizeof pr->why)) return false;
    double M = ldexp(1, em), u = ldexp(1, eu);
    int64_t per = MAX_COLS - 1;
    double *av = malloc((size_t)(m * k) * sizeof *av), *bv = malloc((size_t)(k * MAX_COLS) * 8),
           *d = malloc((size_t)(m * MAX_COLS) * sizeof *d);
    bool ok = av && bv && d;
    for (int64_t e = 0; ok && e < m * k; e++) av[e] = 1.0;
    for (int64_t p0 = 0; ok && p0 < np; p0 += per) {
        int64_t cols = (np - p0 < per ? np - p0 : per) + 1;
        gck_case c = row_case(pr->row, m, cols, k);
        for (int64_t e = 0; e < k * cols; e++) bv[e] = u;
        for (int64_t q = 1; q < cols; q++) {
            bv[(q - 1) * k + ii[p0 + q - 1]] = M; /* column q-1 probes pair p0+q-1 */
            bv[(q - 1) * k + jj[p0 + q - 1]] = -M;
        }
        ok = run(pr, &c, av, bv, NULL, d);
        for (int64_t col = 0; ok && col < cols; col++) {
            double want0 = d[col * m];
            for (int64_t r = 0; ok && r < m; r++) {
                double x = d[col * m + r];
                if (digest) *digest = *digest * 31u + (uint32_t)(int64_t)(x / u);
                if (x != want0) {
                    snprintf(pr->why, sizeof pr->why,
                             "rows 0 and %lld of one column differ "
                             "(%g and %g units): the order depends on the row",
                             (long long)r, want0 / u, x / u);
                    ok = false;
                }
            }
            double units = want0 / u;
            bool control = col == cols - 1;
            if (ok && (units != floor(units) || units < 0 || units > (double)k ||
                       (control && units != (double)k))) {
                snprintf(pr->why, sizeof pr->why,
                         "%s read %.17g units (expected a whole number "
                         "%s): not a tree of two-term additions that absorbs, or units lost",
                         control ? "the control column" : "a pair column", units,
                         control ? "equal to K" : "below K");
                ok = false;
            }
            if (ok && !control) lca[p0 + col] = k - (int64_t)units;
        }
    }
    free(av);
    free(bv);
    free(d);
    return ok;
}

static void probe_order(probe *pr, gck_fingerprint *fp, int64_t m, int64_t k, uint32_t *digest) {
    char name[GCK_FP_NAME], probe_txt[GCK_FP_PROBE];
    snprintf(name, sizeof name, "order K=%lld (M=%lld)", (long long)k, (long long)m);
    int64_t *ii = NULL, *jj = NULL, np = order_pairs(k, &ii, &jj);
    int64_t *lca = malloc((size_t)(np > 0 ? np : 1) * sizeof *lca);
    gck_fp_tree t;
    if (!np || !lca)
        gck_fp_add(fp, name, "out of memory", "undecided");
    else if (!order_measure(pr, m, k, ii, jj, np, lca, digest))
        gck_fp_add(fp, name, pr->why, "undecided");
    else {
        snprintf(probe_txt, sizeof probe_txt, "+-M pairs (FPRev): %s %lld pairs, one column each",
                 k <= FULL_TREE_K ? "all" : "(0,q), (q-1,q) and random:", (long long)np);
        if (gck_fp_tree_match(k, ii, jj, lca, np, &t)) {
            char desc[GCK_FP_VALUE];
            gck_fp_tree_describe(&t, desc, sizeof desc);
            gck_fp_add(fp, name, probe_txt, "%s", desc);
        } else {
            /* the evidence: where the profile L(0, q) departs from q+1 */
            char at[120] = "";
            size_t len = 0;
            int64_t steps = 0;
            for (int64_t p = 1; p < np && ii[p] == 0; p++)
                if (lca[p] != lca[p - 1] + 1 && steps++ < 8 && len < sizeof at - 24)
                    len += (size_t)snprintf(at + len, sizeof at - len, "%s%lld->%lld",
                                            len ? ", " : "", (long long)jj[p], (long long)lca[p]);
            gck_fp_add(fp, name, probe_txt,
                       "not a recognised tree: L(0,q) departs from q+1 at %lld q (q->L: %s%s)",
                       (long long)steps, at, steps > 8 ? ", ..." : "");
        }
    }
    free(ii);
    free(jj);
    free(lca);
}

/* ---- products, fused multiply-add ------------------------------------------------------ */

/* K = 64; a row per distance j in {1, 2, 3, 4, 8, 16, 32} and order: -1*1 at k = 0 and x*x at
 * k = j, or x*x at k = 0 and -1*1 at k = j, zeros elsewhere, with x = 1 + 2^-e and x*x =
 * 1 + 2^(1-e) + 2^-2e inexact in the compute format. A fused multiply-add into a running sum
 * that holds -1 gives 2^(1-e) + 2^-2e; a rounded product, 2^(1-e). The distances reach the two
 * terms into one accumulator whatever the interleaving (up to 32) or split. */
enum { FMA_K = 64, FMA_D = 7 };
static void probe_fma(probe *pr, gck_fingerprint *fp) {
    static const int dist[FMA_D] = {1, 2, 3, 4, 8, 16, 32};
    const gck_format_info *fa = fmt(pr->row->a), *fb = fmt(pr->row->b), *fc = fmt(pr->row->compute);
    int pin = fa->precision < fb->precision ? fa->precision : fb->precision;
    int e = (fc->precision + 1) / 2;
    if (e > pin - 1 || 2 * e < fc->precision) {
        gck_fp_add(fp, "products", "inputs' precision against the compute format's",
                   "exact in %s (%d-bit inputs): fused or not is unobservable", fc->name, pin);
        return;
    }
    double fused = ldexp(1, 1 - e) + ldexp(1, -2 * e), rounded = ldexp(1, 1 - e);
    if (gck_round_to(fused, pr->row->d) != fused) {
        gck_fp_add(fp, "products", "the probe's results against D's format",
                   "undecided: D (%s) cannot hold 2^%d + 2^%d exactly", fmt(pr->row->d)->name,
                   1 - e, -2 * e);
        return;
    }
    enum { R = 2 * FMA_D };
    double x = 1 + ldexp(1, -e), A[R * FMA_K] = {0}, B[FMA_K * 2], d[R * 2];
    for (int k = 0; k < FMA_K; k++) {
        B[k] = k ? x : 1;         /* column 0: 1 at k = 0, x elsewhere */
        B[FMA_K + k] = k ? 1 : x; /* column 1: x at k = 0, 1 elsewhere */
    }
    for (int r = 0; r < FMA_D; r++) {
        A[r] = -1, A[r + dist[r] * R] = x;                 /* row r, column 0: -1, then x*x */
        A[FMA_D + r] = x, A[FMA_D + r + dist[r] * R] = -1; /* row 7+r, column 1: x*x, then -1 */
    }
    gck_case c = row_case(pr->row, R, 2, FMA_K);
    if (!run(pr, &c, A, B, NULL, d)) {
        gck_fp_add(fp, "products", pr->why, "undecided");
        return;
    }
    int fwd = 0, rev = 0, odd = 0;
    for (int r = 0; r < FMA_D; r++) {
        double f = d[r], b = d[R + FMA_D + r];
        fwd += f == fused, rev += b == fused;
        odd += (f != fused && f != rounded) || (b != fused && b != rounded);
    }
    char probe_txt[GCK_FP_PROBE];
    snprintf(probe_txt, sizeof probe_txt,
             "-1 and (1+2^-%d)^2 at distances 1..32 in K = 64, both "
             "orders: fused at %d and %d of 7",
             e, fwd, rev);
    if (odd)
        gck_fp_add(fp, "products", probe_txt, "undecided: %d reads neither fused nor rounded", odd);
    else if (fwd == FMA_D && rev == FMA_D)
        gck_fp_add(fp, "products", probe_txt,
                   "kept exact into the sum, even the first (a wider or exact accumulation)");
    else if (fwd == 0 && rev == 0)
        gck_fp_add(fp, "products", probe_txt, "rounded to %s before the addition (no FMA)",
                   fc->name);
    else if (rev == 0)
        gck_fp_add(fp, "products", probe_txt,
                   "fused multiply-add into the running sum (the first product rounded alone)");
    else
        gck_fp_add(fp, "products", probe_txt, "fused in some orders: k not ascending");
}

/* ---- special values ------------------------------------------------------------------------ */

/* One 1 x 1 x 1 GEMM: D = alpha*a*b + beta*c; NAN when it cannot run (why in pr). */
static double one(probe *pr, double a, double b, double c, double alpha, double beta) {
    gck_case cs = row_case(pr->row, 1, 1, 1);
    cs.alpha = alpha;
    cs.beta = beta;
    double d;
    return run(pr, &cs, &a, &b, &c, &d) ? d : NAN;
}

static void probe_subnormal_inputs(probe *pr, gck_fingerprint *fp) {
    const gck_format_info *fa = fmt(pr->row->a), *fb = fmt(pr->row->b), *fc = fmt(pr->row->compute),
                          *fd = fmt(pr->row->d);
    for (int side = 0; side < 2; side++) {
        const gck_format_info *fs = side ? fb : fa, *fo = side ? fa : fb;
        double s = 2 * fs->min_subnormal; /* times 2^t, a normal of compute and D */
        int t = fo->emax - 1, es = fs->emin - fs->precision + 2;
        int lo = (fc->emin > fd->emin ? fc->emin : fd->emin) + 2;
        if (es + t > fd->emax - 1) t = fd->emax - 1 - es;
        char name[GCK_FP_NAME], probe_txt[GCK_FP_PROBE];
        snprintf(name, sizeof name, "subnormal %s", side ? "B" : "A");
        if (es + t < lo) {
            gck_fp_add(fp, name, "a subnormal times the other type's largest power of two",
                       "undecided: the product stays below the normal range of %s or %s", fc->name,
                       fd->name);
            continue;
        }
        double want = ldexp(s, t),
               got = side ? one(pr, ldexp(1, t), s, 0, 1, 0) : one(pr, s, ldexp(1, t), 0, 1, 0);
        snprintf(probe_txt, sizeof probe_txt, "%s = 2^%d times 2^%d: D = %a", name, es, t, got);
        if (isnan(got) && pr->why[0])
            gck_fp_add(fp, name, pr->why, "undecided");
        else if (got == want)
            gck_fp_add(fp, name, probe_txt, "honoured");
        else if (got == 0)
            gck_fp_add(fp, name, probe_txt, "treated as zero (DAZ)");
        else
            gck_fp_add(fp, name, probe_txt, "wrong: %a instead of %a", got, want);
        pr->why[0] = '\0';
    }
}

/* A product whose exact value is a subnormal of D's type that the compute format also holds
 * (or a subnormal of both): kept, or flushed to zero. */
static void probe_subnormal_result(probe *pr, gck_fingerprint *fp) {
    const gck_format_info *fa = fmt(pr->row->a), *fb = fmt(pr->row->b), *fc = fmt(pr->row->compute),
                          *fd = fmt(pr->row->d);
    int target = fd->emin - 2; /* 2^target: a subnormal of D with 3 bits or more */
    if (fd->precision < 4 || target < fc->emin - fc->precision + 3) target = fc->emin - 2;
    int ea = target / 2 < fa->emin ? fa->emin : target / 2, eb = target - ea;
    if (eb < fb->emin) eb = fb->emin, ea = target - eb; /* B's range is the narrower */
    char probe_txt[GCK_FP_PROBE];
    if (eb < fb->emin || eb > fb->emax || ea < fa->emin || ea > fa->emax ||
        (target >= fd->emin && target >= fc->emin)) {
        gck_fp_add(fp, "subnormal results", "a product of two normals landing below D's normals",
                   "undecided: no such product of %s and %s normals", fa->name, fb->name);
        return;
    }
    double got = one(pr, ldexp(1, ea), ldexp(1, eb), 0, 1, 0), want = ldexp(1, target);
    snprintf(probe_txt, sizeof probe_txt, "2^%d * 2^%d = 2^%d: D = %a", ea, eb, target, got);
    if (isnan(got) && pr->why[0])
        gck_fp_add(fp, "subnormal results", pr->why, "undecided");
    else if (got == want)
        gck_fp_add(fp, "subnormal results", probe_txt, "kept");
    else if (got == 0)
        gck_fp_add(fp, "subnormal results", probe_txt, "flushed to zero (FTZ)");
    else
        gck_fp_add(fp, "subnormal results", probe_txt, "wrong: %a instead of %a", got, want);
    pr->why[0] = '\0';
}

static void probe_specials(probe *pr, gck_fingerprint *fp) {
    double d = one(pr, NAN, 1, 1, 0, 1);
    if (isnan(d) && pr->why[0])
        gck_fp_add(fp, "alpha=0 reads A", pr->why, "undecided");
    else
        gck_fp_add(fp, "alpha=0 reads A", "A = NaN, alpha = 0, beta = 1, C = 1",
                   isnan(d) ? "yes (NaN in A reaches D)" : "no (D = %g)", d);
    pr->why[0] = '\0';
    d = one(pr, 1, 1, NAN, 1, 0);
    if (isnan(d) && pr->why[0])
        gck_fp_add(fp, "beta=0 reads C", pr->why, "undecided");
    else
        gck_fp_add(fp, "beta=0 reads C", "C = NaN, beta = 0, A = B = 1",
                   isnan(d) ? "yes (NaN in C reaches D)" : "no (D = %g)", d);
    pr->why[0] = '\0';
    d = one(pr, INFINITY, 0, 0, 1, 0);
    if (isnan(d) && pr->why[0])
        gck_fp_add(fp, "Inf*0", pr->why, "undecided");
    else
        gck_fp_add(fp, "Inf*0", "A = Inf, B = 0", isnan(d) ? "NaN (IEEE)" : "%g (term dropped)", d);
    pr->why[0] = '\0';
}

/* ---- the plan ------------------------------------------------------------------------------ */

void gck_fingerprint_row(gck_backend *be, const gck_support_row *row, gck_fingerprint *fp) {
    static const struct {
        int64_t m, k;
    } orders[] = {{4, 16}, {4, 64}, {2, 256}, {2, 1000}, {1, 1024}, {2, 2048}};
    probe pr = {be, row, ""};
    memset(fp, 0, sizeof *fp);
    probe_fma(&pr, fp);
    uint32_t first = 0, again = 0;
    for (size_t s = 0; s < sizeof orders / sizeof orders[0]; s++)
        probe_order(&pr, fp, orders[s].m, orders[s].k, s == 3 ? &first : NULL);
    /* run to run: the K = 1000 probe once more, its reads digested */
    pr.why[0] = '\0';
    int64_t *ii = NULL, *jj = NULL, np = order_pairs(1000, &ii, &jj);
    int64_t *lca = malloc((size_t)(np > 0 ? np : 1) * sizeof *lca);
    if (np && lca && order_measure(&pr, 2, 1000, ii, jj, np, lca, &again))
        gck_fp_add(fp, "run to run", "the K=1000 order probe twice, every read compared",
                   first == again ? "identical bits" : "different bits");
    else
        gck_fp_add(fp, "run to run", pr.why[0] ? pr.why : "out of memory", "undecided");
    free(ii);
    free(jj);
    free(lca);
    pr.why[0] = '\0';
    probe_subnormal_inputs(&pr, fp);
    probe_subnormal_result(&pr, fp);
    probe_specials(&pr, fp);
}
