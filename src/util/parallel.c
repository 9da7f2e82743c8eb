/* One function over an array of jobs, one thread each. */
#include "parallel.h"

#include "fpenv.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

int gck_online_cores(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

double gck_physical_memory(void) {
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (double)pages * (double)size : 0;
}

int gck_thread_count(int requested, long long work) {
    long long t = requested > 0 ? requested : gck_online_cores();
    if (t < 1) t = 1;
    if (t > work) t = work > 0 ? work : 1;
    return (int)t;
}

/* A job's thread: the "C" locale, as the public function that started it (a new thread starts
 * in the process's; its floating-point environment it inherits from its creator). */
typedef struct start {
    void *(*fn)(void *);
    void *arg;
} start;

static void *started(void *arg) {
    const start *s = arg;
    locale_t c = gck_c_locale();
    if (c) uselocale(c);
    return s->fn(s->arg);
}

bool gck_parallel(void *jobs, size_t n, size_t job_size, void *(*fn)(void *)) {
    char *base = jobs;
    pthread_t *tids = calloc(n, sizeof *tids);
    bool *running = calloc(n, sizeof *running);
    start *starts = calloc(n, sizeof *starts);
    bool ok = tids && running && starts;
    for (size_t t = 1; ok && t < n; t++) {
        starts[t] = (start){fn, base + t * job_size};
        running[t] = pthread_create(&tids[t], NULL, started, &starts[t]) == 0;
    }
    for (size_t t = 0; t < n; t++)
        if (!ok || !running[t]) fn(base + t * job_size); /* job 0, and any not started */
    for (size_t t = 1; ok && t < n; t++)
        if (running[t]) pthread_join(tids[t], NULL);
    free(tids);
    free(running);
    free(starts);
    return ok;
}

int gck_parallel_parts(int64_t n, int64_t cost) {
    int64_t grain = (INT64_C(1) << 16) / (cost > 0 ? cost : 1) + 1; /* items per part */
    return gck_thread_count(0, n / grain);
}

typedef struct range_job {
    void *ctx;
    void (*body)(void *ctx, int part, int64_t lo, int64_t hi);
    int part;
    int64_t lo, hi;
} range_job;

static void *run_range(void *arg) {
    range_job *r = arg;
    r->body(r->ctx, r->part, r->lo, r->hi);
    return NULL;
}

void gck_parallel_for(int parts, int64_t n, void *ctx,
                      void (*body)(void *ctx, int part, int64_t lo, int64_t hi)) {
    if (parts < 1) parts = 1;
    range_job one, *jobs = parts == 1 ? &one : calloc((size_t)parts, sizeof *jobs);
    if (!jobs) { /* no bookkeeping: the whole range on this thread, as part 0 */
        body(ctx, 0, 0, n);
        for (int p = 1; p < parts; p++) body(ctx, p, n, n);
        return;
    }
    for (int p = 0; p < parts; p++)
        jobs[p] = (range_job){ctx, body, p, n * p / parts, n * (p + 1) / parts};
    gck_parallel(jobs, (size_t)parts, sizeof *jobs, run_range);
    if (jobs != &one) free(jobs);
}
