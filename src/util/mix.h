/* SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators",
 * OOPSLA 2014): the one definition of the mixer behind reproducer values, the case
 * generator, and every seeded stream. Reproducer strings are a public contract: these
 * functions must never change (internal: for src/util/ and fuzz/, src/certify/, src/check/,
 * src/cli/, src/core/). */
#ifndef GEMMCHECK_UTIL_MIX_H
#define GEMMCHECK_UTIL_MIX_H

#include <stdint.h>

/** SplitMix64's increment (the golden gamma, 2^64 / φ). */
#define GCK_GOLDEN_GAMMA 0x9e3779b97f4a7c15ull

/** SplitMix64's finaliser: a bijective mix of 64 bits. */
static inline uint64_t gck_mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/** One SplitMix64 step from state z: the output for state z + gamma. */
static inline uint64_t gck_splitmix64(uint64_t z) { return gck_mix64(z + GCK_GOLDEN_GAMMA); }

#endif
