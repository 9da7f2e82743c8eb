/* The exact oracle's superaccumulator (exact_internal.h): fixed-point integers of 32-bit
 * digits in int64 limbs, into which the exponent buckets are folded (see oracle_exact.c). */
#include "exact_internal.h"
#include "format_internal.h"
#include "fpenv.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "oracle_common.h"
#include "oracle_ozaki.h"
#include "parallel.h"
#include "tiles.h"

/* ---- the superaccumulator ---------------------------------------------------------------- */

/* Carry-propagate: every limb but the top one in [0, 2^32); the top one carries the sign. */
void gck_sacc_normalize(int64_t *l, int n) {
    for (int i = 0; i < n - 1; i++) {
        int64_t carry = l[i] >> 32; /* floor division by 2^32 */
        l[i] -= carry * ((int64_t)1 << 32);
        l[i + 1] += carry;
    }
}

/* |value| into mag (normalized limbs, all in [0, 2^32)); returns 1 when negative. */
static int magnitude(const int64_t *l, int n, uint32_t *mag) {
    int neg = l[n - 1] < 0;
    int64_t carry = neg ? 1 : 0;
    for (int i = 0; i < n; i++) {
        int64_t v = neg ? (int64_t)(~(uint32_t)l[i]) + carry : l[i];
        if (neg) {
            carry = v >> 32;
            v &= 0xffffffff;
        }
        mag[i] = (uint32_t)v;
    }
    return neg;
}

static int top_bit(const uint32_t *mag, int n) {
    for (int i = n - 1; i >= 0; i--)
        if (mag[i]) return i * 32 + 31 - __builtin_clz(mag[i]);
    return -1;
}

static inline uint32_t word_at(const uint32_t *mag, int n, int64_t w) {
    return w >= 0 && w < n ? mag[w] : 0;
}

/* Bits [lo, lo+count) of mag (count <= 64; bits outside the limbs are 0). */
static uint64_t bits(const uint32_t *mag, int n, int64_t lo, int count) {
    int64_t w = lo >= 0 ? lo / 32 : -((-lo + 31) / 32); /* floor(lo / 32) */
    int sh = (int)(lo - 32 * w);
    unsigned __int128 x = (unsigned __int128)word_at(mag, n, w) |
                          (unsigned __int128)word_at(mag, n, w + 1) << 32 |
                          (unsigned __int128)word_at(mag, n, w + 2) << 64;
    uint64_t v = (uint64_t)(x >> sh);
    return count < 64 ? v & ((UINT64_C(1) << count) - 1) : v;
}

static bool any_below(const uint32_t *mag, int n, int64_t b) {
    if (b <= 0) return false;
    int64_t full = b >> 5;
    for (int64_t i = 0; i < full && i < n; i++)
        if (mag[i]) return true;
    if (full < n && (b & 31) && (mag[full] & ((1u << (b & 31)) - 1u))) return true;
    return false;
}

/* Round the value (limbs, bit 0 at 2^base) once to format f. *zero: the value was exactly 0. */
double gck_sacc_round_to(const int64_t *l, int n, int32_t base, const gck_format_info *f,
                         uint32_t *mag, bool *zero) {
    int neg = magnitude(l, n, mag);
    int t = top_bit(mag, n);
    *zero = t < 0;
    if (t < 0) return 0.0;
    int32_t E = base + t;                                       /* 2^E <= |x| < 2^(E+1) */
    int32_t q = (E > f->emin ? E : f->emin) - f->precision + 1; /* the output grid */
    int64_t lo = (int64_t)q - base;                             /* bit index of 2^q */
    uint64_t N = lo > t ? 0 : bits(mag, n, lo, (int)(t - lo + 1));
    int round = (int)bits(mag, n, lo - 1, 1);
    bool sticky = any_below(mag, n, lo - 1);
    if (round && (sticky || (N & 1))) N++;
    double v = scale2(N, q); /* exact: N <= 2^p, q on the grid of the format */
    if (v > f->max) v = INFINITY;
    return neg ? -v : v;
}

/* |value| rounded up to a double. */
double gck_sacc_magnitude_up(const int64_t *l, int n, int32_t base, uint32_t *mag, int *neg) {
    *neg = magnitude(l, n, mag);
    int t = top_bit(mag, n);
    if (t < 0) return 0.0;
    int64_t lo = t - 52;
    if (base + lo < -1074) lo = -1074 - (int64_t)base; /* double's subnormals keep fewer bits */
    uint64_t N = lo > t ? 0 : bits(mag, n, lo, (int)(t - lo + 1));
    if (any_below(mag, n, lo)) N++;
    return scale2(N, (int64_t)base + lo); /* exact: N <= 2^53 on double's grid */
}
