/* Every finding kind is caught, with the right kind, on a purpose-built faulty backend, and the
 * same cases pass on ref. Crash and hang go through the isolated runner and the CLI. */
#include <criterion/criterion.h>
#include <math.h>
#include <mpfr.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "absprod.h"
#include "check_internal.h"
#include "gemmcheck/runner.h"
#include "grid.h"
#include "testutil.h"
#include "wire.h"
#include "worker.h"

#define CASES 400

/* Run the first CASES grid specs of ref's table on `spec`; count findings per kind. */
static void run_cases(const char *spec, long count[GCK_KIND_COUNT], long *exact) {
    gck_backend be;
    char msg[1024];
    cr_assert_eq(gck_backend_open(&be, spec, msg, sizeof msg), GCK_OK, "%s", msg);
    const gck_support_row *rows;
    size_t nrows = be.ops->table(be.state, &rows);
    gck_run_options o = {.check = {.threads = 1}, .determinism = true};
    gck_run_result *r = malloc(sizeof *r);
    memset(count, 0, sizeof(long) * GCK_KIND_COUNT);
    *exact = 0;
    for (uint64_t i = 0; i < CASES; i++) {
        gck_spec s;
        grid_spec(i, rows, nrows, &s);
        cr_assert_eq(gck_run_spec(&be, &s, &o, r, msg, sizeof msg), GCK_OK, "%s", msg);
        for (int f = 0; f < r->nfindings; f++) count[r->findings[f].kind]++;
        *exact += r->check.exact_elements;
    }
    free(r);
    gck_backend_close(&be);
}

/* ref and two faulty backends, for the tests that compare two ways of checking. */
static const char *const compare_specs[] = {"ref", "plugin:" GCK_FAULTY_PLUGIN ":tolerance",
                                            "plugin:" GCK_FAULTY_PLUGIN ":nan"};

/* A backend opened, and its table. */
static size_t open_table(gck_backend *be, const char *spec, const gck_support_row **rows) {
    char msg[1024];
    cr_assert_eq(gck_backend_open(be, spec, msg, sizeof msg), GCK_OK, "%s", msg);
    return be->ops->table(be->state, rows);
}

/* The bounds from the operands read in place (no copy allowed) are those from the copy: same
 * findings, worst elements, ratios, on ref and on faulty backends, specials included. */
Test(checker, bounds_from_the_copy_and_from_the_operands_in_place_agree) {
    const char *const *specs = compare_specs;
    long compared = 0, findings = 0;
    for (int b = 0; b < 3; b++) {
        gck_backend be;
        char msg[1024];
        const gck_support_row *rows;
        size_t nrows = open_table(&be, specs[b], &rows);
        gck_run_result *r1 = malloc(sizeof *r1), *r2 = malloc(sizeof *r2);
        for (uint64_t i = 0; i < 150; i++) {
            gck_spec s;
            grid_spec(i, rows, nrows, &s);
            gck_run_options o = {.check = {.threads = 1}};
            cr_assert_eq(gck_run_spec(&be, &s, &o, r1, msg, sizeof msg), GCK_OK, "%s", msg);
            o.check.copy_limit = 1; /* nothing fits: every value read in place */
            cr_assert_eq(gck_run_spec(&be, &s, &o, r2, msg, sizeof msg), GCK_OK, "%s", msg);
            const gck_check_result *x = &r1->check, *y = &r2->check;
            cr_assert_eq(r1->nfindings, r2->nfindings, "case %llu", (unsigned long long)i);
            cr_assert(x->elements == y->elements && x->exact_elements == y->exact_elements &&
                          x->degenerate == y->degenerate && x->lenient == y->lenient,
                      "case %llu", (unsigned long long)i);
            for (int k = 0; k < GCK_KIND_COUNT; k++) {
                cr_assert_eq(x->count[k], y->count[k], "case %llu", (unsigned long long)i);
                if (x->count[k])
                    cr_assert(x->worst[k].i == y->worst[k].i && x->worst[k].j == y->worst[k].j &&
                                  same_value(x->worst[k].bound, y->worst[k].bound),
                              "case %llu kind %d", (unsigned long long)i, k);
            }
            cr_assert(same_value(x->max_ratio.ratio, y->max_ratio.ratio) &&
                          same_value(x->max_stat, y->max_stat),
                      "case %llu: ratio %g vs %g", (unsigned long long)i, x->max_ratio.ratio,
                      y->max_ratio.ratio);
            compared += x->elements;
            findings += r1->nfindings;
        }
        free(r1);
        free(r2);
        gck_backend_close(&be);
    }
    fprintf(stderr, "[bounds] %ld elements, %ld findings: copy and in-place reads agree\n",
            compared, findings);
    cr_expect_gt(findings, 0);
}

/* Grid spec `index` of a table made one M x N x K product, tight, at offset 0, with the
 * operands' distribution and, with `special`, NaN and Inf planted. */
static void large_case(gck_spec *s, const gck_support_row *rows, size_t nrows, uint64_t index,
                       int64_t M, int64_t N, int64_t K, gck_dist dist, bool special) {
    grid_spec(index, rows, nrows, s);
    gck_case *c = &s->c;
    c->m = M, c->n = N, c->k = K;
    c->batch = 1;
    c->lda = gck_case_min_ld(c, GCK_A);
    c->ldb = gck_case_min_ld(c, GCK_B);
    c->ldc = gck_case_min_ld(c, GCK_C);
    c->ldd = c->d_is_c ? c->ldc : gck_case_min_ld(c, GCK_D);
    s->offset[0] = s->offset[1] = s->offset[2] = s->offset[3] = 0;
    s->dist_ab = dist;
    s->special_pm = special ? 1 : 0;
}

/* Eight large products on one backend, checked with the sums of |a||b| from a GEMM and with
 * every element summing its own terms: the same verdicts (see the tests below). `rounded`: the
 * GEMM's values rounded up to bf16 wherever the f32 road holds (the rounded road, forced). */
static void large_products_agree(const char *spec, bool rounded, long *compared, long *findings,
                                 long *narrow) {
    static const gck_dist dists[] = {GCK_DIST_UNIFORM, GCK_DIST_BIG, GCK_DIST_LOGU, GCK_DIST_INT};
    gck_run_result *r1 = malloc(sizeof *r1), *r2 = malloc(sizeof *r2);
    gck_backend be;
    const gck_support_row *rows;
    size_t nrows = open_table(&be, spec, &rows);
    char msg[1024], rs[2048];
    for (uint64_t i = 0; i < 8; i++) {
        gck_spec s;
        large_case(&s, rows, nrows, i * 131 + 17, 130 + (int64_t)i * 7, 150 - (int64_t)i * 5, 260,
                   dists[i % 4], i % 3 == 2);
        gck_case *c = &s.c;
        gck_spec_format(&s, rs, sizeof rs);
        /* the hard tier's roads (the statistical tier's allowance is looser on the GEMM's road,
         * which bounds sum (ab)^2 by max|a| max|b| T) */
        gck_run_options o = {.check = {.threads = 2, .stat_data = GCK_STAT_OFF}};
        long f32_before = gck_absprod_built_f32(), up_before = gck_absprod_built_rounded();
        int mode = gck_absprod_round_up(rounded ? 1 : 0);
        cr_assert_eq(gck_run_spec(&be, &s, &o, r1, msg, sizeof msg), GCK_OK, "%s", msg);
        gck_absprod_round_up(mode);
        bool f32 = gck_absprod_built_f32() > f32_before,
             up = gck_absprod_built_rounded() > up_before;
        cr_assert(!up || rounded);
        *narrow += rounded ? up : f32;
        o.check.copy_limit = 1; /* no copy, no GEMM: every element sums its own terms */
        cr_assert_eq(gck_run_spec(&be, &s, &o, r2, msg, sizeof msg), GCK_OK, "%s", msg);
        const gck_check_result *x = &r1->check, *y = &r2->check;
        cr_assert_eq(r1->nfindings, r2->nfindings, "%s", rs);
        cr_assert(x->elements == y->elements && x->exact_elements == y->exact_elements &&
                      x->degenerate == y->degenerate && x->lenient == y->lenient,
                  "%s", rs);
        /* the GEMM's sums are bounds of T, looser by at most 3·K·u (T^ within K roundings of
         * T, then multiplied by 1 + 2·K·u; u = 2^-53, or 2^-24 from an f32 GEMM), and on the
         * rounded road by (1 + 2^-7)^2 more: the ratios are no larger, and smaller by at most
         * that much; there the worst finding of a kind may be another one whose ratio is as
         * close to the worst's */
        double slack = 3 * (f32 ? 0x1p-24 : 0x1p-53) * (double)c->k + 1e-12;
        if (up) slack = 1 - GCK_ABSPROD_BAND;
        for (int k = 0; k < GCK_KIND_COUNT; k++) {
            cr_assert(x->count[k] == y->count[k], "kind %d: %s", k, rs);
            if (!x->count[k]) continue;
            bool same = x->worst[k].i == y->worst[k].i && x->worst[k].j == y->worst[k].j;
            cr_assert(same || (up && x->worst[k].ratio >= y->worst[k].ratio * (1 - slack)),
                      "kind %d: (%lld, %lld) against (%lld, %lld): %s", k, (long long)x->worst[k].i,
                      (long long)x->worst[k].j, (long long)y->worst[k].i, (long long)y->worst[k].j,
                      rs);
        }
        double xr = x->max_ratio.ratio, yr = y->max_ratio.ratio;
        cr_assert(xr <= yr * (1 + 1e-12) && xr >= yr * (1 - slack) && x->max_stat == 0 &&
                      y->max_stat == 0,
                  "ratio %.17g vs %.17g (%s GEMM): %s", xr, yr, f32 ? "f32" : "f64", rs);
        *compared += x->elements;
        *findings += r1->nfindings;
    }
    gck_backend_close(&be);
    free(r1);
    free(r2);
}

