/* Running one spec on one backend: guarded operands, the call, guard/input checks, values. */
#include "gemmcheck/runner.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backends.h"
#include "call_limits.h"
#include "format_internal.h"
#include "fpenv.h"
#include "gemmcheck/oracle.h"
#include "guard.h"
#include "npy.h"
#include "parallel.h"
#include "text.h"
#include "worker.h"

const char *gck_outcome_name(gck_outcome o) {
    return o == GCK_OUTCOME_PASS          ? "pass"
           : o == GCK_OUTCOME_UNSUPPORTED ? "unsupported"
                                          : "findings";
}

static const char *const mode_names[GCK_CALL_MODE_COUNT] = {
    "first call", "rerun (determinism check)", "call made alone (concurrency check)",
    "concurrent calls (concurrency check)", "next call (without limits, after a refused one)"};

const char *gck_call_mode_name(gck_call_mode m) {
    return (unsigned)m < GCK_CALL_MODE_COUNT ? mode_names[m] : "call";
}

double gck_call_deadline(const gck_case *c, int calls, double floor) {
    double flops = (double)c->m * (double)c->n * (double)c->k * (double)c->batch, bytes = 0;
    for (int x = GCK_A; x <= GCK_D; x++) {
        if (x == GCK_D && c->d_is_c) continue;
        if ((x == GCK_A || x == GCK_B) && !gck_case_reads_ab(c)) continue;
        bytes += (double)gck_case_extent(c, (gck_operand)x) *
                 (double)gck_format_get(gck_case_type(c, (gck_operand)x))->storage_bytes;
    }
    return floor + (flops / 1e7 + bytes / 1e8) * (calls > 1 ? calls : 1);
}

static void call_hook(void (*hook)(void *, const gck_call_info *), void *ctx, gck_call_mode mode,
                      int calls, int threads) {
    gck_call_info ci = {mode, calls, threads};
    if (hook) hook(ctx, &ci);
}

/* The thread limit of spec s as gck_limits_begin takes it (negative: none). */
static int thread_limit(const gck_spec *s) { return s->limit_threads ? s->max_threads : -1; }

/* One backend call. The caller's floating-point environment is saved before and restored
 * after, so that what the backend leaves set cannot bend gemmcheck's own arithmetic; a change
 * is described in `fpenv` (the first one seen is kept). The message is the backend's text,
 * whatever it wrote: terminated and cleaned before anyone reads it. The limits of spec `lim`
 * (NULL: none) are in force from just before the backend's function to just after it
 * (*refused: the threads it was refused), so gemmcheck's own work never counts. */
static gck_call_status call_limited(gck_backend *be, const gck_case *c, const gck_support_row *row,
                                    const gck_operands *ops, const gck_spec *lim, char *cmsg,
                                    size_t clen, char *fpenv, size_t flen, int *refused) {
    gck_fpenv env;
    gck_fpenv_save(&env);
    memset(cmsg, 0, clen);
    gck_limits_saved sv;
    if (lim) gck_limits_begin(lim->mem_budget, thread_limit(lim), &sv);
    gck_call_status st = be->ops->call(be->state, c, row, ops, cmsg, clen);
    if (lim) {
        int n = gck_limits_end(&sv);
        if (refused) *refused = n;
    }
    char what[160];
    if (gck_fpenv_restore(&env, what, sizeof what) && fpenv[0] == '\0')
        snprintf(fpenv, flen, "%s", what);
    gck_text_clean_inplace(cmsg, clen);
    if ((unsigned)st > GCK_CALL_DEVICE_FAULT) {
        snprintf(cmsg, clen, "status %d, which is not a gck_call_status", (int)st);
        st = GCK_CALL_ERROR;
    }
    return st;
}

static gck_call_status call_backend(gck_backend *be, const gck_case *c, const gck_support_row *row,
                                    const gck_operands *ops, char *cmsg, size_t clen, char *fpenv,
                                    size_t flen) {
    return call_limited(be, c, row, ops, NULL, cmsg, clen, fpenv, flen, NULL);
}

/* The four operands of one call; D aliases C when the case computes in place. */
typedef struct operand_set {
    gck_guarded g[4];
    bool have_d;
} operand_set;

static void free_set(operand_set *os) {
    for (int x = 0; x < 4; x++) gck_guarded_free(&os->g[x]);
}

/* The room between each operand's end and its guard page: none, or with --no-guard-page 4 KiB or
 * GUARD_LINES of the widest leading dimension, whichever is more, in whole pages. A backend's
 * edge tile may read a whole line past the last one (BLIS 0.9.0 read a row of op(A) past m = 4
 * at lda = 1054, 4,216 bytes beyond A: docs/DEVIATIONS.md), which 4 KiB alone did not cover. */
