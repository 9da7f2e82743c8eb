/* Large scratch arrays, and the blocks kept for reuse (bigmem.h). */
#define _DEFAULT_SOURCE 1 /* malloc_usable_size */
#include "bigmem.h"

#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HUGE_PAGE ((size_t)2 << 20)

/* The kept blocks: each one's address and usable size, and when it was put (a counter). */
#define KEEP_BLOCKS 24
static struct {
    void *p;
    size_t bytes;
    uint64_t when;
} keep[KEEP_BLOCKS];
static size_t kept, keep_cap = SIZE_MAX;
static uint64_t clock_puts;
static pthread_mutex_t keep_lock = PTHREAD_MUTEX_INITIALIZER;

/* A fork waits for the lock, so that the child never inherits it held by a thread it lacks. */
static pthread_once_t keep_once = PTHREAD_ONCE_INIT;
static void keep_prepare(void) { pthread_mutex_lock(&keep_lock); }
static void keep_after(void) { pthread_mutex_unlock(&keep_lock); }
static void keep_register(void) { (void)pthread_atfork(keep_prepare, keep_after, keep_after); }

static void keep_enter(void) {
    pthread_once(&keep_once, keep_register);
    pthread_mutex_lock(&keep_lock);
}

/* An eighth of the machine's memory, at most 4 GiB (under keep_lock). */
static size_t cap(void) {
    if (keep_cap == SIZE_MAX) {
        long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
        size_t eighth = pages > 0 && size > 0 ? (size_t)pages / 8 * (size_t)size : 0;
        keep_cap = eighth < ((size_t)4 << 30) ? eighth : (size_t)4 << 30;
    }
    return keep_cap;
}

/* The smallest kept block of `whole` bytes up to a quarter and a huge page more, taken out; NULL
 * if none. (A block's size is what malloc_usable_size says: for glibc's aligned blocks, up to a
 * huge page beyond what was asked.) */
static void *take_kept(size_t whole) {
    keep_enter();
    int best = -1;
    for (int b = 0; b < KEEP_BLOCKS; b++)
        if (keep[b].p && keep[b].bytes >= whole && keep[b].bytes - whole <= whole / 4 + HUGE_PAGE &&
            (best < 0 || keep[b].bytes < keep[best].bytes))
            best = b;
    void *p = NULL;
    if (best >= 0) {
        p = keep[best].p;
        kept -= keep[best].bytes;
        keep[best].p = NULL;
    }
    pthread_mutex_unlock(&keep_lock);
    return p;
}

void *gck_big_alloc(size_t bytes) {
    if (bytes < GCK_BIG_BYTES) return malloc(bytes ? bytes : 1);
    size_t whole = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE; /* no page shared */
    if (whole < bytes) return NULL;
    void *p = take_kept(whole);
    if (p) return p;
    if (posix_memalign(&p, HUGE_PAGE, whole)) {
        gck_big_release(); /* what is kept may be what a limit on memory lacks */
        if (posix_memalign(&p, HUGE_PAGE, whole)) return NULL;
    }
    return p; /* not advised for huge pages (MADV_HUGEPAGE): bigmem.h says why */
}

void *gck_big_calloc(size_t n, size_t size) {
    if (size && n > SIZE_MAX / size) return NULL;
    if (n * size < GCK_BIG_BYTES) return calloc(n ? n : 1, size ? size : 1);
    void *p = gck_big_alloc(n * size);
    if (p) memset(p, 0, n * size);
    return p;
}

void gck_big_free(void *p) {
    /* any block of that size and alignment can be handed out again as that many bytes */
    size_t bytes = p ? malloc_usable_size(p) : 0;
    if (bytes < GCK_BIG_BYTES || (uintptr_t)p % HUGE_PAGE) {
        free(p);
        return;
    }
    void *out[KEEP_BLOCKS + 1];
    int nout = 0;
    keep_enter();
    if (bytes > cap()) {
        out[nout++] = p;
    } else {
        /* room: the oldest blocks go first */
        int slot = -1;
        for (;;) {
            int oldest = -1;
            slot = -1;
            for (int b = 0; b < KEEP_BLOCKS; b++) {
                if (!keep[b].p && slot < 0) slot = b;
                if (keep[b].p && (oldest < 0 || keep[b].when < keep[oldest].when)) oldest = b;
            }
            if (slot >= 0 && kept + bytes <= cap()) break;
            out[nout++] = keep[oldest].p;
            kept -= keep[oldest].bytes;
            keep[oldest].p = NULL;
        }
        keep[slot].p = p, keep[slot].bytes = bytes, keep[slot].when = ++clock_puts;
        kept += bytes;
    }
    pthread_mutex_unlock(&keep_lock);
    for (int b = 0; b < nout; b++) free(out[b]);
}

size_t gck_big_release(void) {
    void *out[KEEP_BLOCKS];
    int nout = 0;
    keep_enter();
    for (int b = 0; b < KEEP_BLOCKS; b++)
        if (keep[b].p) out[nout++] = keep[b].p, keep[b].p = NULL;
    size_t was = kept;
    kept = 0;
    pthread_mutex_unlock(&keep_lock);
    for (int b = 0; b < nout; b++) free(out[b]);
    return was;
}

size_t gck_big_kept(void) {
    keep_enter();
    size_t k = kept;
    pthread_mutex_unlock(&keep_lock);
    return k;
}
