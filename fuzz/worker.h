/* Fuzz workers: separate processes, started by fork+exec of the gemmcheck binary
 * (`gemmcheck __worker`), that open the backend once and run the cases the supervisor sends
 * them over a pipe. A bare fork after a backend initialised is never used: CUDA contexts do not
 * survive it. */
#ifndef GEMMCHECK_FUZZ_WORKER_H
#define GEMMCHECK_FUZZ_WORKER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "gemmcheck/backend.h"

/* File descriptors of the worker's two pipes (requests in, messages out). */
#define GCK_WORKER_IN_FD  3
#define GCK_WORKER_OUT_FD 4

/** One case for a worker. */
typedef struct gck_fuzz_request {
    uint64_t id;
    int determinism; /**< rerun on fresh buffers and compare bitwise */
    int concurrency; /**< > 1: also call from this many threads at once */
    char repro[2048];
} gck_fuzz_request;

/** A support row as it crosses the pipe (the entry string inline). */
typedef struct gck_wire_row {
    gck_support_row row;
    char entry[96];
} gck_wire_row;

/** The worker's main loop (`gemmcheck __worker --backend SPEC [--strict-ieee]`). */
int gck_worker_main(int argc, char **argv);

/** A running worker as the supervisor sees it. */
typedef struct gck_worker {
    pid_t pid;
    int to, from; /* request pipe (write end), message pipe (read end) */
} gck_worker;

/** Start a worker by fork+exec of `exe`. */
bool gck_worker_spawn(gck_worker *w, const char *exe, const char *backend, bool strict,
                      const char *oracle);
/** Kill (SIGKILL) and reap. */
void gck_worker_kill(gck_worker *w);

#endif
