/* The value functions of gemmcheck/format.h without their floating-point environment guard.
 * gemmcheck's own code runs in the default environment (src/util/fpenv.h): inside
 * the guard of the public function that was called, or in the command line tool, which never
 * leaves it. These are the same functions, called per element and per product where a guard's
 * test (about 5 ns) would double their cost (internal: for src/core/ and fuzz/, kernels/, oracles/,
 * refimpl/, src/backends/, src/certify/, src/check/, src/cli/, src/run/). */
#ifndef GEMMCHECK_CORE_FORMAT_INTERNAL_H
#define GEMMCHECK_CORE_FORMAT_INTERNAL_H

#include <math.h>
#include <string.h>

#include "gemmcheck/format.h"

double gck_fmt_round_grid(double x, gck_format fmt);

/* x rounded once to the format's grid (ties to even, beyond its largest value to Inf); NaN, Inf
 * and zeros as they are. Inline: f64 is x, f32 the hardware conversion (exactly this rounding);
 * the narrower formats by integers in gck_fmt_round_grid, whatever the FPU mode. Many loops
 * round each value they touch (generating operands, the reference GEMM, the checker's bound). */
static inline double gck_fmt_round_to(double x, gck_format fmt) {
    if (fmt == GCK_F64 || !isfinite(x) || x == 0.0) return x;
    if (fmt == GCK_F32) return (double)(float)x;
    return gck_fmt_round_grid(x, fmt);
}
double gck_fmt_round2_to(double hi, double lo, gck_format fmt);
double gck_fmt_f16_to_double(uint16_t h);
float gck_fmt_f16_to_float(uint16_t h);
uint16_t gck_fmt_f16_from_double(double x);
uint16_t gck_fmt_f16_from_float(float x);
double gck_fmt_bf16_to_double(uint16_t h);
uint16_t gck_fmt_bf16_from_double(double x);
uint16_t gck_fmt_bf16_from_float(float x);
gck_class gck_fmt_classify(double x, gck_format fmt);
double gck_fmt_ulp(double x, gck_format fmt);
double gck_fmt_next_up(double x, gck_format fmt);
double gck_fmt_next_down(double x, gck_format fmt);
double gck_fmt_load(const void *base, gck_format fmt, int64_t index);
void gck_fmt_store(void *base, gck_format fmt, int64_t index, double x);

/* Whether every value of format t is a float (f16, bf16, f32 and narrower): copies of such
 * values may be held as floats, exactly. */
static inline bool gck_fmt_floats_hold(gck_format t) {
    const gck_format_info *f = gck_format_get(t);
    return f->precision <= 24 && f->emax <= 127 && f->min_subnormal >= 0x1p-149;
}

/* The stored value as a double (NaN and Inf kept), inline: gck_fmt_f16_to_double,
 * gck_fmt_bf16_to_double and gck_fmt_load are these; a pass over many values of one format
 * calls gck_fmt_load_as with the format a constant, which leaves a few shifts per value. */
static inline double gck_fmt_f16_bits(uint16_t h) {
    /* without a branch (values of random classes mispredict one): each class's bits made, the
     * right one selected; a NaN is the default quiet NaN with h's sign */
    uint64_t sign = (uint64_t)(h & 0x8000u) << 48, m = h & 0x3ffu;
    unsigned e = (h >> 10) & 0x1fu;
    double sub = (double)m * 0x1p-24; /* zero and subnormal halves: exact */
    uint64_t u, normal = (uint64_t)(e + 1023 - 15) << 52 | m << 42, s;
    memcpy(&s, &sub, sizeof s);
    u = e == 0      ? s
        : e == 0x1f ? (m ? UINT64_C(0x7ff8000000000000) : UINT64_C(0x7ff0000000000000))
                    : normal;
    u |= sign;
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static inline double gck_fmt_bf16_bits(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return (double)f;
}

static inline __attribute__((always_inline)) double gck_fmt_load_as(const void *base,
                                                                    gck_format fmt, int64_t index) {
    switch (fmt) {
    case GCK_F16: return gck_fmt_f16_bits(((const uint16_t *)base)[index]);
    case GCK_BF16: return gck_fmt_bf16_bits(((const uint16_t *)base)[index]);
    case GCK_TF32:
    case GCK_F32: return (double)((const float *)base)[index];
    case GCK_F64: return ((const double *)base)[index];
    default: return NAN;
    }
}

/* fn(args..., f) with f the storage format of t as a constant (TF32 is stored as f32). */
#define GCK_FOR_EACH_STORED(t, fn, ...)                                                            \
    switch (t) {                                                                                   \
    case GCK_F16: fn(__VA_ARGS__, GCK_F16); break;                                                 \
    case GCK_BF16: fn(__VA_ARGS__, GCK_BF16); break;                                               \
    case GCK_F64: fn(__VA_ARGS__, GCK_F64); break;                                                 \
    default: fn(__VA_ARGS__, GCK_F32); break;                                                      \
    }

#endif
