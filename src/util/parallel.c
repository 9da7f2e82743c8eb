/* One function over an array of jobs, one thread each: the caller's and a pool's. */
#include "parallel.h"

#include "fpenv.h"

#include <fenv.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
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

/* The jobs on threads started for this call (job 0 on the caller's). */
static bool run_on_new_threads(char *base, size_t n, size_t job_size, void *(*fn)(void *)) {
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

/* ---- the pool ---------------------------------------------------------------------------- */

/* Threads kept from one call to the next, one per online core but the caller's. Starting a
 * thread costs about as much as a small product's arithmetic (two threads started and joined:
 * 19 us at best, 35 us on average on a Zen 4 VM, where an f16 256^3 product takes 230 us on two
 * cores); so a call gives its jobs to the pool's threads, which wait for the next call by
 * spinning for POOL_SPIN_NS and then sleep on a condition variable (OpenBLAS's threads do the
 * same). One call at a time uses the pool (`busy`): a call made while it is taken (from another
 * thread, or from inside a job) starts threads of its own, as does a call with more jobs than
 * the pool has threads. A job runs in its caller's floating-point environment and in the "C"
 * locale, as on a thread of its own. A child after fork has no workers (they stayed in the
 * parent): its pool starts again when first used. The workers end when the library is unloaded
 * or the process exits (a destructor), so that none runs code that is gone. */
#define POOL_SPIN_NS 200000L
#define POOL_MAX     255

typedef struct pool_worker {
    pthread_t tid;
    atomic_ulong go; /* the generation of the last call that gave this worker a job */
    void *(*fn)(void *);
    void *arg;
} pool_worker;

static struct {
    pthread_mutex_t lock; /* guards the sleeps below */
    pthread_cond_t wake;  /* a worker waits here for a job */
    pthread_cond_t done;  /* the caller waits here for the last job */
    atomic_flag busy;     /* held by the call using the pool */
    atomic_int pending;   /* jobs of the current call not yet finished */
    atomic_int sleepers;  /* workers asleep, or about to be, on `wake` */
    atomic_bool stopping; /* the workers are to end (the library unloaded, the process ending) */
    unsigned long gen;    /* the current call's generation (under busy) */
    int workers;          /* threads started */
    bool tried;           /* the threads were started (or failed to be) */
    fenv_t env;           /* the current call's floating-point environment */
    pool_worker w[POOL_MAX];
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER,
          .wake = PTHREAD_COND_INITIALIZER,
          .done = PTHREAD_COND_INITIALIZER,
          .busy = ATOMIC_FLAG_INIT};

static long elapsed_ns(const struct timespec *t0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000000000L + (t.tv_nsec - t0->tv_nsec);
}

/* Spins until *go differs from `old` (go not NULL; or the pool stops) or *count is 0, for at
 * most POOL_SPIN_NS; whether that happened. */
static bool spin_for(atomic_ulong *go, unsigned long old, atomic_int *count) {
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned i = 1;; i++) {
        if (go ? atomic_load_explicit(go, memory_order_acquire) != old ||
                     atomic_load(&pool.stopping)
               : atomic_load_explicit(count, memory_order_acquire) == 0)
            return true;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        if (!(i & 255) && elapsed_ns(&t0) > POOL_SPIN_NS) return false;
    }
}

/* Waits for a job newer than `seen`, or for the pool to stop; whether a job came. */
static bool wait_for_job(pool_worker *me, unsigned long seen) {
    if (!spin_for(&me->go, seen, NULL)) {
        pthread_mutex_lock(&pool.lock);
        atomic_fetch_add(&pool.sleepers, 1);
        while (atomic_load(&me->go) == seen && !atomic_load(&pool.stopping))
            pthread_cond_wait(&pool.wake, &pool.lock);
        atomic_fetch_sub(&pool.sleepers, 1);
        pthread_mutex_unlock(&pool.lock);
    }
    return atomic_load(&me->go) != seen;
}

