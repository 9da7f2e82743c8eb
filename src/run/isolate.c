/* Running a spec in a worker process (worker.h): the worker opens the backend, runs the case
 * and sends the result; this side follows the case's calls, deadlines and the worker's fate.
 * Only the worker ever initialises the backend (a CUDA context does not survive fork). */
#define _DEFAULT_SOURCE 1
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fpenv.h"
#include "gemmcheck/runner.h"
#include "watch.h"
#include "worker.h"

/* Until the backend is open: the library's start-up, never counted against a call. */
#define OPEN_SECONDS 120.0

static void set(gck_isolated_result *out, gck_isolated_status st, const char *msg) {
    out->status = st;
    snprintf(out->message, sizeof out->message, "%s", msg);
}

/* The case in flight until it ends one way or another (watch.h decides what each event means). */
static void follow(gck_worker *w, const gck_spec *s, double call_timeout,
                   gck_isolated_result *out) {
    static const gck_isolated_status status[] = {[GCK_WATCH_RESULT] = GCK_ISOLATED_RAN,
                                                 [GCK_WATCH_SETUP] = GCK_ISOLATED_SETUP_ERROR,
                                                 [GCK_WATCH_INTERNAL] = GCK_ISOLATED_INTERNAL,
                                                 [GCK_WATCH_HANG] = GCK_ISOLATED_HANG,
                                                 [GCK_WATCH_CRASH] = GCK_ISOLATED_CRASH};
    gck_case_watch watch;
    gck_watch_outcome o;
    gck_watch_start(&watch, s, call_timeout, 10.0);
    for (;;) {
        gck_wire_frame f;
        char why[256];
        gck_worker_event ev = gck_worker_next(w, watch.deadline, &f, why, sizeof why);
        if (gck_watch_step(&watch, w, ev, &f, why, &out->run, &o) != GCK_WATCH_GOING) break;
    }
    set(out, status[o.end], o.detail);
}

/* Start a worker on `backend` and read its handshake; false with out set (a set-up error). */
static bool start(gck_worker *w, const char *backend, const gck_run_options *o, double call_timeout,
                  gck_isolated_result *out) {
    char why[1024];
    gck_worker_options wo = {backend, o->check.strict_ieee, o->check.oracle, stderr, 200, false};
    if (!gck_worker_spawn(w, &wo, why, sizeof why)) {
        /* no process (fork refused, or a `python:` backend's interpreter missing): the
         * machine's set-up, not gemmcheck's fault */
        set(out, GCK_ISOLATED_SETUP_ERROR, why);
        return false;
    }
    size_t nrows;
    /* opening the backend gets the call's deadline (at most OPEN_SECONDS): --timeout bounds the
     * whole run, a hanging init included */
    double open_s = call_timeout > 0 && call_timeout < OPEN_SECONDS ? call_timeout : OPEN_SECONDS;
    double began = gck_wire_now();
    gck_handshake hs =
        gck_worker_handshake(w, began + open_s, NULL, NULL, 0, &nrows, why, sizeof why);
    if (hs != GCK_HANDSHAKE_READY) {
        /* a backend that cannot open, or whose init crashes, hangs or garbles the pipe, is a
         * set-up error, as in `fuzz` and `backends` (docs/ISOLATION.md): no case ran */
        if (hs == GCK_HANDSHAKE_BROKEN && gck_wire_now() >= began + open_s)
            snprintf(why + strlen(why), sizeof why - strlen(why), " (waited %.0f s)", open_s);
        set(out, GCK_ISOLATED_SETUP_ERROR, why);
        gck_worker_kill(w);
        return false;
    }
    return true;
}

/* Send s to the ready worker w and follow it to its end. */
static void request(gck_worker *w, const gck_spec *s, const gck_run_options *o, double call_timeout,
                    gck_isolated_result *out) {
    snprintf(out->version, sizeof out->version, "%.255s", w->version);
    gck_wire_request *req = calloc(1, sizeof *req);
    if (!req) {
        set(out, GCK_ISOLATED_INTERNAL, "out of memory");
        return;
    }
    req->determinism = o->determinism;
    req->concurrency = o->concurrency;
    req->repeat = o->repeat;
    req->no_guard_page = o->no_guard_page;
    req->threads = o->check.threads;
    snprintf(req->dump_dir, sizeof req->dump_dir, "%s", o->dump_dir ? o->dump_dir : "");
    gck_spec_format(s, req->repro, sizeof req->repro);
    if (gck_worker_request(w, req, gck_wire_now() + 30.0))
        follow(w, s, call_timeout, out);
    else
        set(out, GCK_ISOLATED_INTERNAL, "the worker did not take the case");
    free(req);
}

static gck_status run_isolated(const char *backend, const gck_spec *s, const gck_run_options *o,
                               double call_timeout, gck_isolated_result *out) {
    memset(out, 0, sizeof *out);
    gck_worker w;
    if (start(&w, backend, o, call_timeout, out)) {
        request(&w, s, o, call_timeout, out);
        gck_worker_kill(&w);
    }
    return GCK_OK;
}

static gck_status run_kept(gck_kept_worker *k, const char *backend, const gck_spec *s,
                           const gck_run_options *o, double call_timeout,
                           gck_isolated_result *out) {
    memset(out, 0, sizeof *out);
    if (k->live && (strcmp(k->backend, backend) != 0 || k->strict_ieee != o->check.strict_ieee ||
                    k->oracle != o->check.oracle))
        gck_kept_worker_end(k); /* started for another backend or check: not this run's worker */
    if (!k->live) {             /* k->backend is set exactly while a worker lives */
        if (!(k->backend = strdup(backend))) {
            set(out, GCK_ISOLATED_INTERNAL, "out of memory");
            return GCK_OK;
        }
        k->strict_ieee = o->check.strict_ieee, k->oracle = o->check.oracle;
        if (!(k->live = start(&k->w, backend, o, call_timeout, out))) {
            gck_kept_worker_end(k);
            return GCK_OK;
        }
    }
    request(&k->w, s, o, call_timeout, out);
    if (out->status != GCK_ISOLATED_RAN || gck_run_result_device_fault(&out->run))
        gck_kept_worker_end(k);
    return GCK_OK;
}

bool gck_run_result_device_fault(const gck_run_result *rr) {
    for (int i = 0; i < rr->nfindings && i < GCK_KIND_COUNT; i++)
        if (rr->findings[i].kind == GCK_KIND_CRASH) return true;
    return false;
}

void gck_kept_worker_end(gck_kept_worker *k) {
    if (k->live) gck_worker_kill(&k->w);
    k->live = false;
    free(k->backend);
    k->backend = NULL;
}

/* ---- the public functions, in gemmcheck's floating-point environment (fpenv.h) ------------ */

GCK_GUARDED(gck_status, gck_run_isolated, run_isolated,
            (const char *backend, const gck_spec *s, const gck_run_options *o, double call_timeout,
             gck_isolated_result *out),
            (backend, s, o, call_timeout, out))

GCK_GUARDED(gck_status, gck_run_kept, run_kept,
            (gck_kept_worker * k, const char *backend, const gck_spec *s, const gck_run_options *o,
             double call_timeout, gck_isolated_result *out),
            (k, backend, s, o, call_timeout, out))