#define GUARD_LINES 64
static size_t guard_slack(const gck_spec *s, const gck_run_options *o) {
    if (!o->no_guard_page) return 0;
    size_t most = 4096;
    for (int x = GCK_A; x <= GCK_D; x++) {
        size_t line = (size_t)gck_case_ld(&s->c, (gck_operand)x) *
                      (size_t)gck_format_get(gck_case_type(&s->c, (gck_operand)x))->storage_bytes;
        if (line <= SIZE_MAX / GUARD_LINES && GUARD_LINES * line > most) most = GUARD_LINES * line;
    }
    return (most + 4095) / 4096 * 4096;
}

static gck_status prepare(const gck_spec *s, operand_set *os, size_t slack, char *msg, size_t len) {
    memset(os, 0, sizeof *os);
    const gck_case *c = &s->c;
    os->have_d = !c->d_is_c;
    for (int x = GCK_A; x <= GCK_D; x++) {
        if (x == GCK_D && !os->have_d) continue;
        gck_status st =
            gck_guarded_alloc(&os->g[x], gck_case_type(c, (gck_operand)x),
                              gck_case_extent(c, (gck_operand)x), s->offset[x], slack, msg, len);
        if (st != GCK_OK) {
            free_set(os);
            return st;
        }
        if (x != GCK_D) gck_spec_fill(s, (gck_operand)x, os->g[x].data);
        st = gck_guarded_snapshot(&os->g[x], msg, len);
        if (st != GCK_OK) {
            free_set(os);
            return st;
        }
    }
    return GCK_OK;
}

static gck_operands operands_of(operand_set *os) {
    gck_operands ops = {os->g[GCK_A].data,
                        os->g[GCK_B].data,
                        os->g[GCK_C].data,
                        os->have_d ? os->g[GCK_D].data : os->g[GCK_C].data,
                        {0},
                        {0}};
    for (int x = 0; x < 4; x++) {
        const gck_guarded *g = &os->g[x == GCK_D && !os->have_d ? GCK_C : x];
        ops.region[x] = g->region;
        ops.region_bytes[x] = g->region_len;
    }
    return ops;
}

static gck_finding *add_finding(gck_run_result *r, gck_kind k) {
    /* at most GCK_KIND_COUNT: a second finding of a kind past that replaces the last */
    gck_finding *f =
        &r->findings[r->nfindings < GCK_KIND_COUNT ? r->nfindings++ : r->nfindings - 1];
    memset(f, 0, sizeof *f);
    f->kind = k;
    f->count = 1;
    r->outcome = GCK_OUTCOME_FINDINGS;
    return f;
}

static const char *const op_names[4] = {"A", "B", "C", "D"};

static void guard_findings(const gck_case *c, operand_set *os, gck_run_result *r) {
    gck_finding *oob = NULL, *mod = NULL;
    for (int x = GCK_A; x <= GCK_D; x++) {
        if (x == GCK_D && !os->have_d) continue;
        bool is_output = x == GCK_D || (x == GCK_C && c->d_is_c);
        gck_guard_report g;
        gck_guarded_check(&os->g[x], c, (gck_operand)x, is_output, &g);
        if (g.zone == GCK_ZONE_NONE) continue;
        bool input_change = !is_output && g.zone != GCK_ZONE_GUARD;
        gck_finding **slot = input_change ? &mod : &oob;
        if (*slot) {
            (*slot)->count += (int64_t)g.changed_bytes;
            continue;
        }
        *slot =
            add_finding(r, input_change ? GCK_KIND_INPUT_MODIFIED : GCK_KIND_OUT_OF_BOUNDS_WRITE);
        (*slot)->count = (int64_t)g.changed_bytes;
        const char *where = g.zone == GCK_ZONE_GUARD     ? "guard zone"
                            : g.zone == GCK_ZONE_PADDING ? "padding (ld or batch gap)"
                                                         : "valid element";
        if (g.zone == GCK_ZONE_GUARD)
            snprintf((*slot)->detail, sizeof(*slot)->detail,
                     "%s: %zu byte(s) changed in the %s, first at byte %+lld from the base "
                     "pointer (%02x -> %02x)",
                     op_names[x], g.changed_bytes, where, (long long)g.byte_offset, g.before,
                     g.after);
        else
            snprintf((*slot)->detail, sizeof(*slot)->detail,
                     "%s: %zu byte(s) changed in the %s, first at byte %+lld (batch %lld, stored "
                     "row %lld, col %lld) (%02x -> %02x)",
                     op_names[x], g.changed_bytes, where, (long long)g.byte_offset,
                     (long long)g.batch, (long long)g.row, (long long)g.col, g.before, g.after);
    }
}

