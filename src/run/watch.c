/* Following one case in a worker (watch.h): its phase and deadlines from the call records,
 * and what every event of the worker means for the case. */
#define _GNU_SOURCE 1
#include "watch.h"

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "call_limits.h"

void gck_watch_start(gck_case_watch *w, const gck_spec *s, double call_timeout, double floor) {
    *w = (gck_case_watch){.c = &s->c,
                          .mem_budget = s->mem_budget,
                          .limit_threads = s->limit_threads,
                          .max_threads = s->max_threads,
                          .call_timeout = call_timeout,
                          .floor = floor};
    w->call = (gck_call_info){GCK_CALL_FIRST, 1, 0};
    w->deadline = gck_wire_now() + GCK_OWN_WORK_SECONDS;
}

static bool watch_frame(gck_case_watch *w, const gck_wire_frame *f) {
    const char *text;
    gck_call_info call;
    if (!gck_wire_text(f, &text) || !gck_wire_parse_call(text, &call)) return false;
    if (f->tag == GCK_WIRE_CALLING) {
        w->call = call;
        w->in_call = true;
        w->limit = w->call_timeout > 0 ? w->call_timeout * call.calls
                                       : gck_call_deadline(w->c, call.calls, w->floor);
        w->deadline = gck_wire_now() + w->limit;
    } else {
        w->in_call = false;
        w->called = true;
        w->deadline = gck_wire_now() + GCK_OWN_WORK_SECONDS; /* checks: gemmcheck's own */
    }
    return true;
}

/* "inside the backend's first call", "after the backend's rerun ... returned"; the first
 * call's limits named */
static void where(const gck_case_watch *w, char *buf, size_t len) {
    char lim[160] = "";
    if (w->call.mode == GCK_CALL_FIRST)
        gck_limits_text(w->mem_budget, w->limit_threads, w->max_threads, lim, sizeof lim);
    if (w->in_call)
        snprintf(buf, len, "inside the backend's %s%s", gck_call_mode_name(w->call.mode), lim);
    else
        snprintf(buf, len, "after the backend's %s%s returned", gck_call_mode_name(w->call.mode),
                 lim);
}

static void watch_hang(const gck_case_watch *w, char *detail, size_t dlen, char *flags,
                       size_t flen) {
    gck_wire_hang_detail(&w->call, w->limit, detail, dlen, flags, flen);
    char lim[160] = "";
    if (w->call.mode == GCK_CALL_FIRST)
        gck_limits_text(w->mem_budget, w->limit_threads, w->max_threads, lim, sizeof lim);
    size_t used = strlen(detail);
    if (lim[0] && used < dlen) snprintf(detail + used, dlen - used, " (the call ran%s)", lim);
}

static bool watch_death(const gck_case_watch *w, const gck_worker *wk, char *detail, size_t dlen,
                        char *flags, size_t flen) {
    char at[320];
    flags[0] = '\0';
    bool backend = w->in_call || w->called;
    if (backend) {
        where(w, at, sizeof at);
        gck_wire_call_flags(&w->call, flags, flen);
    } else {
        snprintf(at, sizeof at, "while gemmcheck prepared the case, before any backend call");
    }
    int st = wk->status;
    if (wk->pipe_closed)
        snprintf(detail, dlen,
                 "the worker closed gemmcheck's message pipe %s and was killed (the backend "
                 "closed a descriptor it does not own)",
                 at);
    else if (WIFSIGNALED(st))
        snprintf(detail, dlen, "the worker died by signal %d (%s) %s", WTERMSIG(st),
                 strsignal(WTERMSIG(st)), at);
    else
        snprintf(detail, dlen, "the worker exited with status %d %s",
                 WIFEXITED(st) ? WEXITSTATUS(st) : -1, at);
    return backend;
}

static void watch_corrupted(const gck_case_watch *w, const char *why, char *detail, size_t dlen,
                            char *flags, size_t flen) {
    char at[320];
    if (w->in_call || w->called)
        where(w, at, sizeof at);
    else
        snprintf(at, sizeof at, "before the case's first backend call");
    flags[0] = '\0';
    gck_wire_call_flags(&w->call, flags, flen);
    snprintf(detail, dlen,
             "gemmcheck's message pipe carried %s %s (something in the worker other than "
             "gemmcheck wrote to it); the worker was killed",
             why, at);
}

/* A frame of the case in flight: a call record, the result, or the worker's own message. */
static gck_watch_end on_frame(gck_case_watch *w, const gck_wire_frame *f, gck_run_result *result,
                              gck_watch_outcome *out) {
    const char *text;
    char why[256];
    switch (f->tag) {
    case GCK_WIRE_CALLING:
    case GCK_WIRE_CALLED:
        if (watch_frame(w, f)) return GCK_WATCH_GOING;
        snprintf(why, sizeof why, "a malformed call record");
        break;
    case GCK_WIRE_RESULT:
        memcpy(result, f->data, sizeof *result);
        if (gck_wire_check_result(result, why, sizeof why)) return GCK_WATCH_RESULT;
        break;
    case GCK_WIRE_SETUP:
    case GCK_WIRE_INTERNAL:
        if (!gck_wire_text(f, &text)) text = "(an unterminated message)";
        snprintf(out->detail, sizeof out->detail, "%s", text);
        return f->tag == GCK_WIRE_SETUP ? GCK_WATCH_SETUP : GCK_WATCH_INTERNAL;
    default: snprintf(why, sizeof why, "message %d out of turn", f->tag);
    }
    watch_corrupted(w, why, out->detail, sizeof out->detail, out->flags, sizeof out->flags);
    return GCK_WATCH_CRASH;
}

/* The watch's deadline passed: a hang inside a call, gemmcheck's own overrun outside one. */
static gck_watch_end on_deadline(const gck_case_watch *w, gck_watch_outcome *out) {
    if (w->in_call) {
        watch_hang(w, out->detail, sizeof out->detail, out->flags, sizeof out->flags);
        return GCK_WATCH_HANG;
    }
    out->overran = true;
    snprintf(out->detail, sizeof out->detail,
             "preparing or checking the case took over %.0f s outside any backend call",
             GCK_OWN_WORK_SECONDS);
    return GCK_WATCH_INTERNAL;
}

gck_watch_end gck_watch_step(gck_case_watch *w, const gck_worker *wk, gck_worker_event ev,
                             const gck_wire_frame *f, const char *why, gck_run_result *result,
                             gck_watch_outcome *out) {
    *out = (gck_watch_outcome){GCK_WATCH_GOING, false, false, "", ""};
    switch (ev) {
    case GCK_WORKER_FRAME: out->end = on_frame(w, f, result, out); break;
    case GCK_WORKER_NOTHING: out->end = on_deadline(w, out); break;
    case GCK_WORKER_MALFORMED:
        watch_corrupted(w, why, out->detail, sizeof out->detail, out->flags, sizeof out->flags);
        out->end = GCK_WATCH_CRASH;
        break;
    case GCK_WORKER_DIED:
        if (watch_death(w, wk, out->detail, sizeof out->detail, out->flags, sizeof out->flags)) {
            out->end = GCK_WATCH_CRASH;
        } else {
            out->end = GCK_WATCH_INTERNAL;
            out->early = true;
        }
        break;
    }
    return out->end;
}
