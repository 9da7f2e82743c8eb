/* Conformance probes: the instructions the SIMD paths use beyond IEEE 754 arithmetic, checked
 * against their documented semantics (Intel SDM, "VDPBF16PS", "VCVTNEPS2BF16", "VCVTPH2PS",
 * "VCVTPS2PH"). AMD and Intel implement them separately; a path that relies on one is offered
 * only where its probe passes (gck_kpath_supported), and the tests run every probe on every host.
 *
 * Each probe takes the operation under test as a function, so that the tests can also show that
 * a probe rejects a wrong implementation. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "format_internal.h"
#include "kernels_internal.h"
#include "text.h"

#define PROBE_FAIL(...) (gck_fail(GCK_EINVAL, why, len, __VA_ARGS__), false)

static float f32_of_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t bits_of_f32(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* ---- VDPBF16PS ---------------------------------------------------------------------------- */

/* A bf16 operand as the instruction reads it: denormals as zeros of their sign (DAZ). */
static float bf16_daz(uint16_t h) {
    return (h & 0x7f80) == 0 ? f32_of_bits((uint32_t)(h & 0x8000) << 16) : gck_bf16_to_float(h);
}

/* acc + x*y as one FP32 fused multiply-add rounded to nearest even, a denormal acc read as zero
 * and a denormal result flushed to a zero of its sign, tininess judged after rounding (the
 * result rounded to 24 bits with an unbounded exponent is below 2^-126). */
static float dot_step(float acc, float x, float y) {
    if (acc != 0 && fabsf(acc) < 0x1p-126f) acc = copysignf(0.0f, acc);
    float r = fmaf(x, y, acc);
    if (r == 0 || !isfinite(r) || fabsf(r) >= 0x1p-125f || x == 0 || y == 0) return r;
    /* A non-zero sum this small with a non-zero product needs |acc| and |x*y| below about 2^-98
     * (their grids would otherwise not reach it), so |x|, |y| < 2^28 (both are normal) and
     * scaling by 2^64 neither overflows nor leaves the normal range for a result that is not
     * tiny: rs is the exponent-unbounded rounding, scaled. */
    float rs = fmaf(x * 0x1p32f, y * 0x1p32f, acc * 0x1p64f);
    return fabsf(rs) < 0x1p-62f ? copysignf(0.0f, rs) : rs * 0x1p-64f;
}

float gck_kdot2_sdm(float acc, uint16_t a0, uint16_t b0, uint16_t a1, uint16_t b1) {
    acc = dot_step(acc, bf16_daz(a1), bf16_daz(b1)); /* the odd-indexed pair first */
    return dot_step(acc, bf16_daz(a0), bf16_daz(b0));
}

static uint16_t bf(float x) { return (uint16_t)(bits_of_f32(x) >> 16); }

/* Cases whose results the documented semantics fix and the plausible alternatives change. */
typedef struct dot_case {
    float acc, a0, b0, a1, b1, want;
    const char *what;
} dot_case;

static const dot_case dot_cases[] = {
    {0x1p24f, -0x1p12f, 0x1p12f, 1, 1, 0, "the odd pair is added first (even first gives 1)"},
    {0x1p24f, 1, 1, -0x1p12f, 0x1p12f, 1, "the odd pair is added first (even first gives 0)"},
    {0x1p24f, 1, 1, 1, 1, 0x1p24f, "two roundings, not one (one rounding gives 2^24+2)"},
    {1, 0x1p-12f, 0x1p-12f, 0, 0, 1, "ties round to even (down)"},
    {1 + 0x1p-23f, 0x1p-12f, 0x1p-12f, 0, 0, 1 + 0x1p-22f, "ties round to even (up)"},
    {0, 0x1p-70f, 0x1p-70f, 0, 0, 0, "denormal results flushed (FTZ)"},
    {0, -0x1p-70f, 0x1p-70f, 0, 0, -0.0f, "a flushed result keeps its sign"},
    {0x1p-126f, -0x3p-76f, 0x1p-76f, 0, 0, 0, "tininess after rounding (flushed)"},
    {0x1p-126f, -0x1p-80f, 0x1p-80f, 0, 0, 0x1p-126f, "tininess after rounding (kept)"},
    {0x1p-130f, 0x1p-63f, 0x1p-63f, 0, 0, 0x1p-126f, "a denormal accumulator read as zero"},
    {3e38f, 0x1p127f, 2, 0, 0, INFINITY, "overflow to infinity"},
};

