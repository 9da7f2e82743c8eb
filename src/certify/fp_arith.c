/* The arithmetic of a row (fp_internal.h): products fused or rounded, the bits the inputs and
 * the accumulator keep, the accumulation's rounding, normalisation per addition or per block,
 * where alpha and beta enter. */
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

/* ---- products, fused multiply-add ------------------------------------------------------ */

/* K = 64; a row per distance j in {1, 2, 3, 4, 8, 16, 32} and order: -1*1 at k = 0 and x*x at
 * k = j, or x*x at k = 0 and -1*1 at k = j, zeros elsewhere, with x = 1 + 2^-e and x*x =
 * 1 + 2^(1-e) + 2^-2e inexact in the compute format. A fused multiply-add into a running sum
 * that holds -1 gives 2^(1-e) + 2^-2e; a rounded product, 2^(1-e). The distances reach the two
 * terms into one accumulator whatever the interleaving (up to 32) or split. */
enum { FMA_K = 64, FMA_D = 7 };
static void probe_fma(gck_fp_probe *pr, gck_fingerprint *fp, int pin) {
    static const int dist[FMA_D] = {1, 2, 3, 4, 8, 16, 32};
    const gck_format_info *fc = gck_fp_fmt(pr->row->compute);
    int e = (fc->precision + 1) / 2;
    if (e > pin - 1 || 2 * e < fc->precision) {
        gck_fp_add(fp, "products", "inputs' precision against the compute format's",
                   "exact in %s (%d-bit inputs): fused or not is unobservable", fc->name, pin);
        return;
    }
    double fused = ldexp(1, 1 - e) + ldexp(1, -2 * e), rounded = ldexp(1, 1 - e);
    if (gck_fmt_round_to(fused, pr->row->d) != fused) {
        gck_fp_add(fp, "products", "the probe's results against D's format",
                   "undecided: D (%s) cannot hold 2^%d + 2^%d exactly",
                   gck_fp_fmt(pr->row->d)->name, 1 - e, -2 * e);
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
    if (!gck_fp_run(pr, &c, A, B, NULL, d)) {
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

/* ---- the accumulator: bits kept, rounding, where alpha and beta enter ----------------------- */

/* Rows of K = ACC_K terms, B all ones: row r is big[r] at k = 0, small[r] at k = dist and
 * -big[r] at k = 2 dist, dist = acc_dist[r % ACC_D]; the distances bring the three terms into
 * one accumulator whatever the interleaving (up to 16) or blocking. d: one read per row. */
enum { ACC_K = 64, ACC_D = 6, ACC_EXTRA = 8 };
static const int acc_dist[ACC_D] = {1, 2, 3, 4, 8, 16};

static bool three_terms(gck_fp_probe *pr, int64_t n, const double *big, const double *small,
                        double *d) {
    double *A = calloc((size_t)(n * ACC_K), sizeof *A), *B = malloc(ACC_K * sizeof *B);
    bool ok = A && B;
    for (int k = 0; ok && k < ACC_K; k++) B[k] = 1;
    for (int64_t r = 0; ok && r < n; r++) {
        int j = acc_dist[r % ACC_D];
        A[r] = big[r], A[r + j * n] = small[r], A[r + 2 * j * n] = -big[r];
    }
    gck_case c = gck_fp_row_case(pr->row, n, 1, ACC_K);
    ok = ok && gck_fp_run(pr, &c, A, B, NULL, d);
    if (!A || !B) snprintf(pr->why, sizeof pr->why, "out of memory");
    free(A);
    free(B);
    return ok;
}

/* The exponent s such that 2^s and 2^(s - t) for t up to tmax are normal numbers of A's type,
 * of D's and of the compute format; INT_MIN when there is none. */
static int acc_scale(const gck_support_row *row, int tmax) {
    const gck_format_info *fa = gck_fp_fmt(row->a), *fd = gck_fp_fmt(row->d),
                          *fc = gck_fp_fmt(row->compute);
    int lo = fa->emin > fd->emin ? fa->emin : fd->emin,
        hi = fa->emax < fd->emax ? fa->emax : fd->emax;
    lo = lo > fc->emin ? lo : fc->emin;
    return lo + tmax <= hi - 2 ? lo + tmax : INT_MIN;
}

/* The bits the accumulation keeps: 2^s + 2^(s-t) - 2^s reads 2^(s-t) while the partial sum
 * holds 1 + 2^-t, 0 once it does not; the first t lost is the accumulator's precision. Returns
 * it (the smallest over the distances), 0 when undecided or when no t probed was lost (then
 * *least: the bits it keeps at least, else 0); *at: the distances (bit j for acc_dist[j]) where
 * the three terms met in one accumulator of that precision (at others a kernel may cancel the
 * big terms first). */
static int probe_accumulator_bits(gck_fp_probe *pr, gck_fingerprint *fp, unsigned *at, int *least) {
    const gck_format_info *fc = gck_fp_fmt(pr->row->compute);
    int pc = fc->precision, tmax = pc + ACC_EXTRA, s = acc_scale(pr->row, tmax);
    if (s == INT_MIN) tmax = pc + 1, s = acc_scale(pr->row, tmax);
    if (s == INT_MIN) {
        gck_fp_add(fp, "accumulator bits",
                   "the types' ranges against 2^-t up to the compute precision",
                   "undecided: %s and %s span too few binades for terms 2^-%d apart",
                   gck_fp_fmt(pr->row->a)->name, gck_fp_fmt(pr->row->d)->name, tmax);
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
    *least = p > tmax ? tmax + 1 : 0;
    return p > tmax ? 0 : p;
}

/* The rounding of the accumulation at its measured precision p (u = 2^(1-p) relative to the
 * big term): +-(1 + 3u/4) - 1 and +-(1 + u/4) - 1, in units of u, tell the direction. */
static void probe_accumulator_rounding(gck_fp_probe *pr, gck_fingerprint *fp, int p, unsigned at) {
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
 * bit t; the first t lost is the precision the inputs are rounded to. pacc: the bits the
 * accumulation keeps (or keeps at least), 0 when unknown: t goes up to one below it (else below
 * the compute format's precision), as far as D holds 2^-t. */
static int probe_input_bits(gck_fp_probe *pr, gck_fingerprint *fp, int side, int pacc) {
    const gck_format_info *fs = gck_fp_fmt(side ? pr->row->b : pr->row->a);
    char name[GCK_FP_NAME];
    snprintf(name, sizeof name, "inputs %s", side ? "B" : "A");
    int tmax = fs->precision - 1, cap = (pacc ? pacc : gck_fp_fmt(pr->row->compute)->precision) - 1;
    while (cap > 0 && !gck_fp_holds(pr->row->d, ldexp(1, -cap))) cap--; /* D must hold 2^-t */
    bool capped = cap < tmax;
    tmax = capped ? cap : tmax;
    double v[64], ones[64], cv[64], d[64];
    for (int t = 1; t <= tmax; t++) v[t - 1] = 1 + ldexp(1, -t), ones[t - 1] = 1, cv[t - 1] = -1;
    gck_case c = side ? gck_fp_row_case(pr->row, 1, tmax, 1) : gck_fp_row_case(pr->row, tmax, 1, 1);
    c.beta = 1;
    bool ok = gck_fp_run(pr, &c, side ? ones : v, side ? v : ones, cv, d);
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
static void probe_scaling(gck_fp_probe *pr, gck_fingerprint *fp, int p, bool nearest) {
    const gck_format_info *fd = gck_fp_fmt(pr->row->d);
    const char *why = !p || !nearest ? "needs an accumulation of known bits that rounds to nearest"
                      : fd->precision < p ? "D holds fewer bits than the accumulation"
                      : !gck_fp_holds(pr->row->a, ldexp(1, -p)) ? "A's type cannot hold 2^-p"
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
    bool ok = gck_fp_run(pr, &c, a, b, NULL, &d);
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
    ok = gck_fp_run(pr, &c, a, b, &c1, &d);
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
static void probe_normalisation(gck_fp_probe *pr, gck_fingerprint *fp, int p) {
    int s = p ? acc_scale(pr->row, p + 1) : INT_MIN;
    const char *name = "normalisation";
    if (s == INT_MIN || gck_fp_fmt(pr->row->d)->precision < p) {
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
    bool ok = A && gck_fp_run(pr, &c, A, B, NULL, d);
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
int gck_fp_probe_accumulator(gck_fp_probe *pr, gck_fingerprint *fp) {
    unsigned at = 0;
    int least = 0, p = probe_accumulator_bits(pr, fp, &at, &least);
    pr->why[0] = '\0';
    probe_accumulator_rounding(pr, fp, p, at);
    pr->why[0] = '\0';
    bool nearest = !strcmp(fp->props[fp->count - 1].value, "to nearest");
    /* an accumulation wider than the compute type names (cuBLAS's FAST_TF32 sums in f32) shows
     * the inputs' rounding only with t beyond that type's precision */
    int pin = p ? p : least, pa = probe_input_bits(pr, fp, 0, pin),
        pb = probe_input_bits(pr, fp, 1, pin);
    probe_scaling(pr, fp, p, nearest);
    probe_normalisation(pr, fp, p);
    probe_fma(pr, fp, pa < pb ? pa : pb);
    pr->why[0] = '\0';
    return p;
}
