/* Large scratch arrays on transparent huge pages (bigmem.h). */
#define _DEFAULT_SOURCE 1 /* madvise */
#include "bigmem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_PAGE ((size_t)2 << 20)

void *gck_big_alloc(size_t bytes) {
    if (bytes < GCK_BIG_BYTES) return malloc(bytes ? bytes : 1);
    size_t whole = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE; /* no page shared */
    if (whole < bytes) return NULL;
    void *p = NULL;
    if (posix_memalign(&p, HUGE_PAGE, whole)) return NULL;
#ifdef MADV_HUGEPAGE
    (void)madvise(p, whole, MADV_HUGEPAGE); /* advice: refused, the pages stay 4 KiB */
#endif
    return p;
}

void *gck_big_calloc(size_t n, size_t size) {
    if (size && n > SIZE_MAX / size) return NULL;
    if (n * size < GCK_BIG_BYTES) return calloc(n ? n : 1, size ? size : 1);
    void *p = gck_big_alloc(n * size);
    if (p) memset(p, 0, n * size);
    return p;
}
