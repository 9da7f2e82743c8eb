/* The probes of a row's numeric fingerprint (fingerprint.h), their harness and their plan: every
 * probe builds a small GEMM from crafted values, calls the backend with the row (here: `run`),
 * and reads D; what it decides and the evidence go into one property. The probes are in
 * fp_order.c (summation order), fp_arith.c (products, bits, rounding, normalisation, scaling)
 * and fp_special.c (special values); the thread-count check is here. */
#include "fingerprint.h"
#include "format_internal.h"
#include "fp_internal.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fpenv.h"
#include "gemmcheck/format.h"
#include "mix.h"

/* ---- the plan ------------------------------------------------------------------------------ */

/* "tile against skinny": the properties of the tile pass tp whose values differ from the same
 * properties among the first `skinny` of fp; one undecided at either shape is no difference,
 * and is named apart. */
static void compare_shapes(gck_fingerprint *fp, int skinny, const gck_fingerprint *tp,
                           const char *probe_txt) {
    char differ[GCK_FP_VALUE] = "", open_[GCK_FP_VALUE] = "";
    size_t nd = 0, no = 0;
    for (int p = 0; p < tp->count; p++) {
        const gck_fp_prop *t = &tp->props[p];
        int q = 0;
        while (q < skinny && strcmp(fp->props[q].name, t->name) != 0) q++;
        if (q == skinny || !strcmp(fp->props[q].value, t->value)) continue;
        bool undecided =
            !strncmp(fp->props[q].value, "undecided", 9) || !strncmp(t->value, "undecided", 9);
        char *list = undecided ? open_ : differ;
        size_t *used = undecided ? &no : &nd;
        if (*used < GCK_FP_VALUE) /* a list too long for the value is cut (snprintf) */
            *used += (size_t)snprintf(list + *used, GCK_FP_VALUE - *used, "%s%s", *used ? ", " : "",
                                      t->name);
    }
    if (nd)
        gck_fp_add(fp, "tile against skinny", probe_txt, "differs: %s", differ);
    else if (no)
        gck_fp_add(fp, "tile against skinny", probe_txt,
                   "the same where both shapes decide (undecided at one: %s)", open_);
    else
        gck_fp_add(fp, "tile against skinny", probe_txt, "the same at both shapes");
}

/* The arithmetic probes again at a tile shape (fp_internal.h, gck_fp_run): libraries choose
 * kernels by shape, and the probes' own shapes (one column, or a few rows) may reach a
 * matrix-vector or small-matrix kernel where large products run another (cuBLAS: tensor-core
 * tiles; CPU BLAS: their small-matrix paths). Each property is added as "NAME (tile)", then
 * one that names the properties whose values differ between the two shapes. */
static void tile_pass(gck_fp_probe *pr, gck_fingerprint *fp) {
    gck_fingerprint *tp = calloc(1, sizeof *tp);
    char probe_txt[GCK_FP_PROBE];
    snprintf(probe_txt, sizeof probe_txt,
             "the accumulator, input, scaling, normalisation and product probes with M and N "
             "padded to at least %d by copies and K to at least %d by zero terms",
             (int)GCK_FP_TILE_MN, (int)GCK_FP_TILE_K);
    if (!tp) {
        gck_fp_add(fp, "tile against skinny", "out of memory", "undecided");
        return;
    }
    pr->tile = GCK_FP_TILE_MN, pr->why[0] = '\0', pr->copies = pr->differ = 0;
    gck_fp_probe_accumulator(pr, tp);
    pr->tile = 0, pr->why[0] = '\0';
    char copies_txt[GCK_FP_PROBE];
    snprintf(copies_txt, sizeof copies_txt,
             "the tile pass's %lld copies of probe elements, each compared bit for bit with the "
             "element it copies",
             (long long)pr->copies);
    if (!pr->copies)
        gck_fp_add(tp, "positions", "no tile-shaped call ran", "undecided");
    else if (!pr->differ)
        gck_fp_add(tp, "positions", copies_txt, "every copy reads the same bits");
    else
        gck_fp_add(tp, "positions", copies_txt,
                   "%lld copies read other bits: the arithmetic depends on the element's place "
                   "(edge or other kernels); the tile properties are the top-left block's",
                   (long long)pr->differ);
    int skinny = fp->count;
    for (int p = 0; p < tp->count; p++) {
        char name[GCK_FP_NAME];
        snprintf(name, sizeof name, "%.40s (tile)", tp->props[p].name);
        gck_fp_add(fp, name, tp->props[p].probe, "%s", tp->props[p].value);
    }
    compare_shapes(fp, skinny, tp, probe_txt);
    free(tp);
}

void gck_fingerprint_row(gck_backend *be, const gck_support_row *row, gck_fingerprint *fp) {
    gck_fp_probe pr = {be, row, "", 0, 0, 0};
    memset(fp, 0, sizeof *fp);
    int pacc = gck_fp_probe_accumulator(&pr, fp);
    uint32_t first = 0, again = 0;
    gck_fp_probe_orders(&pr, fp, pacc);
    /* run to run: the K = 1000 probe's calls twice, their reads digested */
    pr.why[0] = '\0';
    int64_t *ii = NULL, *jj = NULL, np = gck_fp_order_pairs(1000, &ii, &jj);
    int64_t *lca = malloc((size_t)(np > 0 ? np : 1) * sizeof *lca);
    if (np && lca && gck_fp_order_measure(&pr, 2, 1000, PLAIN, ii, jj, np, lca, &first) &&
        gck_fp_order_measure(&pr, 2, 1000, PLAIN, ii, jj, np, lca, &again))
        gck_fp_add(fp, "run to run", "the K=1000 order probe twice, every read compared",
                   first == again ? "identical bits" : "different bits");
    else
        gck_fp_add(fp, "run to run", pr.why[0] ? pr.why : "out of memory", "undecided");
    free(ii);
    free(jj);
    free(lca);
    pr.why[0] = '\0';
    gck_fp_probe_subnormal_inputs(&pr, fp);
    gck_fp_probe_subnormal_result(&pr, fp);
    gck_fp_probe_specials(&pr, fp);
    tile_pass(&pr, fp);
}

/* ---- threads ------------------------------------------------------------------------------- */

bool gck_fp_threads_row(const gck_support_row *row) {
    return row->a == row->b && row->b == row->c && row->c == row->d &&
           (row->compute == row->a || row->compute == GCK_F32);
}

bool gck_fp_threads_run(gck_backend *be, const gck_support_row *row, double *d, char *why,
                        size_t len) {
    enum { M = GCK_FP_THREADS_M, N = GCK_FP_THREADS_N, K = GCK_FP_THREADS_K };
    gck_fp_probe pr = {be, row, "", 0, 0, 0};
    gck_case c = gck_fp_row_case(row, M, N, K);
    double *a = malloc(sizeof(double) * M * K), *b = malloc(sizeof(double) * K * N);
    bool ok = a && b;
    uint64_t z = 0x7e4d5ull;
    for (int64_t e = 0; ok && e < (int64_t)M * K; e++)
        a[e] = gck_fmt_round_to((double)((z = gck_splitmix64(z)) >> 11) * 0x1p-52 - 1, row->a);
    for (int64_t e = 0; ok && e < (int64_t)K * N; e++)
        b[e] = gck_fmt_round_to((double)((z = gck_splitmix64(z)) >> 11) * 0x1p-52 - 1, row->b);
    ok = ok && gck_fp_run(&pr, &c, a, b, NULL, d);
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