static void value_findings(const gck_check_result *cr, gck_run_result *r) {
    const gck_kind kinds[] = {GCK_KIND_OUT_OF_TOLERANCE, GCK_KIND_NONFINITE_MISMATCH,
                              GCK_KIND_IMPROBABLE_ERROR};
    for (size_t q = 0; q < sizeof kinds / sizeof kinds[0]; q++) {
        gck_kind k = kinds[q];
        if (cr->count[k] == 0) continue;
        gck_finding *f = add_finding(r, k);
        const gck_element_report *e = &cr->worst[k];
        f->has_element = true;
        f->element = *e;
        f->count = cr->count[k];
        char against[96]; /* what the error was held to */
        if (k == GCK_KIND_IMPROBABLE_ERROR)
            snprintf(against, sizeof against,
                     "%.3g times the statistical allowance, %.3g of the hard bound", e->stat,
                     e->ratio);
        else
            snprintf(against, sizeof against, "bound %.3g", e->bound);
        snprintf(f->detail, sizeof f->detail,
                 "%lld element(s); worst D[%lld](%lld,%lld): got %.17g, expected %.17g, error "
                 "%.3g, %s (%s)",
                 (long long)cr->count[k], (long long)e->batch, (long long)e->i, (long long)e->j,
                 e->got, e->expected, e->error, against, e->rule);
    }
}

void gck_run_result_drop(gck_run_result *r, gck_kind kind) {
    int n = 0;
    for (int f = 0; f < r->nfindings; f++)
        if (r->findings[f].kind != kind) r->findings[n++] = r->findings[f];
    r->nfindings = n;
    if (n == 0 && r->outcome == GCK_OUTCOME_FINDINGS) r->outcome = GCK_OUTCOME_PASS;
}

/* The statistical tier's data assumption from the spec's distribution of A and B: the random
 * ones (unif, normal, logu) qualify, the structured ones (int, cancel, subnormal, big) not. */
static bool random_dist(gck_dist d) {
    return d == GCK_DIST_UNIFORM || d == GCK_DIST_NORMAL || d == GCK_DIST_LOGU;
}

static gck_stat_data spec_stat_data(const gck_spec *s, gck_stat_data asked) {
    if (asked != GCK_STAT_AUTO) return asked;
    if (!random_dist(s->dist_ab)) return GCK_STAT_OFF;
    return random_dist(s->dist_c) ? GCK_STAT_RANDOM : GCK_STAT_RANDOM_AB;
}

/* Dense (batch, rows, cols) copy of the stored operand at base, written as .npy. */
static gck_status dump_operand(const char *dir, const char *name, const gck_case *c, gck_operand x,
                               const void *base, char *msg, size_t len) {
    int64_t rows, cols;
    gck_case_stored_shape(c, x, &rows, &cols);
    gck_format f = gck_case_type(c, x);
    int64_t ld = gck_case_ld(c, x), st = gck_case_stride(c, x);
    size_t es = (size_t)gck_format_get(f)->storage_bytes;
    int64_t count = c->batch * rows * cols;
    unsigned char *dense = malloc(count ? (size_t)count * es : 1);
    if (!dense) {
        snprintf(msg, len, "out of memory dumping %s", name);
        return GCK_ENOMEM;
    }
    for (int64_t b = 0; b < c->batch; b++)
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < cols; j++) {
                int64_t off = b * st + (c->order == GCK_COL_MAJOR ? i + j * ld : i * ld + j);
                memcpy(dense + (size_t)((b * rows + i) * cols + j) * es,
                       (const unsigned char *)base + (size_t)off * es, es);
            }
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.npy", dir, name);
    int64_t shape3[3] = {c->batch, rows, cols};
    gck_status s = c->batch > 1
                       ? gck_npy_write(path, gck_npy_dtype_of(f), 3, shape3, dense, msg, len)
                       : gck_npy_write(path, gck_npy_dtype_of(f), 2, shape3 + 1, dense, msg, len);
    free(dense);
    return s;
}

/* DIR/verify.sh: the `gemmcheck verify` command that re-checks the dumped D (D_got) against the
 * dumped operands under the row's model, from any directory. */