/* Large products, whose sums of |a||b| come from one GEMM (rounded up; in f32 where every term
 * fits it), judged as when every element sums its own terms: the same findings, counts, worst
 * elements and exact cases, ratios no larger and smaller by at most the GEMM's slack, on ref and
 * on faulty backends, with values near overflow (summed per element again where an overflow rule
 * could fire) and specials (their lines summed per element). */
Test(checker, bounds_from_a_gemm_agree_with_per_element_sums_on_large_products, .timeout = 600) {
    long compared = 0, findings = 0, narrow = 0, before = gck_absprod_built(),
         bf16_before = gck_absprod_built_bf16();
    for (int b = 0; b < 3; b++)
        large_products_agree(compare_specs[b], false, &compared, &findings, &narrow);
    long built = gck_absprod_built() - before, bf16 = gck_absprod_built_bf16() - bf16_before;
    fprintf(stderr,
            "[bounds] large products: %ld elements, %ld findings, %ld bounds from a GEMM (%ld in "
            "f32, %ld of them on bf16 inputs): the same verdicts as per-element sums\n",
            compared, findings, built, narrow, bf16);
    cr_expect_gt(findings, 0);
    cr_expect_geq(built, 12, "only %ld GEMM bounds were built", built);
    cr_expect(narrow >= 4 && narrow <= built - 4, "%ld of %ld in f32: both roads not taken", narrow,
              built);
    cr_expect_gt(bf16, 0, "no bound from bf16 inputs among the %ld in f32", narrow);
}

/* The same on the rounded road (every f32 road's |a| and |b| rounded up to bf16, forced here;
 * by default only where the kernels' bf16 GEMM is faster and the product large): the same
 * verdicts, counts and exact cases as when every element sums its own terms, the ratios smaller
 * by at most 1 - GCK_ABSPROD_BAND. Without the checker's re-sums within the band (checker.c,
 * facts.c), elements whose ratio lies there would pass where their own sums fail them. */
Test(checker, bounds_from_values_rounded_up_to_bf16_give_the_same_verdicts, .timeout = 600) {
    long compared = 0, findings = 0, rounded = 0, before = gck_absprod_built();
    for (int b = 0; b < 3; b++)
        large_products_agree(compare_specs[b], true, &compared, &findings, &rounded);
    long built = gck_absprod_built() - before;
    fprintf(stderr,
            "[bounds] large products, values rounded up to bf16: %ld elements, %ld findings, %ld "
            "of %ld GEMM bounds on the rounded road: the same verdicts as per-element sums\n",
            compared, findings, rounded, built);
    cr_expect_gt(findings, 0);
    cr_expect(rounded >= 4, "only %ld of %ld bounds on the rounded road", rounded, built);
}

/* Whether two doubles have the same bits (NaN included). */
static bool same_bits(double x, double y) { return memcmp(&x, &y, sizeof x) == 0; }

/* Whether two element reports are the same, field by field. */
static bool same_report(const gck_element_report *x, const gck_element_report *y) {
    return x->batch == y->batch && x->i == y->i && x->j == y->j && same_bits(x->got, y->got) &&
           same_bits(x->expected, y->expected) && same_bits(x->error, y->error) &&
           same_bits(x->bound, y->bound) && same_bits(x->ratio, y->ratio) &&
           same_bits(x->stat, y->stat) && x->exact_case == y->exact_case &&
           x->degenerate == y->degenerate && strcmp(x->rule, y->rule) == 0;
}

/* Whether two checks' results are the same in every count, report and figure. */
static bool same_check(const gck_check_result *x, const gck_check_result *y, char *why,
                       size_t len) {
    const char *what = NULL;
    if (x->elements != y->elements || x->exact_elements != y->exact_elements ||
        x->degenerate != y->degenerate || x->lenient != y->lenient)
        what = "element counts";
    for (int k = 0; !what && k < GCK_KIND_COUNT; k++)
        if (x->count[k] != y->count[k] || (x->count[k] && !same_report(&x->worst[k], &y->worst[k])))
            what = "a kind's count or worst element";
    if (!what && !same_report(&x->max_ratio, &y->max_ratio)) what = "the largest ratio's element";
    if (!what && (!same_bits(x->max_stat, y->max_stat) || x->stat_elements != y->stat_elements))
        what = "the statistical tier";
    if (!what && (x->bias_up != y->bias_up || x->bias_down != y->bias_down ||
                  x->bias_toward0 != y->bias_toward0 || x->bias_away != y->bias_away ||
                  !same_bits(x->bias_p, y->bias_p) || !same_bits(x->bias_ss, y->bias_ss)))
        what = "the sign test";
    for (int b = 0; !what && b < GCK_RATIO_BINS; b++)
        if (x->ratio_bins[b] != y->ratio_bins[b]) what = "the ratio bins";
    if (what) snprintf(why, len, "%s differ", what);
    return !what;
}

/* Large products on ref and two faulty backends, checked with the plain elements' path
 * (checker.c: their allowances and verdicts without their other facts) and without it: every
 * count, report and figure the same, bit for bit, with the statistical tier and the sign test
 * on, on the f32, f64 and rounded roads, values near overflow, specials, alpha and beta from the
 * grid (a case that reads C has no plain element). */
Test(checker, the_plain_path_gives_the_general_paths_results, .timeout = 600) {
    static const gck_dist dists[] = {GCK_DIST_NORMAL, GCK_DIST_BIG, GCK_DIST_LOGU, GCK_DIST_INT};
    gck_run_result *r1 = malloc(sizeof *r1), *r2 = malloc(sizeof *r2);
    long elements = 0, findings = 0, settled = 0, rounded = 0, up = gck_absprod_built_rounded();
    char msg[1024], rs[2048], why[128];
    for (int b = 0; b < 3; b++) {
        gck_backend be;
        const gck_support_row *rows;
        size_t nrows = open_table(&be, compare_specs[b], &rows);
        for (uint64_t i = 0; i < 12; i++) {
            gck_spec s;
            large_case(&s, rows, nrows, i * 97 + 5 + (uint64_t)b, 140 + (int64_t)i * 5,
                       130 - (int64_t)i * 3, 300, dists[i % 4], i % 3 == 2);
            if (i % 4 != 3) s.c.beta = 0; /* C not read: elements may be plain */
            gck_spec_format(&s, rs, sizeof rs);
            gck_run_options o = {.check = {.threads = 2, .stat_data = GCK_STAT_RANDOM}};
            int mode = gck_absprod_round_up(i % 2 ? 1 : -1);
            long before = gck_check_plain_settled();
            cr_assert_eq(gck_run_spec(&be, &s, &o, r1, msg, sizeof msg), GCK_OK, "%s", msg);
            long mine = gck_check_plain_settled() - before;
            bool on = gck_check_plain_path(false);
            cr_assert_eq(gck_run_spec(&be, &s, &o, r2, msg, sizeof msg), GCK_OK, "%s", msg);
            gck_check_plain_path(on);
            gck_absprod_round_up(mode);
            cr_assert(on, "the plain path was off");
            cr_assert_eq(gck_check_plain_settled() - before, mine, "settled with the path off");
            cr_assert(same_check(&r1->check, &r2->check, why, sizeof why), "%s: %s", why, rs);
            cr_assert_eq(r1->nfindings, r2->nfindings, "%s", rs);
            elements += r1->check.elements;
            findings += r1->nfindings;
            settled += mine;
        }
        gck_backend_close(&be);
    }
    rounded = gck_absprod_built_rounded() - up;
    fprintf(stderr,
            "[plain] %ld elements, %ld findings, %ld settled on the plain path (%ld checks on "
            "the rounded road): the same results without it\n",
            elements, findings, settled, rounded);
    cr_expect_gt(findings, 0);
    cr_expect_gt(rounded, 0);
    cr_expect(settled > elements / 8 && settled < elements, "%ld of %ld settled plain", settled,
              elements);
    free(r1);
    free(r2);
}

