/* gemmcheck certify: one self-describing certificate of a backend on this machine — the
 * environment, the library files loaded (with their SHA-256), each row exercised once, each
 * row's numeric fingerprint found by probing, and a campaign. `gemmcheck compare` reads two. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <jansson.h>
#include <link.h>
#include <nettle/base64.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "appetite.h"
#include "call_limits.h"
#include "campaign.h"
#include "certify.h"
#include "cli.h"
#include "environment.h"
#include "fingerprint.h"
#include "format_internal.h"
#include "gemmcheck/backend.h"
#include "gemmcheck/version.h"
#include "known.h"
#include "output.h"
#include "pinned.h"
#include "result.h"
#include "task.h"

static const char certify_help[] =
    "usage: gemmcheck certify --backend SPEC --out CERT.json [--html CERT.html] [--time S]\n"
    "                         [--seed N] [--known FILE] [--probe-timeout S]\n"
    "                         [--appetite plain|all|none] [--appetite-timeout S]\n"
    "\n"
    "Writes one certificate of the backend on this machine: the environment (CPU and its\n"
    "instruction-set flags, OS, libc, the variables that change GEMM arithmetic or threading),\n"
    "the library files the backend loaded with their SHA-256, every row of its support table\n"
    "exercised once (runs, unimplemented or error), each row's numeric fingerprint found by\n"
    "probing with crafted inputs (the bits the inputs and the accumulator keep, the rounding of\n"
    "the accumulation, normalisation per addition or per block, products fused or rounded,\n"
    "where alpha and beta enter, the summation order as a tree at K = 16 to 2048 and where\n"
    "libraries switch paths, thread-count dependence, subnormal inputs and results, alpha = 0 /\n"
    "beta = 0 reads, Inf*0, run-to-run bits; each property names the probe that decided it, or\n"
    "says why it could not), about 2,000 pinned cases (reproducer, digest of D, error/bound,\n"
    "ulps), and a campaign of S seconds (default 30; 0: none) with seed N (default 1).\n"
    "--time bounds the campaign only: the probes and pinned cases come first and take from\n"
    "seconds (a few rows) to minutes (ref's 560 rows: about 3.5 min on 2 cores), 30 minutes at\n"
    "most. The probes run in child processes (the header, each row's fingerprint, each row's\n"
    "pinned cases), each killed with its process group after --probe-timeout seconds (600;\n"
    "a row that hangs or crashes is said in the certificate, the other rows go on). The\n"
    "fingerprint's key facts (products, normalisation, accumulator, threads) are\n"
    "printed on stdout, rows with the same facts together.\n"
    "--appetite: each row's memory appetite, the smallest budget at which its 256x256x256\n"
    "case succeeds in a fresh worker, bisected to an eighth of an octave, and what the row\n"
    "does just below it (docs/RESOURCES.md); plain (default): the rows whose four operands\n"
    "share one type; all; none. --appetite-timeout S: each probe's call deadline (5 s; a\n"
    "call that hangs under a budget costs that).\n"
    "--html writes the certificate as one self-contained page as well. --known FILE marks the\n"
    "campaign's findings a known-findings file covers (docs/KNOWN.md): compare then counts a\n"
    "new finding that the new certificate marks known as no regression.\n"
    "Compare two certificates with `gemmcheck compare OLD.json NEW.json`.\n"
    "\n"
    "Exit status: 0 written; 2 bad arguments or a backend that cannot be opened; 3 internal.\n";

/* ---- in a child process: open, exercise and probe ------------------------------------------- */

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

/* ---- the thread probe's one-thread half ---------------------------------------------------- */

/* Variables that set a BLAS's thread count; the one-thread child sets each to 1. */
static const char *const thread_vars[] = {"OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS",
                                          "OMP_NUM_THREADS", "BLIS_NUM_THREADS", "MKL_NUM_THREADS"};

/* The one-thread run's values: per row, NULL when the row was not run (why says so). */
typedef struct one_thread {
    double **values;
    size_t rows;
    char why[256];
} one_thread;