/* DIR/NAME written whole with `text` (mode 0755 when executable). */
static gck_status write_text(const char *dir, const char *name, const char *text, bool executable,
                             char *msg, size_t len) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(msg, len, "cannot create %s", path);
        return GCK_EIO;
    }
    fputs(text, f);
    bool ok = !ferror(f);
    ok = fclose(f) == 0 && ok;
    if (ok && executable) chmod(path, 0755);
    if (!ok) snprintf(msg, len, "cannot write %s", path);
    return ok ? GCK_OK : GCK_EIO;
}

/* DIR/verify.sh: the `gemmcheck verify` command that re-checks the dumped D (D_got) against the
 * dumped operands under the row's model, from any directory. */
static gck_status write_verify(const char *dir, const gck_case *c, const gck_support_row *row,
                               char *msg, size_t len) {
    char model[256], text[2048];
    gck_row_model_words(row, model, sizeof model);
    snprintf(text, sizeof text,
             "#!/bin/sh\n# Re-checks D_got.npy, the backend's result, against the exact result "
             "(gemmcheck verify).\ncd \"$(dirname \"$0\")\" || exit 2\n"
             "exec \"${GEMMCHECK:-gemmcheck}\" verify --a A.npy --b B.npy --c C.npy --d D_got.npy "
             "--alpha %.17g --beta %.17g --transa %s --transb %s --a-type %s --b-type %s "
             "--c-type %s --d-type %s --model '%s' \"$@\"\n",
             c->alpha, c->beta, c->transa == GCK_OP_N ? "N" : "T",
             c->transb == GCK_OP_N ? "N" : "T", gck_format_get(c->type_a)->name,
             gck_format_get(c->type_b)->name, gck_format_get(c->type_c)->name,
             gck_format_get(gck_case_type(c, GCK_D))->name, model);
    return write_text(dir, "verify.sh", text, true, msg, len);
}

static gck_status dump(const char *dir, const gck_spec *s, const gck_support_row *row,
                       operand_set *os, char *msg, size_t len) {
    const gck_case *c = &s->c;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        snprintf(msg, len, "cannot create %s: %s", dir, strerror(errno));
        return GCK_EIO;
    }
    gck_status st;
    if ((st = dump_operand(dir, "A", c, GCK_A, gck_guarded_before(&os->g[GCK_A]), msg, len)) ||
        (st = dump_operand(dir, "B", c, GCK_B, gck_guarded_before(&os->g[GCK_B]), msg, len)) ||
        (st = dump_operand(dir, "C", c, GCK_C, gck_guarded_before(&os->g[GCK_C]), msg, len)))
        return st;
    gck_operand dx = os->have_d ? GCK_D : GCK_C;
    if ((st = dump_operand(dir, "D_got", c, dx, os->g[dx].data, msg, len))) return st;
    /* the oracle's D in a buffer laid out as D */
    gck_case oc = *c;
    oc.d_is_c = false;
    oc.type_d = gck_case_type(c, GCK_D);
    oc.ldd = gck_case_ld(c, GCK_D);
    oc.stride_d = gck_case_stride(c, GCK_D);
    int64_t n = gck_case_extent(&oc, GCK_D);
    void *de = calloc(n ? (size_t)n : 1, (size_t)gck_format_get(oc.type_d)->storage_bytes);
    if (!de) {
        snprintf(msg, len, "out of memory for D_expected");
        return GCK_ENOMEM;
    }
    st = gck_oracle_mpfr(&oc, gck_guarded_before(&os->g[GCK_A]), gck_guarded_before(&os->g[GCK_B]),
                         gck_guarded_before(&os->g[GCK_C]), de, 0, msg, len);
    if (st == GCK_OK) st = dump_operand(dir, "D_expected", &oc, GCK_D, de, msg, len);
    free(de);
    if (st != GCK_OK) return st;
    char repro[2048];
    gck_spec_format(s, repro, sizeof repro - 1);
    strcat(repro, "\n");
    if ((st = write_text(dir, "case.txt", repro, false, msg, len))) return st;
    return write_verify(dir, c, row, msg, len);
}

/* The elements of D (its whole extent, padding included) that differ between two runs: other
 * bits, except that any two NaNs are the same result. IEEE 754 leaves a NaN result's sign and
 * payload open, and which NaN an operation returns depends on the order of its operands (x86
 * returns the first NaN operand's, or its default NaN, negative, for Inf - Inf and 0 * Inf): a
 * correct library whose summation order varies between calls may give either. */
static int64_t count_differing(const unsigned char *p, const unsigned char *q, size_t bytes,
                               gck_format f, int64_t *first) {
    size_t es = (size_t)gck_format_get(f)->storage_bytes;
    int64_t n = 0;
    if (first) *first = -1;
    for (size_t e = 0; e * es < bytes; e++) {
        if (memcmp(p + e * es, q + e * es, es) == 0) continue;
        double x = gck_fmt_load(p, f, (int64_t)e), y = gck_fmt_load(q, f, (int64_t)e);
        if (x != x && y != y) continue;
        if (first && *first < 0) *first = (int64_t)e;
        n++;
    }
    return n;
}