/* An M x N x K product of f16 inputs, f32 C and D, beta = 0. */
static void f16_product(gck_case *c, int64_t M, int64_t N, int64_t K) {
    gck_case_init(c, M, N, K);
    c->type_a = c->type_b = GCK_F16;
    c->type_c = c->type_d = c->compute = c->scale_type = GCK_F32;
    c->d_is_c = false;
}

/* A 256^3 f16 product (f32 C and D) and its operands from the generator; D allocated. */
static void f16_operands(gck_case *c, uint16_t **a, uint16_t **b, float **d) {
    f16_product(c, 256, 256, 256);
    gck_spec s;
    gck_spec_init(&s, c);
    *a = malloc(256 * 256 * 2), *b = malloc(256 * 256 * 2);
    *d = malloc(256 * 256 * sizeof **d);
    gck_spec_fill(&s, GCK_A, *a);
    gck_spec_fill(&s, GCK_B, *b);
}

/* The line facts of one case's operands (A and B given), with the float lines' facts taken from
 * their bits or value by value; every line's facts compared. */
static long facts_agree(const gck_case *c, const void *a, const void *b) {
    gck_backend be;
    char msg[512], note[96];
    cr_assert_eq(gck_backend_open(&be, "ref", msg, sizeof msg), GCK_OK, "%s", msg);
    const gck_support_row *row = gck_backend_find_row(&be, c, NULL, 0);
    cr_assert(row);
    gck_check_options opt = {0};
    long before = gck_facts_floats_lines();
    gather_plan *g1 = gck_gather_plan_new(c, &row->model, a, b, &opt, note, sizeof note);
    long served = gck_facts_floats_lines() - before;
    bool on = gck_facts_floats(false);
    gather_plan *g2 = gck_gather_plan_new(c, &row->model, a, b, &opt, note, sizeof note);
    gck_facts_floats(on);
    cr_assert(g1 && g2 && g1->a && g1->dense_f);
    cr_assert_eq(gck_facts_floats_lines() - before, served);
    for (int x = 0; x < 2; x++) {
        int64_t lines = x ? c->n : c->m;
        const line_facts *f1 = x ? g1->fb : g1->fa, *f2 = x ? g2->fb : g2->fa;
        for (int64_t l = 0; l < lines; l++)
            cr_assert(same_bits(f1[l].maxabs, f2[l].maxabs) && f1[l].qmin == f2[l].qmin &&
                          f1[l].repr == f2[l].repr && f1[l].over == f2[l].over &&
                          f1[l].has_inf == f2[l].has_inf && f1[l].special == f2[l].special,
                      "%s line %lld of %s: max %a/%a, qmin %d/%d, flags %d%d%d%d/%d%d%d%d",
                      x ? "B" : "A", (long long)l, gck_format_get(c->type_a)->name, f1[l].maxabs,
                      f2[l].maxabs, f1[l].qmin, f2[l].qmin, f1[l].repr, f1[l].over, f1[l].has_inf,
                      f1[l].special, f2[l].repr, f2[l].over, f2[l].has_inf, f2[l].special);
        const float *d1 = x ? g1->b : g1->a, *d2 = x ? g2->b : g2->a;
        for (int64_t v = 0; v < lines * c->k; v++) /* a NaN's payload aside */
            cr_assert((isnan(d1[v]) && isnan(d2[v])) || memcmp(&d1[v], &d2[v], 4) == 0,
                      "the copies of %s differ at %lld: %a, %a", x ? "B" : "A", (long long)v,
                      (double)d1[v], (double)d2[v]);
    }
    gck_gather_plan_free(g1);
    gck_gather_plan_free(g2);
    gck_backend_close(&be);
    return served;
}

/* The line facts of float lines taken from their bits (facts_of_floats; f16 through F16C where
 * it runs; lines side by side in memory converted 16 at a time) equal those found value by
 * value, and so do the lines' copies: every f16 bit pattern (65,536 values in 256 x 256
 * operands), and bf16 and f32 operands of random bits (NaN, Inf, subnormals and zeros among
 * them, and lines with none), A and B each transposed and not, lines of 200 (a part of 16
 * lines cut short). */
Test(checker, line_facts_from_float_bits_equal_those_value_by_value) {
    static const gck_format types[] = {GCK_F16, GCK_BF16, GCK_F32};
    uint64_t st = 99;
    long served = 0;
    for (int t = 0; t < 3; t++)
        for (int layout = 0; layout < 4; layout++) {
            gck_case c;
            int64_t n = t == 0 ? 256 : 200;
            gck_case_init(&c, n, n + 3, n);
            c.type_a = c.type_b = types[t];
            c.type_c = c.type_d = c.compute = c.scale_type = GCK_F32;
            c.d_is_c = false;
            c.beta = 0;
            c.transa = layout & 1 ? GCK_OP_T : GCK_OP_N;
            c.transb = layout & 2 ? GCK_OP_T : GCK_OP_N;
            c.lda = gck_case_min_ld(&c, GCK_A);
            c.ldb = gck_case_min_ld(&c, GCK_B);
            c.ldc = c.ldd = gck_case_min_ld(&c, GCK_C);
            size_t es = gck_format_get(types[t])->storage_bytes;
            int64_t na = c.m * c.k, nb = c.k * c.n;
            char *a = malloc((size_t)na * es), *b = malloc((size_t)nb * es);
            for (int64_t x = 0; x < na + nb; x++) {
                st ^= st << 13, st ^= st >> 7, st ^= st << 17;
                uint32_t u = (uint32_t)st;
                if (t == 0) u = (uint32_t)((x < na ? x : x * 40503) & 0xffff); /* every pattern */
                if (t == 2 && (x / c.k) % 5 == 0) u = (u & 0x807fffffu) | 0x3f000000u; /* finite */
                if (t == 2 && x % 997 == 0) u = 0x7f800000u | (u & 0x80000000u);       /* Inf */
                if (t == 2 && x % 1499 == 0) u &= 0x807fffffu; /* subnormal */
                char *dst = x < na ? a + x * (int64_t)es : b + (x - na) * (int64_t)es;
                if (es == 2)
                    *(uint16_t *)dst = (uint16_t)u;
                else
                    memcpy(dst, &u, 4);
            }
            served += facts_agree(&c, a, b);
            free(a), free(b);
        }
    fprintf(stderr, "[facts] %ld lines' facts from their bits: the same as value by value\n",
            served);
    cr_expect_gt(served, 3000);
}

/* Results that are the exact values rounded once (every error within D's own rounding, so the
 * statistical ratio is 0) on an f16 product whose elements are plain: the largest ratio's
 * element reports 0, as the general path does; one element made 0.1% wrong is found as both
 * paths find it. */
Test(checker, correctly_rounded_results_have_statistical_ratio_zero_on_the_plain_path) {
    gck_case c;
    uint16_t *a, *b;
    float *d;
    f16_operands(&c, &a, &b, &d);
    char msg[512];
    cr_assert_eq(gck_oracle_exact(&c, a, b, NULL, d, 2, msg, sizeof msg), GCK_OK, "%s", msg);
    gck_backend be;
    cr_assert_eq(gck_backend_open(&be, "ref", msg, sizeof msg), GCK_OK, "%s", msg);
    const gck_support_row *row = gck_backend_find_row(&be, &c, NULL, 0);
    cr_assert(row);
    gck_check_result *r1 = malloc(sizeof *r1), *r2 = malloc(sizeof *r2);
    gck_check_options o = {.oracle = GCK_ORACLE_EXACT, .threads = 2, .stat_data = GCK_STAT_RANDOM};
    char why[128];
    for (int wrong = 0; wrong < 2; wrong++) {
        if (wrong) d[77 + 256 * 31] *= 1.001f; /* far beyond its bound */
        long before = gck_check_plain_settled();
        cr_assert_eq(gck_check_values(&c, row, &o, a, b, NULL, d, r1, msg, sizeof msg), GCK_OK);
        long plain = gck_check_plain_settled() - before;
        bool on = gck_check_plain_path(false);
        cr_assert_eq(gck_check_values(&c, row, &o, a, b, NULL, d, r2, msg, sizeof msg), GCK_OK);
        gck_check_plain_path(on);
        cr_assert(same_check(r1, r2, why, sizeof why), "%s", why);
        cr_assert(plain >= 256 * 255, "%ld elements plain", plain);
        cr_assert(r1->stat_elements == 256 * 256 - wrong &&
                      (wrong || (r1->max_ratio.stat == 0 && r1->max_stat == 0)),
                  "%d: %lld elements, stat %g, max %g", wrong, (long long)r1->stat_elements,
                  r1->max_ratio.stat, r1->max_stat);
        long found = r1->count[GCK_KIND_OUT_OF_TOLERANCE] + r1->count[GCK_KIND_IMPROBABLE_ERROR];
        cr_assert_eq(found, wrong, "%ld findings", found);
    }
    gck_backend_close(&be);
    free(r1), free(r2), free(a), free(b), free(d);
}

