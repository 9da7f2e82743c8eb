/* Large scratch arrays, kept for reuse (internal: for src/util/ and oracles/, src/check/). */
#ifndef GEMMCHECK_UTIL_BIGMEM_H
#define GEMMCHECK_UTIL_BIGMEM_H

#include <stddef.h>

/** Memory of `bytes` for a large array written soon after (contents unspecified), freed with
 *  gck_big_free (free() is allowed: the block is then not kept); NULL when out of memory. From
 *  GCK_BIG_BYTES up it is aligned to 2 MiB, so that a kernel whose transparent huge pages are
 *  "always" may back it with them, but it does not ask for them (madvise MADV_HUGEPAGE, which it
 *  did until 2026-12-02): on the virtual machines measured a fresh 2 MiB page costs more than the
 *  same bytes in 4 KiB pages, and on the Intel Xeon with AMX a complete check of 4096^3 ran
 *  faster on 4 KiB pages both on a process's first call and on later ones (docs/PERFORMANCE.md,
 *  "4 KiB pages for the large arrays"). A kept block (gck_big_free) of `bytes` up to a quarter
 *  and 2 MiB more is reused first. */
void *gck_big_alloc(size_t bytes);

/** The same, zeroed (calloc's contract: n·size bytes, NULL when that overflows). */
void *gck_big_calloc(size_t n, size_t size);

/** Frees p (any malloc'd block or NULL), but keeps a block of GCK_BIG_BYTES or more aligned to
 *  2 MiB (gck_big_alloc's) for the next gck_big_alloc of about its size, as BLIS's memory
 *  pools keep their packing blocks: a block written again costs no fresh pages, whose first
 *  touches cost 0.3-2.3 s per GB on the virtual machines measured, where memory the process has
 *  not yet held is slow (docs/PERFORMANCE.md, "Kept blocks"). At most
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