/* In a child with every threading variable at 1 (a task, src/run/task.h): the thread product of
 * each probed row, written to fd as (row index, ok, M*N values). */
static void one_thread_child(void *arg, int fd) {
    const char *spec = arg;
    for (size_t v = 0; v < sizeof thread_vars / sizeof *thread_vars; v++)
        setenv(thread_vars[v], "1", 1);
    gck_backend be;
    char msg[512];
    if (gck_backend_open(&be, spec, msg, sizeof msg) != GCK_OK) _exit(2);
    const gck_support_row *rows;
    size_t n = be.ops->available(be.state, msg, sizeof msg) ? be.ops->table(be.state, &rows) : 0;
    size_t count = (size_t)GCK_FP_THREADS_M * GCK_FP_THREADS_N;
    double *d = malloc(count * sizeof *d);
    for (size_t r = 0; d && r < n; r++) {
        if (!gck_fp_threads_row(&rows[r])) continue;
        int64_t head[2] = {(int64_t)r, gck_fp_threads_run(&be, &rows[r], d, msg, sizeof msg)};
        if (write(fd, head, sizeof head) != (ssize_t)sizeof head) _exit(3);
        for (size_t off = 0; head[1] && off < count * sizeof *d;) {
            ssize_t w = write(fd, (char *)d + off, count * sizeof *d - off);
            if (w <= 0) _exit(3);
            off += (size_t)w;
        }
    }
    _exit(0);
}

static void one_thread_run(const char *spec, unsigned timeout, one_thread *ot) {
    memset(ot, 0, sizeof *ot);
    gck_task_result t;
    if (gck_run_task(one_thread_child, (void *)spec, timeout, &t) != GCK_TASK_DONE) {
        char why[200];
        gck_task_why(&t, timeout, why, sizeof why);
        snprintf(ot->why, sizeof ot->why, "the one-thread run failed (%s)", why);
        free(t.out);
        return;
    }
    size_t count = (size_t)GCK_FP_THREADS_M * GCK_FP_THREADS_N, at = 0;
    int64_t head[2];
    while (at + sizeof head <= t.len && (memcpy(head, t.out + at, sizeof head), head[0] >= 0)) {
        at += sizeof head;
        if ((size_t)head[0] >= ot->rows) {
            size_t grow = (size_t)head[0] + 1;
            double **v = realloc(ot->values, grow * sizeof *v);
            if (!v) break;
            memset(v + ot->rows, 0, (grow - ot->rows) * sizeof *v);
            ot->values = v, ot->rows = grow;
        }
        double *d = head[1] ? malloc(count * sizeof *d) : NULL;
        if (d && at + count * sizeof *d > t.len) {
            free(d);
            break;
        }
        if (d) memcpy(d, t.out + at, count * sizeof *d), at += count * sizeof *d;
        ot->values[head[0]] = d;
    }
    free(t.out);
    snprintf(ot->why, sizeof ot->why, "the one-thread run could not run the product");
}

static void one_thread_free(one_thread *ot) {
    for (size_t r = 0; r < ot->rows; r++) free(ot->values[r]);
    free(ot->values);
}

/* The "threads" property of row r: its product now against the one-thread run's. */
static void threads_property(gck_backend *be, const gck_support_row *row, size_t r,
                             const one_thread *ot, gck_fingerprint *fp) {
    if (!gck_fp_threads_row(row)) return;
    char why[256];
    double *d = malloc(sizeof(double) * GCK_FP_THREADS_M * GCK_FP_THREADS_N);
    bool ok = d && gck_fp_threads_run(be, row, d, why, sizeof why);
    const double *one = r < ot->rows ? ot->values[r] : NULL;
    gck_fp_threads_add(fp, ok ? d : NULL, one, !ok ? why : ot->why);
    free(d);
}

/* What one probing child does: the header, or one row's fingerprint, or one row's pinned cases
 * (children of their own, so that a library that crashes on some pinned cases, such as oneDNN
 * 2.6.3 on K = 0, keeps its fingerprint). */
typedef enum probe_part { PART_HEADER, PART_FINGERPRINT, PART_PINNED, PART_APPETITE } probe_part;