/* One element of an f16 product (f32 C and D, 256^3: its bounds from a GEMM) made wrong by just
 * more than its bound from its own sums: on the rounded road, whose T may lie up to 1.7% above
 * that sum, the element still fails (its verdict settled by its own sums within the band), as
 * it does when every element sums its own terms. */
Test(checker, an_error_just_beyond_the_bound_fails_on_the_rounded_road) {
    gck_case c;
    uint16_t *a, *b;
    float *d;
    f16_operands(&c, &a, &b, &d);
    char msg[512];
    gck_backend be;
    cr_assert_eq(gck_backend_open(&be, "ref", msg, sizeof msg), GCK_OK, "%s", msg);
    cr_assert_eq(gck_gemm(&c, a, b, NULL, d, NULL, msg, sizeof msg), GCK_GEMM_OK, "%s", msg);
    const gck_support_row *row = gck_backend_find_row(&be, &c, NULL, 0);
    cr_assert(row);
    gck_check_result *r = malloc(sizeof *r);
    gck_check_options own = {.oracle = GCK_ORACLE_EXACT,
                             .copy_limit = 1,
                             .threads = 1,
                             .stat_data = GCK_STAT_OFF},
                      gemm = own;
    gemm.copy_limit = 0; /* the default: the copy, and the bounds from a GEMM */
    /* the element with the largest ratio, its exact value and its bound from its own sums */
    cr_assert_eq(gck_check_values(&c, row, &own, a, b, NULL, d, r, msg, sizeof msg), GCK_OK);
    gck_element_report e = r->max_ratio;
    int64_t rs, cs;
    gck_case_op_strides(&c, GCK_D, &rs, &cs);
    d[e.i * rs + e.j * cs] = (float)(e.expected + 1.004 * e.bound); /* error: ~1.004 bounds */
    cr_assert_eq(gck_check_values(&c, row, &own, a, b, NULL, d, r, msg, sizeof msg), GCK_OK);
    double ratio = r->max_ratio.ratio;
    cr_assert(r->count[GCK_KIND_OUT_OF_TOLERANCE] == 1 && ratio > 1 && ratio < 1.01,
              "own sums: %lld findings, ratio %.6f", (long long)r->count[GCK_KIND_OUT_OF_TOLERANCE],
              ratio);
    long up = gck_absprod_built_rounded();
    int mode = gck_absprod_round_up(1);
    cr_assert_eq(gck_check_values(&c, row, &gemm, a, b, NULL, d, r, msg, sizeof msg), GCK_OK);
    gck_absprod_round_up(mode);
    cr_assert_eq(gck_absprod_built_rounded(), up + 1, "the rounded road was not taken");
    cr_assert(r->count[GCK_KIND_OUT_OF_TOLERANCE] == 1 &&
                  r->worst[GCK_KIND_OUT_OF_TOLERANCE].i == e.i &&
                  r->worst[GCK_KIND_OUT_OF_TOLERANCE].j == e.j,
              "rounded road: %lld findings (ratio %.6f with its own sums)",
              (long long)r->count[GCK_KIND_OUT_OF_TOLERANCE], ratio);
    gck_backend_close(&be);
    free(r), free(a), free(b), free(d);
}

/* An exact case the rounded road's T would lose: f16 integers ±2047, K = 4 (1024 x 1024, its
 * bounds from a GEMM), every sum of |a||b| 4·2047^2 = 16,760,836, below 2^24, so every result
 * is exact in f32 and must be met exactly; rounded up to bf16, 2047 becomes 2048 and T reaches
 * 2^24. One element off by one unit fails as an exact case with per-element sums and on the
 * rounded road (its certificate settled by its own sums); with the road's T alone it would pass
 * within the bound. */
Test(checker, an_exact_case_stays_exact_on_the_rounded_road) {
    gck_case c;
    f16_product(&c, 1024, 1024, 4);
    uint16_t *a = malloc(1024 * 4 * 2), *b = malloc(1024 * 4 * 2);
    float *d = malloc(1024 * 1024 * sizeof *d);
    uint64_t st = 7;
    for (int x = 0; x < 1024 * 4; x++) {
        st ^= st << 13, st ^= st >> 7, st ^= st << 17;
        a[x] = (uint16_t)(0x67ff | (st & 1) << 15); /* ±2047 */
        b[x] = (uint16_t)(0x67ff | (st >> 1 & 1) << 15);
    }
    char msg[512];
    gck_backend be;
    cr_assert_eq(gck_backend_open(&be, "ref", msg, sizeof msg), GCK_OK, "%s", msg);
    cr_assert_eq(gck_gemm(&c, a, b, NULL, d, NULL, msg, sizeof msg), GCK_GEMM_OK, "%s", msg);
    d[5 + 9 * 1024] += 1; /* (5, 9): one unit off */
    const gck_support_row *row = gck_backend_find_row(&be, &c, NULL, 0);
    cr_assert(row);
    gck_check_result *r = malloc(sizeof *r);
    gck_check_options own = {.oracle = GCK_ORACLE_EXACT, .copy_limit = 1, .threads = 2}, gemm = own;
    gemm.copy_limit = 0;
    cr_assert_eq(gck_check_values(&c, row, &own, a, b, NULL, d, r, msg, sizeof msg), GCK_OK);
    cr_assert(r->exact_elements == 1024 * 1024 && r->count[GCK_KIND_OUT_OF_TOLERANCE] == 1,
              "own sums: %lld exact, %lld findings", (long long)r->exact_elements,
              (long long)r->count[GCK_KIND_OUT_OF_TOLERANCE]);
    long up = gck_absprod_built_rounded();
    int mode = gck_absprod_round_up(1);
    cr_assert_eq(gck_check_values(&c, row, &gemm, a, b, NULL, d, r, msg, sizeof msg), GCK_OK);
    gck_absprod_round_up(mode);
    cr_assert_eq(gck_absprod_built_rounded(), up + 1, "the rounded road was not taken");
    const gck_element_report *w = &r->worst[GCK_KIND_OUT_OF_TOLERANCE];
    cr_assert(r->exact_elements == 1024 * 1024 && r->count[GCK_KIND_OUT_OF_TOLERANCE] == 1 &&
                  w->i == 5 && w->j == 9 && w->exact_case,
              "rounded road: %lld exact, %lld findings", (long long)r->exact_elements,
              (long long)r->count[GCK_KIND_OUT_OF_TOLERANCE]);
    gck_backend_close(&be);
    free(r), free(a), free(b), free(d);
}

/* ---- the GEMM's sums of |a||b| against exact ones (MPFR) ------------------------------------- */

/* A value of the kind `kind` draws (xorshift state *st): 0 f16's 11-bit significands with
 * exponents in [-24, 7], 1 floats with exponents in [-50, 50], 2 floats just above powers of two
 * (the largest relative rounding of their sums), 3 bf16 values down to 2^-100 (products below
 * f32's normal range), 4 doubles, 5 floats near 2^60 (K times the largest product beyond f32's
 * range), 6 bf16 values with exponents in [-40, 20], 7 bf16 subnormals (powers of two from 2^-133
 * to 2^-127, which VDPBF16PS reads as zero), 8 bf16 values from 2^7 to 2^15 (their products with
 * kind 7 are normal floats); floats at the f32 road's edges at K = 512: 9 with exponents in
 * [-63, 0] (the smallest products 2^-126: on the road), 10 in [-64, 0] (2^-128: off it), 11 in
 * [0, 57] (K times the largest product and its rounding below 2^127: on it; some of them rounded
 * up to bf16 reach 2^58, beyond), 12 in [0, 58] (off it); 13 subnormal floats from 2^-149 to
 * 2^-140, 14 floats with exponents in [12, 20] (their products with kind 13 lie below 2^-126:
 * off the road), 15 floats with exponents in [-20, 20], one in 16 of them NaN or ±Inf (which
 * count as 0). About 1 in 8 is 0, a sign is random (the GEMM takes absolute values). */
