/* The summation order of a row (fp_internal.h): pairs of units planted at chosen k, read back as
 * a tree; where a library switches paths with K; layouts of op(A) and op(B). */
#include "format_internal.h"
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp_internal.h"
#include "fpenv.h"
#include "gemmcheck/format.h"
#include "mix.h"

/* ---- summation order --------------------------------------------------------------------- */

enum { MAX_COLS = 512, FULL_TREE_K = 64 };

/* The pairs probed at K: every pair when K <= FULL_TREE_K, else (0, q) and (q-1, q) for every
 * q and 256 pseudo-random pairs. */
int64_t gck_fp_order_pairs(int64_t k, int64_t **ii, int64_t **jj) {
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
    const gck_format_info *fb = gck_fp_fmt(c->type_b), *fc = gck_fp_fmt(c->compute),
                          *fd = gck_fp_fmt(gck_case_type(c, GCK_D));
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

bool gck_fp_order_measure(gck_fp_probe *pr, int64_t m, int64_t k, layout l, const int64_t *ii,
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
        ok = gck_fp_run(pr, &c, av, bv, NULL, d);
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
static bool probe_order(gck_fp_probe *pr, gck_fingerprint *fp, const char *name, const char *prefix,
                        int64_t m, int64_t k, layout l, int pacc, gck_fp_tree *out) {
    char probe_txt[GCK_FP_PROBE];
    bool found = false;
    if (pacc && pacc < 62 && k > (1ll << pacc)) {
        gck_fp_add(fp, name, "needs partial sums that count up to K units exactly",
                   "%sundecided: the accumulation keeps %d bits, too few to count %lld units",
                   prefix, pacc, (long long)k);
        return false;
    }
    int64_t *ii = NULL, *jj = NULL, np = gck_fp_order_pairs(k, &ii, &jj);
    int64_t *lca = malloc((size_t)(np > 0 ? np : 1) * sizeof *lca);
    gck_fp_tree t;
    if (!np || !lca)
        gck_fp_add(fp, name, "out of memory", "%sundecided", prefix);
    else if (!gck_fp_order_measure(pr, m, k, l, ii, jj, np, lca, NULL))
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
void gck_fp_probe_orders(gck_fp_probe *pr, gck_fingerprint *fp, int pacc) {
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
