/* Running one function on an array of jobs, one thread per job (internal). */
#ifndef GEMMCHECK_PARALLEL_H
#define GEMMCHECK_PARALLEL_H

#include <stdbool.h>
#include <stddef.h>

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

#endif