static double draw(int kind, uint64_t *st) {
    *st ^= *st << 13, *st ^= *st >> 7, *st ^= *st << 17;
    uint64_t r = *st;
    double sign = r & 1 ? -1 : 1, f = (double)((r >> 8) & 0xffffff) * 0x1p-24;
    if ((r >> 40 & 7) == 0) return 0;
    switch (kind) {
    case 0: return sign * ldexp(floor((1 + f) * 1024) / 1024, (int)(r >> 44 & 31) - 24);
    case 1: return sign * (double)(float)ldexp(1 + f, (int)((r >> 44) % 101) - 50);
    case 2: return sign * (double)(float)(1 + 0x1p-23 * (double)(r >> 44 & 3));
    case 3: return sign * ldexp(floor((1 + f) * 128) / 128, -(int)(r >> 44 & 127));
    case 4: return sign * (1 + f + 0x1p-40);
    case 5: return sign * (double)(float)ldexp(1 + f, 59 + (int)(r >> 44 & 1));
    case 6: return sign * ldexp(floor((1 + f) * 128) / 128, (int)((r >> 44) % 61) - 40);
    case 7: return sign * ldexp(1, -127 - (int)((r >> 44) % 7));
    case 8: return sign * ldexp(floor((1 + f) * 128) / 128, 7 + (int)((r >> 44) % 9));
    case 9: return sign * (double)(float)ldexp(1 + f, -(int)((r >> 44) % 64));
    case 10: return sign * (double)(float)ldexp(1 + f, -(int)((r >> 44) % 65));
    case 11: return sign * (double)(float)ldexp(1 + f, (int)((r >> 44) % 58));
    case 12: return sign * (double)(float)ldexp(1 + f, (int)((r >> 44) % 59));
    case 13: return sign * (double)(float)ldexp(1 + f, -149 + (int)((r >> 44) % 9));
    case 14: return sign * (double)(float)ldexp(1 + f, 12 + (int)((r >> 44) % 9));
    default:
        if ((r >> 50 & 15) == 0) return r >> 54 & 1 ? NAN : sign * INFINITY;
        return sign * (double)(float)ldexp(1 + f, (int)((r >> 44) % 41) - 20);
    }
}

/* The roads of the GEMM of |a||b|: f64, f32, f32 accumulation of bf16 inputs, of inputs
 * rounded up to bf16. */
enum { ROAD_F64, ROAD_F32, ROAD_BF16, ROAD_UP };

/* The same operands given as floats (every value one): the same road, the same bits of every
 * bound (the checker gives its copies as floats; the rounded road then rounds and converts them
 * in one pass, abs_up_part, and takes both exponent ranges from their bits). */
static void floats_give_the_same_bounds(const gck_case *c, const double *a, const double *b,
                                        const gck_absprod *p) {
    int64_t M = c->m, N = c->n, K = c->k;
    float *fa = malloc((size_t)(M * K) * sizeof *fa), *fb = malloc((size_t)(N * K) * sizeof *fb);
    for (int64_t x = 0; x < M * K; x++) fa[x] = (float)a[x];
    for (int64_t x = 0; x < N * K; x++) fb[x] = (float)b[x];
    gck_absprod *q = gck_absprod_new(c, fa, fb, true);
    cr_assert(q);
    cr_assert(gck_absprod_rounded(q) == gck_absprod_rounded(p) &&
              gck_absprod_bf16(q) == gck_absprod_bf16(p) &&
              gck_absprod_f32(q) == gck_absprod_f32(p));
    for (int64_t j = 0; j < N; j++)
        for (int64_t i = 0; i < M; i++) {
            double x = gck_absprod_bound(p, 0, i, j), y = gck_absprod_bound(q, 0, i, j);
            cr_assert(memcmp(&x, &y, sizeof x) == 0,
                      "element (%lld, %lld): %a from doubles, %a from floats", (long long)i,
                      (long long)j, x, y);
        }
    gck_absprod_free(q);
    free(fa), free(fb);
}

#ifdef GCK_TEST_SANITIZED
/* The sanitizers look for memory errors, which the GEMM of every bound below exposes whole: there
 * one element in 8 is summed again by MPFR (every one took 84 s under ASan, 2026-12-03), in the
 * normal build every one. */
#define MPFR_SAMPLE 8
#else
#define MPFR_SAMPLE 1
#endif

/* For operands of kinds ka and kb (M x K and N x K, along k): which road the GEMM took, and that
 * every bound (every MPFR_SAMPLE-th one under the sanitizers) is at least the exact sum (rounded up
 * to a double by MPFR) and at most 3·K·u above it (u of the road); where every value is a float,
 * the same from floats. Returns the number of elements compared with MPFR. */
static long absprod_against_mpfr(int ka, int kb, gck_format type, int64_t M, int64_t N, int64_t K,
                                 int road) {
    static const char *const roads[] = {"f64", "f32", "bf16", "rounded"};
    double *a = malloc((size_t)(M * K) * sizeof *a), *b = malloc((size_t)(N * K) * sizeof *b);
    uint64_t st = 0x9e3779b97f4a7c15u + (uint64_t)ka;
    for (int64_t x = 0; x < M * K; x++) a[x] = draw(ka, &st);
    for (int64_t x = 0; x < N * K; x++) b[x] = draw(kb, &st);
    gck_case c;
    gck_case_init(&c, M, N, K);
    c.type_a = c.type_b = type;
    long bf16_before = gck_absprod_built_bf16(), up_before = gck_absprod_built_rounded();
    gck_absprod *p = gck_absprod_new(&c, a, b, false);
    cr_assert(p, "kinds %d, %d: no GEMM bound", ka, kb);
    int took = gck_absprod_rounded(p) ? ROAD_UP
               : gck_absprod_bf16(p)  ? ROAD_BF16
               : gck_absprod_f32(p)   ? ROAD_F32
                                      : ROAD_F64;
    cr_assert_eq(took, road, "kinds %d, %d: the %s road, not %s", ka, kb, roads[took], roads[road]);
    cr_assert_eq(gck_absprod_built_bf16() - bf16_before, road == ROAD_BF16 || road == ROAD_UP);
    cr_assert_eq(gck_absprod_built_rounded() - up_before, road == ROAD_UP);
    if (type != GCK_F64 && ka != 4 && kb != 4) floats_give_the_same_bounds(&c, a, b, p);
    bool want_f32 = road != ROAD_F64;
    double u = want_f32 ? 0x1p-24 : 0x1p-53, most = 1 + 3 * (double)K * u + 0x1p-50;
    if (road == ROAD_UP) most *= (1 + 0x1p-7) * (1 + 0x1p-7);
    mpfr_t *terms = malloc((size_t)K * sizeof *terms);
    mpfr_ptr *ptrs = malloc((size_t)K * sizeof *ptrs);
    for (int64_t k = 0; k < K; k++) mpfr_init2(terms[k], 106), ptrs[k] = terms[k];
    mpfr_t t;
    mpfr_init2(t, 53);
    long compared = 0;
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            if ((i * N + j) % MPFR_SAMPLE) continue;
            compared++;
            for (int64_t k = 0; k < K; k++) {
                double x = a[i * K + k], y = b[j * K + k]; /* NaN and Inf count as 0 */
                mpfr_set_d(terms[k], isfinite(x) ? fabs(x) : 0, MPFR_RNDN); /* exact */
                mpfr_mul_d(terms[k], terms[k], isfinite(y) ? fabs(y) : 0, MPFR_RNDN);
            }
            mpfr_sum(t, ptrs, (unsigned long)K, MPFR_RNDU);
            double exact_up = mpfr_get_d(t, MPFR_RNDU), got = gck_absprod_bound(p, 0, i, j);
            cr_assert(got >= exact_up && got <= exact_up * most + (want_f32 ? 0 : K * 0x1p-1074),
                      "kinds %d, %d, element (%lld, %lld): bound %a, exact sum %a", ka, kb,
                      (long long)i, (long long)j, got, exact_up);
        }
    for (int64_t k = 0; k < K; k++) mpfr_clear(terms[k]);
    mpfr_clear(t);
    free(terms), free(ptrs), free(a), free(b);
    gck_absprod_free(p);
    return compared;
}

/* The sums of |a||b| from a GEMM bound the exact ones from above, by no more than their slack,
 * on every road: f32 where every |a| and |b| is a float, no product falls below 2^-126 and K
 * times the largest stays below f32's range, with bf16 inputs where moreover every value is a
 * normal bf16 (VDPBF16PS on the avx512bf16 path); f64 otherwise, for K above 2^13 and for f64
 * inputs. On the rounded road (forced here for products of any size) the values of the f32 road
 * are rounded up to bf16 and the slack grows by (1 + 2^-7)^2; a subnormal among them keeps the
 * f32 road, bf16 values the bf16 road. */