/* Which rows get their memory appetite measured (--appetite): none, the rows whose four
 * operands share one type (the default), or all. */
typedef enum appetite_rows { APPETITE_NONE, APPETITE_PLAIN, APPETITE_ALL } appetite_rows;
static appetite_rows appetite_mode = APPETITE_PLAIN;
static double appetite_timeout = 5; /* --appetite-timeout: each probe's call deadline */

static bool appetite_wanted(const gck_support_row *row) {
    return appetite_mode == APPETITE_ALL || (appetite_mode == APPETITE_PLAIN && row->a == row->b &&
                                             row->b == row->c && row->c == row->d);
}

/* The row's memory appetite (appetite.h) as the certificate holds it. */
static json_t *appetite_json(const char *spec, const gck_support_row *row) {
    gck_appetite a;
    gck_appetite_measure(spec, row, appetite_timeout, &a);
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

/* One probing child's work: for PART_HEADER the backend's header (files loaded, version,
 * availability) and every row's tuple and declaration, unprobed; else row `first` with its
 * support and fingerprint, or its pinned cases. The table's size as "row_count". */
static json_t *probe_backend(const char *spec, const one_thread *ot, probe_part part,
                             size_t first) {
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
    bool header = part == PART_HEADER;
    if (header) {
        json_t *files = json_array();
        for (int i = 0; i < after.n; i++)
            if (!had(&before, after.paths[i]))
                json_array_append_new(files, gck_json_text(after.paths[i]));
        json_object_set_new(o, "library_files", files);
        char version[512];
        be.ops->version(be.state, version, sizeof version);
        json_object_set_new(o, "version", gck_json_text(version));
        json_object_set_new(o, "available", json_boolean(avail));
        if (!avail) json_object_set_new(o, "unavailable_reason", gck_json_text(msg));
    }
    const gck_support_row *rows;
    size_t n = be.ops->table(be.state, &rows);
    json_t *ra = json_array();
    for (size_t r = header ? 0 : first; r < n && (header || r == first); r++) {
        json_t *row = json_object();
        char text[512];
        gck_certify_tuple(&rows[r], text, sizeof text);
        json_object_set_new(row, "tuple", json_string(text));
        gck_row_describe(&rows[r], text, sizeof text);
        json_object_set_new(row, "declared", gck_json_text(text));
        char why[256];
        if (avail && part == PART_APPETITE) {
            if (appetite_wanted(&rows[r]) && gck_limits_enforceable(1, -1, why, sizeof why))
                json_object_set_new(row, "appetite", appetite_json(spec, &rows[r]));
        } else if (avail && part == PART_PINNED) {
            json_object_set_new(row, "pinned", pinned_json(&be, &rows[r], n));
        } else if (avail && part == PART_FINGERPRINT) {
            json_object_set_new(row, "support", exercise(&be, &rows[r]));
            gck_fingerprint fp;
            gck_fingerprint_row(&be, &rows[r], &fp);
            threads_property(&be, &rows[r], r, ot, &fp);
            json_object_set_new(row, "fingerprint", fingerprint_json(&fp));
        }
        json_array_append_new(ra, row);
    }
    json_object_set_new(o, "rows", ra);
    json_object_set_new(o, "row_count", json_integer((json_int_t)n));
    gck_backend_close(&be);
    return o;
}

/* What a probing child is given (a task, src/run/task.h). */
typedef struct probe_task {
    const char *spec;
    const one_thread *ot;
    probe_part part;
    size_t first;
} probe_task;

static void probe_task_run(void *arg, int fd) {
    const probe_task *p = arg;
    json_t *o = probe_backend(p->spec, p->ot, p->part, p->first);
    char *s = json_dumps(o, JSON_COMPACT);
    size_t n = s ? strlen(s) : 0, off = 0;
    while (off < n) {
        ssize_t w = write(fd, s + off, n - off);
        if (w <= 0) _exit(3);
        off += (size_t)w;
    }
}

/* One probing child for `part` of row `first` (see probe_backend), killed with its process
 * group after `timeout` seconds; its JSON, or NULL with the reason in err. */
static json_t *probe_child(const char *spec, const one_thread *ot, probe_part part, size_t first,
                           unsigned timeout, char *err, size_t len) {
    probe_task p = {spec, ot, part, first};
    gck_task_result t;
    json_t *o = NULL;
    if (gck_run_task(probe_task_run, &p, timeout, &t) == GCK_TASK_DONE && t.out)
        o = json_loads(t.out, 0, NULL);
    if (!o) {
        char why[200];
        gck_task_why(&t, timeout, why, sizeof why);
        snprintf(err, len, "the backend's probes %s", why);
    }
    free(t.out);
    return o;
}

/* Row r probed in two children, its fingerprint then its pinned cases, merged into rows[r];
 * what a child could not give is said in the row ("probe_failure", "pinned_failure"). */
static void probe_row(const char *spec, const one_thread *ot, json_t *rows, size_t r, time_t end,
                      unsigned cap) {
    static const char *const failure[] = {"probe_failure", "pinned_failure", "appetite_failure"};
    static const probe_part parts[] = {PART_FINGERPRINT, PART_PINNED, PART_APPETITE};
    for (int part = 0; part < (appetite_mode == APPETITE_NONE ? 2 : 3); part++) {
        time_t left = end - time(NULL);
        left = left > (time_t)cap ? (time_t)cap : left; /* one hanging row: not every row's time */
        char why[512] = "no time left";
        json_t *next = left > 0
                           ? probe_child(spec, ot, parts[part], r, (unsigned)left, why, sizeof why)
                           : NULL;
        json_t *more = next ? json_object_get(next, "rows") : NULL;
        json_t *got = more && json_array_size(more) == 1 ? json_array_get(more, 0) : NULL;
        if (got && parts[part] == PART_PINNED)
            json_object_set(json_array_get(rows, r), "pinned", json_object_get(got, "pinned"));
        else if (got && parts[part] == PART_APPETITE) {
            json_t *ap = json_object_get(got, "appetite");
            if (ap) json_object_set(json_array_get(rows, r), "appetite", ap);
        } else if (got)
            json_array_set(rows, r, got);
        else /* crashed or hung: said in the row, the others go on */
            json_object_set_new(json_array_get(rows, r), failure[part],
                                gck_json_text(why[0] ? why : "no result"));
        json_decref(next);
    }
}

/* The probes run in child processes, one for the header and two per row (probe_row): a
 * backend that crashes or hangs while probed takes its child down, and the certificate says so
 * in the row, the other rows probed as usual; a row whose calls leave the process unusable (a
 * sticky CUDA error: every later call fails the same way) spoils only itself. Only a header
 * that cannot be read (the backend's opening crashes) or the end of `timeout` seconds for all
 * rows together fails the whole probe. Each child has `cap` seconds at most (a row that hangs
 * costs that, not every later row's time); it is killed with its process group at its end. */
static json_t *probe_isolated(const char *spec, unsigned timeout, unsigned cap, char *err,
                              size_t len) {
    one_thread ot;
    /* one product per row: a fraction of the probes */
    one_thread_run(spec, timeout / 3 < cap ? timeout / 3 : cap, &ot);
    time_t end = time(NULL) + timeout;
    json_t *o = probe_child(spec, &ot, PART_HEADER, 0, timeout < cap ? timeout : cap, err, len);
    json_t *rows = o ? json_object_get(o, "rows") : NULL;
    size_t count = o ? (size_t)json_integer_value(json_object_get(o, "row_count")) : 0;
    bool avail = o && json_is_true(json_object_get(o, "available"));
    for (size_t r = 0; avail && rows && r < count && r < json_array_size(rows); r++) {
        time_t left = end - time(NULL);
        if (left <= 0) {
            snprintf(err, len, "the backend's probes did not finish within %u s", timeout);
            json_decref(o);
            o = NULL;
            break;
        }
        probe_row(spec, &ot, rows, r, end, cap);
    }
    if (o) json_object_del(o, "row_count");
    one_thread_free(&ot);
    return o;
}

/* ---- the fingerprint's key facts on stdout ------------------------------------------------- */

/* A row's key facts in one line: products, normalisation, accumulator bits and rounding,
 * threads (the properties an upgrade most often changes). */
static void key_facts(const json_t *row, char *buf, size_t len) {
    static const char *const keys[] = {"products", "normalisation", "accumulator bits",
                                       "accumulator rounding", "threads"};
    size_t n = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        size_t i;
        const json_t *p;
        json_array_foreach(json_object_get(row, "fingerprint"), i, p) {
            if (strcmp(json_string_value(json_object_get(p, "property")), keys[k]) != 0) continue;
            const char *v = json_string_value(json_object_get(p, "value"));
            n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%s: %.60s", n ? "; " : "",
                                  keys[k], v ? v : "?");
        }
    }
}

