/* Large scratch arrays on huge pages where the kernel grants them (internal: for src/util/ and
 * oracles/, src/check/). */
#ifndef GEMMCHECK_UTIL_BIGMEM_H
#define GEMMCHECK_UTIL_BIGMEM_H

#include <stddef.h>

/** Memory of `bytes` for a large array written soon after (contents unspecified), freed with
 *  free(); NULL when out of memory. From GCK_BIG_BYTES up it is aligned to 2 MiB and marked for
 *  transparent huge pages (madvise MADV_HUGEPAGE, Linux): its first touch then costs one fault
 *  per 2 MiB instead of one per 4 KiB. Where the kernel's setting for them is "madvise" (Debian's
 *  default) and a fault costs 11-17 us (the virtual machines measured, docs/PERFORMANCE.md),
 *  writing a fresh 64 MiB array takes 0.007 s instead of 0.28 s. Where huge pages are off it is
 *  plain memory, page by page. */
void *gck_big_alloc(size_t bytes);

/** The same, zeroed (calloc's contract: n·size bytes, NULL when that overflows). */
void *gck_big_calloc(size_t n, size_t size);

#define GCK_BIG_BYTES ((size_t)4 << 20)

#endif