Test(checker, gemm_sums_of_abs_products_bound_the_exact_sums_on_every_road, .timeout = 300) {
    long n = 0;
    n += absprod_against_mpfr(0, 0, GCK_F16, 96, 96, 512, ROAD_F32);
    n += absprod_against_mpfr(1, 1, GCK_F32, 96, 96, 512, ROAD_F32);
    n += absprod_against_mpfr(2, 2, GCK_F32, 96, 96, 512, ROAD_F32);
    n += absprod_against_mpfr(3, 3, GCK_BF16, 96, 96, 512, ROAD_F64);
    n += absprod_against_mpfr(4, 4, GCK_F32, 96, 96, 512, ROAD_F64); /* values no float holds */
    n += absprod_against_mpfr(5, 5, GCK_F32, 96, 96, 512, ROAD_F64);
    n += absprod_against_mpfr(1, 1, GCK_F32, 23, 23, 8193, ROAD_F64);
    n += absprod_against_mpfr(1, 1, GCK_F32, 32, 32, 8192, ROAD_F32);
    n += absprod_against_mpfr(1, 1, GCK_F64, 96, 96, 512, ROAD_F64); /* f64 inputs: not tried */
    n += absprod_against_mpfr(6, 6, GCK_BF16, 96, 96, 512, ROAD_BF16);
    n += absprod_against_mpfr(6, 6, GCK_BF16, 45, 37, 4099, ROAD_BF16); /* odd K: a half pair */
    n += absprod_against_mpfr(6, 0, GCK_F16, 96, 96, 512, ROAD_F32);    /* B not bf16 values */
    n += absprod_against_mpfr(7, 8, GCK_BF16, 96, 96, 512, ROAD_F32);   /* subnormal bf16 in A */
    int mode = gck_absprod_round_up(1); /* the rounded road wherever its conditions hold */
    n += absprod_against_mpfr(0, 0, GCK_F16, 96, 96, 512, ROAD_UP);
    n += absprod_against_mpfr(1, 1, GCK_F32, 96, 96, 512, ROAD_UP);
    n += absprod_against_mpfr(2, 2, GCK_F32, 45, 37, 4099, ROAD_UP); /* just above powers of 2 */
    n += absprod_against_mpfr(6, 0, GCK_F16, 96, 96, 512, ROAD_UP);
    n += absprod_against_mpfr(6, 6, GCK_BF16, 96, 96, 512, ROAD_BF16); /* nothing to round */
    n += absprod_against_mpfr(7, 8, GCK_BF16, 96, 96, 512, ROAD_F32);  /* subnormal: not taken */
    n += absprod_against_mpfr(1, 1, GCK_F32, 23, 23, 8193, ROAD_F64);
    n += absprod_against_mpfr(9, 9, GCK_F32, 96, 96, 512, ROAD_UP); /* the road's edges */
    n += absprod_against_mpfr(10, 10, GCK_F32, 96, 96, 512, ROAD_F64);
    n += absprod_against_mpfr(11, 11, GCK_F32, 96, 96, 512, ROAD_F32);
    n += absprod_against_mpfr(12, 12, GCK_F32, 96, 96, 512, ROAD_F64);
    n += absprod_against_mpfr(3, 3, GCK_BF16, 96, 96, 512, ROAD_F64);
    n += absprod_against_mpfr(13, 14, GCK_F32, 96, 96, 512, ROAD_F64);
    n += absprod_against_mpfr(15, 15, GCK_F32, 96, 96, 512, ROAD_UP);
    gck_absprod_round_up(mode);
    fprintf(stderr,
            "[bounds] %ld GEMM sums of |a||b| against MPFR on the rounded, bf16, f32 and f64 "
            "roads: every "
            "one an upper bound within its slack\n",
            n);
}

/* The GEMM of |a||b| is checked as any backend is: one element of T^ halved or doubled, or made
 * 2% wrong (a planted fault), and the row sums of T^ contradict the exact ones (96 terms of about
 * the same size, floats just above 1: 2% of one is 2·10^-4 of its row, beyond the f32 road's
 * slack of K·2^-23 = 6·10^-5 at K = 512), so the bound is not taken from it (the checker sums
 * each element itself); the same GEMM unplanted is taken. */
Test(checker, a_wrong_element_of_the_bounds_gemm_is_refused) {
    enum { M = 96, N = 96, K = 512 };
    double *a = malloc(M * K * sizeof *a), *b = malloc(N * K * sizeof *b);
    uint64_t st = 0x9e3779b97f4a7c15u;
    for (int x = 0; x < M * K; x++) a[x] = draw(2, &st);
    for (int x = 0; x < N * K; x++) b[x] = draw(2, &st);
    gck_case c;
    gck_case_init(&c, M, N, K);
    c.type_a = c.type_b = GCK_F32;
    static const double factors[] = {0.5, 2, 1.02, 0.98};
    for (int f = 0; f < 4; f++)
        for (int64_t e = 0; e < M * N; e += 4321) {
            gck_absprod_plant(e, factors[f]);
            gck_absprod *p = gck_absprod_new(&c, a, b, false);
            gck_absprod_plant(-1, 1);
            cr_assert_null(p, "element %lld times %g: the GEMM's sums were taken", (long long)e,
                           factors[f]);
        }
    gck_absprod *p = gck_absprod_new(&c, a, b, false);
    cr_assert(p && gck_absprod_f32(p));
    gck_absprod_free(p);
    free(a), free(b);
}

/* Two check results are the same: counts, the worst element of each kind, the largest ratio
 * and its element, the ratio histogram. */
static bool same_elem(const gck_element_report *x, const gck_element_report *y) {
    return x->batch == y->batch && x->i == y->i && x->j == y->j &&
           memcmp(&x->ratio, &y->ratio, sizeof x->ratio) == 0;
}

static void expect_same_result(const gck_check_result *x, const gck_check_result *y,
                               const char *what) {
    cr_assert(x->elements == y->elements && x->exact_elements == y->exact_elements &&
                  x->lenient == y->lenient && x->degenerate == y->degenerate,
              "%s", what);
    for (int k = 0; k < GCK_KIND_COUNT; k++)
        cr_assert(x->count[k] == y->count[k] &&
                      (!x->count[k] || same_elem(&x->worst[k], &y->worst[k])),
                  "kind %d: %s", k, what);
    cr_assert(same_elem(&x->max_ratio, &y->max_ratio) && x->max_stat == y->max_stat, "%s", what);
    cr_assert(!memcmp(x->ratio_bins, y->ratio_bins, sizeof x->ratio_bins), "%s", what);
}

/* D is checked in tiles, shared out among the threads in order: products larger than a tile,
 * on backends with findings, give the same result on 1, 2 and 3 threads (the first finding of
 * a kind is the first in tile order, whatever the thread count). */
Test(checker, the_result_does_not_depend_on_the_thread_count, .timeout = 300) {
    long compared = 0, findings = 0;
    for (int b = 1; b < 3; b++) {
        gck_backend be;
        const gck_support_row *rows;
        size_t nrows = open_table(&be, compare_specs[b], &rows);
        gck_run_result *r[3];
        char msg[1024], rs[2048];
        for (int t = 0; t < 3; t++) r[t] = malloc(sizeof *r[t]);
        for (uint64_t i = 0; i < 6; i++) {
            gck_spec s;
            grid_spec(i * 97 + 5, rows, nrows, &s);
            gck_case *c = &s.c;
            c->m = 150 + (int64_t)i * 11; /* tiles of 64 at this K: 3 x 3 and more */
            c->n = 140 - (int64_t)i * 3;
            c->k = 300;
            c->batch = 1 + (int64_t)(i % 2);
            c->lda = gck_case_min_ld(c, GCK_A);
            c->ldb = gck_case_min_ld(c, GCK_B);
            c->ldc = gck_case_min_ld(c, GCK_C);
            c->ldd = c->d_is_c ? c->ldc : gck_case_min_ld(c, GCK_D);
            c->stride_a = c->batch > 1 ? gck_case_footprint(c, GCK_A) : 0;
            c->stride_b = c->batch > 1 ? gck_case_footprint(c, GCK_B) : 0;
            c->stride_c = c->batch > 1 ? gck_case_footprint(c, GCK_C) : 0;
            c->stride_d = c->batch > 1 ? gck_case_footprint(c, GCK_D) : 0;
            s.offset[0] = s.offset[1] = s.offset[2] = s.offset[3] = 0;
            s.special_pm = i % 2 ? 2 : 0;
            gck_spec_format(&s, rs, sizeof rs);
            for (int t = 0; t < 3; t++) {
                gck_run_options o = {.check = {.threads = t + 1}};
                cr_assert_eq(gck_run_spec(&be, &s, &o, r[t], msg, sizeof msg), GCK_OK, "%s", msg);
            }
            cr_assert_eq(r[0]->check.elements, c->m * c->n * c->batch, "%s", rs);
            expect_same_result(&r[0]->check, &r[1]->check, rs);
            expect_same_result(&r[0]->check, &r[2]->check, rs);
            compared += r[0]->check.elements;
            findings += r[0]->nfindings;
        }
        for (int t = 0; t < 3; t++) free(r[t]);
        gck_backend_close(&be);
    }
    fprintf(stderr, "[threads] %ld elements, %ld findings: the same on 1, 2 and 3 threads\n",
            compared, findings);
    cr_expect_gt(findings, 0);
}

static void expect_only(const char *fault, gck_kind want) {
    char spec[1024];
    snprintf(spec, sizeof spec, "plugin:%s:%s", GCK_FAULTY_PLUGIN, fault);
    long count[GCK_KIND_COUNT], exact;
    run_cases(spec, count, &exact);
    fprintf(stderr, "[faulty %s] %d cases:", fault, CASES);
    for (int k = 0; k < GCK_KIND_COUNT; k++)
        if (count[k]) fprintf(stderr, " %s=%ld", gck_kind_name((gck_kind)k), count[k]);
    fprintf(stderr, "\n");
    cr_expect_gt(count[want], 0, "%s: no %s finding", fault, gck_kind_name(want));
    for (int k = 0; k < GCK_KIND_COUNT; k++)
        if (k != (int)want)
            cr_expect_eq(count[k], 0, "%s: unexpected %s findings (%ld)", fault,
                         gck_kind_name((gck_kind)k), count[k]);
}

