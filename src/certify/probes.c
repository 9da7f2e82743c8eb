/* certify's probes as tasks in workers (probes.h): what each emits, and the readers of it. */
#define _GNU_SOURCE 1
#include "probes.h"

#include <link.h>
#include <nettle/base64.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "appetite.h"
#include "call_limits.h"
#include "fingerprint.h"
#include "format_internal.h"
#include "output.h"
#include "pinned.h"
#include "task.h"

/* ---- in the worker: open, exercise and probe ------------------------------------------------ */

typedef struct libs {
    char paths[64][512];
    int n;
} libs;

static int collect(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    libs *l = arg;
    if (info->dlpi_name && info->dlpi_name[0] && l->n < 64)
        snprintf(l->paths[l->n++], sizeof l->paths[0], "%s", info->dlpi_name);
    return 0;
}

static bool had(const libs *l, const char *p) {
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->paths[i], p) == 0) return true;
    return false;
}

/* The row's types, "f32 f32 f32 f32 | f32": the key two certificates' rows are matched by. */
void gck_certify_tuple(const gck_support_row *row, char *buf, size_t len) {
    snprintf(buf, len, "%s %s %s %s | %s", gck_format_get(row->a)->name,
             gck_format_get(row->b)->name, gck_format_get(row->c)->name,
             gck_format_get(row->d)->name, gck_format_get(row->compute)->name);
}

/* One small call with the row (5 x 4 x 3, values 1/8 .. 2): what the row does. */
static json_t *exercise(gck_backend *be, const gck_support_row *row) {
    gck_case c;
    gck_case_init(&c, 5, 4, 3);
    c.type_a = row->a, c.type_b = row->b, c.type_c = row->c, c.type_d = row->d;
    c.compute = row->compute;
    c.scale_type = (row->promises & GCK_PROMISE_SCALE_F64) ? GCK_F64 : GCK_F32;
    c.d_is_c = !(row->promises & GCK_PROMISE_D_SEPARATE);
    c.lda = 5, c.ldb = 3, c.ldc = c.ldd = 5;
    c.alpha = 1, c.beta = 1;
    double a[15], b[12], cv[20], want[20];
    unsigned char sa[15 * 8], sb[12 * 8], sc[20 * 8], sd[20 * 8];
    for (int e = 0; e < 15; e++) gck_fmt_store(sa, row->a, e, a[e] = (e % 7 + 1) / 4.0);
    for (int e = 0; e < 12; e++) gck_fmt_store(sb, row->b, e, b[e] = (e % 5 + 1) / 8.0);
    for (int e = 0; e < 20; e++) gck_fmt_store(sc, row->c, e, cv[e] = (e % 3) / 2.0);
    for (int j = 0; j < 4; j++)
        for (int i = 0; i < 5; i++) {
            double s = cv[i + 5 * j];
            for (int k = 0; k < 3; k++) s += a[i + 5 * k] * b[k + 3 * j];
            want[i + 5 * j] = s; /* exact: small dyadic values */
        }
    void *d = c.d_is_c ? (void *)sc : (void *)sd;
    gck_operands ops = {
        sa, sb, sc, d, {sa, sb, sc, d}, {sizeof sa, sizeof sb, sizeof sc, sizeof sd}};
    char msg[256] = "";
    gck_call_status st = be->ops->call(be->state, &c, row, &ops, msg, sizeof msg);
    json_t *o = json_object();
    const char *status = st == GCK_CALL_OK              ? "runs"
                         : st == GCK_CALL_NOT_SUPPORTED ? "unimplemented"
                                                        : "error";
    int wrong = 0;
    for (int e = 0; st == GCK_CALL_OK && e < 20; e++)
        if (gck_fmt_load(d, row->d, e) != gck_fmt_round_to(want[e], row->d)) wrong++;
    if (wrong) status = "wrong";
    json_object_set_new(o, "status", json_string(status));
    if (st != GCK_CALL_OK) json_object_set_new(o, "message", gck_json_text(msg));
    if (wrong) json_object_set_new(o, "wrong_elements", json_integer(wrong));
    return o;
}

