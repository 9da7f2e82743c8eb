/* Merging shard reports: each report checked against the
 * schema and its invariants, then added into one result (internal: for fuzz/ and src/cli/). */
#ifndef GEMMCHECK_FUZZ_MERGE_H
#define GEMMCHECK_FUZZ_MERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "result.h"

/** Merging shard reports (gemmcheck merge). */
typedef struct gck_merge {
    bool allow_mixed;   /**< shards of different seeds or gemmcheck versions may merge */
    bool allow_overlap; /**< the same shard twice, or case streams that overlap, may merge */
    bool allow_missing; /**< a set with shards missing may merge (otherwise: an error) */
    gck_campaign_result total;
    /* internal */
    const char *first_path;
    uint64_t seed;
    char version[64];
    struct gck_merge_group *groups;
    size_t ngroups;
} gck_merge;
/** Read one report, check it against the report schema and its invariants and against the
 *  shards already merged, and add it into m->total. False with a one-line reason in msg. */
bool gck_merge_add(gck_merge *m, const char *path, char *msg, size_t len);
/** Shards of each seed that are not among the inputs, one line each on `out` (an error, or a
 *  note when `as_error` is false); how many are missing in all. */
int gck_merge_missing(const gck_merge *m, FILE *out, bool as_error);
void gck_merge_free(gck_merge *m);

#endif
