/* Special values (fp_internal.h): subnormal inputs and results, alpha = 0 and beta = 0 reads,
 * Inf * 0. */
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

/* ---- special values ------------------------------------------------------------------------ */

/* One 1 x 1 x 1 GEMM: D = alpha*a*b + beta*c; NAN when it cannot run (why in pr). */
static double one(gck_fp_probe *pr, double a, double b, double c, double alpha, double beta) {
    gck_case cs = gck_fp_row_case(pr->row, 1, 1, 1);
    cs.alpha = alpha;
    cs.beta = beta;
    double d;
    return gck_fp_run(pr, &cs, &a, &b, &c, &d) ? d : NAN;
}

void gck_fp_probe_subnormal_inputs(gck_fp_probe *pr, gck_fingerprint *fp) {
    const gck_format_info *fa = gck_fp_fmt(pr->row->a), *fb = gck_fp_fmt(pr->row->b),
                          *fc = gck_fp_fmt(pr->row->compute), *fd = gck_fp_fmt(pr->row->d);
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
        if (!gck_fp_holds(pr->row->compute,
                          s)) { /* inputs may be converted to the compute format */
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
void gck_fp_probe_subnormal_result(gck_fp_probe *pr, gck_fingerprint *fp) {
    const gck_format_info *fa = gck_fp_fmt(pr->row->a), *fb = gck_fp_fmt(pr->row->b),
                          *fc = gck_fp_fmt(pr->row->compute), *fd = gck_fp_fmt(pr->row->d);
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

void gck_fp_probe_specials(gck_fp_probe *pr, gck_fingerprint *fp) {
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
