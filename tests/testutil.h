/* Shared test helpers: a seeded generator and independent rounding truths. */
#ifndef GEMMCHECK_TESTUTIL_H
#define GEMMCHECK_TESTUTIL_H

#include <locale.h>
#include <stddef.h>
#include <stdint.h>

#include <gmp.h>
#include <mpfr.h>

#include "gemmcheck/gemmcheck.h"

/* SplitMix64: small, fast, and every test prints the seed it used. */
typedef struct {
    uint64_t s;
} test_rng;
uint64_t rng_next(test_rng *r);
double rng_unit(test_rng *r);                           /* [0, 1) */
int64_t rng_range(test_rng *r, int64_t lo, int64_t hi); /* [lo, hi] */
/* The seed of a test: GEMMCHECK_TEST_SEED from the environment, else `fallback`; printed. */
uint64_t test_seed(const char *test, uint64_t fallback);

/* x rounded to `fmt` by MPFR's IEEE emulation: precision p, exponent range of the format,
 * mpfr_check_range and mpfr_subnormalize (the MPFR manual's recipe). */
double mpfr_round_format(double x, gck_format fmt);
/* An exact MPFR value (in MPFR's default exponent range) rounded to `fmt` in direction `rnd`
 * with the same recipe. */
double mpfr_round_exact(mpfr_srcptr x, gck_format fmt, mpfr_rnd_t rnd);
/* An exact rational rounded to `fmt` by integer arithmetic only (no MPFR, no floating point
 * except the final exact conversion); ties to even, gradual underflow, overflow to Inf.
 * Zero returns +0. */
double mpq_round_format(const mpq_t q, gck_format fmt);
/* A random value of `fmt` drawn from one of several distributions (index `dist`):
 * 0 small integers, 1 uniform [-1,1], 2 wide exponents, 3 near the top of the range,
 * 4 subnormals and the smallest normals, 5 any finite bit pattern. */
double random_value(test_rng *r, gck_format fmt, int dist);
#define RANDOM_DISTS 6

/* A buffer for `count` elements of `fmt`, filled with the bits 0xA5. */
void *alloc_elems(gck_format fmt, int64_t count);
/* Bitwise equality of two doubles seen as values of a format (all NaNs equal). */
int same_value(double a, double b);

/* Run the shell command `cmd`: what it writes to its standard output goes to `out` (at most
 * len - 1 bytes, NUL-terminated); returns its exit status, or -1 when a signal ended it. */
int run_shell(const char *cmd, char *out, size_t len);
#ifdef GCK_BINARY
/* Run the gemmcheck binary under test with `args` (shell words): stdout and stderr into out. */
int run_gemmcheck(const char *args, char *out, size_t len);
#endif

/* de_DE.UTF-8 (decimal comma), compiled once by localedef into a directory of this process's,
 * which LOCPATH then names (so setlocale finds it too); NULL when it cannot be made (Debian's
 * `locales` package has its source: scripts/install-deps.sh installs it). */
locale_t test_comma_locale(void);

#endif