typedef struct conc_job {
    gck_backend *be;
    gck_spec spec; /* this thread's case: the same call with its own values */
    const gck_support_row *row;
    operand_set os;
    unsigned char *alone; /* D from the single-threaded call */
    gck_call_status status;
    atomic_bool *go;      /* set once every thread is created */
    atomic_int *arrived;  /* threads running and waiting for the release */
    atomic_int *nstarted; /* threads created (set before go) */
    char fpenv[160];      /* what this thread's call left changed in its FP environment */
} conc_job;

static void *conc_call(void *arg) {
    conc_job *j = arg;
    gck_operands ops = operands_of(&j->os);
    char cmsg[256];
    /* all threads call at the same moment: once every one of them runs, and when released */
    atomic_fetch_add(j->arrived, 1);
    while (!atomic_load(j->go) || atomic_load(j->arrived) < atomic_load(j->nstarted)) sched_yield();
    j->status =
        call_backend(j->be, &j->spec.c, j->row, &ops, cmsg, sizeof cmsg, j->fpenv, sizeof j->fpenv);
    return NULL;
}

/* Every concurrent D against its single-threaded D, bit for bit: a nondeterministic finding
 * counting the threads that differ. */
static void compare_concurrent(const conc_job *jobs, int threads, const gck_spec *s, gck_operand dx,
                               gck_run_result *r) {
    int64_t differing = 0, first_thread = -1;
    for (int t = 0; t < threads; t++) {
        const gck_guarded *g = &jobs[t].os.g[dx];
        bool same = jobs[t].status == GCK_CALL_OK &&
                    count_differing(jobs[t].alone, g->data, g->data_bytes,
                                    gck_case_type(&s->c, GCK_D), NULL) == 0;
        if (!same) {
            differing++;
            if (first_thread < 0) first_thread = t;
        }
    }
    if (!differing) return;
    gck_finding *f = add_finding(r, GCK_KIND_NONDETERMINISTIC);
    f->count = differing;
    snprintf(f->detail, sizeof f->detail,
             "%lld of %d concurrent calls (distinct buffers, "
             "seeds %llu..%llu) differ from the same calls made one at a time; first: "
             "thread %lld%s",
             (long long)differing, threads, (unsigned long long)(s->seed + 1),
             (unsigned long long)(s->seed + (uint64_t)threads), (long long)first_thread,
             jobs[first_thread].status != GCK_CALL_OK ? " (returned an error)" : "");
}

/* Thread safety (the class of OpenBLAS issue #1755): `threads` variants of the case (same call,
 * different values) are first run one after the other, then all at once from as many threads
 * on fresh buffers; every concurrent D must equal its single-threaded D bit for bit. */