/* The denormal operands: bf16 0x0001 (2^-133) read as zero. */
static const uint16_t dot_daz[][4] = {
    {0x0001, 0x6380, 0, 0}, {0x6380, 0x0001, 0, 0}, {0, 0, 0x8001, 0x6380}};

static bool same_f32(float got, float want) {
    return isnan(want) ? isnan(got) : bits_of_f32(got) == bits_of_f32(want);
}

static uint64_t probe_rand(uint64_t *s) {
    *s += 0x9e3779b97f4a7c15u;
    uint64_t z = *s;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* bf16 bits weighted towards the edges: denormals, tiny and huge exponents, Inf and NaN. */
static uint16_t probe_bf16(uint64_t *s) {
    uint64_t r = probe_rand(s);
    uint16_t sign = (uint16_t)(r & 0x8000), man = (uint16_t)(r >> 16 & 0x7f);
    switch (r >> 32 & 7) {
    case 0: return sign | man;                                           /* denormal, zero */
    case 1: return sign | (uint16_t)((1 + (r >> 40) % 40) << 7) | man;   /* tiny */
    case 2: return sign | (uint16_t)((214 + (r >> 40) % 41) << 7) | man; /* huge, Inf, NaN */
    default: return sign | (uint16_t)((96 + (r >> 40) % 64) << 7) | man; /* around 1 */
    }
}

bool gck_kprobe_dot2(gck_kdot2_fn f, char *why, size_t len) {
    for (size_t i = 0; i < sizeof dot_cases / sizeof dot_cases[0]; i++) {
        const dot_case *d = &dot_cases[i];
        float got = f(d->acc, bf(d->a0), bf(d->b0), bf(d->a1), bf(d->b1));
        if (!same_f32(got, d->want))
            return PROBE_FAIL("VDPBF16PS: %s: %a + %a*%a + %a*%a gave %a, "
                              "documented %a",
                              d->what, d->acc, d->a1, d->b1, d->a0, d->b0, got, d->want);
    }
    for (size_t i = 0; i < sizeof dot_daz / sizeof dot_daz[0]; i++) {
        const uint16_t *v = dot_daz[i];
        float got = f(0, v[0], v[1], v[2], v[3]);
        if (got != 0)
            return PROBE_FAIL("VDPBF16PS: bf16 %04x*%04x + %04x*%04x with a "
                              "denormal factor gave %a, documented 0",
                              v[2], v[3], v[0], v[1], got);
    }
    uint64_t s = 2027;
    for (int i = 0; i < 200000; i++) {
        float acc = f32_of_bits((uint32_t)probe_rand(&s));
        uint16_t a0 = probe_bf16(&s), b0 = probe_bf16(&s), a1 = probe_bf16(&s), b1 = probe_bf16(&s);
        float got = f(acc, a0, b0, a1, b1), want = gck_kdot2_sdm(acc, a0, b0, a1, b1);
        if (!same_f32(got, want))
            return PROBE_FAIL("VDPBF16PS: %a + bf16 %04x*%04x + %04x*%04x "
                              "gave %a, documented %a",
                              acc, a1, b1, a0, b0, got, want);
    }
    return true;
}

/* ---- TDPBF16PS ----------------------------------------------------------------------------- */

float gck_ktile_sdm(float acc, const uint16_t a[GCK_AMX_KSTEP], const uint16_t b[GCK_AMX_KSTEP]) {
    float even = 0.0f, odd = 0.0f;
    for (int k = 0; k < GCK_AMX_KSTEP; k += 2) {
        even = dot_step(even, bf16_daz(a[k]), bf16_daz(b[k]));
        odd = dot_step(odd, bf16_daz(a[k + 1]), bf16_daz(b[k + 1]));
    }
    /* the chains are never denormal (flushed), so adding one as a product with 1 reads it as
     * it is; the accumulator is read as zero when denormal */
    float s = dot_step(even, odd, 1.0f);
    return dot_step(acc, s, 1.0f);
}

/* Crafted elements: k values listed as (k, a, b), the rest +0. */
typedef struct tile_case {
    float acc;
    int n;
    struct {
        int k;
        float a, b;
    } t[4];
    float want;
    const char *what;
} tile_case;

static const tile_case tile_cases[] = {
    {0,
     4,
     {{0, 0x1p24f, 1}, {2, 1, 1}, {1, 1, 1}, {3, 1, 1}},
     0x1p24f + 2,
     "even and odd k are two chains (one chain in k order gives 2^24)"},
    {0x1p24f,
     2,
     {{0, 1, 1}, {2, 1, 1}},
     0x1p24f + 2,
     "the chains start at +0 and the step's sum is added to acc last (2^24 otherwise)"},
    {1,
     2,
     {{0, 0x1p-12f, 0x1p-12f}, {1, 0x1p-12f, 0x1p-12f}},
     1 + 0x1p-23f,
     "even + odd is rounded before acc is added ((acc + even) + odd gives 1)"},
    {1, 1, {{0, 0x1p-12f, 0x1p-12f}}, 1, "ties round to even (down)"},
    {1 + 0x1p-23f, 1, {{1, 0x1p-12f, 0x1p-12f}}, 1 + 0x1p-22f, "ties round to even (up)"},
    {0, 1, {{0, 0x1p-70f, 0x1p-70f}}, 0, "denormal results flushed (FTZ)"},
    {0x1p-130f, 1, {{0, 0x1p-63f, 0x1p-63f}}, 0x1p-126f, "a denormal accumulator read as zero"},
    {3e38f, 1, {{1, 0x1p127f, 2}}, INFINITY, "overflow to infinity"},
    {0,
     2,
     {{30, 0x1p-60f, 0x1p-60f}, {31, 0x1p60f, 0x1p60f}},
     0x1p120f,
     "k = 30 and 31 belong to the step"},
};

/* A bf16 value with its exponent moved into [2^-20, 2^20) (sign and fraction kept). */
static uint16_t exponent_near_one(uint16_t h) {
    return (uint16_t)((h & 0x807f) | (uint16_t)((107 + (h >> 7 & 0xff) % 40) << 7));
}

bool gck_kprobe_tile(gck_ktile_fn f, char *why, size_t len) {
    uint16_t a[GCK_AMX_KSTEP], b[GCK_AMX_KSTEP];
    for (size_t i = 0; i < sizeof tile_cases / sizeof tile_cases[0]; i++) {
        const tile_case *d = &tile_cases[i];
        memset(a, 0, sizeof a);
        memset(b, 0, sizeof b);
        for (int t = 0; t < d->n; t++) a[d->t[t].k] = bf(d->t[t].a), b[d->t[t].k] = bf(d->t[t].b);
        float got = f(d->acc, a, b);
        if (!same_f32(got, d->want))
            return PROBE_FAIL("TDPBF16PS: %s: gave %a, documented %a", d->what, got, d->want);
    }
    memset(a, 0, sizeof a);
    memset(b, 0, sizeof b);
    a[5] = 0x0001, b[5] = 0x6380; /* 2^-133 * 2^72: a denormal factor, read as zero */
    float z = f(0, a, b);
    if (z != 0) return PROBE_FAIL("TDPBF16PS: a denormal bf16 factor gave %a, documented 0", z);
    uint64_t s = 2044;
    for (int i = 0; i < 50000; i++) {
        float acc = f32_of_bits((uint32_t)probe_rand(&s));
        for (int k = 0; k < GCK_AMX_KSTEP; k++) a[k] = probe_bf16(&s), b[k] = probe_bf16(&s);
        if (i % 2) /* half of them cancel: every product of the step in [2^-40, 2^40] */
            for (int k = 0; k < GCK_AMX_KSTEP; k++) {
                a[k] = exponent_near_one(a[k]), b[k] = exponent_near_one(b[k]);
                acc = (float)(probe_rand(&s) % 2001) - 1000.0f;
            }
        float got = f(acc, a, b), want = gck_ktile_sdm(acc, a, b);
        if (!same_f32(got, want))
            return PROBE_FAIL(
                "TDPBF16PS: random element %d (acc %a, a[0] %04x, b[0] %04x) gave %a, "
                "documented %a",
                i, acc, a[0], b[0], got, want);
    }
    return true;
}

/* ---- conversions from f32 ------------------------------------------------------------------ */

/* Inputs for the conversions: every upper half, with lower halves at and around the rounding
 * boundaries of both bf16 (16 dropped bits) and f16 (13) and two pseudo-random ones. */
static uint32_t conv_input(uint32_t hi, int v, uint64_t *s) {
    static const uint16_t lo[] = {0x0000, 0x0001, 0x0fff, 0x1000, 0x1001, 0x7fff,
                                  0x8000, 0x8001, 0xefff, 0xf000, 0xffff};
    enum { NLO = sizeof lo / sizeof lo[0] };
    return hi << 16 | (v < NLO ? lo[v] : (uint16_t)probe_rand(s));
}
enum { CONV_VARIANTS = 13 };

/* VCVTNEPS2BF16: round to nearest even; denormal inputs read as zero; NaN quieted, its upper
 * bits kept. */
static uint16_t cvtbf16_sdm(float x) {
    uint32_t u = bits_of_f32(x);
    if (isnan(x)) return (uint16_t)(u >> 16 | 0x0040);
    if ((u & 0x7f800000) == 0) return (uint16_t)(u >> 16 & 0x8000);
    return gck_fmt_bf16_from_float(x);
}

bool gck_kprobe_cvtneps2bf16(gck_kcvt_bf16_fn f, char *why, size_t len) {
    uint64_t s = 7;
    for (uint32_t hi = 0; hi < 0x10000; hi++)
        for (int v = 0; v < CONV_VARIANTS; v++) {
            float x = f32_of_bits(conv_input(hi, v, &s));
            uint16_t got = f(x), want = cvtbf16_sdm(x);
            if (got != want)
                return PROBE_FAIL("VCVTNEPS2BF16: %08x gave %04x, "
                                  "documented %04x",
                                  bits_of_f32(x), got, want);
        }
    return true;
}

/* ---- F16C ------------------------------------------------------------------------------------ */

static bool same_f16_result(uint16_t got, uint16_t want) {
    bool gn = (got & 0x7c00) == 0x7c00 && (got & 0x3ff),
         wn = (want & 0x7c00) == 0x7c00 && (want & 0x3ff);
    return gn || wn ? gn && wn && (got & 0x8000) == (want & 0x8000) : got == want;
}

bool gck_kprobe_f16c(gck_kf16_to_f32_fn to32, gck_kf16_from_f32_fn to16, char *why, size_t len) {
    for (uint32_t h = 0; h < 0x10000; h++) { /* VCVTPH2PS: exact, NaN quieted with its sign */
        float got = to32((uint16_t)h), want = gck_fmt_f16_to_float((uint16_t)h);
        bool ok = isnan(want) ? isnan(got) && signbit(got) == signbit(want) &&
                                    (bits_of_f32(got) & 0x00400000)
                              : bits_of_f32(got) == bits_of_f32(want);
        if (!ok)
            return PROBE_FAIL("VCVTPH2PS: f16 %04x gave %08x, documented "
                              "%08x",
                              h, bits_of_f32(got), bits_of_f32(want));
    }
    uint64_t s = 11;
    for (uint32_t hi = 0; hi < 0x10000; hi++) /* VCVTPS2PH, imm8 = nearest even */
        for (int v = 0; v < CONV_VARIANTS; v++) {
            float x = f32_of_bits(conv_input(hi, v, &s));
            uint16_t got = to16(x), want = gck_fmt_f16_from_float(x);
            if (!same_f16_result(got, want))
                return PROBE_FAIL("VCVTPS2PH: %08x gave %04x, documented "
                                  "%04x",
                                  bits_of_f32(x), got, want);
        }
    return true;
}

/* ---- VFMADDPH ----------------------------------------------------------------------------- */

/* f16 results with the documented values worked by hand: one rounding of the exact a*b + c to
 * nearest even, subnormals kept, overflow to infinity. */
static const struct fma16_case {
    uint16_t a, b, c, want;
    const char *what;
} fma16_cases[] = {
    /* (1 + 2^-10)^2 + 2^-11 = 1 + 2^-9 + 2^-11 + 2^-20: above the midpoint of 1 + 2^-9 and
     * 1 + 3*2^-10 by the product's last bit; a rounded product would tie to even (3c02) */
    {0x3c01, 0x3c01, 0x1000, 0x3c03, "a product's low bits break a tie (one rounding)"},
    {0x0400, 0x3800, 0x0000, 0x0200, "2^-14 * 0.5: a subnormal result kept"},
    {0x0001, 0x3c00, 0x0000, 0x0001, "the least subnormal times 1: read as itself"},
    {0x0001, 0x3800, 0x0000, 0x0000, "2^-25 ties to the even +0"},
    {0x0003, 0x3800, 0x0000, 0x0002, "3 * 2^-25 ties to the even 2^-23"},
    {0x7bff, 0x3c00, 0x4c00, 0x7c00, "65504 + 16 ties past the largest finite: infinity"},
    {0x7bff, 0x3c00, 0x4bff, 0x7bff, "65504 + 15.99: stays finite"},
    {0xbc00, 0x0000, 0x0000, 0x0000, "-1 * 0 + 0 = +0"},
    {0xbc00, 0x0000, 0x8000, 0x8000, "-1 * 0 + -0 = -0"},
    {0x3c00, 0x3c00, 0xbc00, 0x0000, "1 * 1 - 1: exact cancellation is +0"},
    /* 1.96875 + 0x19d0*0x3821: the exact sum lies just below a midpoint of c's grid, and
     * rounded first to 24 bits (an f32 sum) it would sit on it and tie upward to 3fe2 */
    {0x19d0, 0x3821, 0x3fe0, 0x3fe1, "bits below f32's precision decide (one rounding)"},
};

/* Random f16 bits of a finite value. */
static uint16_t probe_f16(uint64_t *s) {
    uint16_t h;
    do h = (uint16_t)probe_rand(s);
    while ((h & 0x7c00) == 0x7c00);
    return h;
}

bool gck_kprobe_fma16(gck_kfma16_fn f, char *why, size_t len) {
    for (size_t i = 0; i < sizeof fma16_cases / sizeof fma16_cases[0]; i++) {
        const struct fma16_case *d = &fma16_cases[i];
        uint16_t got = f(d->a, d->b, d->c);
        if (got != d->want)
            return PROBE_FAIL("VFMADDPH: %s: %04x*%04x + %04x gave %04x, documented %04x", d->what,
                              d->a, d->b, d->c, got, d->want);
    }
    uint64_t s = 29;
    for (int i = 0; i < 200000; i++) {
        uint16_t a = probe_f16(&s), b = probe_f16(&s), c;
        /* c near -a*b (cancellation, ties at c's grid broken by the product's bits), or any */
        if (i % 2)
            c = gck_fmt_f16_from_float(-gck_fmt_f16_to_float(a) * gck_fmt_f16_to_float(b)) ^
                (uint16_t)(probe_rand(&s) % 4);
        else
            c = probe_f16(&s);
        if ((c & 0x7c00) == 0x7c00) continue;
        uint16_t got = f(a, b, c), want = gck_kfma16_sim(a, b, c);
        if (!same_f16_result(got, want))
            return PROBE_FAIL("VFMADDPH: %04x*%04x + %04x gave %04x, documented %04x", a, b, c, got,
                              want);
    }
    return true;
}
