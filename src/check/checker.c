/* The checker's driver: the operands prepared (facts.c) and the oracle planned (oracle_face.h),
 * D cut into tiles among threads, each element evaluated by the oracle and judged (verdict.c),
 * the threads' results merged, the sign test made, and the public functions. */
#include "gemmcheck/checker.h"

#include <fenv.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_internal.h"
#include "decode.h"
#include "format_internal.h"
#include "fpenv.h"
#include "mix.h"
#include "oracle_face.h"
#include "parallel.h"
#include "stash.h"
#include "text.h"
#include "tiles.h"

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
    bool plain;             /* gck_plain_plan: elements may be plain (check_run) */
    long plain_settled;     /* ... and how many were (tests) */
    _Atomic int32_t *units; /* the sign test's unit sums (choose_units); NULL: not made */
    int32_t *mine;          /* this job's part of them, added to units when it ends */
    bool ok;
} chk_job;

/* An element the statistical tier applied to (its ratio: stat): counted, and its sign into the
 * sign test. */
static void count_stat(chk_job *job, const gck_oracle_eval *ev, double stat, int64_t bi, int64_t i,
                       int64_t j) {
    const gck_case *c = job->c;
    gck_check_result *r = &job->r;
    r->stat_elements++;
    if (stat > r->max_stat) r->max_stat = stat;
    /* the sign test: each inexact element's sign, added to its unit's sum (choose_units) */
    const gather_plan *g = job->gp;
    if (!g->bias_on || !job->mine || ev->err_sign == 0 || ev->value == 0 ||
        (bi > 0 && g->bias_first_only))
        return;
    int64_t line = g->bias_rows ? i : j, lines = g->bias_rows ? c->m : c->n;
    job->mine[(g->bias_per_member ? bi * lines : 0) + line] += ev->err_sign > 0 ? 1 : -1;
    r->bias_up += ev->err_sign > 0;
    r->bias_down += ev->err_sign < 0;
    bool toward0 = (ev->err_sign > 0) != (ev->value > 0);
    r->bias_toward0 += toward0;
    r->bias_away += !toward0;
}

/* Whether an element of finite error and this ratio becomes the result's largest ratio. */
static bool new_max_ratio(const gck_check_result *r, double ratio) {
    return isfinite(ratio) && (r->max_ratio.ratio < ratio || !isfinite(r->max_ratio.error));
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
    elem_facts own;
    bool pass = gck_decide(job->gp, ev, f, got, &e, &kind);
    if (pass && f->t_rounded &&
        (e.ratio > GCK_ABSPROD_BAND || (!isnan(e.stat) && e.stat > GCK_ABSPROD_BAND))) {
        /* T from values rounded up to bf16 may lie 1.7% above the element's own: within the
         * band its verdict is the one its own sums give (absprod.h) */
        gck_gather(c, job->row, job->gp, job->A, job->B, job->C, bi, i, j, false, true, ev->value,
                   &own);
        f = &own;
        e = none;
        e.batch = bi, e.i = i, e.j = j;
        pass = gck_decide(job->gp, ev, f, got, &e, &kind);
    }
    if (!pass && isnan(got) && c->alpha == 0 &&
        !(job->row->promises & GCK_PROMISE_ALPHA0_NO_READ_AB) &&
        gck_alpha0_may_nan(c, &job->row->model, job->A, job->B, bi, i, j)) {
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
        gck_gather(c, job->row, job->gp, job->A, job->B, job->C, bi, i, j, true, false, alt.value,
                   &f2);
        f2.exact_case = false;
        if (gck_decide(job->gp, &alt, &f2, got, &e2, &alt_kind)) {
            pass = true;
            r->lenient++;
        }
    }
    r->elements++;
    if (f->exact_case) r->exact_elements++;
    if (e.degenerate) r->degenerate++;
    if (!pass) gck_note_failure(r, kind, &e);
    if (isfinite(e.error) && new_max_ratio(r, e.ratio)) r->max_ratio = e;
    if (isfinite(e.error)) r->ratio_bins[gck_bin_of_ratio(e.error, e.ratio)]++;
    if (!isnan(e.stat)) count_stat(job, ev, e.stat, bi, i, j);
}

/* Tests: the plain path switched off, and how many elements it has settled over the process. */
static _Atomic bool plain_off;
static _Atomic long plain_settled;
bool gck_check_plain_path(bool on) { return !atomic_exchange(&plain_off, !on); }
long gck_check_plain_settled(void) { return atomic_load(&plain_settled); }

