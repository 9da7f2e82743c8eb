/* Worker processes: the one place where a backend runs on behalf of gemmcheck's
 * commands. A worker is a child process, started by fork+exec of the gemmcheck binary
 * (`gemmcheck __worker`) or, for library callers without one, by fork alone; it opens the
 * backend and runs the cases its supervisor sends, or, started in task mode, runs one
 * registered task on the backend (certify's probes, task.h). The supervisor never opens the
 * backend.
 *
 * What a worker can do to its supervisor is bounded (docs/ISOLATION.md): it runs in its own
 * process group (a signal it sends to "its group" stays there), dies with its supervisor
 * (parent-death signal), has its output captured, and talks only through checked frames
 * (wire.h); the supervisor detects its death by the process, not by the pipe, and every wait
 * has a deadline (internal: for src/run/ and fuzz/, src/cli/). */
#ifndef GEMMCHECK_RUN_WORKER_H
#define GEMMCHECK_RUN_WORKER_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "gemmcheck/backend.h"
#include "gemmcheck/runner.h"
#include "gemmcheck/spec.h"
#include "wire.h"

/* The worker's descriptors: requests in, messages out. */
#define GCK_WORKER_IN_FD  3
#define GCK_WORKER_OUT_FD 4

/** The worker's side: open `backend`, announce it and serve cases on GCK_WORKER_IN_FD /
 *  GCK_WORKER_OUT_FD until the supervisor closes them; returns the exit status (serve.c). */
int gck_worker_serve(const char *backend, bool strict, gck_oracle_kind oracle);
/** The worker's side in task mode: read one TASK frame, run the registered task on `backend`
 *  (the task opens it), send its output as TASK_OUT frames and TASK_END; the exit status. */
int gck_worker_serve_task(const char *backend);

/** The executable that serves `__worker` (the gemmcheck binary); NULL or "": fork only. */
void gck_worker_set_exe(const char *path);
/** The interpreter of a `python:` backend's worker (unless GEMMCHECK_PYTHON names one), and
 *  where it finds the gemmcheck module and libgemmcheck when the environment does not say
 *  (PYTHONPATH, GEMMCHECK_LIBRARY): set by the tool from its own place; NULL leaves the
 *  environment as it is. */
void gck_worker_set_python(const char *exe, const char *module_dir, const char *library);

typedef struct gck_worker_options {
    const char *backend;
    bool strict_ieee;
    gck_oracle_kind oracle;
    FILE *output_to;  /* where the worker's stdout and stderr are shown (NULL: not shown) */
    int output_limit; /* lines shown per worker */
    bool task;        /* task mode (task.h): always the gemmcheck binary, or fork alone */
} gck_worker_options;

/** A running worker as the supervisor sees it. */
typedef struct gck_worker {
    pid_t pid;    /**< also its process group */
    int pidfd;    /**< readable when the process has ended */
    int to, from; /**< request pipe (write end), message pipe (read end), both non-blocking */
    int output;   /**< the worker's stdout and stderr (a memory file) */
    long long output_seen, output_shown;
    gck_wire_reader rd;
    uint32_t seq; /**< requests sent */
    bool dead;    /**< reaped; `status` is its wait status */
    int status;
    bool pipe_closed; /**< the message pipe closed while the process lived (it was killed) */
    char oracle[16];
    char version[512];
    char note[300]; /**< the backend's availability note ("OpenBLAS 0.3.21, 2 threads") */
    FILE *output_to;
    int output_limit;
} gck_worker;

/** Start a worker; false with the reason. */
bool gck_worker_spawn(gck_worker *w, const gck_worker_options *o, char *why, size_t wlen);
/** How a worker's handshake ended. */
typedef enum gck_handshake {
    GCK_HANDSHAKE_BROKEN,      /**< the worker died or misbehaved meanwhile (why says which) */
    GCK_HANDSHAKE_CANNOT_OPEN, /**< the backend cannot be opened (unknown, library missing, init
                                    failed) */
    GCK_HANDSHAKE_READY,       /**< ready, the table read */
    GCK_HANDSHAKE_UNAVAILABLE, /**< it opened but cannot run here (no device) */
} gck_handshake;

/** Read the worker's handshake before `deadline`: READY (oracle, version), then the support
 *  table into rows/entries (at most `max`; *n rows); why says what went wrong. Its frames are read
 *  in watch.c, with every other frame a supervisor reads. */
gck_handshake gck_worker_handshake(gck_worker *w, double deadline, gck_support_row *rows,
                                   char (*entries)[96], size_t max, size_t *n, char *why,
                                   size_t wlen);
/** Send one case; false when the worker does not take it before `deadline`. */
bool gck_worker_request(gck_worker *w, const gck_wire_request *req, double deadline);
/** Send one frame of any tag; false when the worker does not take it before `deadline`. */
bool gck_worker_send(gck_worker *w, int tag, const void *payload, size_t len, double deadline);

typedef enum gck_worker_event {
    GCK_WORKER_NOTHING = 0, /**< the deadline passed */
    GCK_WORKER_FRAME,       /**< a checked frame */
    GCK_WORKER_DIED,        /**< the worker ended (reaped: `status`, `pipe_closed`) */
    GCK_WORKER_MALFORMED    /**< bytes that are not a frame gemmcheck wrote (why) */
} gck_worker_event;

/** A flag the caller's SIGINT/SIGTERM handler sets: while it is non-zero every wait for a worker
 *  (gck_worker_next, hence the handshake) returns GCK_WORKER_NOTHING at once, as if its deadline
 *  had passed, so that a stop request is honoured even while a backend's init hangs. NULL: none. */
void gck_worker_stop_flag(volatile sig_atomic_t *flag);

/** The next thing the worker does before `deadline` (now or earlier: do not wait). Frames sent
 *  before a death are returned before the death. */
gck_worker_event gck_worker_next(gck_worker *w, double deadline, gck_wire_frame *f, char *why,
                                 size_t wlen);
/** Kill the worker's process group and reap it, show its remaining output, close (idempotent). */
void gck_worker_kill(gck_worker *w);
/** Show what the worker wrote to stdout/stderr since the last call, labelled "backend output
 *  (worker PID)", cleaned, at most output_limit lines per worker in total. */
void gck_worker_show_output(gck_worker *w);

/** Whether a case's result holds a crash finding: a sticky device error (a CUDA context that is
 *  gone; a crash of the process itself sends no result), after which every call in that process
 *  fails the same way, so its worker serves no more cases. */
bool gck_run_result_device_fault(const gck_run_result *rr);
/** A worker kept between isolated runs of one backend (the shrinker's: a `python:` worker
 *  imports PyTorch once, not once per attempt). Zero it before the first run. */
typedef struct gck_kept_worker {
    gck_worker w;
    bool live;
    /* what the worker was started with: its backend (a copy) and the options that go to the
     * worker's command line rather than to each request */
    char *backend;
    bool strict_ieee;
    gck_oracle_kind oracle;
} gck_kept_worker;
/** gck_run_isolated in k's worker, started (and its backend opened) when k has none, or when it
 *  has one started for another backend, strict_ieee or oracle (then that one is ended first);
 *  a run that does not end with a result, or whose result is a crash (a device fault), ends the
 *  worker, and the next run starts a fresh one. The worker keeps whatever state earlier cases
 *  left in the backend, as a campaign's workers do. */
gck_status gck_run_kept(gck_kept_worker *k, const char *backend, const gck_spec *s,
                        const gck_run_options *o, double call_timeout, gck_isolated_result *out);
/** Kill k's worker, if it has one. */
void gck_kept_worker_end(gck_kept_worker *k);
#endif
