/* Running one function on an array of jobs, one thread per job (internal: for src/util/ and fuzz/,
 * kernels/, oracles/, src/check/, src/cli/, src/run/). */
#ifndef GEMMCHECK_UTIL_PARALLEL_H
#define GEMMCHECK_UTIL_PARALLEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** This machine's online cores and physical memory in bytes (0 when unknown). */
int gck_online_cores(void);
double gck_physical_memory(void);

/** Threads to use for `work` items: `requested` (<= 0: one per online core), at least 1, at
 *  most `work`. */
int gck_thread_count(int requested, long long work);

/** Run fn(job) for each of the n jobs (each `job_size` bytes, starting at `jobs`): job 0 on the
 *  calling thread, the others on their own threads; a job whose thread cannot be started runs
 *  on the calling thread. Returns when all have finished; false only when the bookkeeping
 *  could not be allocated (then every job still ran, one after the other). */
bool gck_parallel(void *jobs, size_t n, size_t job_size, void *(*fn)(void *));

/** How many parts gck_parallel_for should cut n items of `cost` units of work each into: one per
 *  online core, while each part keeps at least 2^16 units (fewer would not pay for a thread);
 *  at least 1. */
int gck_parallel_parts(int64_t n, int64_t cost);

/** body(ctx, part, lo, hi) over [0, n) cut into `parts` contiguous ranges of nearly equal size,
 *  each on its own thread (as gck_parallel; part 0 on the calling thread). A body that needs a
 *  rounding mode sets it itself and puts it back. */
void gck_parallel_for(int parts, int64_t n, void *ctx,
                      void (*body)(void *ctx, int part, int64_t lo, int64_t hi));

#endif
