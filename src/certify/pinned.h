/* The pinned cases of a certificate (docs/CERTIFY.md). */
#ifndef GCK_CERTIFY_PINNED_H
#define GCK_CERTIFY_PINNED_H

#include "gemmcheck/backend.h"

/** How many pinned cases each row gets when the table has nrows rows: about 2,000 in all, 8 to
 *  1,000 per row. */
int gck_pinned_per_row(size_t nrows);

/** Run the row's first `count` pinned cases on the backend; out[i] is "DIGEST RATIO" (64-bit
 *  FNV-1a of D's bytes in hex, the largest error/bound) or why the case has none
 *  ("unsupported", "error", "check failed", "out of memory"). Returns the count written. */
int gck_pinned_row(gck_backend *be, const gck_support_row *row, int count, char (*out)[40]);

#endif
