/* Following one case in a worker (watch.h): its phase and deadlines from the call records,
 * and what every event of the worker means for the case. */
#define _GNU_SOURCE 1
#include "watch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "backends.h"
#include "call_limits.h"
#include "text.h"

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

/* " under a memory budget of ..." when the call under watch is the case's first, which alone
 * runs under the case's limits; else "". */
static void first_call_limits(const gck_case_watch *w, char *buf, size_t len) {
    buf[0] = '\0';
    if (w->call.mode == GCK_CALL_FIRST)
        gck_limits_text(w->mem_budget, w->limit_threads, w->max_threads, buf, len);
}

/* "inside the backend's first call", "after the backend's rerun ... returned"; the first
 * call's limits named */
static void where(const gck_case_watch *w, char *buf, size_t len) {
    char lim[160];
    first_call_limits(w, lim, sizeof lim);
    if (w->in_call)
        snprintf(buf, len, "inside the backend's %s%s", gck_call_mode_name(w->call.mode), lim);
    else
        snprintf(buf, len, "after the backend's %s%s returned", gck_call_mode_name(w->call.mode),
                 lim);
}

static void watch_hang(const gck_case_watch *w, char *detail, size_t dlen, char *flags,
                       size_t flen) {
    gck_wire_hang_detail(&w->call, w->limit, detail, dlen, flags, flen);
    char lim[160];
    first_call_limits(w, lim, sizeof lim);
    size_t used = strlen(detail);
    if (lim[0] && used < dlen) snprintf(detail + used, dlen - used, " (the call ran%s)", lim);
}

/* How the worker ended, `at` where ("the worker died by signal 11 (...) AT"). */
static void death_detail(const gck_worker *wk, const char *at, char *detail, size_t dlen) {
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
    death_detail(wk, at, detail, dlen);
    return backend;
}