/* Rows with the same key facts together: "N rows (first TUPLE): facts". */
static void print_key_facts(const json_t *cert) {
    const json_t *rows = json_object_get(json_object_get(cert, "probed"), "rows");
    size_t nr = json_array_size(rows);
    if (!nr || !json_object_get(json_array_get(rows, 0), "fingerprint")) return;
    char(*facts)[640] = calloc(nr, sizeof *facts);
    if (!facts) return;
    for (size_t r = 0; r < nr; r++) key_facts(json_array_get(rows, r), facts[r], sizeof facts[r]);
    printf("fingerprint, key facts:\n");
    for (size_t r = 0; r < nr; r++) {
        bool seen = false;
        for (size_t q = 0; q < r && !seen; q++) seen = !strcmp(facts[q], facts[r]);
        if (seen) continue;
        size_t same = 0;
        for (size_t q = r; q < nr; q++) same += !strcmp(facts[q], facts[r]);
        printf("  %zu row%s (%s%s): %s\n", same, same == 1 ? "" : "s",
               json_string_value(json_object_get(json_array_get(rows, r), "tuple")),
               same > 1 ? ", ..." : "", facts[r][0] ? facts[r] : "(no fingerprint)");
    }
    free(facts);
}

/* The rows' memory appetites, one line each. */
static void print_appetites(const json_t *cert) {
    const json_t *rows = json_object_get(json_object_get(cert, "probed"), "rows");
    size_t i;
    const json_t *r;
    json_array_foreach(rows, i, r) {
        const json_t *a = json_object_get(r, "appetite");
        if (!a) continue;
        const json_t *b = json_object_get(a, "bytes"), *below = json_object_get(a, "failing_below");
        char size[64] = "none up to 16 GiB";
        if (json_is_integer(b))
            snprintf(size, sizeof size, "%.1f MiB", (double)json_integer_value(b) / 1048576.0);
        printf("memory appetite, %s: %s", json_string_value(json_object_get(r, "tuple")), size);
        if (json_is_object(below))
            printf(" (at %.1f MiB: %s)",
                   (double)json_integer_value(json_object_get(below, "bytes")) / 1048576.0,
                   json_string_value(json_object_get(below, "outcome")));
        printf("\n");
    }
}

