/* A fixed grid of specs covering every dimension of a case (docs/FUZZING.md), for one backend's
 * support table. */
#ifndef GEMMCHECK_TEST_GRID_H
#define GEMMCHECK_TEST_GRID_H

#include <stdint.h>

#include "gemmcheck/backend.h"
#include "gemmcheck/spec.h"

/* Spec number `index` of the grid for a backend with these rows: cycles through the rows, the
 * shapes (0, 1, 2, 3, primes, tile multiples +- 1, tall-skinny, long K), both orders, all four
 * transposes, leading-dimension padding from none to huge, offsets, batches and strides
 * (tight, padded, 0) where the row allows, alpha/beta in {0, 1, -1, 0.5, 2, other}, every value
 * distribution, sparse NaN/Inf/+-0 and NaN-filled C with beta = 0. */
void grid_spec(uint64_t index, const gck_support_row *rows, size_t nrows, gck_spec *s);

#endif
