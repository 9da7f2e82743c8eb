/* The probes of a row's numeric fingerprint (fingerprint.h). Every probe builds a small GEMM
 * from crafted values, calls the backend with the row, and reads D; what it decides and the
 * evidence go into one property. */
#include "fingerprint.h"
#include "format_internal.h"

#include <limits.h>
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

gck_case gck_fp_row_case(const gck_support_row *row, int64_t m, int64_t n, int64_t k) {
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

/* Element (r, s) of the logical matrix x of c (rows r < nr, columns s < ns; column-major in
 * v, v NULL: zeros) stored into its buffer, or (load) read from it into v. */
static bool place(const gck_case *c, gck_operand x, void *buf, double *v, int64_t nr, int64_t ns,
                  bool load) {
    int64_t rs, cs, st = gck_case_stride(c, x);
    gck_case_op_strides(c, x, &rs, &cs);
    gck_format t = gck_case_type(c, x);
    bool same = true; /* every batch member gets the same values; loaded, they must agree */
    for (int64_t b = 0; b < c->batch; b++)
        for (int64_t q = 0; q < ns; q++)
            for (int64_t r = 0; r < nr; r++) {
                int64_t e = b * st + r * rs + q * cs;
                double got = load ? gck_fmt_load(buf, t, e) : 0;
                if (load && b == 0) v[r + q * nr] = got;
                if (load && b > 0) same &= !memcmp(&got, &v[r + q * nr], sizeof got);
                if (!load) gck_fmt_store(buf, t, e, v ? v[r + q * nr] : 0.0);
            }
    return same;
}

/* Run c (any layout) with op(A), op(B), C given as doubles, column-major (exact values of their
 * types; cv may be NULL: zeros), and read D into d (m*n, column-major). false with the reason
 * in pr->why. */
static bool run(probe *pr, const gck_case *c, const double *av, const double *bv, const double *cv,
                double *d) {
    char msg[256];
    if (gck_case_validate(c, msg, sizeof msg) != GCK_OK) {
        snprintf(pr->why, sizeof pr->why, "probe case invalid: %.200s", msg);
        return false;
    }
    int64_t na = gck_case_extent(c, GCK_A), nb = gck_case_extent(c, GCK_B),
            nc = gck_case_extent(c, GCK_C);
    void *a = calloc((size_t)na, 8), *b = calloc((size_t)nb, 8), *cc = calloc((size_t)nc, 8),
         *dd = c->d_is_c ? cc : calloc((size_t)gck_case_extent(c, GCK_D), 8);
    bool ok = a && b && cc && dd;
    if (ok) {
        place(c, GCK_A, a, (double *)av, c->m, c->k, false);
        place(c, GCK_B, b, (double *)bv, c->k, c->n, false);
        place(c, GCK_C, cc, (double *)cv, c->m, c->n, false);
    }
    if (!ok) snprintf(pr->why, sizeof pr->why, "out of memory for a %s probe", "GEMM");
    if (ok) {
        gck_operands ops = {a,
                            b,
                            cc,
                            dd,
                            {a, b, cc, dd},
                            {(size_t)na * 8, (size_t)nb * 8, (size_t)nc * 8,
                             (size_t)gck_case_extent(c, GCK_D) * 8}};
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
        if (ok && !place(c, GCK_D, dd, d, c->m, c->n, true)) {
            snprintf(pr->why, sizeof pr->why, "the batch members' results differ (same inputs)");
            ok = false;
        }
    }
    free(a);
    free(b);
    if (dd != cc) free(dd);
    free(cc);
    return ok;
}

static const gck_format_info *fmt(gck_format f) { return gck_format_get(f); }

static bool holds(gck_format f, double x) { return isfinite(x) && gck_fmt_round_to(x, f) == x; }

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

static gck_case layout_case(const gck_support_row *row, int64_t m, int64_t n, int64_t k, layout l) {
    gck_case c = gck_fp_row_case(row, m, n, k);
    if (l == ROW_MAJOR) c.order = GCK_ROW_MAJOR, c.lda = k, c.ldb = n, c.ldc = c.ldd = n;
    if (l == A_TRANSPOSED) c.transa = GCK_OP_T, c.lda = k;
    if (l == LDA_PADDED) c.lda = m + 3;
    if (l == LDB_LDC_PADDED) c.ldb = k + 3, c.ldc = c.ldd = m + 3;
    if (l == BATCHED) {
        c.batch = 3;
        c.stride_a = gck_case_footprint(&c, GCK_A), c.stride_b = gck_case_footprint(&c, GCK_B);
        c.stride_c = c.stride_d = gck_case_footprint(&c, GCK_C);
    }
    return c;
}

static bool order_measure(probe *pr, int64_t m, int64_t k, layout l, const int64_t *ii,
                          const int64_t *jj, int64_t np, int64_t *lca, uint32_t *digest) {
    gck_case c0 = gck_fp_row_case(pr->row, m, 1, k);
    int em, eu;
    if (!order_scale(&c0, k, &em, &eu, pr->why, sizeof pr->why)) return false;
    double M = ldexp(1, em), u = ldexp(1, eu);
    int64_t per = l == SKINNY_N ? 1 : MAX_COLS - 1;
    double *av = malloc((size_t)(m * k) * sizeof *av), *bv = malloc((size_t)(k * MAX_COLS) * 8),
           *d = malloc((size_t)(m * MAX_COLS) * sizeof *d);
    bool ok = av && bv && d;
    for (int64_t e = 0; ok && e < m * k; e++) av[e] = 1.0;
    for (int64_t p0 = 0; ok && p0 < np; p0 += per) {
        int64_t cols = (np - p0 < per ? np - p0 : per) + 1;
        gck_case c = layout_case(pr->row, m, cols, k, l);
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

/* The order at K over M rows in layout l, as the property `name` (its value prefixed by
 * `prefix`); the tree into *t when one is recognised. */
static bool probe_order(probe *pr, gck_fingerprint *fp, const char *name, const char *prefix,
                        int64_t m, int64_t k, layout l, int pacc, gck_fp_tree *out) {
    char probe_txt[GCK_FP_PROBE];
    bool found = false;
    if (pacc && pacc < 62 && k > (1ll << pacc)) {
        gck_fp_add(fp, name, "needs partial sums that count up to K units exactly",
                   "%sundecided: the accumulation keeps %d bits, too few to count %lld units",
                   prefix, pacc, (long long)k);
        return false;
    }
    int64_t *ii = NULL, *jj = NULL, np = order_pairs(k, &ii, &jj);
    int64_t *lca = malloc((size_t)(np > 0 ? np : 1) * sizeof *lca);
    gck_fp_tree t;
    if (!np || !lca)
        gck_fp_add(fp, name, "out of memory", "%sundecided", prefix);
    else if (!order_measure(pr, m, k, l, ii, jj, np, lca, NULL))
        gck_fp_add(fp, name, pr->why, "%sundecided", prefix);
    else {
        snprintf(probe_txt, sizeof probe_txt, "+-M pairs (FPRev): %s %lld pairs, one column each",
                 k <= FULL_TREE_K ? "all" : "(0,q), (q-1,q) and random:", (long long)np);
        if ((found = gck_fp_tree_match(k, ii, jj, lca, np, &t))) {
            char desc[GCK_FP_VALUE];
            gck_fp_tree_describe(&t, desc, sizeof desc);
            gck_fp_add(fp, name, probe_txt, "%s%s", prefix, desc);
            if (out) *out = t;
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
                       "%snot a recognised tree: L(0,q) departs from q+1 at %lld q (q->L: %s%s)",
                       prefix, (long long)steps, at, steps > 8 ? ", ..." : "");
        }
    }
    free(ii);
    free(jj);
    free(lca);
    return found;
}

/* The orders: K = 16 to 2048 (plain layout; M*N*K from 3e4 to 2e6, across OpenBLAS's
 * small-matrix switch at 1e6), then where libraries switch paths: GEMV-shaped calls (M = 1, and
 * N = 2 with one pair per call), padded ldb and ldc, row-major storage and a strided batch of 3
 * (when the row supports them), op(A) = A^T and a padded lda at K = 64, and K one below and above
 * the first block the K = 2048 probe found (a KC) and one past two blocks. */
static void probe_orders(probe *pr, gck_fingerprint *fp, int pacc) {
    static const struct {
        int64_t m, k;
        layout l;
        const char *what;
    } plan[] = {{4, 16, PLAIN, ""},
                {4, 64, PLAIN, ""},
                {2, 256, PLAIN, ""},
                {2, 1000, PLAIN, ""},
                {1, 1024, PLAIN, ""},
                {2, 2048, PLAIN, ""},
                {1, 256, PLAIN, ""},
                {4, 64, ROW_MAJOR, ", row-major"},
                {4, 64, A_TRANSPOSED, ", A^T"},
                {4, 64, LDA_PADDED, ", lda = M + 3"},
                {4, 64, LDB_LDC_PADDED, ", ldb = K + 3, ldc = M + 3"},
                {4, 100, SKINNY_N, ", N = 2"},
                {4, 64, BATCHED, ", batch 3"}};
    gck_fp_tree t2048 = {.nblocks = 0};
    for (size_t s = 0; s < sizeof plan / sizeof *plan; s++) {
        if ((plan[s].l == ROW_MAJOR && !(pr->row->promises & GCK_PROMISE_ROW_MAJOR)) ||
            (plan[s].l == BATCHED && !(pr->row->promises & GCK_PROMISE_BATCHED)))
            continue;
        char name[GCK_FP_NAME];
        snprintf(name, sizeof name, "order K=%lld (M=%lld%s)", (long long)plan[s].k,
                 (long long)plan[s].m, plan[s].what);
        pr->why[0] = '\0';
        probe_order(pr, fp, name, "", plan[s].m, plan[s].k, plan[s].l, pacc,
                    plan[s].k == 2048 ? &t2048 : NULL);
    }
    int64_t b = t2048.nblocks > 1 ? t2048.ends[0] : 0;
    static const char *const edges[] = {"first block - 1", "first block + 1", "two blocks + 1"};
    for (int e = 0; e < 3; e++) {
        int64_t k = e == 0 ? b - 1 : e == 1 ? b + 1 : 2 * b + 1;
        char name[GCK_FP_NAME], prefix[32];
        snprintf(name, sizeof name, "order K=%s (M=2)", edges[e]);
        snprintf(prefix, sizeof prefix, "K=%lld: ", (long long)k);
        pr->why[0] = '\0';
        if (b > 2)
            probe_order(pr, fp, name, prefix, 2, k, PLAIN, pacc, NULL);
        else
            gck_fp_add(fp, name, "the blocks of the K=2048 order",
                       "undecided: no block structure was found at K = 2048");
    }
}

/* ---- products, fused multiply-add ------------------------------------------------------ */

/* K = 64; a row per distance j in {1, 2, 3, 4, 8, 16, 32} and order: -1*1 at k = 0 and x*x at
 * k = j, or x*x at k = 0 and -1*1 at k = j, zeros elsewhere, with x = 1 + 2^-e and x*x =
 * 1 + 2^(1-e) + 2^-2e inexact in the compute format. A fused multiply-add into a running sum
 * that holds -1 gives 2^(1-e) + 2^-2e; a rounded product, 2^(1-e). The distances reach the two
 * terms into one accumulator whatever the interleaving (up to 32) or split. */
enum { FMA_K = 64, FMA_D = 7 };
static void probe_fma(probe *pr, gck_fingerprint *fp, int pin) {
    static const int dist[FMA_D] = {1, 2, 3, 4, 8, 16, 32};
    const gck_format_info *fc = fmt(pr->row->compute);
    int e = (fc->precision + 1) / 2;
    if (e > pin - 1 || 2 * e < fc->precision) {
        gck_fp_add(fp, "products", "inputs' precision against the compute format's",
                   "exact in %s (%d-bit inputs): fused or not is unobservable", fc->name, pin);
        return;
    }
    double fused = ldexp(1, 1 - e) + ldexp(1, -2 * e), rounded = ldexp(1, 1 - e);
    if (gck_fmt_round_to(fused, pr->row->d) != fused) {
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
    gck_case c = gck_fp_row_case(pr->row, R, 2, FMA_K);
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
    gck_case cs = gck_fp_row_case(pr->row, 1, 1, 1);
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
        if (t > fc->emax - 1) t = fc->emax - 1; /* 2^t and the product in the compute range */
        if (es + t > fd->emax - 1) t = fd->emax - 1 - es;
        if (es + t > fc->emax - 1) t = fc->emax - 1 - es;
        char name[GCK_FP_NAME], probe_txt[GCK_FP_PROBE];
        snprintf(name, sizeof name, "subnormal %s", side ? "B" : "A");
        if (!holds(pr->row->compute, s)) { /* inputs may be converted to the compute format */
            gck_fp_add(fp, name, "a subnormal of the operand's type against the compute format",
                       "undecided: %s cannot hold %s's subnormal 2^%d", fc->name, fs->name, es);
            continue;
        }
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

/* ---- the accumulator: bits kept, rounding, where alpha and beta enter ----------------------- */

/* Rows of K = ACC_K terms, B all ones: row r is big[r] at k = 0, small[r] at k = dist and
 * -big[r] at k = 2 dist, dist = acc_dist[r % ACC_D]; the distances bring the three terms into
 * one accumulator whatever the interleaving (up to 16) or blocking. d: one read per row. */
enum { ACC_K = 64, ACC_D = 6, ACC_EXTRA = 8 };
static const int acc_dist[ACC_D] = {1, 2, 3, 4, 8, 16};

static bool three_terms(probe *pr, int64_t n, const double *big, const double *small, double *d) {
    double *A = calloc((size_t)(n * ACC_K), sizeof *A), *B = malloc(ACC_K * sizeof *B);
    bool ok = A && B;
    for (int k = 0; ok && k < ACC_K; k++) B[k] = 1;
    for (int64_t r = 0; ok && r < n; r++) {
        int j = acc_dist[r % ACC_D];
        A[r] = big[r], A[r + j * n] = small[r], A[r + 2 * j * n] = -big[r];
    }
    gck_case c = gck_fp_row_case(pr->row, n, 1, ACC_K);
    ok = ok && run(pr, &c, A, B, NULL, d);
    if (!A || !B) snprintf(pr->why, sizeof pr->why, "out of memory");
    free(A);
    free(B);
    return ok;
}

/* The exponent s such that 2^s and 2^(s - t) for t up to tmax are normal numbers of A's type,
 * of D's and of the compute format; INT_MIN when there is none. */
static int acc_scale(const gck_support_row *row, int tmax) {
    const gck_format_info *fa = fmt(row->a), *fd = fmt(row->d), *fc = fmt(row->compute);
    int lo = fa->emin > fd->emin ? fa->emin : fd->emin,
        hi = fa->emax < fd->emax ? fa->emax : fd->emax;
    lo = lo > fc->emin ? lo : fc->emin;
    return lo + tmax <= hi - 2 ? lo + tmax : INT_MIN;
}

/* The bits the accumulation keeps: 2^s + 2^(s-t) - 2^s reads 2^(s-t) while the partial sum
 * holds 1 + 2^-t, 0 once it does not; the first t lost is the accumulator's precision. Returns
 * it (the smallest over the distances), 0 when undecided; *at: the distances (bit j for
 * acc_dist[j]) where the three terms met in one accumulator of that precision (at others a
 * kernel may cancel the big terms first). */
static int probe_accumulator_bits(probe *pr, gck_fingerprint *fp, unsigned *at) {
    const gck_format_info *fc = fmt(pr->row->compute);
    int pc = fc->precision, tmax = pc + ACC_EXTRA, s = acc_scale(pr->row, tmax);
    if (s == INT_MIN) tmax = pc + 1, s = acc_scale(pr->row, tmax);
    if (s == INT_MIN) {
        gck_fp_add(fp, "accumulator bits",
                   "the types' ranges against 2^-t up to the compute precision",
                   "undecided: %s and %s span too few binades for terms 2^-%d apart",
                   fmt(pr->row->a)->name, fmt(pr->row->d)->name, tmax);
        return 0;
    }
    int64_t n = (int64_t)ACC_D * tmax;
    double *big = malloc((size_t)n * 8), *small = malloc((size_t)n * 8), *d = malloc((size_t)n * 8);
    int first[ACC_D] = {0}, odd = 0, p = 0;
    bool ok = big && small && d;
    for (int64_t r = 0; ok && r < n; r++)
        big[r] = ldexp(1, s), small[r] = ldexp(1, s - 1 - (int)(r / ACC_D));
    ok = ok && three_terms(pr, n, big, small, d);
    for (int j = 0; ok && j < ACC_D; j++) {
        first[j] = tmax + 1;
        for (int t = 1; t <= tmax; t++) {
            double got = d[(t - 1) * ACC_D + j], kept = ldexp(1, s - t);
            odd += got != kept && got != 0;
            if (got == 0 && first[j] > tmax) first[j] = t;
            odd += got == kept && first[j] <= tmax; /* kept again after a loss */
        }
        p = j == 0 || first[j] < p ? first[j] : p;
    }
    *at = 0;
    for (int j = 0; ok && j < ACC_D; j++) *at |= (first[j] == p ? 1u : 0u) << j;
    char probe_txt[GCK_FP_PROBE];
    snprintf(probe_txt, sizeof probe_txt,
             "2^%d + 2^(%d-t) - 2^%d, t = 1..%d, at distances 1..16 in K = %d: first t lost %d, "
             "%d, %d, %d, %d, %d",
             s, s, s, tmax, ACC_K, first[0], first[1], first[2], first[3], first[4], first[5]);
    if (!ok)
        gck_fp_add(fp, "accumulator bits", pr->why, "undecided"), p = 0;
    else if (odd)
        gck_fp_add(fp, "accumulator bits", probe_txt, "undecided: %d reads neither kept nor lost",
                   odd),
            p = 0;
    else if (p > tmax)
        gck_fp_add(fp, "accumulator bits", probe_txt, "at least %d bits (%s has %d)", tmax + 1,
                   fc->name, pc);
    else if (p == pc)
        gck_fp_add(fp, "accumulator bits", probe_txt, "%d bits, the precision of %s", p, fc->name);
    else if (p < pc)
        gck_fp_add(fp, "accumulator bits", probe_txt,
                   "%d bits, fewer than %s's %d (partial sums held in a narrower format)", p,
                   fc->name, pc);
    else
        gck_fp_add(fp, "accumulator bits", probe_txt,
                   "%d bits, %d more than %s's %d (a wider accumulator or extra alignment bits)", p,
                   p - pc, fc->name, pc);
    free(big);
    free(small);
    free(d);
    return p > tmax ? 0 : p;
}

/* The rounding of the accumulation at its measured precision p (u = 2^(1-p) relative to the
 * big term): +-(1 + 3u/4) - 1 and +-(1 + u/4) - 1, in units of u, tell the direction. */
static void probe_accumulator_rounding(probe *pr, gck_fingerprint *fp, int p, unsigned at) {
    static const struct {
        const char *name;
        int r[4]; /* reads of +3/4, -3/4, +1/4, -1/4, in units */
    } modes[] = {{"to nearest", {1, -1, 0, 0}},
                 {"toward zero (truncation)", {0, 0, 0, 0}},
                 {"upward", {1, 0, 1, 0}},
                 {"downward", {0, -1, 0, -1}},
                 {"away from zero", {1, -1, 1, -1}}};
    int s = p ? acc_scale(pr->row, p + 1) : INT_MIN;
    if (s == INT_MIN) {
        gck_fp_add(fp, "accumulator rounding", "needs the accumulator's bits",
                   "undecided: the accumulator's precision is not known");
        return;
    }
    enum { N = 4 * ACC_D };
    double big[N], small[N], d[N], u = ldexp(1, s + 1 - p);
    for (int r = 0; r < N; r++) {
        int v = r / ACC_D, sign = v % 2 ? -1 : 1;
        big[r] = sign * ldexp(1, s), small[r] = sign * (v < 2 ? 0.75 : 0.25) * u;
    }
    int got[4] = {0}, j0 = 0;
    while (j0 < ACC_D - 1 && !(at >> j0 & 1)) j0++;
    bool ok = three_terms(pr, N, big, small, d), agree = ok;
    for (int r = 0; ok && r < N; r++) {
        double x = d[r] / u;
        if (r % ACC_D == j0) got[r / ACC_D] = x == floor(x) && fabs(x) <= 1 ? (int)x : 9;
    }
    for (int r = 0; ok && r < N; r++)
        agree &= !(at >> (r % ACC_D) & 1) || d[r] / u == got[r / ACC_D];
    char probe_txt[GCK_FP_PROBE];
    snprintf(probe_txt, sizeof probe_txt,
             "+-(2^%d + {3/4, 1/4} u) - 2^%d with u = 2^%d: reads %d, %d, %d, %d u", s, s,
             s + 1 - p, got[0], got[1], got[2], got[3]);
    if (!ok) {
        gck_fp_add(fp, "accumulator rounding", pr->why, "undecided");
        return;
    }
    for (size_t m = 0; agree && m < sizeof modes / sizeof *modes; m++)
        if (!memcmp(got, modes[m].r, sizeof got)) {
            gck_fp_add(fp, "accumulator rounding", probe_txt, "%s", modes[m].name);
            return;
        }
    gck_fp_add(fp, "accumulator rounding", probe_txt, "undecided: %s",
               agree ? "no rounding direction gives these reads" : "the distances disagree");
}

/* The inputs' bits: (1 + 2^-t)*1 - 1 (beta = 1, C = -1) reads 2^-t while the operand keeps its
 * bit t; the first t lost is the precision the inputs are rounded to. */
static int probe_input_bits(probe *pr, gck_fingerprint *fp, int side, int pacc) {
    const gck_format_info *fs = fmt(side ? pr->row->b : pr->row->a);
    char name[GCK_FP_NAME];
    snprintf(name, sizeof name, "inputs %s", side ? "B" : "A");
    int tmax = fs->precision - 1, cap = (pacc ? pacc : fmt(pr->row->compute)->precision) - 1;
    while (cap > 0 && !holds(pr->row->d, ldexp(1, -cap))) cap--; /* D must hold 2^-t */
    bool capped = cap < tmax;
    tmax = capped ? cap : tmax;
    double v[64], ones[64], cv[64], d[64];
    for (int t = 1; t <= tmax; t++) v[t - 1] = 1 + ldexp(1, -t), ones[t - 1] = 1, cv[t - 1] = -1;
    gck_case c = side ? gck_fp_row_case(pr->row, 1, tmax, 1) : gck_fp_row_case(pr->row, tmax, 1, 1);
    c.beta = 1;
    bool ok = run(pr, &c, side ? ones : v, side ? v : ones, cv, d);
    int first = 0, odd = 0;
    for (int t = 1; ok && t <= tmax; t++) {
        double got = d[t - 1];
        if (got == 0 && !first) first = t;
        odd += (got != 0 && got != ldexp(1, -t)) || (got != 0 && first);
    }
    char probe_txt[GCK_FP_PROBE];
    snprintf(probe_txt, sizeof probe_txt, "(1 + 2^-t) * 1 - 1 for t = 1..%d: first t lost %d", tmax,
             first);
    if (!ok)
        gck_fp_add(fp, name, pr->why, "undecided");
    else if (odd)
        gck_fp_add(fp, name, probe_txt, "undecided: %d reads neither kept nor lost", odd);
    else if (first)
        gck_fp_add(fp, name, probe_txt, "rounded to %d bits (%s has %d)", first, fs->name,
                   fs->precision);
    else if (capped)
        gck_fp_add(fp, name, probe_txt,
                   "at least %d bits kept (the accumulation or D can show no more)", tmax + 1);
    else
        gck_fp_add(fp, name, probe_txt, "used exactly (all %d bits of %s)", fs->precision,
                   fs->name);
    pr->why[0] = '\0';
    return ok && !odd && first ? first : fs->precision;
}

/* Where alpha and beta enter, at the accumulator's precision p (nearest rounding only):
 * alpha = 3 on 1 + 2^-p: 3 when alpha multiplies the finished sum, 3 + 2^(2-p) when it
 * multiplies each product (or an operand); beta = 1, C = 1 with terms 2^-p, 2^-p: 1 when beta*C
 * starts the accumulation (each half unit is lost), 1 + 2^(1-p) when it is added last. */
static void probe_scaling(probe *pr, gck_fingerprint *fp, int p, bool nearest) {
    const gck_format_info *fd = fmt(pr->row->d);
    const char *why = !p || !nearest ? "needs an accumulation of known bits that rounds to nearest"
                      : fd->precision < p ? "D holds fewer bits than the accumulation"
                      : !holds(pr->row->a, ldexp(1, -p)) ? "A's type cannot hold 2^-p"
                                                         : NULL;
    if (why) {
        gck_fp_add(fp, "alpha applied", why, "undecided");
        gck_fp_add(fp, "beta*C added", why, "undecided");
        return;
    }
    double a[2] = {1, ldexp(1, -p)}, b[2] = {1, 1}, c1 = 1, d = NAN;
    gck_case c = gck_fp_row_case(pr->row, 1, 1, 2);
    c.alpha = 3;
    char probe_txt[GCK_FP_PROBE];
    bool ok = run(pr, &c, a, b, NULL, &d);
    snprintf(probe_txt, sizeof probe_txt, "alpha = 3 on 1 + 2^-%d: D = %a", p, d);
    if (!ok)
        gck_fp_add(fp, "alpha applied", pr->why, "undecided");
    else if (d == 3)
        gck_fp_add(fp, "alpha applied", probe_txt, "to the finished sum");
    else if (d == 3 + ldexp(1, 2 - p))
        gck_fp_add(fp, "alpha applied", probe_txt,
                   "before the sum is complete (to each product, operand or partial sum)");
    else
        gck_fp_add(fp, "alpha applied", probe_txt, "undecided: neither order gives %a", d);
    a[0] = a[1] = ldexp(1, -p);
    c.alpha = 1, c.beta = 1;
    ok = run(pr, &c, a, b, &c1, &d);
    snprintf(probe_txt, sizeof probe_txt, "beta = 1, C = 1, terms 2^-%d, 2^-%d: D = %a", p, p, d);
    if (!ok)
        gck_fp_add(fp, "beta*C added", pr->why, "undecided");
    else if (d == 1)
        gck_fp_add(fp, "beta*C added", probe_txt, "first: every term is added into beta*C");
    else if (d == 1 + ldexp(1, 1 - p))
        gck_fp_add(fp, "beta*C added", probe_txt,
                   "after the terms are summed (to alpha times their sum, or each block's)");
    else
        gck_fp_add(fp, "beta*C added", probe_txt, "undecided: neither order gives %a", d);
    pr->why[0] = '\0';
}

/* Normalisation per addition or once per block of w terms (a block FMA, as tensor cores):
 * with 1 at k = 0 and half units u/2 at k = 1 and k = j (u = 2^(1-p)), rounding after every
 * addition (in any tree that adds 1 to a half unit before the other) reads 1, a block that
 * holds terms 0, 1 and j reads 1 + u; the block's width is the first j that reads 1 again. */
enum { NORM_K = 64 };
static void probe_normalisation(probe *pr, gck_fingerprint *fp, int p) {
    int s = p ? acc_scale(pr->row, p + 1) : INT_MIN;
    const char *name = "normalisation";
    if (s == INT_MIN || fmt(pr->row->d)->precision < p) {
        gck_fp_add(fp, name, "needs the accumulation's bits, and D to hold them", "undecided: %s",
                   s == INT_MIN ? "the accumulation's bits are not known"
                                : "D holds fewer bits than the accumulation");
        return;
    }
    enum { R = NORM_K - 2 };
    double *A = calloc((size_t)R * NORM_K, sizeof *A), B[NORM_K], d[R];
    for (int k = 0; k < NORM_K; k++) B[k] = 1;
    double one = ldexp(1, s), half = ldexp(1, s - p), up = one + 2 * half;
    for (int r = 0; A && r < R; r++) /* row r: j = r + 2 */
        A[r] = one, A[r + R] = half, A[r + (r + 2) * R] = half;
    gck_case c = gck_fp_row_case(pr->row, R, 1, NORM_K);
    bool ok = A && run(pr, &c, A, B, NULL, d);
    free(A);
    int w = 0, odd = 0;
    for (int r = 0; ok && r < R; r++) {
        odd += d[r] != one && d[r] != up;
        if (!w && d[r] == one) w = r + 2;
        /* 1 + u again after a 1: no block, unless j = 2 already read 1 (interleaved
         * accumulators pair k = 1 with other j) */
        odd += w > 2 && d[r] == up;
    }
    char probe_txt[GCK_FP_PROBE];
    snprintf(
        probe_txt, sizeof probe_txt,
        "1 at k = 0, u/2 at k = 1 and k = j = 2..%d (u = 2^%d relative): first j reading 1: %d",
        NORM_K - 1, 1 - p, w);
    if (!ok)
        gck_fp_add(fp, name, pr->why, "undecided");
    else if (odd)
        gck_fp_add(fp, name, probe_txt, "undecided: %d reads fit no block", odd);
    else if (w == 2)
        gck_fp_add(fp, name, probe_txt, "after every addition");
    else if (w)
        gck_fp_add(fp, name, probe_txt, "once per block of %d terms (a block FMA)", w);
    else
        gck_fp_add(fp, name, probe_txt,
                   "once per block of at least %d terms (a block FMA or an exact accumulation)",
                   NORM_K);
    pr->why[0] = '\0';
}

/* The accumulator's bits and rounding, the inputs' bits, where alpha and beta enter, and
 * whether products are fused (with inputs of the bits they keep). Returns the accumulator's
 * bits (0: unknown). */
static int probe_accumulator(probe *pr, gck_fingerprint *fp) {
    unsigned at = 0;
    int p = probe_accumulator_bits(pr, fp, &at);
    pr->why[0] = '\0';
    probe_accumulator_rounding(pr, fp, p, at);
    pr->why[0] = '\0';
    bool nearest = !strcmp(fp->props[fp->count - 1].value, "to nearest");
    int pa = probe_input_bits(pr, fp, 0, p), pb = probe_input_bits(pr, fp, 1, p);
    probe_scaling(pr, fp, p, nearest);
    probe_normalisation(pr, fp, p);
    probe_fma(pr, fp, pa < pb ? pa : pb);
    pr->why[0] = '\0';
    return p;
}

/* ---- the plan ------------------------------------------------------------------------------ */

void gck_fingerprint_row(gck_backend *be, const gck_support_row *row, gck_fingerprint *fp) {
    probe pr = {be, row, ""};
    memset(fp, 0, sizeof *fp);
    int pacc = probe_accumulator(&pr, fp);
    uint32_t first = 0, again = 0;
    probe_orders(&pr, fp, pacc);
    /* run to run: the K = 1000 probe's calls twice, their reads digested */
    pr.why[0] = '\0';
    int64_t *ii = NULL, *jj = NULL, np = order_pairs(1000, &ii, &jj);
    int64_t *lca = malloc((size_t)(np > 0 ? np : 1) * sizeof *lca);
    if (np && lca && order_measure(&pr, 2, 1000, PLAIN, ii, jj, np, lca, &first) &&
        order_measure(&pr, 2, 1000, PLAIN, ii, jj, np, lca, &again))
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

/* ---- threads ------------------------------------------------------------------------------- */

bool gck_fp_threads_row(const gck_support_row *row) {
    return row->a == row->b && row->b == row->c && row->c == row->d &&
           (row->compute == row->a || row->compute == GCK_F32);
}

bool gck_fp_threads_run(gck_backend *be, const gck_support_row *row, double *d, char *why,
                        size_t len) {
    enum { M = GCK_FP_THREADS_M, N = GCK_FP_THREADS_N, K = GCK_FP_THREADS_K };
    probe pr = {be, row, ""};
    gck_case c = gck_fp_row_case(row, M, N, K);
    double *a = malloc(sizeof(double) * M * K), *b = malloc(sizeof(double) * K * N);
    bool ok = a && b;
    uint64_t z = 0x7e4d5ull;
    for (int64_t e = 0; ok && e < (int64_t)M * K; e++)
        a[e] = gck_fmt_round_to((double)((z = gck_splitmix64(z)) >> 11) * 0x1p-52 - 1, row->a);
    for (int64_t e = 0; ok && e < (int64_t)K * N; e++)
        b[e] = gck_fmt_round_to((double)((z = gck_splitmix64(z)) >> 11) * 0x1p-52 - 1, row->b);
    ok = ok && run(&pr, &c, a, b, NULL, d);
    snprintf(why, len, "%s", a && b ? pr.why : "out of memory");
    free(a);
    free(b);
    return ok;
}

void gck_fp_threads_add(gck_fingerprint *fp, const double *dflt, const double *one,
                        const char *why) {
    char probe_txt[GCK_FP_PROBE];
    snprintf(probe_txt, sizeof probe_txt,
             "a %dx%dx%d product of uniform inputs, threads as the environment sets them and "
             "with every threading variable at 1",
             GCK_FP_THREADS_M, GCK_FP_THREADS_N, GCK_FP_THREADS_K);
    if (!dflt || !one) {
        gck_fp_add(fp, "threads", why, "undecided");
        return;
    }
    int64_t n = (int64_t)GCK_FP_THREADS_M * GCK_FP_THREADS_N, diff = 0;
    for (int64_t e = 0; e < n; e++) diff += memcmp(&dflt[e], &one[e], sizeof *one) != 0;
    if (!diff)
        gck_fp_add(fp, "threads", probe_txt, "the same bits with one thread");
    else
        gck_fp_add(fp, "threads", probe_txt,
                   "the bits depend on the thread count: %.1f%% of the elements differ",
                   100.0 * (double)diff / (double)n);
}