/* A plain element that passes (gck_decide_plain), into the job's result as conclude would
 * count it: no finding, no exact case, no leniency; its report is made only where it becomes
 * the largest ratio. */
static void count_plain(chk_job *job, const gck_oracle_eval *ev, double got, double bound,
                        double ratio, double stat, int64_t bi, int64_t i, int64_t j) {
    gck_check_result *r = &job->r;
    static const gck_element_report none;
    job->plain_settled++;
    r->elements++;
    double err = ev->abs_error; /* finite: the element is plain */
    if (new_max_ratio(r, ratio)) {
        gck_element_report e = none;
        e.batch = bi, e.i = i, e.j = j;
        e.got = got, e.expected = ev->value, e.error = err;
        e.bound = bound, e.ratio = ratio, e.stat = stat;
        r->max_ratio = e;
    }
    r->ratio_bins[gck_bin_of_ratio(err, ratio)]++;
    if (!isnan(stat)) count_stat(job, ev, stat, bi, i, j);
}

/* The elements i0 <= i < i1 of column j that the job checks (at most CHK_RUN): each one's oracle
 * value; in one stretch of upward rounding, the plain ones' allowances (gck_plain_run); the
 * others' first facts, then in another stretch their sums and bounds; then the verdicts, in
 * order of i. A plain element that fails, or whose T from the rounded road lies within the band
 * of its verdict, is settled by conclude on its whole facts, as the others are. */
#define CHK_RUN GCK_PLAIN_RUN
typedef struct chk_elem {
    int64_t i;
    double got;
    gck_oracle_eval ev;
    bool plain;
    plain_facts p;
    elem_facts f;
    gather_in w;
} chk_elem;

/* Whether element x may be plain: its result, oracle value and error finite, no special input
 * (the non-finite rules do not apply). */
static bool may_be_plain(const chk_elem *x) {
    const gck_oracle_eval *ev = &x->ev;
    return isfinite(x->got) && isfinite(ev->value) && isfinite(ev->abs_error) && !ev->special_input;
}

/* Element x's verdict. */
static void settle(chk_job *job, gck_oracle_thread *o, int64_t bi, int64_t j, bool may_skip,
                   chk_elem *x) {
    if (!x->plain) {
        conclude(job, o, bi, x->i, j, may_skip, x->got, &x->ev, &x->f);
        return;
    }
    double bound, ratio, stat;
    bool pass = gck_decide_plain(job->gp, &x->ev, &x->p, x->got, &bound, &ratio, &stat);
    if (pass && !(x->p.t_rounded &&
                  (ratio > GCK_ABSPROD_BAND || (!isnan(stat) && stat > GCK_ABSPROD_BAND)))) {
        count_plain(job, &x->ev, x->got, bound, ratio, stat, bi, x->i, j);
        return;
    }
    gck_gather(job->c, job->row, job->gp, job->A, job->B, job->C, bi, x->i, j, false, false,
               x->ev.value, &x->f);
    conclude(job, o, bi, x->i, j, may_skip, x->got, &x->ev, &x->f);
}

