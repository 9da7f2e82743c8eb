#include "grid.h"
#include "mix.h"

#include <string.h>

static int64_t pick(uint64_t *h, const int64_t *v, size_t n) {
    *h = gck_splitmix64(*h);
    return v[*h % n];
}

void grid_spec(uint64_t index, const gck_support_row *rows, size_t nrows, gck_spec *s) {
    static const int64_t dims[] = {0,  1,  2,  3,  4,  5,  7,  8,  9, 13,
                                   15, 16, 17, 31, 32, 33, 47, 63, 65};
    static const int64_t kdims[] = {0, 1, 2, 3, 7, 16, 17, 31, 64, 127, 129, 300};
    static const int64_t pads[] = {0, 0, 0, 1, 3, 8, 1000};
    static const double scales[] = {0.0, 1.0, -1.0, 0.5, 2.0, 0.75, -3.0};
    uint64_t h = gck_splitmix64(index * 0x2545f4914f6cdd1dull + 12345);
    const gck_support_row *row = &rows[index % nrows];
    gck_case c;
    int64_t m = pick(&h, dims, sizeof dims / sizeof dims[0]);
    int64_t n = pick(&h, dims, sizeof dims / sizeof dims[0]);
    int64_t k = pick(&h, kdims, sizeof kdims / sizeof kdims[0]);
    h = gck_splitmix64(h);
    if (h % 10 == 0) { /* tall-skinny and wide-short */
        m = (h >> 8) % 2 ? 200 : 1;
        n = (h >> 8) % 2 ? 2 : 150;
    }
    gck_case_init(&c, m, n, k);
    c.type_a = row->a;
    c.type_b = row->b;
    c.type_c = row->c;
    c.type_d = row->d;
    c.compute = row->compute;
    unsigned p = row->promises;
    h = gck_splitmix64(h);
    c.order = (p & GCK_PROMISE_ROW_MAJOR) && (h & 1) ? GCK_ROW_MAJOR : GCK_COL_MAJOR;
    c.transa = (h >> 1) & 1 ? GCK_OP_T : GCK_OP_N;
    c.transb = (h >> 2) & 1 ? GCK_OP_T : GCK_OP_N;
    c.d_is_c = (p & GCK_PROMISE_D_IN_PLACE) && row->c == row->d &&
               (!(p & GCK_PROMISE_D_SEPARATE) || ((h >> 3) & 1));
    c.scale_type = (p & GCK_PROMISE_SCALE_F64) ? GCK_F64 : GCK_F32;
    h = gck_splitmix64(h);
    c.alpha = scales[h % 7];
    c.beta = scales[(h >> 8) % 7];
    int64_t *lds[] = {&c.lda, &c.ldb, &c.ldc, &c.ldd};
    for (int x = 0; x < 4; x++) {
        int64_t rows_, cols_;
        gck_case_stored_shape(&c, (gck_operand)x, &rows_, &cols_);
        int64_t need = c.order == GCK_COL_MAJOR ? rows_ : cols_;
        int64_t pad = pick(&h, pads, sizeof pads / sizeof pads[0]);
        if (pad == 1000 && m * n * k > 5000) pad = 5; /* keep huge padding to small cases */
        *lds[x] = (need > 1 ? need : 1) + pad;
    }
    if (c.d_is_c) c.ldd = c.ldc;
    h = gck_splitmix64(h);
    if ((p & GCK_PROMISE_BATCHED) && h % 4 == 0 && m * n * k < 20000) {
        c.batch = 2 + (int64_t)((h >> 4) % 3);
        int64_t gaps[4];
        for (int x = 0; x < 4; x++) gaps[x] = (int64_t)((h >> (8 + 4 * x)) % 3) * 5;
        c.stride_a = ((h >> 30) & 1) ? 0 : gck_case_footprint(&c, GCK_A) + gaps[0];
        c.stride_b = ((h >> 31) & 1) ? 0 : gck_case_footprint(&c, GCK_B) + gaps[1];
        c.stride_c = gck_case_footprint(&c, GCK_C) + gaps[2];
        c.stride_d = c.d_is_c ? c.stride_c : gck_case_footprint(&c, GCK_D) + gaps[3];
    }
    gck_spec_init(s, &c);
    h = gck_splitmix64(h);
    for (int x = 0; x < 4; x++) {
        int per = 64 / gck_format_get(gck_case_type(&c, (gck_operand)x))->storage_bytes;
        s->offset[x] = (int64_t)((h >> (6 * x)) % (uint64_t)per);
    }
    h = gck_splitmix64(h);
    s->dist_ab = (gck_dist)(h % GCK_DIST_COUNT);
    s->dist_c = (gck_dist)((h >> 8) % GCK_DIST_COUNT);
    s->special_pm = (h >> 16) % 5 == 0 ? 30 : 0;
    /* NaN/Inf in A and B under alpha = 0 only where the backend promises not to read them */
    if (c.alpha == 0 && !(p & GCK_PROMISE_ALPHA0_NO_READ_AB)) s->special_pm = 0;
    s->c_nan = c.beta == 0 && (h >> 24) % 2 == 0;
    s->seed = gck_splitmix64(h);
}