static void concurrency_check(gck_backend *be, const gck_spec *s, const gck_support_row *row,
                              const gck_run_options *o, gck_run_result *r, char *fpenv,
                              size_t flen) {
    int threads = o->concurrency;
    size_t slack = guard_slack(s, o);
    conc_job *jobs = calloc((size_t)threads, sizeof *jobs);
    pthread_t *tids = calloc((size_t)threads, sizeof *tids);
    bool *started = calloc((size_t)threads, sizeof *started);
    atomic_bool go = false;
    atomic_int arrived = 0, nstarted = 0;
    char msg[256];
    bool ok = jobs && tids && started;
    gck_operand dx = s->c.d_is_c ? GCK_C : GCK_D;
    /* single-threaded pass: each call timed alone, its buffers prepared before */
    for (int t = 0; ok && t < threads; t++) {
        jobs[t] = (conc_job){.be = be,
                             .spec = *s,
                             .row = row,
                             .status = GCK_CALL_OK,
                             .go = &go,
                             .arrived = &arrived,
                             .nstarted = &nstarted};
        jobs[t].spec.seed = s->seed + 1 + (uint64_t)t;
        operand_set alone;
        ok = prepare(&jobs[t].spec, &alone, slack, msg, sizeof msg) == GCK_OK;
        if (!ok) break;
        gck_operands ops = operands_of(&alone);
        char cmsg[256];
        call_hook(o->before_call, o->ctx, GCK_CALL_ALONE, 1, threads);
        gck_call_status st =
            call_backend(be, &jobs[t].spec.c, row, &ops, cmsg, sizeof cmsg, fpenv, flen);
        call_hook(o->after_call, o->ctx, GCK_CALL_ALONE, 1, threads);
        jobs[t].alone = malloc(alone.g[dx].data_bytes ? alone.g[dx].data_bytes : 1);
        ok = jobs[t].alone != NULL && st == GCK_CALL_OK;
        if (jobs[t].alone) memcpy(jobs[t].alone, alone.g[dx].data, alone.g[dx].data_bytes);
        free_set(&alone);
    }
    /* concurrent pass */
    for (int t = 0; ok && t < threads; t++)
        ok = prepare(&jobs[t].spec, &jobs[t].os, slack, msg, sizeof msg) == GCK_OK;
    for (int t = 0; ok && t < threads; t++)
        ok = started[t] = pthread_create(&tids[t], NULL, conc_call, &jobs[t]) == 0;
    bool any = false;
    for (int t = 0; started && t < threads; t++) {
        any = any || started[t];
        if (started[t]) atomic_fetch_add(&nstarted, 1);
    }
    /* the deadline runs from the release of the threads, every buffer already prepared */
    if (any) call_hook(o->before_call, o->ctx, GCK_CALL_CONCURRENT, threads, threads);
    atomic_store(&go, true);
    for (int t = 0; tids && started && t < threads; t++)
        if (started[t]) pthread_join(tids[t], NULL);
    if (any) call_hook(o->after_call, o->ctx, GCK_CALL_CONCURRENT, threads, threads);
    for (int t = 0; started && t < threads; t++)
        if (started[t] && jobs[t].fpenv[0] && !fpenv[0])
            snprintf(fpenv, flen, "%s (a concurrent call)", jobs[t].fpenv);
    if (ok) compare_concurrent(jobs, threads, s, dx, r);
    for (int t = 0; jobs && t < threads; t++) {
        free_set(&jobs[t].os);
        free(jobs[t].alone);
    }
    free(jobs);
    free(tids);
    free(started);
}

/* Refuse a case whose operands cannot fit in this machine's memory before allocating any (the
 * guard buffers reserve address space lazily: a huge case would be killed midway instead). Each
 * operand set holds every operand and a snapshot of it; the rerun adds a set, the concurrency
 * check two per thread. */
static gck_status fits_in_memory(const gck_spec *s, const gck_run_options *o, char *msg,
                                 size_t len) {
    const gck_case *c = &s->c;
    double set = 0;
    for (int x = GCK_A; x <= GCK_D; x++) {
        if (x == GCK_D && c->d_is_c) continue;
        set += 2.0 * (double)gck_case_extent(c, (gck_operand)x) *
               gck_format_get(gck_case_type(c, (gck_operand)x))->storage_bytes;
    }
    double sets = 1.0 + (o->determinism ? 1 : 0) + (o->concurrency > 1 ? 2.0 * o->concurrency : 0);
    double need = set * sets;
    double phys = gck_physical_memory();
    if (phys > 0 && need > phys) {
        snprintf(msg, len,
                 "the case's operands need %.1f GiB, more than this machine's %.1f GiB of memory",
                 need / 1073741824.0, phys / 1073741824.0);
        return GCK_ENOMEM;
    }
    return GCK_OK;
}

/* A backend call that left the floating-point environment changed (gemmcheck restored it). */
static void fpenv_finding(gck_run_result *r, const char *fpenv) {
    if (!fpenv[0]) return;
    gck_finding *f = add_finding(r, GCK_KIND_FPENV_MODIFIED);
    snprintf(f->detail, sizeof f->detail,
             "the backend call returned with the caller's floating-point environment changed "
             "(now %s); gemmcheck restored it",
             fpenv);
}

/* The finding of a call that did not return GCK_CALL_OK. */
static void call_failed(gck_run_result *r, const gck_support_row *row, gck_call_status cs,
                        const char *cmsg) {
    gck_kind k = cs == GCK_CALL_NOT_SUPPORTED ? GCK_KIND_UNIMPLEMENTED
                 : cs == GCK_CALL_ERROR       ? GCK_KIND_ERROR
                                              : GCK_KIND_CRASH;
    gck_finding *f = add_finding(r, k);
    snprintf(f->detail, sizeof f->detail, "%s returned %s: %s", row->entry,
             cs == GCK_CALL_NOT_SUPPORTED ? "not supported"
             : cs == GCK_CALL_ERROR       ? "an error"
                                          : "a sticky device error",
             cmsg[0] ? cmsg : "(no message)");
}

/* The determinism rerun: the same call on fresh, identical buffers must give the same bits of
 * D (and its padding). */