Test(checker, ref_passes_the_cases_the_faulty_backends_fail) {
    long count[GCK_KIND_COUNT], exact;
    run_cases("ref", count, &exact);
    for (int k = 0; k < GCK_KIND_COUNT; k++)
        cr_expect_eq(count[k], 0, "ref: %s findings (%ld)", gck_kind_name((gck_kind)k), count[k]);
    cr_expect_gt(exact, 0, "no exact-case elements: the bitwise certificate never applied");
    fprintf(stderr, "[faulty ref] %d cases, no findings, %ld exact-case elements\n", CASES, exact);
}

Test(checker, out_of_tolerance_is_caught) { expect_only("tolerance", GCK_KIND_OUT_OF_TOLERANCE); }
Test(checker, a_nan_in_a_finite_result_is_a_nonfinite_mismatch) {
    expect_only("nan", GCK_KIND_NONFINITE_MISMATCH);
}
Test(checker, reading_c_under_beta_zero_is_a_nonfinite_mismatch) {
    expect_only("betanan", GCK_KIND_NONFINITE_MISMATCH);
}
Test(checker, a_write_outside_d_is_an_out_of_bounds_write) {
    expect_only("oob", GCK_KIND_OUT_OF_BOUNDS_WRITE);
}
Test(checker, an_overwritten_input_is_input_modified) {
    expect_only("input", GCK_KIND_INPUT_MODIFIED);
}
Test(checker, differing_reruns_are_nondeterministic) {
    expect_only("nondet", GCK_KIND_NONDETERMINISTIC);
}
/* A NaN whose sign changes between runs is the same result: only the misplaced NaN is found. */
Test(checker, a_nan_of_either_sign_is_not_nondeterminism) {
    expect_only("nansign", GCK_KIND_NONFINITE_MISMATCH);
}
Test(checker, refusing_a_declared_row_is_unimplemented) {
    expect_only("unimpl", GCK_KIND_UNIMPLEMENTED);
}
Test(checker, an_error_status_is_an_error) { expect_only("error", GCK_KIND_ERROR); }

static const char *const a_case =
    "gck1 m=5 n=4 k=3 order=col ta=N tb=N types=f32,f32,f32,f32 compute=f32 scale=f32 alpha=1 "
    "beta=0 lda=5 ldb=3 ldc=5 ldd=5 d=sep batch=1 sa=0 sb=0 sc=0 sd=0 off=0,0,0,0 vab=unif "
    "vc=unif sp=0 cnan=1 seed=3";

Test(checker, a_segfaulting_backend_is_a_crash_not_the_end_of_gemmcheck) {
    char spec[1024], msg[512];
    snprintf(spec, sizeof spec, "plugin:%s:segv", GCK_FAULTY_PLUGIN);
    gck_spec s;
    cr_assert_eq(gck_spec_parse(a_case, &s, msg, sizeof msg), GCK_OK, "%s", msg);
    gck_run_options o = {.determinism = true};
    gck_isolated_result *res = malloc(sizeof *res);
    gck_run_isolated(spec, &s, &o, 10, res);
    cr_expect_eq(res->status, GCK_ISOLATED_CRASH, "%s", res->message);
    cr_expect(strstr(res->message, "signal 11") &&
                  strstr(res->message, "inside the backend's first call"),
              "%s", res->message);
    free(res);
}

/* A kept worker (the shrinker's) serves the runs of the backend and check it was started for;
 * a run of another backend, or of the same backend under another check, gets a worker of its
 * own instead of the kept one's answers. */
Test(checker, a_kept_worker_serves_only_its_own_backend_and_check) {
    char spec[1024], msg[512];
    snprintf(spec, sizeof spec, "plugin:%s:tolerance", GCK_FAULTY_PLUGIN);
    gck_spec s;
    cr_assert_eq(gck_spec_parse(a_case, &s, msg, sizeof msg), GCK_OK, "%s", msg);
    gck_run_options o = {.check = {.threads = 1}};
    gck_isolated_result *res = malloc(sizeof *res);
    gck_kept_worker kept = {0};
    gck_run_kept(&kept, spec, &s, &o, 10, res);
    cr_expect_eq(res->status, GCK_ISOLATED_RAN, "%s", res->message);
    cr_expect_eq(res->run.outcome, GCK_OUTCOME_FINDINGS);
    pid_t first = kept.w.pid;
    cr_expect(kept.live && first > 0);
    gck_run_kept(&kept, spec, &s, &o, 10, res); /* the same backend and check: the same worker */
    cr_expect_eq(res->run.outcome, GCK_OUTCOME_FINDINGS);
    cr_expect_eq(kept.w.pid, first);
    gck_run_kept(&kept, "ref", &s, &o, 10, res); /* another backend: ref's answer */
    cr_expect_eq(res->status, GCK_ISOLATED_RAN, "%s", res->message);
    cr_expect_eq(res->run.outcome, GCK_OUTCOME_PASS, "ref in the kept tolerance worker");
    cr_expect_neq(kept.w.pid, first);
    pid_t second = kept.w.pid;
    o.check.strict_ieee = true; /* another check of the same backend: a worker started for it */
    gck_run_kept(&kept, "ref", &s, &o, 10, res);
    cr_expect_eq(res->run.outcome, GCK_OUTCOME_PASS);
    cr_expect_neq(kept.w.pid, second);
    cr_expect(kept.strict_ieee);
    gck_kept_worker_end(&kept);
    cr_expect(!kept.live && !kept.backend);
    free(res);
}

Test(checker, a_backend_that_never_returns_is_a_hang) {
    char spec[1024], msg[512];
    snprintf(spec, sizeof spec, "plugin:%s:hang", GCK_FAULTY_PLUGIN);
    gck_spec s;
    cr_assert_eq(gck_spec_parse(a_case, &s, msg, sizeof msg), GCK_OK, "%s", msg);
    gck_run_options o = {.determinism = true};
    gck_isolated_result *res = malloc(sizeof *res);
    gck_run_isolated(spec, &s, &o, 1.0, res);
    cr_expect_eq(res->status, GCK_ISOLATED_HANG, "%s", res->message);
    free(res);
}

/* The CLI: exit codes and the verdict line for crash, hang, a numeric finding, and pass. */
static int run_cli(const char *args, char *out, size_t len) {
    return run_gemmcheck(args, out, len);
}

Test(checker, repro_reports_each_kind_with_its_exit_code) {
    static const struct {
        const char *fault, *extra, *verdict;
        int code;
    } runs[] = {
        {"segv", "", "FINDINGS: crash", 1},
        {"hang", "--timeout 1", "FINDINGS: hang", 1},
        {"betanan", "", "FINDINGS: nonfinite_mismatch", 1},
        {"tolerance", "", "FINDINGS: out_of_tolerance", 1},
        {"error", "", "FINDINGS: error", 1},
    };
    char args[4096], out[16384];
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        snprintf(args, sizeof args, "repro --backend plugin:%s:%s %s '%s'", GCK_FAULTY_PLUGIN,
                 runs[r].fault, runs[r].extra, a_case);
        int code = run_cli(args, out, sizeof out);
        cr_expect_eq(code, runs[r].code, "%s: exit %d\n%s", runs[r].fault, code, out);
        cr_expect(strstr(out, runs[r].verdict) != NULL, "%s:\n%s", runs[r].fault, out);
        cr_expect(strstr(out, "repro:    gemmcheck repro --backend") != NULL, "%s", out);
    }
    snprintf(args, sizeof args, "repro --backend ref '%s'", a_case);
    cr_expect_eq(run_cli(args, out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "verdict:  pass") != NULL, "%s", out);
}

/* repro runs the concurrency check on request: a thread-unsafe backend is caught (a wrong
 * result or a crash in the concurrent calls), the repro line keeps the flag, ref passes; a race
 * that needs earlier calls is found with --repeat; a bad thread or repeat count is a usage
 * error. */
