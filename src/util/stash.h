/* Large scratch blocks handed from one stage of a check to the next (internal: for src/util/ and
 * oracles/, src/check/). */
#ifndef GEMMCHECK_UTIL_STASH_H
#define GEMMCHECK_UTIL_STASH_H

#include <stddef.h>

/** A few large scratch blocks kept for reuse by the calling thread: a block written again soon
 *  after it was freed costs no new pages (first touches of fresh memory cost 0.3-1 s per GB on
 *  the machines measured). gck_stash_put keeps a malloc'd block of `bytes` (or frees it when
 *  the stash is full); gck_stash_take returns the smallest kept block of at least `bytes`
 *  (contents unspecified, to be freed with free()) or NULL; gck_stash_flush frees what is
 *  kept. The callers that put must make sure a flush follows (the checker flushes at the end
 *  of each check). */
void gck_stash_put(void *p, size_t bytes);
void *gck_stash_take(size_t bytes);
void gck_stash_flush(void);

#endif
