/* Guarded operand buffers. */
#define _DEFAULT_SOURCE 1
#include "guard.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

uint64_t gck_poison_bits(gck_format fmt) {
    switch (fmt) {
    case GCK_F16: return 0x7d55u; /* exponent all ones, quiet bit clear, payload != 0 */
    case GCK_BF16: return 0x7fa5u;
    case GCK_TF32:
    case GCK_F32: return 0x7fa5a5a5u;
    default: return 0x7ff5a5a5a5a5a5a5ull;
    }
}

static size_t page_size(void) { return (size_t)sysconf(_SC_PAGESIZE); }

/* Fill with the poison pattern. The region starts a whole number of elements before the base
 * pointer, so slot i % size of every element holds one byte of the sNaN. */
static void poison(unsigned char *p, size_t n, gck_format fmt) {
    uint64_t bits = gck_poison_bits(fmt), word = 0;
    size_t es = (size_t)gck_format_get(fmt)->storage_bytes;
    unsigned char pattern[8];
    for (size_t i = 0; i < 8; i++) pattern[i] = (unsigned char)(bits >> (8 * (i % es)));
    memcpy(&word, pattern, 8); /* es divides 8: byte i of the region is pattern[i % 8] */
    size_t i = 0;
    for (; i + 8 <= n; i += 8) memcpy(p + i, &word, 8);
    for (; i < n; i++) p[i] = pattern[i % 8];
}

gck_status gck_guarded_alloc(gck_guarded *g, gck_format fmt, int64_t extent, int64_t offset,
                             size_t slack, char *msg, size_t len) {
    memset(g, 0, sizeof *g);
    g->fmt = fmt;
    size_t es = (size_t)gck_format_get(fmt)->storage_bytes;
    size_t ps = page_size();
    if (extent < 0 || offset < 0 || (uint64_t)extent > (SIZE_MAX / 2) / es) {
        snprintf(msg, len, "operand of %lld elements cannot be allocated", (long long)extent);
        return GCK_ENOMEM;
    }
    size_t bytes = (size_t)extent * es, off = ((size_t)offset * es) % 256;
    /* Back zone: what lies between the operand's end and the guard page, chosen so that the
     * base pointer is `off` bytes past a 256-byte boundary (the region ends page-aligned). */
    size_t back = (256 - (bytes + off) % 256) % 256 + slack / 256 * 256;
    size_t region = (bytes + back + 256 + ps - 1) / ps * ps;
    if (region < bytes || region > SIZE_MAX - 2 * ps) {
        snprintf(msg, len, "operand of %zu bytes cannot be allocated", bytes);
        return GCK_ENOMEM;
    }
    size_t total = region + 2 * ps;
    void *m = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (m == MAP_FAILED) {
        snprintf(msg, len, "cannot map %zu bytes for an operand: %s", total, strerror(errno));
        return GCK_ENOMEM;
    }
    g->map = m;
    g->map_len = total;
    if (mprotect(g->map, ps, PROT_NONE) != 0 ||
        mprotect(g->map + ps + region, ps, PROT_NONE) != 0) {
        snprintf(msg, len, "mprotect failed: %s", strerror(errno));
        gck_guarded_free(g);
        return GCK_EIO;
    }
    g->region = g->map + ps;
    g->region_len = region;
    g->data = g->region + region - back - bytes;
    g->data_bytes = bytes;
    poison(g->region, g->region_len, fmt);
    return GCK_OK;
}

void gck_guarded_free(gck_guarded *g) {
    if (g->map) munmap(g->map, g->map_len);
    free(g->snapshot);
    memset(g, 0, sizeof *g);
}

gck_status gck_guarded_snapshot(gck_guarded *g, char *msg, size_t len) {
    if (!g->snapshot) g->snapshot = malloc(g->region_len);
    if (!g->snapshot) {
        snprintf(msg, len, "out of memory for a %zu-byte snapshot", g->region_len);
        return GCK_ENOMEM;
    }
    memcpy(g->snapshot, g->region, g->region_len);
    return GCK_OK;
}

const void *gck_guarded_before(const gck_guarded *g) { return g->snapshot + (g->data - g->region); }

bool gck_case_element_at(const gck_case *c, gck_operand x, int64_t e, int64_t *batch, int64_t *row,
                         int64_t *col) {
    int64_t rows, cols;
    gck_case_stored_shape(c, x, &rows, &cols);
    int64_t stride = gck_case_stride(c, x), ld = gck_case_ld(c, x);
    if (e < 0 || rows == 0 || cols == 0) return false;
    int64_t b = 0, r = e;
    if (stride > 0 && c->batch > 1) {
        b = e / stride;
        r = e % stride;
        if (b >= c->batch) {
            b = c->batch - 1;
            r = e - b * stride;
        }
    }
    int64_t outer = r / ld, inner = r % ld;
    int64_t sr = c->order == GCK_COL_MAJOR ? inner : outer;
    int64_t sc = c->order == GCK_COL_MAJOR ? outer : inner;
    if (sr >= rows || sc >= cols) return false;
    *batch = b;
    *row = sr;
    *col = sc;
    return true;
}

void gck_guarded_check(const gck_guarded *g, const gck_case *c, gck_operand x,
                       bool elements_may_change, gck_guard_report *r) {
    memset(r, 0, sizeof *r);
    r->batch = r->row = r->col = -1;
    size_t es = (size_t)gck_format_get(g->fmt)->storage_bytes;
    size_t start = (size_t)(g->data - g->region), end = start + g->data_bytes;
    const size_t chunk = 512;
    for (size_t i = 0; i < g->region_len; i++) {
        /* skip unchanged chunks whole (the usual case: only D's elements change) */
        if (i % chunk == 0 && g->region_len - i >= chunk &&
            !memcmp(g->region + i, g->snapshot + i, chunk)) {
            i += chunk - 1;
            continue;
        }
        if (g->region[i] == g->snapshot[i]) continue;
        gck_byte_zone zone = GCK_ZONE_GUARD;
        int64_t b = -1, row = -1, col = -1;
        if (i >= start && i < end) {
            int64_t e = (int64_t)((i - start) / es);
            zone =
                gck_case_element_at(c, x, e, &b, &row, &col) ? GCK_ZONE_ELEMENT : GCK_ZONE_PADDING;
            if (zone == GCK_ZONE_ELEMENT && elements_may_change) continue;
        }
        if (r->changed_bytes++ == 0) {
            r->zone = zone;
            r->byte_offset = (int64_t)i - (int64_t)start;
            r->batch = b;
            r->row = row;
            r->col = col;
            r->before = g->snapshot[i];
            r->after = g->region[i];
        }
    }
}