static gck_status determinism_check(gck_backend *be, const gck_spec *s, const gck_support_row *row,
                                    const gck_run_options *o, const operand_set *os, size_t slack,
                                    gck_run_result *r, char *fpenv, size_t fplen, char *msg,
                                    size_t len) {
    const gck_case *c = &s->c;
    operand_set again;
    gck_status st = prepare(s, &again, slack, msg, len);
    if (st != GCK_OK) return st;
    gck_operands ops2 = operands_of(&again);
    char cmsg[256] = "";
    call_hook(o->before_call, o->ctx, GCK_CALL_RERUN, 1, 0);
    gck_call_status cs = call_backend(be, c, row, &ops2, cmsg, sizeof cmsg, fpenv, fplen);
    call_hook(o->after_call, o->ctx, GCK_CALL_RERUN, 1, 0);
    gck_operand dx = os->have_d ? GCK_D : GCK_C;
    const gck_guarded *g1 = &os->g[dx], *g2 = &again.g[dx];
    int64_t first = -1, differing = count_differing(g1->data, g2->data, g1->data_bytes,
                                                    gck_case_type(c, GCK_D), &first);
    if (cs != GCK_CALL_OK || differing) {
        gck_finding *f = add_finding(r, GCK_KIND_NONDETERMINISTIC);
        f->count = differing;
        if (cs != GCK_CALL_OK)
            snprintf(f->detail, sizeof f->detail,
                     "the second identical call returned an "
                     "error: %s",
                     cmsg);
        else {
            int64_t b, i, j;
            bool valid = gck_case_element_at(c, dx, first, &b, &i, &j);
            double v1 = gck_fmt_load(g1->data, gck_case_type(c, GCK_D), first);
            double v2 = gck_fmt_load(g2->data, gck_case_type(c, GCK_D), first);
            snprintf(f->detail, sizeof f->detail,
                     "two runs on identical fresh buffers differ "
                     "in %lld element(s); first at %s (batch %lld, stored row %lld, col "
                     "%lld): %.17g vs %.17g",
                     (long long)differing, valid ? "a valid element" : "padding",
                     (long long)(valid ? b : -1), (long long)(valid ? i : -1),
                     (long long)(valid ? j : -1), v1, v2);
        }
    }
    free_set(&again);
    return GCK_OK;
}

/* The words a finding of the refused call itself ends with (name_limits leaves it be). */
#define REFUSED_CALL " (in the first call, which returned an error under its limits)"

/* `tail` appended to the detail of findings from..nfindings-1 (cut to fit), except those of the
 * refused call itself, which already say which call they are of. */
static void append_to_findings(gck_run_result *r, int from, const char *tail) {
    for (int f = from; f < r->nfindings; f++) {
        char *d = r->findings[f].detail;
        if (strstr(d, REFUSED_CALL)) continue;
        size_t used = strlen(d), room = sizeof r->findings[f].detail;
        if (used + 1 >= room) continue;
        size_t k = strlen(tail);
        if (k > room - 1 - used) k = room - 1 - used;
        memcpy(d + used, tail, k);
        d[used + k] = '\0';
    }
}

/* The first call was refused under the case's limits (an error status): counted, not a
 * finding; the next call, without limits, on fresh buffers, must work, and it is what the case
 * checks (a finding when it fails: a refusal must leave the backend usable). */
static gck_status recover(gck_backend *be, const gck_spec *s, const gck_support_row *row,
                          const gck_run_options *o, operand_set *os, size_t slack,
                          gck_call_status *cs, char *cmsg, size_t clen, char *fpenv, size_t flen,
                          gck_run_result *r, char *msg, size_t len) {
    r->refused = true;
    snprintf(r->refusal, sizeof r->refusal, "%s", cmsg[0] ? cmsg : "(no message)");
    /* what the refused call wrote where it must not, or changed in its inputs, is a finding */
    int before = r->nfindings;
    guard_findings(&s->c, os, r);
    append_to_findings(r, before, REFUSED_CALL);
    free_set(os);
    gck_status st = prepare(s, os, slack, msg, len);
    if (st != GCK_OK) return st;
    gck_operands ops = operands_of(os);
    call_hook(o->before_call, o->ctx, GCK_CALL_RECOVERY, 1, 0);
    *cs = call_backend(be, &s->c, row, &ops, cmsg, clen, fpenv, flen);
    call_hook(o->after_call, o->ctx, GCK_CALL_RECOVERY, 1, 0);
    return GCK_OK;
}

/* Every finding of a limited case says so: the first call's limits, and for a refused one that
 * the finding is the next call's. */
