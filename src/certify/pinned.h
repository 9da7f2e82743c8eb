/* The pinned cases of a certificate (docs/CERTIFY.md) (internal: for src/certify/ and src/cli/). */
#ifndef GEMMCHECK_CERTIFY_PINNED_H
#define GEMMCHECK_CERTIFY_PINNED_H

#include <stdint.h>

#include "gemmcheck/backend.h"

/** How many pinned cases each row gets when the table has nrows rows: about 2,000 in all, 8 to
 *  1,000 per row. */
int gck_pinned_per_row(size_t nrows);

/** One pinned case: its reproducer, what became of it ("ok", or why it has no result:
 *  "unsupported", "error", "check failed", "out of memory"), and when ok the 64-bit FNV-1a of
 *  D's bytes, the largest error/bound of the exact check and the largest distance from the
 *  exact result in ulps of D's type (-1: not computed). */
enum { GCK_PINNED_KEEP_BYTES = 1024 }; /**< D kept whole up to this many bytes */
typedef struct gck_pinned_case {
    char spec[512];
    char outcome[24];
    uint64_t digest;
    double ratio, ulps;
    unsigned char d[GCK_PINNED_KEEP_BYTES]; /**< D's bytes when they fit (d_bytes > 0) */
    size_t d_bytes;
} gck_pinned_case;

/** The largest distance between two results of case c (buffers laid out as its D), in ulps
 *  of D's type at ref's value; elements where either is not finite are left out, a distance
 *  beyond the largest double is that. */
double gck_pinned_distance(const gck_case *c, const void *ref, const void *other);

/** Run the row's first `count` pinned cases on the backend into out. Returns the count. */
int gck_pinned_row(gck_backend *be, const gck_support_row *row, int count, gck_pinned_case *out);

#endif