static json_t *fingerprint_json(const gck_fingerprint *fp) {
    json_t *a = json_array();
    for (int p = 0; p < fp->count; p++) {
        json_t *o = json_object();
        json_object_set_new(o, "property", gck_json_text(fp->props[p].name));
        json_object_set_new(o, "value", gck_json_text(fp->props[p].value));
        json_object_set_new(o, "probe", gck_json_text(fp->props[p].probe));
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *pinned_json(gck_backend *be, const gck_support_row *row, size_t nrows) {
    int count = gck_pinned_per_row(nrows);
    gck_pinned_case *cases = calloc((size_t)count, sizeof *cases);
    json_t *a = json_array();
    int n = cases ? gck_pinned_row(be, row, count, cases) : 0;
    for (int i = 0; i < n; i++) {
        char hex[24];
        snprintf(hex, sizeof hex, "%016llx", (unsigned long long)cases[i].digest);
        json_t *o =
            strcmp(cases[i].outcome, "ok")
                ? json_pack("{s:s, s:s}", "case", cases[i].spec, "outcome", cases[i].outcome)
                : json_pack("{s:s, s:s, s:f, s:f}", "case", cases[i].spec, "digest", hex, "ratio",
                            cases[i].ratio, "ulps", cases[i].ulps);
        if (o && cases[i].d_bytes) {
            char b64[BASE64_ENCODE_RAW_LENGTH(GCK_PINNED_KEEP_BYTES) + 1];
            base64_encode_raw(b64, cases[i].d_bytes, cases[i].d);
            b64[BASE64_ENCODE_RAW_LENGTH(cases[i].d_bytes)] = '\0';
            json_object_set_new(o, "d", json_string(b64));
        }
        if (!o) /* a value JSON cannot hold (not finite): say so rather than lose the case */
            o = json_pack("{s:s, s:s}", "case", cases[i].spec, "outcome", "not representable");
        json_array_append_new(a, o ? o : json_null());
    }
    free(cases);
    return a;
}

/* Variables that set a BLAS's thread count; the one-thread task sets each to 1. */
static const char *const thread_vars[] = {"OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS",
                                          "OMP_NUM_THREADS", "BLIS_NUM_THREADS", "MKL_NUM_THREADS"};

static bool appetite_wanted(gck_appetite_rows mode, const gck_support_row *row) {
    return mode == GCK_APPETITE_ALL ||
           (mode == GCK_APPETITE_PLAIN && row->a == row->b && row->b == row->c && row->c == row->d);
}

/* The row's memory appetite (appetite.h) as the certificate holds it. */
static json_t *appetite_json(const char *spec, const gck_support_row *row, double timeout) {
    gck_appetite a;
    gck_appetite_measure(spec, row, timeout, &a);
    json_t *o = json_object();
    json_object_set_new(o, "case", json_string(a.case_text));
    json_object_set_new(o, "bytes", a.bytes >= 0 ? json_integer(a.bytes) : json_null());
    json_object_set_new(o, "failing_below",
                        a.below > 0 ? json_pack("{s:I, s:o}", "bytes", (json_int_t)a.below,
                                                "outcome", gck_json_text(a.below_what))
                                    : json_null());
    json_object_set_new(o, "probes", json_integer(a.probes));
    return o;
}

/* The values of the thread probe's product (D is M x N). */
#define THREADS_VALUES ((size_t)GCK_FP_THREADS_M * GCK_FP_THREADS_N)

/* The row's product for the thread probe, made in the fingerprint's worker and compared with
 * the one-thread run's by the supervisor (gck_probe_parse). */
typedef struct row_threads {
    bool probed; /* a row the thread probe covers */
    double *d;   /* its values, or NULL (why says why) */
    char why[256];
} row_threads;

/* The header's part: the library files the opening loaded, version, availability. */
static void header_json(json_t *o, gck_backend *be, const libs *before, const libs *after,
                        bool avail, const char *msg) {
    json_t *files = json_array();
    for (int i = 0; i < after->n; i++)
        if (!had(before, after->paths[i]))
            json_array_append_new(files, gck_json_text(after->paths[i]));
    json_object_set_new(o, "library_files", files);
    char version[512];
    be->ops->version(be->state, version, sizeof version);
    json_object_set_new(o, "version", gck_json_text(version));
    json_object_set_new(o, "available", json_boolean(avail));
    if (!avail) json_object_set_new(o, "unavailable_reason", gck_json_text(msg));
}

/* One row's part of a probe: its appetite, pinned cases, or support and fingerprint (with the
 * row's product for the thread probe in *t). */
static void row_json(json_t *row, gck_backend *be, const char *spec, const gck_probe_args *a,
                     const gck_support_row *r, size_t nrows, row_threads *t) {
    char why[256];
    if (a->part == GCK_PROBE_APPETITE) {
        if (appetite_wanted(a->appetite, r) && gck_limits_enforceable(1, -1, why, sizeof why))
            json_object_set_new(row, "appetite", appetite_json(spec, r, a->appetite_timeout));
    } else if (a->part == GCK_PROBE_PINNED) {
        json_object_set_new(row, "pinned", pinned_json(be, r, nrows));
    } else if (a->part == GCK_PROBE_FINGERPRINT) {
        json_object_set_new(row, "support", exercise(be, r));
        gck_fingerprint fp;
        gck_fingerprint_row(be, r, &fp);
        json_object_set_new(row, "fingerprint", fingerprint_json(&fp));
        if ((t->probed = gck_fp_threads_row(r))) {
            t->d = malloc(sizeof(double) * THREADS_VALUES);
            if (!t->d || !gck_fp_threads_run(be, r, t->d, t->why, sizeof t->why)) {
                if (!t->d) snprintf(t->why, sizeof t->why, "out of memory");
                free(t->d);
                t->d = NULL;
            }
        }
    }
}

/* One probe's work: for the header, the backend's header and every row's tuple and
 * declaration, unprobed; else row a->row with the part asked for. The table's size as
 * "row_count". */
static json_t *probe_backend(const char *spec, const gck_probe_args *a, row_threads *t) {
    json_t *o = json_object();
    libs before = {0}, after = {0};
    dl_iterate_phdr(collect, &before);
    gck_backend be;
    char msg[512];
    if (gck_backend_open(&be, spec, msg, sizeof msg) != GCK_OK) {
        json_object_set_new(o, "open_error", gck_json_text(msg));
        return o;
    }
    dl_iterate_phdr(collect, &after);
    bool avail = be.ops->available(be.state, msg, sizeof msg);
    bool header = a->part == GCK_PROBE_HEADER;
    if (header) header_json(o, &be, &before, &after, avail, msg);
    const gck_support_row *rows;
    size_t n = be.ops->table(be.state, &rows);
    json_t *ra = json_array();
    for (size_t r = header ? 0 : a->row; r < n && (header || r == a->row); r++) {
        json_t *row = json_object();
        char text[512];
        gck_certify_tuple(&rows[r], text, sizeof text);
        json_object_set_new(row, "tuple", json_string(text));
        gck_row_describe(&rows[r], text, sizeof text);
        json_object_set_new(row, "declared", gck_json_text(text));
        if (avail && !header) row_json(row, &be, spec, a, &rows[r], n, t);
        json_array_append_new(ra, row);
    }
    json_object_set_new(o, "rows", ra);
    json_object_set_new(o, "row_count", json_integer((json_int_t)n));
    gck_backend_close(&be);
    return o;
}

/* ---- the tasks -------------------------------------------------------------------------------
 * A probe emits its JSON, a NUL, then for a row the thread probe covers either 'V' and the row's
 * M*N values or 'W' and why they could not be made. The one-thread run emits, per row the
 * thread probe covers, (row index, ok) as two int64 and, when ok, the M*N values. */

static const char *const part_names[] = {"header", "fingerprint", "pinned", "appetite"};
static const char *const appetite_names[] = {"none", "plain", "all"};

void gck_probe_args_text(const gck_probe_args *a, char *buf, size_t len) {
    snprintf(buf, len, "%s %zu %s %.17g", part_names[a->part], a->row, appetite_names[a->appetite],
             a->appetite_timeout);
}

static bool probe_args_parse(const char *text, gck_probe_args *a) {
    char part[32], appetite[32];
    if (sscanf(text, "%31s %zu %31s %lf", part, &a->row, appetite, &a->appetite_timeout) != 4)
        return false;
    int p = -1, m = -1;
    for (int i = 0; i < 4; i++) p = strcmp(part, part_names[i]) ? p : i;
    for (int i = 0; i < 3; i++) m = strcmp(appetite, appetite_names[i]) ? m : i;
    a->part = (gck_probe_part)p, a->appetite = (gck_appetite_rows)m;
    return p >= 0 && m >= 0;
}

static bool probe_task(const char *backend, const char *arg, gck_task_sink *out, char *why,
                       size_t wlen) {
    gck_probe_args a;
    if (!probe_args_parse(arg, &a)) {
        snprintf(why, wlen, "a probe task's argument is not 'PART ROW APPETITE SECONDS': %s", arg);
        return false;
    }
    row_threads t = {false, NULL, ""};
    json_t *o = probe_backend(backend, &a, &t);
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    bool ok = s && gck_task_emit(out, s, strlen(s) + 1);
    free(s);
    size_t count = THREADS_VALUES;
    if (ok && t.probed)
        ok = gck_task_emit(out, t.d ? "V" : "W", 1) &&
             (t.d ? gck_task_emit(out, t.d, count * sizeof *t.d)
                  : gck_task_emit(out, t.why, strlen(t.why) + 1));
    free(t.d);
    if (!ok) snprintf(why, wlen, "the probe's output could not be sent");
    return ok;
}

/* In a worker with every threading variable at 1: the thread product of each probed row. */
static bool one_thread_task(const char *backend, const char *arg, gck_task_sink *out, char *why,
                            size_t wlen) {
    (void)arg;
    for (size_t v = 0; v < sizeof thread_vars / sizeof *thread_vars; v++)
        setenv(thread_vars[v], "1", 1);
    gck_backend be;
    if (gck_backend_open(&be, backend, why, wlen) != GCK_OK) return false;
    char msg[512];
    const gck_support_row *rows;
    size_t n = be.ops->available(be.state, msg, sizeof msg) ? be.ops->table(be.state, &rows) : 0;
    size_t count = THREADS_VALUES;
    double *d = malloc(count * sizeof *d);
    bool ok = d != NULL;
    for (size_t r = 0; ok && r < n; r++) {
        if (!gck_fp_threads_row(&rows[r])) continue;
        int64_t head[2] = {(int64_t)r, gck_fp_threads_run(&be, &rows[r], d, msg, sizeof msg)};
        ok = gck_task_emit(out, head, sizeof head) &&
             (!head[1] || gck_task_emit(out, d, count * sizeof *d));
    }
    free(d);
    gck_backend_close(&be);
    if (!ok) snprintf(why, wlen, "the one-thread run's output could not be sent");
    return ok;
}

void gck_probe_tasks_register(void) {
    gck_task_register(GCK_PROBE_TASK, probe_task);
    gck_task_register(GCK_ONE_THREAD_TASK, one_thread_task);
}

/* ---- in the supervisor: reading what the tasks emitted -------------------------------------- */

void gck_one_thread_parse(const char *out, size_t len, gck_one_thread *ot) {
    memset(ot, 0, sizeof *ot);
    size_t count = THREADS_VALUES, at = 0;
    int64_t head[2];
    while (out && at + sizeof head <= len) {
        memcpy(head, out + at, sizeof head);
        if (head[0] < 0 || head[0] > (1 << 20)) break; /* not a row index: stop reading */
        at += sizeof head;
        if ((size_t)head[0] >= ot->rows) {
            size_t grow = (size_t)head[0] + 1;
            double **v = realloc(ot->values, grow * sizeof *v);
            if (!v) break;
            memset(v + ot->rows, 0, (grow - ot->rows) * sizeof *v);
            ot->values = v, ot->rows = grow;
        }
        if (!head[1]) continue;
        if (at + count * sizeof(double) > len) break; /* cut short */
        double *d = malloc(count * sizeof *d);
        if (!d) break;
        memcpy(d, out + at, count * sizeof *d);
        at += count * sizeof *d;
        free(ot->values[head[0]]);
        ot->values[head[0]] = d;
    }
}

void gck_one_thread_free(gck_one_thread *ot) {
    for (size_t r = 0; r < ot->rows; r++) free(ot->values[r]);
    free(ot->values);
    memset(ot, 0, sizeof *ot);
}

json_t *gck_probe_parse(const char *out, size_t len, const double *one, const char *why_one) {
    json_t *o = out ? json_loads(out, 0, NULL) : NULL;
    size_t at = out ? strlen(out) + 1 : 0;
    json_t *rows = json_object_get(o, "rows");
    if (!o || at >= len || json_array_size(rows) != 1) return o; /* no thread probe */
    size_t count = THREADS_VALUES;
    const char *dflt = NULL, *why = why_one;
    if (out[at] == 'V' && len - at - 1 == count * sizeof(double))
        dflt = out + at + 1;
    else if (out[at] == 'W' && memchr(out + at + 1, '\0', len - at - 1))
        why = out + at + 1; /* the row's own run failed: its reason */
    else
        why = "the thread probe's values came back malformed";
    double *d = dflt ? malloc(count * sizeof *d) : NULL; /* (aligned: the output is bytes) */
    if (d) memcpy(d, dflt, count * sizeof *d);
    gck_fingerprint fp = {.count = 0};
    gck_fp_threads_add(&fp, d, one, why);
    free(d);
    json_t *props = json_object_get(json_array_get(rows, 0), "fingerprint"), *more;
    size_t i;
    json_t *add = fingerprint_json(&fp);
    json_array_foreach(add, i, more) json_array_append(props, more);
    json_decref(add);
    return o;
}