static void check_run(chk_job *job, gck_oracle_thread *o, int64_t bi, int64_t i0, int64_t i1,
                      int64_t j, bool may_skip, chk_elem *el) {
    const gck_case *c = job->c;
    int n = 0;
    bool whole = !job->rows || job->cols[j]; /* every element of the run is checked */
    if (whole) {                             /* the oracle's values for the run at once */
        double got[CHK_RUN] = {0};
        gck_oracle_eval ev[CHK_RUN];
        for (int64_t i = i0; i < i1; i++)
            got[i - i0] = gck_fmt_load(job->D, job->td, bi * job->sd + i * job->drs + j * job->dcs);
        gck_oracle_thread_eval_run(o, bi, i0, i1, j, got, ev);
        for (int64_t i = i0; i < i1; i++, n++) {
            el[n].i = i;
            el[n].got = got[n];
            el[n].ev = ev[n];
        }
    } else {
        for (int64_t i = i0; i < i1; i++) {
            if (!job->rows[i]) continue;
            chk_elem *x = &el[n++];
            x->i = i;
            x->got = gck_fmt_load(job->D, job->td, bi * job->sd + i * job->drs + j * job->dcs);
            gck_oracle_thread_eval(o, bi, i, j, false, &x->got, &x->ev);
        }
    }
    int old = fegetround(), general = n;
    if (job->plain) {
        int64_t rows[CHK_RUN];
        double abs_d[CHK_RUN];
        bool plain[CHK_RUN];
        plain_facts p[CHK_RUN];
        for (int y = 0; y < n; y++) {
            rows[y] = el[y].i;
            abs_d[y] = fabs(el[y].ev.value);
            plain[y] = may_be_plain(&el[y]);
        }
        fesetround(FE_UPWARD);
        general -= gck_plain_run(c, job->gp, bi, j, n, rows, abs_d, plain, p);
        fesetround(old);
        for (int y = 0; y < n; y++) {
            el[y].plain = plain[y];
            el[y].p = p[y];
        }
    } else
        for (int y = 0; y < n; y++) el[y].plain = false;
    if (general > 0) {
        for (int y = 0; y < n; y++)
            if (!el[y].plain)
                gck_gather_lines(c, job->row, job->gp, job->A, job->B, job->C, bi, el[y].i, j,
                                 el[y].ev.value, &el[y].f, &el[y].w);
        fesetround(FE_UPWARD);
        for (int y = 0; y < n; y++)
            if (!el[y].plain) gck_gather_sums(c, job->row, job->gp, bi, false, &el[y].f, &el[y].w);
        fesetround(old);
    }
    for (int y = 0; y < n; y++) settle(job, o, bi, j, may_skip, &el[y]);
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
    /* the unit sums kept per job and added once at the end: an atomic add per element, on lines
     * the other jobs' elements share, took half of check_run's own time (Zen 5, 1024^3) */
    int64_t units = job->units ? job->gp->bias_units : 0;
    job->mine = units ? calloc((size_t)units, sizeof *job->mine) : NULL;
    job->ok = job->ok && (job->mine || !units);
    for (int64_t t = job->first; job->ok && t < job->last; t++) {
        int64_t bi, i0, i1, j0, j1;
        gck_tile_range(&job->tiles, c, t, &bi, &i0, &i1, &j0, &j1);
        for (int64_t j = j0; j < j1; j++)
            for (int64_t i = i0; i < i1; i += CHK_RUN)
                check_run(job, o, bi, i, i1 - i < CHK_RUN ? i1 : i + CHK_RUN, j, may_skip, el);
    }
    free(el);
    atomic_fetch_add_explicit(&plain_settled, job->plain_settled, memory_order_relaxed);
    for (int64_t u = 0; job->ok && u < units; u++)
        if (job->mine[u])
            atomic_fetch_add_explicit(&job->units[u], job->mine[u], memory_order_relaxed);
    free(job->mine);
    job->mine = NULL;
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
        bool take = into->count[k] == 0 || gck_worse((gck_kind)k, &from->worst[k], &into->worst[k]);
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
    gather_plan *gp =
        gck_gather_plan_new(c, &row->model, A, B, opt, r->stat_note, sizeof r->stat_note);
    if (!gp || !(plan = gck_oracle_plan_new(opt->oracle, c, A, B, C))) {
        gck_gather_plan_free(gp);
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
    proto.plain = gp && gck_plain_plan(gp) && !atomic_load(&plain_off);
    gck_case_op_strides(c, GCK_D, &proto.drs, &proto.dcs);
    proto.sd = gck_case_stride(c, GCK_D);
    proto.td = gck_case_type(c, GCK_D);
    if (s == GCK_OK && !check_in_parallel(&proto, gck_thread_count(opt->threads, total), r))
        s = gck_fail(GCK_ENOMEM, msg, len, "out of memory for the oracle (K = %lld)",
                     (long long)c->k);
    if (s == GCK_OK) sign_test(r, gp, proto.units);
    free(proto.units);
    gck_oracle_plan_free(plan);
    gck_gather_plan_free(gp);
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

GCK_GUARDED(double, gck_bound, gck_element_bound,
            (const gck_case *c, const gck_model *m, const gck_bound_terms *t, bool *degenerate),
            (c, m, t, degenerate))
GCK_GUARDED(int, gck_ratio_bin, gck_bin_of_ratio, (double error, double ratio), (error, ratio))
GCK_GUARDED(double, gck_sign_test, sign_test_p, (int64_t up, int64_t down, double ss),
            (up, down, ss))
GCK_GUARDED_VOID(gck_stat_describe, stat_describe,
                 (const gck_check_result *r, char *buf, size_t len), (r, buf, len))
GCK_GUARDED(gck_status, gck_check_values, check_values,
            (const gck_case *c, const gck_support_row *row, const gck_check_options *opt,
             const void *A, const void *B, const void *C, const void *D_got, gck_check_result *r,
             char *msg, size_t len),
            (c, row, opt, A, B, C, D_got, r, msg, len))
