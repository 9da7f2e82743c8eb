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
#include "worker.h"

/* Until the backend is open: the library's start-up, never counted against a call. */
#define OPEN_SECONDS 120.0

static void set(gck_isolated_result *out, gck_isolated_status st, const char *msg) {
    out->status = st;
    snprintf(out->message, sizeof out->message, "%s", msg);
}

/* The case in flight until it ends one way or another. */
static void follow(gck_worker *w, const gck_spec *s, double call_timeout,
                   gck_isolated_result *out) {
    gck_case_watch watch;
    gck_watch_start(&watch, s, call_timeout, 10.0);
    for (;;) {
        gck_wire_frame f;
        char why[256], detail[1024], flags[64];
        const char *text;
        gck_worker_event ev = gck_worker_next(w, watch.deadline, &f, why, sizeof why);
        switch (ev) {
        case GCK_WORKER_NOTHING:
            if (watch.in_call) {
                gck_watch_hang(&watch, detail, sizeof detail, flags, sizeof flags);
                set(out, GCK_ISOLATED_HANG, detail);
            } else {
                snprintf(detail, sizeof detail,
                         "preparing or checking the case took over %.0f s outside any backend "
                         "call",
                         GCK_OWN_WORK_SECONDS);
                set(out, GCK_ISOLATED_INTERNAL, detail);
            }
            return;
        case GCK_WORKER_MALFORMED:
            gck_watch_corrupted(&watch, why, detail, sizeof detail, flags, sizeof flags);
            set(out, GCK_ISOLATED_CRASH, detail);
            return;
        case GCK_WORKER_DIED: {
            bool backend = gck_watch_death(&watch, w, detail, sizeof detail, flags, sizeof flags);
            set(out, backend ? GCK_ISOLATED_CRASH : GCK_ISOLATED_INTERNAL, detail);
            return;
        }
        case GCK_WORKER_FRAME: break;
        }
        switch (f.tag) {
        case GCK_WIRE_CALLING:
        case GCK_WIRE_CALLED:
            if (gck_watch_frame(&watch, &f)) continue;
            gck_watch_corrupted(&watch, "a malformed call record", detail, sizeof detail, flags,
                                sizeof flags);
            set(out, GCK_ISOLATED_CRASH, detail);
            return;
        case GCK_WIRE_RESULT:
            memcpy(&out->run, f.data, sizeof out->run);
            if (!gck_wire_check_result(&out->run, why, sizeof why)) {
                gck_watch_corrupted(&watch, why, detail, sizeof detail, flags, sizeof flags);
                set(out, GCK_ISOLATED_CRASH, detail);
                return;
            }
            out->status = GCK_ISOLATED_RAN;
            return;
        case GCK_WIRE_SETUP:
        case GCK_WIRE_INTERNAL:
            if (!gck_wire_text(&f, &text)) text = "(an unterminated message)";
            set(out, f.tag == GCK_WIRE_SETUP ? GCK_ISOLATED_SETUP_ERROR : GCK_ISOLATED_INTERNAL,
                text);
            return;
        default:
            snprintf(why, sizeof why, "message %d out of turn", f.tag);
            gck_watch_corrupted(&watch, why, detail, sizeof detail, flags, sizeof flags);
            set(out, GCK_ISOLATED_CRASH, detail);
            return;
        }
    }
}

static gck_status run_isolated(const char *backend, const gck_spec *s, const gck_run_options *o,
                               double call_timeout, gck_isolated_result *out) {
    memset(out, 0, sizeof *out);
    gck_worker w;
    char why[1024];
    gck_worker_options wo = {backend, o->check.strict_ieee, o->check.oracle, stderr, 200};
    if (!gck_worker_spawn(&w, &wo, why, sizeof why)) {
        /* no process (fork refused, or a `python:` backend's interpreter missing): the
         * machine's set-up, not gemmcheck's fault */
        set(out, GCK_ISOLATED_SETUP_ERROR, why);
        return GCK_OK;
    }
    size_t nrows;
    /* opening the backend gets the call's deadline (at most OPEN_SECONDS): --timeout bounds the
     * whole run, a hanging init included */
    double open_s = call_timeout > 0 && call_timeout < OPEN_SECONDS ? call_timeout : OPEN_SECONDS;
    double began = gck_wire_now();
    gck_handshake hs =
        gck_worker_handshake(&w, began + open_s, NULL, NULL, 0, &nrows, why, sizeof why);
    if (hs != GCK_HANDSHAKE_READY) {
        /* a backend that cannot open, or whose init crashes, hangs or garbles the pipe, is a
         * set-up error, as in `fuzz` and `backends` (docs/ISOLATION.md): no case ran */
        if (hs == GCK_HANDSHAKE_BROKEN && gck_wire_now() >= began + open_s)
            snprintf(why + strlen(why), sizeof why - strlen(why), " (waited %.0f s)", open_s);
        set(out, GCK_ISOLATED_SETUP_ERROR, why);
    } else {
        snprintf(out->version, sizeof out->version, "%.255s", w.version);
        gck_wire_request *req = calloc(1, sizeof *req);
        if (!req) {
            set(out, GCK_ISOLATED_INTERNAL, "out of memory");
        } else {
            req->determinism = o->determinism;
            req->concurrency = o->concurrency;
            req->repeat = o->repeat;
            req->no_guard_page = o->no_guard_page;
            req->threads = o->check.threads;
            snprintf(req->dump_dir, sizeof req->dump_dir, "%s", o->dump_dir ? o->dump_dir : "");
            gck_spec_format(s, req->repro, sizeof req->repro);
            if (gck_worker_request(&w, req, gck_wire_now() + 30.0))
                follow(&w, s, call_timeout, out);
            else
                set(out, GCK_ISOLATED_INTERNAL, "the worker did not take the case");
            free(req);
        }
    }
    gck_worker_kill(&w);
    return GCK_OK;
}

/* ---- the public functions, in gemmcheck's floating-point environment (fpenv.h) ------------ */

GCK_GUARDED(gck_status, gck_run_isolated, run_isolated,
            (const char *backend, const gck_spec *s, const gck_run_options *o, double call_timeout,
             gck_isolated_result *out),
            (backend, s, o, call_timeout, out))