static void name_limits(const gck_spec *s, gck_run_result *r) {
    char lim[160], tail[600];
    gck_limits_text(s->mem_budget, s->limit_threads, s->max_threads, lim, sizeof lim);
    int n = r->refused ? snprintf(tail, sizeof tail,
                                  "; in the next call, without limits, after the first call%s "
                                  "was refused (%s)",
                                  lim, r->refusal)
                       : snprintf(tail, sizeof tail, "; the call ran%s", lim);
    if (n >= 0) append_to_findings(r, 0, tail);
}

static gck_status run_once(gck_backend *be, const gck_spec *s, const gck_run_options *o,
                           gck_run_result *r, char *msg, size_t len) {
    memset(r, 0, sizeof *r);
    const gck_case *c = &s->c;
    gck_status st = gck_case_validate(c, msg, len);
    if (st != GCK_OK) return st;
    const gck_support_row *row = gck_backend_find_row(be, c, r->note, sizeof r->note);
    if (!row) {
        r->outcome = GCK_OUTCOME_UNSUPPORTED;
        return GCK_OK;
    }
    gck_row_describe(row, r->row, sizeof r->row);
    int thr = thread_limit(s);
    bool limited = s->mem_budget > 0 || thr >= 0;
    char why[256];
    if (limited && !gck_limits_enforceable(s->mem_budget, thr, why, sizeof why))
        return gck_fail(GCK_EINVAL, msg, len, "%s", why);
    if ((st = fits_in_memory(s, o, msg, len)) != GCK_OK) return st;
    operand_set os;
    size_t slack = guard_slack(s, o);
    if ((st = prepare(s, &os, slack, msg, len)) != GCK_OK) return st;
    gck_operands ops = operands_of(&os);
    char cmsg[256] = "", fpenv[200] = "";
    struct timespec t0, t1;
    call_hook(o->before_call, o->ctx, GCK_CALL_FIRST, 1, 0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    gck_call_status cs = call_limited(be, c, row, &ops, limited ? s : NULL, cmsg, sizeof cmsg,
                                      fpenv, sizeof fpenv, &r->threads_refused);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    call_hook(o->after_call, o->ctx, GCK_CALL_FIRST, 1, 0);
    r->call_seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    r->outcome = GCK_OUTCOME_PASS;
    if (limited && cs == GCK_CALL_ERROR &&
        (st = recover(be, s, row, o, &os, slack, &cs, cmsg, sizeof cmsg, fpenv, sizeof fpenv, r,
                      msg, len)) != GCK_OK)
        return st;
    ops = operands_of(&os);
    if (cs != GCK_CALL_OK) {
        call_failed(r, row, cs, cmsg);
        fpenv_finding(r, fpenv);
        if (limited) name_limits(s, r);
        free_set(&os);
        return GCK_OK;
    }
    guard_findings(c, &os, r);
    gck_check_options co = o->check;
    co.stat_data = spec_stat_data(s, co.stat_data);
    st = gck_check_values(c, row, &co, gck_guarded_before(&os.g[GCK_A]),
                          gck_guarded_before(&os.g[GCK_B]), gck_guarded_before(&os.g[GCK_C]), ops.d,
                          &r->check, msg, len);
    if (st == GCK_OK) {
        value_findings(&r->check, r);
        if (o->determinism && !limited) /* limits may change the algorithm, and its bits */
            st = determinism_check(be, s, row, o, &os, slack, r, fpenv, sizeof fpenv, msg, len);
    }
    if (st != GCK_OK) {
        free_set(&os);
        return st;
    }
    if (o->concurrency > 1 && !limited) concurrency_check(be, s, row, o, r, fpenv, sizeof fpenv);
    fpenv_finding(r, fpenv);
    if (limited) name_limits(s, r);
    if (o->dump_dir) st = dump(o->dump_dir, s, row, &os, msg, len);
    free_set(&os);
    return st;
}

static gck_status run_spec(gck_backend *be, const gck_spec *s, const gck_run_options *o,
                           gck_run_result *r, char *msg, size_t len) {
    int attempts = 0;
    gck_status st;
    do {
        st = run_once(be, s, o, r, msg, len);
        attempts++;
    } while (st == GCK_OK && r->outcome == GCK_OUTCOME_PASS && attempts < o->repeat);
    r->attempts = attempts;
    return st;
}

/* ---- the public functions, in gemmcheck's floating-point environment (fpenv.h) ------------ */

GCK_GUARDED(gck_status, gck_run_spec, run_spec,
            (gck_backend * be, const gck_spec *s, const gck_run_options *o, gck_run_result *r,
             char *msg, size_t len),
            (be, s, o, r, msg, len))