/* What corrupted the message pipe (`why`), `at` where, as a case's or a task's detail. */
static void corrupted_detail(const char *why, const char *at, char *detail, size_t dlen) {
    snprintf(detail, dlen,
             "gemmcheck's message pipe carried %s %s (something in the worker other than "
             "gemmcheck wrote to it); the worker was killed",
             why, at);
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
    corrupted_detail(why, at, detail, dlen);
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

/* ---- the worker's opening: READY, TABLE and the support rows (gck_worker_handshake) ---- */

/* Why the worker gave no (or no usable) message while opening the backend. */
static gck_handshake broken(const gck_worker *w, gck_worker_event ev, const char *bad, char *why,
                            size_t wlen) {
    if (ev == GCK_WORKER_NOTHING)
        snprintf(why, wlen, "the worker did not finish opening the backend in time");
    else if (ev == GCK_WORKER_MALFORMED)
        snprintf(why, wlen, "the worker sent %s while opening the backend", bad);
    else if (WIFSIGNALED(w->status))
        snprintf(why, wlen, "the worker died by signal %d (%s) while opening the backend",
                 WTERMSIG(w->status), strsignal(WTERMSIG(w->status)));
    else
        snprintf(why, wlen, "the worker %s while opening the backend",
                 w->pipe_closed ? "closed gemmcheck's pipe" : "exited");
    return GCK_HANDSHAKE_BROKEN;
}

/* READY: "<oracle>\t<version>\t<note>" into the worker's fields. */
static bool take_ready(gck_worker *w, const char *text) {
    const char *t1 = strchr(text, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
    if (!t2) return false;
    size_t on = (size_t)(t1 - text);
    snprintf(w->oracle, sizeof w->oracle, "%.*s", (int)(on < 15 ? on : 15), text);
    gck_text_clean(w->version, sizeof w->version, t1 + 1, (size_t)(t2 - t1 - 1));
    gck_text_clean(w->note, sizeof w->note, t2 + 1, strlen(t2 + 1));
    return true;
}

/* One ROW: checked, then stored as row `got` when there is room. */
static bool take_row(const gck_wire_frame *f, size_t got, gck_support_row *rows,
                     char (*entries)[96], size_t max, char *why, size_t wlen) {
    gck_wire_row wr;
    memcpy(&wr, f->data, sizeof wr);
    wr.entry[sizeof wr.entry - 1] = '\0';
    gck_text_clean_inplace(wr.entry, sizeof wr.entry);
    wr.row.entry = NULL;
    char bad_row[200];
    if (!gck_backend_check_table(&wr.row, 1, bad_row, sizeof bad_row)) {
        snprintf(why, wlen, "support row %zu: %s", got, bad_row);
        return false;
    }
    if (got < max) {
        rows[got] = wr.row;
        memcpy(entries[got], wr.entry, sizeof wr.entry);
        rows[got].entry = entries[got];
    }
    return true;
}

gck_handshake gck_worker_handshake(gck_worker *w, double deadline, gck_support_row *rows,
                                   char (*entries)[96], size_t max, size_t *n, char *why,
                                   size_t wlen) {
    gck_wire_frame f;
    const char *text = NULL;
    size_t want = 0, got = 0;
    bool ready = false, table = false;
    *n = 0;
    for (;;) {
        char bad[256];
        gck_worker_event ev = gck_worker_next(w, deadline, &f, bad, sizeof bad);
        if (ev == GCK_WORKER_NOTHING || ev == GCK_WORKER_MALFORMED || ev == GCK_WORKER_DIED)
            return broken(w, ev, bad, why, wlen);
        bool is_text = f.tag != GCK_WIRE_ROW && f.tag != GCK_WIRE_RESULT;
        if (is_text && !gck_wire_text(&f, &text)) {
            snprintf(why, wlen, "the worker sent an unterminated message while opening");
            return GCK_HANDSHAKE_BROKEN;
        }
        if ((f.tag == GCK_WIRE_SETUP || f.tag == GCK_WIRE_UNAVAILABLE) && !ready) {
            gck_text_clean(why, wlen, text, strlen(text));
            return f.tag == GCK_WIRE_SETUP ? GCK_HANDSHAKE_CANNOT_OPEN : GCK_HANDSHAKE_UNAVAILABLE;
        }
        if (f.tag == GCK_WIRE_READY && !ready) {
            if (!take_ready(w, text)) {
                snprintf(why, wlen, "the worker sent a malformed READY while opening");
                return GCK_HANDSHAKE_BROKEN;
            }
            ready = true;
        } else if (f.tag == GCK_WIRE_TABLE && ready && !table) {
            char *end;
            unsigned long long c = strtoull(text, &end, 10);
            if (*end || c == 0 || c > GCK_MAX_ROWS) {
                snprintf(why, wlen, "the backend declares %s support rows", text);
                return GCK_HANDSHAKE_BROKEN;
            }
            want = (size_t)c;
            table = true;
        } else if (f.tag == GCK_WIRE_ROW && table && got < want) {
            if (!take_row(&f, got, rows, entries, max, why, wlen)) return GCK_HANDSHAKE_BROKEN;
            got++;
        } else {
            snprintf(why, wlen, "the worker sent message %d out of turn while opening", f.tag);
            return GCK_HANDSHAKE_BROKEN;
        }
        if (table && got == want) {
            *n = want < max ? want : max;
            return GCK_HANDSHAKE_READY;
        }
    }
}

/* ---- a task (task.h) ------------------------------------------------------------------------ */

/* A task's detail: where it was when the worker ended or misbehaved. */
#define TASK_AT "before the task ended"

/* A frame of a task: its output, its end, or a message a task does not send. */
static bool task_frame(const gck_wire_frame *f, gck_task_result *r) {
    const char *text;
    if (f->tag == GCK_WIRE_TASK_OUT) {
        char *grown = realloc(r->out, r->len + f->len + 1);
        if (!grown) {
            r->end = GCK_TASK_FAILED;
            snprintf(r->why, sizeof r->why, "out of memory for the task's output");
            return true;
        }
        memcpy(grown + r->len, f->data, f->len);
        r->out = grown;
        r->len += f->len;
        r->out[r->len] = '\0';
        return false;
    }
    bool texty = gck_wire_text(f, &text);
    if (texty && (f->tag == GCK_WIRE_TASK_END || f->tag == GCK_WIRE_SETUP)) {
        r->end = text[0] || f->tag == GCK_WIRE_SETUP ? GCK_TASK_FAILED : GCK_TASK_DONE;
        snprintf(r->why, sizeof r->why, "%s", text[0] ? text : "the worker's set-up failed");
        return true;
    }
    char what[64];
    snprintf(what, sizeof what, "message %d out of turn", f->tag);
    r->end = GCK_TASK_CRASHED;
    corrupted_detail(what, TASK_AT, r->why, sizeof r->why);
    return true;
}

bool gck_watch_task_step(const gck_worker *wk, gck_worker_event ev, const gck_wire_frame *f,
                         const char *why, gck_task_result *r) {
    switch (ev) {
    case GCK_WORKER_FRAME: return task_frame(f, r);
    case GCK_WORKER_NOTHING: r->end = GCK_TASK_HUNG; return true;
    case GCK_WORKER_MALFORMED:
        r->end = GCK_TASK_CRASHED;
        corrupted_detail(why, TASK_AT, r->why, sizeof r->why);
        return true;
    default: break;
    }
    r->end = wk->pipe_closed || WIFSIGNALED(wk->status) ? GCK_TASK_CRASHED : GCK_TASK_FAILED;
    death_detail(wk, TASK_AT, r->why, sizeof r->why);
    return true;
}
