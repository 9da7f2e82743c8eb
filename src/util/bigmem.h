/* Large scratch arrays on huge pages where the kernel grants them (internal: for src/util/ and
 * oracles/, src/check/). */
#ifndef GEMMCHECK_UTIL_BIGMEM_H
#define GEMMCHECK_UTIL_BIGMEM_H

#include <stddef.h>

/** Memory of `bytes` for a large array written soon after (contents unspecified), freed with
 *  gck_big_free (free() is allowed: the block is then not kept); NULL when out of memory. From
 *  GCK_BIG_BYTES up it is aligned to 2 MiB and marked for transparent huge pages (madvise
 *  MADV_HUGEPAGE, Linux): its first touch then costs one fault per 2 MiB instead of one per 4
 *  KiB. Where the kernel's setting for them is "madvise" (Debian's default) and a fault costs
 *  11-17 us (the virtual machines measured, docs/PERFORMANCE.md), writing a fresh 64 MiB array
 *  takes 0.007 s instead of 0.28 s. Where huge pages are off it is plain memory, page by page.
 *  A kept block (gck_big_free) of `bytes` up to a quarter and 2 MiB more is reused first. */
void *gck_big_alloc(size_t bytes);

/** The same, zeroed (calloc's contract: n·size bytes, NULL when that overflows). */
void *gck_big_calloc(size_t n, size_t size);

/** Frees p (any malloc'd block or NULL), but keeps a block of GCK_BIG_BYTES or more aligned to
 *  2 MiB (gck_big_alloc's) for the next gck_big_alloc of about its size, as BLIS's memory
 *  pools keep their packing blocks: a block written again costs no fresh pages, whose first
 *  touches cost 0.3-1 s per GB on the virtual machines measured, even on huge pages, where
 *  memory the process has not yet held is slow (docs/PERFORMANCE.md, "Kept blocks"). At most
 *  24 blocks and an eighth of the machine's memory (at most 4 GiB) are kept, the oldest freed
 *  first; thread-safe. */
void gck_big_free(void *p);

/** Frees every kept block (gck_big_alloc does when memory runs out, then tries again); returns
 *  the bytes they held. */
size_t gck_big_release(void);

/** The bytes kept now. */
size_t gck_big_kept(void);

#define GCK_BIG_BYTES ((size_t)4 << 20)

#endif
