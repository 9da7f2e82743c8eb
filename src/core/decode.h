/* Decoding the stored bits of an input value into sign, integer significand and exponent, shared
 * by the exact oracle, its Ozaki splitting and the checker's facts of a line (internal: for
 * src/core/ and oracles/, src/check/). */
#ifndef GEMMCHECK_CORE_DECODE_H
#define GEMMCHECK_CORE_DECODE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "format_internal.h"
#include "gemmcheck/format.h"

typedef struct dec {
    uint64_t m;  /* significand (0 for zero; odd in the shortest form) */
    int32_t e;   /* exponent of its last bit */
    int32_t neg; /* 1 for negative */
} dec;

/* The storage layout of an input format: fraction bits, exponent bits, bytes. TF32 operands
 * are stored as binary32. */
typedef struct layout {
    int fb, eb, bytes;
} layout;

static inline uint64_t raw_at(const void *base, int bytes, int64_t index) {
    const char *p = (const char *)base + index * bytes;
    uint16_t h;
    uint32_t s;
    uint64_t d;
    switch (bytes) {
    case 2: memcpy(&h, p, 2); return h;
    case 4: memcpy(&s, p, 4); return s;
    default: memcpy(&d, p, 8); return d;
    }
}

/* x = (-1)^neg·m·2^e from the bits of a format with `fb` fraction and `eb` exponent bits, m the
 * stored significand (with its implicit bit). *special: Inf or NaN (m = 0 then). */
static inline dec decode_raw(uint64_t u, int fb, int eb, bool *special) {
    uint64_t emask = (UINT64_C(1) << eb) - 1, ef = (u >> fb) & emask;
    dec d = {u & ((UINT64_C(1) << fb) - 1), 0, (int32_t)((u >> (fb + eb)) & 1)};
    *special = ef == emask;
    if (*special || (!ef && !d.m)) {
        d.m = 0;
        return d;
    }
    if (ef) d.m |= UINT64_C(1) << fb;
    d.e = (int32_t)(ef ? ef : 1) - ((1 << (eb - 1)) - 1) - fb;
    return d;
}

/* The shortest form: the trailing zeros of m shifted out (keeps fixed-point widths small). */
static inline dec strip(dec d) {
    if (d.m) {
        int tz = __builtin_ctzll(d.m);
        d.m >>= tz;
        d.e += tz;
    }
    return d;
}

/* The layout of an input format (TF32 is stored as binary32). */
static inline layout layout_of(gck_format t) {
    switch (t) {
    case GCK_F16: return (layout){10, 5, 2};
    case GCK_BF16: return (layout){7, 8, 2};
    case GCK_F64: return (layout){52, 11, 8};
    default: return (layout){23, 8, 4};
    }
}

/* `call(lay)` instantiated for the storage layout of format t, lay a constant (so that the
 * decoding in a pass inlines to a few shifts and masks): GCK_FOR_EACH_STORED's formats. */
#define FOR_EACH_LAYOUT(t, call)    GCK_FOR_EACH_STORED(t, LAYOUT_CALL_, call)
#define LAYOUT_CALL_(call, format_) call(layout_of(format_))

static inline int bits_of(uint64_t m) { return m ? 64 - __builtin_clzll(m) : 0; }

/* 2^e for -1074 <= e <= 1023, built from its bits (no libm call). */
static inline double pow2_bits(int64_t e) {
    uint64_t u = e >= -1022 ? (uint64_t)(e + 1023) << 52 : UINT64_C(1) << (e + 1074);
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

#endif
