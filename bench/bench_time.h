/* The benchmarks' clock: CLOCK_MONOTONIC in seconds (internal: private to bench/). */
#ifndef GEMMCHECK_BENCH_BENCH_TIME_H
#define GEMMCHECK_BENCH_BENCH_TIME_H

#include <time.h>

static inline double bench_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#endif
