/* D cut into square tiles, the unit of work of the checker's threads and of the exact oracle's
 * (internal: for src/core/ and oracles/, src/check/). */
#ifndef GEMMCHECK_CORE_TILES_H
#define GEMMCHECK_CORE_TILES_H

#include <stdint.h>

#include "gemmcheck/case.h"

/** D cut into T x T tiles, column-major within a batch member, member after member. */
typedef struct gck_tiles {
    int64_t tile, tiles_i, tiles_j, count;
} gck_tiles;
gck_tiles gck_tiles_of(const gck_case *c, int64_t tile);
/** Tile t's batch member and its rows [i0, i1) and columns [j0, j1). */
void gck_tile_range(const gck_tiles *g, const gck_case *c, int64_t t, int64_t *bi, int64_t *i0,
                    int64_t *i1, int64_t *j0, int64_t *j1);

#endif