static void *pool_loop(void *arg) {
    pool_worker *me = arg;
    locale_t c = gck_c_locale();
    if (c) uselocale(c);
    unsigned long seen = 0;
    while (wait_for_job(me, seen)) {
        seen = atomic_load_explicit(&me->go, memory_order_acquire);
        fesetenv(&pool.env);
        me->fn(me->arg);
        if (atomic_fetch_sub_explicit(&pool.pending, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&pool.lock);
            pthread_cond_broadcast(&pool.done);
            pthread_mutex_unlock(&pool.lock);
        }
    }
    return NULL;
}

/* When the library is unloaded (or the process exits): the workers end, after any job given to
 * them, and are joined, so that none runs code that has gone. */
__attribute__((destructor)) static void pool_stop(void) {
    pthread_mutex_lock(&pool.lock);
    atomic_store(&pool.stopping, true);
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.lock);
    for (int w = 0; w < pool.workers; w++) pthread_join(pool.w[w].tid, NULL);
    pool.workers = 0;
}

/* In a child after fork: no worker exists there; the pool starts again when first used. */
static void pool_forked(void) {
    pthread_mutex_init(&pool.lock, NULL);
    pthread_cond_init(&pool.wake, NULL);
    pthread_cond_init(&pool.done, NULL);
    atomic_flag_clear(&pool.busy);
    atomic_store(&pool.sleepers, 0);
    pool.workers = 0;
    pool.tried = false;
}

/* Starts the workers once (busy held); how many there are. */
static int pool_start(void) {
    static bool registered;
    if (pool.tried) return pool.workers;
    pool.tried = true;
    if (!registered && pthread_atfork(NULL, NULL, pool_forked)) return 0;
    registered = true;
    int want = gck_online_cores() - 1;
    if (want > POOL_MAX) want = POOL_MAX;
    for (pool.workers = 0; pool.workers < want; pool.workers++) {
        pool_worker *w = &pool.w[pool.workers];
        atomic_store(&w->go, 0);
        if (pthread_create(&w->tid, NULL, pool_loop, w)) break;
    }
    return pool.workers;
}

/* Jobs 1..n-1 on workers 0..n-2, job 0 here (busy held, enough workers). */
static void run_on_pool(char *base, size_t n, size_t job_size, void *(*fn)(void *)) {
    fegetenv(&pool.env);
    atomic_store(&pool.pending, (int)n - 1);
    unsigned long g = ++pool.gen;
    for (size_t t = 1; t < n; t++) {
        pool_worker *w = &pool.w[t - 1];
        w->fn = fn;
        w->arg = base + t * job_size;
        atomic_store(&w->go, g);
    }
    /* sequentially consistent, as the worker's increment of `sleepers` and its load of `go`:
     * one of the two sees the other's write, so a worker that has gone to sleep is woken. (With
     * a release store here, x86 may load `sleepers` before the store is seen, and a worker that
     * saw the old `go` slept while this call waited for it: a hang seen once under ASan.) */
    if (atomic_load(&pool.sleepers)) {
        pthread_mutex_lock(&pool.lock);
        pthread_cond_broadcast(&pool.wake);
        pthread_mutex_unlock(&pool.lock);
    }
    fn(base);
    if (!spin_for(NULL, 0, &pool.pending)) {
        pthread_mutex_lock(&pool.lock);
        while (atomic_load(&pool.pending)) pthread_cond_wait(&pool.done, &pool.lock);
        pthread_mutex_unlock(&pool.lock);
    }
}

bool gck_parallel(void *jobs, size_t n, size_t job_size, void *(*fn)(void *)) {
    if (n <= 1) {
        if (n) fn(jobs);
        return true;
    }
    if (atomic_flag_test_and_set_explicit(&pool.busy, memory_order_acquire))
        return run_on_new_threads(jobs, n, job_size, fn);
    bool fits = !atomic_load(&pool.stopping) && (size_t)pool_start() >= n - 1;
    if (fits) run_on_pool(jobs, n, job_size, fn);
    atomic_flag_clear_explicit(&pool.busy, memory_order_release);
    return fits || run_on_new_threads(jobs, n, job_size, fn);
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
