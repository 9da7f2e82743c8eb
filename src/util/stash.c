/* A thread's stash of large scratch blocks. */
#include "stash.h"

#include <stdlib.h>

#include "bigmem.h"

#define STASH_BLOCKS 4
static _Thread_local struct {
    void *p;
    size_t bytes;
} stash[STASH_BLOCKS];

void gck_stash_put(void *p, size_t bytes) {
    for (int b = 0; p && b < STASH_BLOCKS; b++)
        if (!stash[b].p) {
            stash[b].p = p, stash[b].bytes = bytes;
            return;
        }
    gck_big_free(p);
}

void *gck_stash_take(size_t bytes) {
    int best = -1;
    for (int b = 0; b < STASH_BLOCKS; b++)
        if (stash[b].p && stash[b].bytes >= bytes &&
            (best < 0 || stash[b].bytes < stash[best].bytes))
            best = b;
    if (best < 0) return NULL;
    void *p = stash[best].p;
    stash[best].p = NULL;
    return p;
}

void gck_stash_flush(void) {
    for (int b = 0; b < STASH_BLOCKS; b++) {
        gck_big_free(stash[b].p);
        stash[b].p = NULL;
    }
}
