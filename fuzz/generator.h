/* The case generator (docs/FUZZING.md): every dimension of a case drawn deterministically from
 * (seed, case index), weighted towards where kernels break, under a per-case cost budget (internal:
 * for fuzz/ and src/certify/, src/cli/). */
#ifndef GEMMCHECK_FUZZ_GENERATOR_H
#define GEMMCHECK_FUZZ_GENERATOR_H

#include <stddef.h>
#include <stdint.h>

#include "gemmcheck/backend.h"
#include "gemmcheck/spec.h"

/** A type tuple to generate cases for, with the promises that shape them (row-major, batches,
 *  D separate, alpha = 0 not reading A/B, scale type). `requested` marks a tuple the user asked
 *  for with --types: when the backend has no row for it, the case is an `unimplemented`. */
typedef struct gck_fuzz_target {
    gck_format a, b, c, d, compute;
    unsigned promises;
    bool requested;
} gck_fuzz_target;

typedef struct gck_fuzz_config {
    uint64_t seed;
    double max_flops; /**< budget for m*n*k*batch */
    double max_bytes; /**< budget for the bytes spanned by all operands */
    const gck_fuzz_target *targets;
    size_t ntargets;
    /** each case's target drawn at random, as streams were before the targets were taken in
     *  turn (tests/test_fuzz.c pins that stream: everything else about a case is unchanged) */
    bool random_targets;
} gck_fuzz_config;

/** Case number `index` of the stream. Case i is of target (i + r) mod ntargets, r drawn from
 *  the seed: every ntargets consecutive cases reach every target (unless random_targets). */
void gck_fuzz_generate(const gck_fuzz_config *cfg, uint64_t index, gck_spec *out);

/** The built-in edge cases from real bug reports, adapted to the targets; returns how many were
 *  written (at most cap). */
size_t gck_fuzz_edge_cases(const gck_fuzz_config *cfg, gck_spec *out, size_t cap);

/** Targets from a backend's support table (one per row). */
size_t gck_fuzz_targets_from_rows(const gck_support_row *rows, size_t n, gck_fuzz_target *out,
                                  size_t cap);

/** The most targets a campaign takes on one backend (support-table rows, or --types tuples). */
#define GCK_FUZZ_MAX_TARGETS 1024

/** Parse a --types list: "A,B,C,D:compute[;A,B,C,D:compute...]" (compute defaults to f32, or
 *  f64 when D is f64). Each tuple takes the promises of the backend's row for it if there is
 *  one, else is marked requested with column-major, in-place, f32/f64 scale. Returns the count,
 *  or 0 with a message. */
size_t gck_fuzz_parse_types(const char *text, const gck_support_row *rows, size_t nrows,
                            gck_fuzz_target *out, size_t cap, char *msg, size_t len);

/** The shape class used in finding signatures: "empty", "k0", "vector", "small", "medium",
 *  "large", with "+batch" for batched cases. */
void gck_fuzz_shape_class(const gck_case *c, char *buf, size_t len);

#endif
