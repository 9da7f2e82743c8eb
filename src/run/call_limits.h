/* The resources one backend call may take (a case's mem= and thr=, docs/RESOURCES.md): a memory
 * budget, put in force just before the call and lifted just after it, so that gemmcheck's
 * buffers and checks never count (src/backends/call_budget.h: the host's address-space limit,
 * and a device's memory where a backend has one); and a thread limit, enforced by
 * the gemmcheck executable's own pthread_create (src/cli/thread_gate.c), which the libraries a
 * worker loads bind to, and which refuses (EAGAIN) a thread past the limit while a limited call
 * runs (internal: for src/run/ and src/certify/, src/cli/). */
#ifndef GEMMCHECK_RUN_CALL_LIMITS_H
#define GEMMCHECK_RUN_CALL_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** What gck_limits_begin changed, for gck_limits_end. */
typedef struct gck_limits_saved {
    bool memory, threads;
} gck_limits_saved;

/** Whether limits of `memory` bytes (0: none) and `threads` new threads (negative: none; 0: not
 *  one) can be enforced in this process; else false and why (the thread limit: a sanitizer or
 *  a preloaded library took pthread_create first). */
bool gck_limits_enforceable(int64_t memory, int threads, char *why, size_t len);

/** Whether one more thread may start now (false, counted, past a limit in force): what the
 *  gemmcheck executable's pthread_create asks (src/cli/thread_gate.c). */
bool gck_limits_thread_admit(void);

/** Put the limits in force for one call (nothing when there are none). */
void gck_limits_begin(int64_t memory, int threads, gck_limits_saved *sv);
/** Lift them; returns how many threads the call was refused. */
int gck_limits_end(gck_limits_saved *sv);

/** " under a memory budget of N bytes and a limit of N threads" (or the one that applies; ""
 *  for none): the limits of a case's first call, as findings name them. */
void gck_limits_text(int64_t mem_budget, bool limit_threads, int max_threads, char *buf,
                     size_t len);

#endif
