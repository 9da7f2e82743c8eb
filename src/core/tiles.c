/* D cut into square tiles (tiles.h). */
#include "tiles.h"

gck_tiles gck_tiles_of(const gck_case *c, int64_t tile) {
    gck_tiles g = {tile, (c->m + tile - 1) / tile, (c->n + tile - 1) / tile, 0};
    g.count = c->batch * g.tiles_i * g.tiles_j;
    return g;
}

void gck_tile_range(const gck_tiles *g, const gck_case *c, int64_t t, int64_t *bi, int64_t *i0,
                    int64_t *i1, int64_t *j0, int64_t *j1) {
    int64_t ti = t % g->tiles_i, tj = (t / g->tiles_i) % g->tiles_j, T = g->tile;
    *bi = t / (g->tiles_i * g->tiles_j);
    *i0 = ti * T, *i1 = (ti + 1) * T < c->m ? (ti + 1) * T : c->m;
    *j0 = tj * T, *j1 = (tj + 1) * T < c->n ? (tj + 1) * T : c->n;
}