Test(checker, repro_concurrency_runs_the_thread_safety_check) {
    char args[4096], out[16384];
    snprintf(args, sizeof args, "repro --backend plugin:%s:racy --concurrency 4 '%s'",
             GCK_FAULTY_PLUGIN, a_case);
    cr_expect_eq(run_cli(args, out, sizeof out), 1, "%s", out);
    cr_expect(strstr(out, "FINDINGS: nondeterministic") != NULL, "%s", out);
    cr_expect(strstr(out, "--concurrency 4 'gck1") != NULL, "%s", out);
    snprintf(args, sizeof args, "repro --backend plugin:%s:racy '%s'", GCK_FAULTY_PLUGIN, a_case);
    cr_expect_eq(run_cli(args, out, sizeof out), 0, "without --concurrency: %s", out);
    snprintf(args, sizeof args, "repro --backend ref --concurrency 3 '%s'", a_case);
    cr_expect_eq(run_cli(args, out, sizeof out), 0, "%s", out);
    /* a crash that only concurrent calls show names them, and keeps the flag */
    snprintf(args, sizeof args, "repro --backend plugin:%s:crowd --concurrency 2 '%s'",
             GCK_FAULTY_PLUGIN, a_case);
    cr_expect_eq(run_cli(args, out, sizeof out), 1, "%s", out);
    cr_expect(strstr(out, "FINDINGS: crash") != NULL, "%s", out);
    cr_expect(strstr(out, "inside the backend's concurrent calls") != NULL, "%s", out);
    cr_expect(strstr(out, "--concurrency 2 'gck1") != NULL, "%s", out);
    snprintf(args, sizeof args, "repro --backend plugin:%s:crowd '%s'", GCK_FAULTY_PLUGIN, a_case);
    cr_expect_eq(run_cli(args, out, sizeof out), 0, "without --concurrency: %s", out);
    /* a race that needs calls made before: one run passes, --repeat finds it on the second
     * run in the same process and keeps the flag */
    snprintf(args, sizeof args, "repro --backend plugin:%s:late --concurrency 4 '%s'",
             GCK_FAULTY_PLUGIN, a_case);
    cr_expect_eq(run_cli(args, out, sizeof out), 0, "one run: %s", out);
    snprintf(args, sizeof args, "repro --backend plugin:%s:late --concurrency 4 --repeat 5 '%s'",
             GCK_FAULTY_PLUGIN, a_case);
    cr_expect_eq(run_cli(args, out, sizeof out), 1, "%s", out);
    cr_expect(strstr(out, "attempts: 2 of 5 (stopped at the first one with a finding)"), "%s", out);
    cr_expect(strstr(out, "--concurrency 4 --repeat 5 'gck1") != NULL, "%s", out);
    snprintf(args, sizeof args, "repro --backend ref --concurrency 2 --repeat 3 '%s'", a_case);
    cr_expect_eq(run_cli(args, out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "attempts: 3 of 3, none with a finding") != NULL, "%s", out);
    snprintf(args, sizeof args, "repro --backend ref --repeat 0 '%s'", a_case);
    cr_expect_eq(run_cli(args, out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "--repeat '0'") != NULL, "%s", out);
    snprintf(args, sizeof args, "repro --backend ref --concurrency 1 '%s'", a_case);
    cr_expect_eq(run_cli(args, out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "--concurrency '1'") != NULL, "%s", out);
}

/* Deadlines time backend calls only. A case with tens of MB of operands and almost no
 * arithmetic (found as a false `hang` on ref and on four real libraries): with the
 * determinism and concurrency checks, gemmcheck prepares ten sets of operands, each of ~50 MB,
 * which takes seconds; every backend call takes well under a millisecond. Each call has 1 s. */
static const char *const big_footprint_case =
    "gck1 m=1 n=97 k=3 order=col ta=T tb=N types=f16,f32,f32,f32 compute=f64 scale=f64 alpha=1 "
    "beta=0 lda=27790 ldb=6390 ldc=26871 ldd=26871 d=c batch=5 sa=3 sb=613454 sc=2579617 "
    "sd=2579617 off=0,0,4,13 vab=logu vc=unif sp=0 cnan=0 seed=190190023356181426";

Test(checker, preparing_large_operands_does_not_count_against_the_call_deadline, .timeout = 300) {
    char msg[512];
    gck_spec s;
    cr_assert_eq(gck_spec_parse(big_footprint_case, &s, msg, sizeof msg), GCK_OK, "%s", msg);
    gck_run_options o = {.check = {.threads = 1}, .determinism = true, .concurrency = 4};
    gck_isolated_result *res = malloc(sizeof *res);
    gck_run_isolated("ref", &s, &o, 1.0, res);
    cr_expect_eq(res->status, GCK_ISOLATED_RAN, "%s", res->message);
    cr_expect_eq(res->run.outcome, GCK_OUTCOME_PASS);
    free(res);
}

/* The hooks bracket each backend call and nothing else: a counting backend sees exactly
 * `calls` calls between each before/after pair, in the order first, rerun, N alone, N at once. */
static int counted_calls;
static const gck_backend_ops *counted_ops; /* ref's */
static gck_call_status counting_call(void *st, const gck_case *c, const gck_support_row *row,
                                     const gck_operands *ops, char *msg, size_t len) {
    __atomic_add_fetch(&counted_calls, 1, __ATOMIC_SEQ_CST);
    return counted_ops->call(st, c, row, ops, msg, len);
}

typedef struct hook_log {
    int n, open_at;
    gck_call_info seen[16];
    bool nested, miscounted;
} hook_log;

static void log_before(void *ctx, const gck_call_info *ci) {
    hook_log *l = ctx;
    if (l->open_at >= 0) l->nested = true;
    l->open_at = __atomic_load_n(&counted_calls, __ATOMIC_SEQ_CST);
    if (l->n < 16) l->seen[l->n++] = *ci;
}

static void log_after(void *ctx, const gck_call_info *ci) {
    hook_log *l = ctx;
    if (__atomic_load_n(&counted_calls, __ATOMIC_SEQ_CST) - l->open_at != ci->calls)
        l->miscounted = true;
    l->open_at = -1;
}

Test(checker, each_backend_call_is_bracketed_alone_with_its_mode) {
    char msg[512];
    gck_backend ref;
    cr_assert_eq(gck_backend_open(&ref, "ref", msg, sizeof msg), GCK_OK, "%s", msg);
    counted_ops = ref.ops;
    gck_backend_ops ops = *ref.ops;
    ops.call = counting_call;
    gck_backend be = {.ops = &ops, .state = ref.state};
    gck_spec s;
    cr_assert_eq(gck_spec_parse(a_case, &s, msg, sizeof msg), GCK_OK, "%s", msg);
    hook_log l = {.open_at = -1};
    gck_run_options o = {.check = {.threads = 1},
                         .determinism = true,
                         .concurrency = 3,
                         .before_call = log_before,
                         .after_call = log_after,
                         .ctx = &l};
    gck_run_result *r = malloc(sizeof *r);
    cr_assert_eq(gck_run_spec(&be, &s, &o, r, msg, sizeof msg), GCK_OK, "%s", msg);
    cr_expect_eq(r->outcome, GCK_OUTCOME_PASS);
    const gck_call_mode want[] = {GCK_CALL_FIRST, GCK_CALL_RERUN, GCK_CALL_ALONE,
                                  GCK_CALL_ALONE, GCK_CALL_ALONE, GCK_CALL_CONCURRENT};
    cr_assert_eq(l.n, 6, "%d bracketed calls", l.n);
    for (int q = 0; q < 6; q++) cr_expect_eq(l.seen[q].mode, want[q], "call %d", q);
    cr_expect_eq(l.seen[5].calls, 3);
    cr_expect_eq(l.seen[2].threads, 3);
    cr_expect_eq(counted_calls, 1 + 1 + 3 + 3);
    cr_expect(!l.nested && !l.miscounted, "a bracket held other calls than its own");
    free(r);
    gck_backend_close(&ref);
}

Test(checker, deadlines_grow_with_the_bytes_a_call_may_touch) {
    char msg[512];
    gck_spec s;
    cr_assert_eq(gck_spec_parse(big_footprint_case, &s, msg, sizeof msg), GCK_OK, "%s", msg);
    /* ~53 MB of operands, 1,455 multiply-adds: the bytes dominate */
    double t1 = gck_call_deadline(&s.c, 1, 3.0), t4 = gck_call_deadline(&s.c, 4, 3.0);
    cr_expect_gt(t1, 3.0 + 0.4, "%g", t1);
    cr_expect_lt(t1, 3.0 + 1.0, "%g", t1);
    cr_expect_eq(t4 - 3.0, 4 * (t1 - 3.0));
    s.c.alpha = 0; /* A and B are not read: only C's bytes count */
    cr_expect_lt(gck_call_deadline(&s.c, 1, 3.0), t1);
}

Test(checker, a_hang_names_its_call_and_the_repro_flags) {
    char detail[512], flags[64];
    gck_call_info ci = {GCK_CALL_CONCURRENT, 4, 4};
    gck_wire_hang_detail(&ci, 7.5, detail, sizeof detail, flags, sizeof flags);
    cr_expect(strstr(detail, "concurrent calls") && strstr(detail, "4 at once") &&
                  strstr(detail, "7.5 s"),
              "%s", detail);
    cr_expect_str_eq(flags, " --concurrency 4");
    ci = (gck_call_info){GCK_CALL_RERUN, 1, 0};
    gck_wire_hang_detail(&ci, 3, detail, sizeof detail, flags, sizeof flags);
    cr_expect(strstr(detail, "rerun") != NULL, "%s", detail);
    cr_expect_str_eq(flags, "");
}