/* ---- in this process: hashes, environment, campaign ---------------------------------------- */

static void sha256_file(const char *path, char *hex, size_t len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(hex, len, "unreadable: %s", strerror(errno));
        return;
    }
    struct sha256_ctx ctx;
    sha256_init(&ctx);
    unsigned char buf[1 << 16], dig[SHA256_DIGEST_SIZE];
    size_t r;
    while ((r = fread(buf, 1, sizeof buf, f)) > 0) sha256_update(&ctx, r, buf);
    fclose(f);
    sha256_digest(&ctx, sizeof dig, dig);
    for (int i = 0; i < SHA256_DIGEST_SIZE && (size_t)(2 * i + 2) < len; i++)
        snprintf(hex + 2 * i, 3, "%02x", dig[i]);
}

static json_t *hashed_files(json_t *paths) {
    json_t *a = json_array();
    size_t i;
    json_t *p;
    json_array_foreach(paths, i, p) {
        char hex[80];
        json_t *o = json_object();
        const char *path = json_string_value(p);
        char real[4096];
        if (!path || !realpath(path, real)) snprintf(real, sizeof real, "%s", path ? path : "");
        sha256_file(real, hex, sizeof hex);
        json_object_set_new(o, "path", gck_json_text(path ? path : ""));
        json_object_set_new(o, "file", gck_json_text(real));
        json_object_set_new(o, "sha256", json_string(hex));
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *environment_now(void) {
    gck_campaign_result r;
    memset(&r, 0, sizeof r);
    json_t *env = NULL;
    if (gck_result_capture_environment(&r, (double)time(NULL))) {
        json_t *recs = gck_environment_records(&r);
        env = json_incref(json_array_get(recs, 0));
        json_decref(recs);
    }
    gck_result_free(&r);
    return env ? env : json_null();
}

/* The campaign of a certificate: the campaign API on the backend for `seconds` (in this
 * process; its workers are the campaign's, its summary goes to stderr, certify's stdout stays
 * the certificate's), its JSON report read back: summary, findings and the environment. */
static json_t *campaign(const char *spec, const char *seconds, uint64_t seed, gck_known *known,
                        char *err, size_t len) {
    char report[] = "/tmp/gemmcheck-certify-XXXXXX", command[600];
    int fd = mkstemp(report);
    if (fd < 0) return snprintf(err, len, "mkstemp: %s", strerror(errno)), NULL;
    close(fd);
    gck_campaign_options o;
    gck_campaign_defaults(&o);
    o.backends[0] = spec;
    o.nbackends = 1;
    o.backends_explicit = true;
    o.time_limit = strtod(seconds, NULL);
    o.seed = seed;
    o.shard_index = o.shard_count = 1;
    o.report_path = report;
    o.known = known;
    o.log_every = 30;
    snprintf(command, sizeof command, "gemmcheck certify --backend %s --time %s --seed %llu", spec,
             seconds, (unsigned long long)seed);
    o.command_line = command;
    fflush(stdout);
    int saved = dup(1);
    dup2(2, 1); /* the campaign's summary goes to stderr */
    int rc = gck_campaign_run(&o);
    fflush(stdout);
    if (saved >= 0) dup2(saved, 1), close(saved);
    json_error_t je;
    json_t *r = rc <= 1 ? json_load_file(report, 0, &je) : NULL;
    unlink(report);
    if (!r) {
        snprintf(err, len, "the campaign failed (exit status %d)", rc);
        return NULL;
    }
    json_t *out = json_object();
    json_object_set_new(out, "seconds", json_string(seconds));
    char sd[32];
    snprintf(sd, sizeof sd, "%llu", (unsigned long long)seed);
    json_object_set_new(out, "seed", json_string(sd));
    json_object_set(out, "summary", json_object_get(r, "summary"));
    json_object_set(out, "findings", json_object_get(r, "findings"));
    json_object_set(out, "environment", json_object_get(r, "environment"));
    json_decref(r);
    return out;
}

/* --appetite and --appetite-timeout. */
static int parse_appetite(const char *cmd, const char *appetite, const char *atime) {
    if (atime && !gck_parse_real_opt(cmd, "--appetite-timeout", atime, 0.1, &appetite_timeout))
        return GCK_EXIT_USAGE;
    if (!appetite || !strcmp(appetite, "plain")) return GCK_EXIT_OK;
    if (!strcmp(appetite, "none"))
        appetite_mode = APPETITE_NONE;
    else if (!strcmp(appetite, "all"))
        appetite_mode = APPETITE_ALL;
    else
        return gck_cli_usage_error(cmd, "--appetite '%s' must be plain, all or none", appetite);
    return GCK_EXIT_OK;
}

int gck_cmd_certify(int argc, char **argv) {
    const char *cmd = "certify", *spec = NULL, *out = NULL, *tm = NULL, *seed = NULL, *html = NULL,
               *known = NULL, *pcap = NULL, *appetite = NULL, *atime = NULL;
    const gck_opt opts[] = {{"--backend", .value = &spec},
                            {"--probe-timeout", .value = &pcap},
                            {"--known", .value = &known},
                            {"--out", .value = &out},
                            {"--html", .value = &html},
                            {"--time", .value = &tm},
                            {"--seed", .value = &seed},
                            {"--appetite", .value = &appetite},
                            {"--appetite-timeout", .value = &atime}};
    gck_opt_spec os = {cmd,  opts, (int)(sizeof opts / sizeof opts[0]),
                       NULL, 0,    "certify takes no plain arguments"};
    int nargs;
    bool help = false;
    int rc = gck_opt_parse(&os, argc, argv, &nargs, &help);
    if (help) return fputs(certify_help, stdout), GCK_EXIT_OK;
    if (rc != GCK_EXIT_OK) return rc;
    double seconds;
    long long sd;
    tm = tm ? tm : "30";
    seed = seed ? seed : "1";
    if (!spec) return gck_cli_usage_error(cmd, "--backend SPEC is required");
    if (!out) return gck_cli_usage_error(cmd, "--out CERT.json is required");
    if (!gck_parse_real_opt(cmd, "--time", tm, 0, &seconds)) return GCK_EXIT_USAGE;
    if ((rc = parse_appetite(cmd, appetite, atime))) return rc;
    if (!gck_parse_count(seed, &sd))
        return gck_cli_usage_error(cmd, "--seed '%s' must be a non-negative integer", seed);
    char err[600] = "";
    gck_known *k = known ? gck_known_open(&known, 1, NULL, 0, err, sizeof err) : NULL;
    if (known && !k) return gck_cli_usage_error(cmd, "%s", err); /* before anything runs */
    double cap = 600;
    if (pcap && !gck_parse_real_opt(cmd, "--probe-timeout", pcap, 1, &cap)) {
        gck_known_free(k);
        return GCK_EXIT_USAGE;
    }
    json_t *probed = probe_isolated(spec, 1800, cap < 1800 ? (unsigned)cap : 1800, err, sizeof err);
    if (probed && json_object_get(probed, "open_error")) {
        gck_cli_usage_error(cmd, "%s", json_string_value(json_object_get(probed, "open_error")));
        json_decref(probed);
        gck_known_free(k);
        return GCK_EXIT_USAGE;
    }
    json_t *cert = json_object();
    json_object_set_new(cert, "certificate_version", json_integer(GCK_CERTIFICATE_VERSION));
    json_object_set_new(cert, "gemmcheck", json_string(GEMMCHECK_VERSION));
    json_object_set_new(cert, "backend", gck_json_text(spec));
    json_t *camp = seconds > 0 ? campaign(spec, tm, (uint64_t)sd, k, err, sizeof err) : NULL;
    gck_known_free(k);
    json_t *env = camp ? json_incref(json_object_get(camp, "environment")) : environment_now();
    if (camp) json_object_del(camp, "environment");
    json_object_set_new(cert, "environment", env);
    if (probed) {
        json_t *files = json_object_get(probed, "library_files");
        json_object_set_new(probed, "library_files", hashed_files(files ? files : json_array()));
        json_object_set_new(cert, "probed", probed);
    } else
        json_object_set_new(cert, "probe_failure", gck_json_text(err));
    json_object_set_new(cert, "campaign", camp ? camp : json_null());
    if (seconds > 0 && !camp) json_object_set_new(cert, "campaign_failure", gck_json_text(err));
    char werr[600];
    rc = gck_output_json(cert, out, JSON_INDENT(1), werr, sizeof werr) ? GCK_EXIT_OK
                                                                       : GCK_EXIT_INTERNAL;
    if (rc != GCK_EXIT_OK)
        fprintf(stderr, "gemmcheck certify: %s\n", werr);
    else if (html && !gck_certify_html(cert, html, err, sizeof err)) {
        fprintf(stderr, "gemmcheck certify: %s\n", err);
        rc = GCK_EXIT_USAGE;
    }
    if (rc == GCK_EXIT_OK) print_key_facts(cert);
    if (rc == GCK_EXIT_OK) print_appetites(cert);
    json_decref(cert);
    if (rc == GCK_EXIT_OK)
        printf("certificate of %s written to %s%s%s\n", spec, out, html ? " and " : "",
               html ? html : "");
    return rc;
}
