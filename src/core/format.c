/* Number formats. Every rounding goes through gck_round_to() (gck_fmt_round_to() inside
 * gemmcheck), which rounds a double once to
 * the format's grid: scale by the quantum of the value's binade (exact, a power of two), round
 * to an integer with ties to even, scale back (exact). The double holds every input exactly,
 * so this is one rounding of the true value, never a double rounding. */
#include "gemmcheck/format.h"

#include "format_internal.h"
#include "fpenv.h"

#include <math.h>
#include <string.h>
#include <strings.h>

static const gck_format_info format_table[GCK_FORMAT_COUNT] = {
    [GCK_F16] = {"f16", 2, 11, -14, 15, 0x1.ffcp+15, 0x1p-14, 0x1p-24, 0x1p-10, true},
    [GCK_BF16] = {"bf16", 2, 8, -126, 127, 0x1.fep+127, 0x1p-126, 0x1p-133, 0x1p-7, true},
    [GCK_TF32] = {"tf32", 4, 11, -126, 127, 0x1.ffcp+127, 0x1p-126, 0x1p-136, 0x1p-10, false},
    [GCK_F32] = {"f32", 4, 24, -126, 127, 0x1.fffffep+127, 0x1p-126, 0x1p-149, 0x1p-23, true},
    [GCK_F64] = {"f64", 8, 53, -1022, 1023, 0x1.fffffffffffffp+1023, 0x1p-1022, 0x1p-1074, 0x1p-52,
                 true},
};

const gck_format_info *gck_format_get(gck_format fmt) { return &format_table[fmt]; }

/* Other names users write for the formats (NumPy's, PyTorch's, C's, the fpN spelling). */
static const struct {
    const char *alias;
    gck_format fmt;
} aliases[] = {
    {"fp16", GCK_F16}, {"half", GCK_F16},    {"float16", GCK_F16}, {"bfloat16", GCK_BF16},
    {"fp32", GCK_F32}, {"float32", GCK_F32}, {"float", GCK_F32},   {"single", GCK_F32},
    {"fp64", GCK_F64}, {"float64", GCK_F64}, {"double", GCK_F64},
};

bool gck_format_parse(const char *name, gck_format *out) {
    for (int f = 0; f < GCK_FORMAT_COUNT; f++) {
        if (strcasecmp(name, format_table[f].name) == 0) {
            *out = (gck_format)f;
            return true;
        }
    }
    for (size_t a = 0; a < sizeof aliases / sizeof aliases[0]; a++)
        if (strcasecmp(name, aliases[a].alias) == 0) {
            *out = aliases[a].fmt;
            return true;
        }
    return false;
}

/* Exponent E of the binade of a finite non-zero x: 2^E <= |x| < 2^(E+1). */
static int binade(double x) {
    int e;
    (void)frexp(x, &e);
    return e - 1;
}

/* gck_fmt_round_to (format_internal.h) for the formats it does not round inline: f16, bf16 and
 * tf32, x finite and nonzero */
double gck_fmt_round_grid(double x, gck_format fmt) {
    const gck_format_info *f = &format_table[fmt];
    /* x = m·2^(ef - 1075); the grid of the result is 2^q, q = max(binade, emin) - p + 1 (a
     * subnormal double lies below every emin here). Integer rounding, whatever the FPU mode. */
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    int ef = (int)((u >> 52) & 0x7ff);
    uint64_t m = u & ((UINT64_C(1) << 52) - 1);
    if (ef)
        m |= UINT64_C(1) << 52;
    else
        ef = 1;
    int e = ef - 1023;
    if (e < f->emin) e = f->emin;
    int q = e - f->precision + 1, d = q - (ef - 1075); /* d: bits below the grid */
    if (d >= 54) {
        m = 0; /* |x| < 2^(q-1) */
    } else if (d > 0) {
        uint64_t rem = m & ((UINT64_C(1) << d) - 1), half = UINT64_C(1) << (d - 1);
        m >>= d;
        if (rem > half || (rem == half && (m & 1))) m++;
    } else { /* x is on the grid already */
        return fabs(x) > f->max ? copysign(INFINITY, x) : x;
    }
    uint64_t pb = (uint64_t)(q + 1023) << 52; /* 2^q, a normal double */
    double p2;
    memcpy(&p2, &pb, sizeof p2);
    double r = (double)m * p2; /* exact: m <= 2^p */
    if (r > f->max) r = INFINITY;
    return copysign(r, x);
}

double gck_fmt_round2_to(double hi, double lo, gck_format fmt) {
    double r = gck_fmt_round_to(hi, fmt);
    if (lo == 0.0 || fmt == GCK_F64 || isnan(hi)) return r;
    const gck_format_info *f = &format_table[fmt];
    if (isinf(r)) {
        /* hi at exactly max + ulp(max)/2 rounds to Inf only if the exact value is not below. */
        double threshold = f->max + ldexp(1.0, f->emax - f->precision);
        if (isfinite(hi) && fabs(hi) == threshold && (lo < 0) != (hi < 0))
            return copysign(f->max, hi);
        return r;
    }
    if (r == hi) return r; /* |lo| <= ulp_double(hi)/2 cannot reach a neighbour */
    double d = hi - r;     /* exact: r is the nearest grid value to hi */
    double other = d > 0 ? gck_fmt_next_up(r, fmt) : gck_fmt_next_down(r, fmt);
    if (isfinite(other) && 2.0 * d == other - r && (lo > 0) == (d > 0)) return other;
    return r;
}

/* ---- 16-bit formats ---------------------------------------------------------------------- */

static int mant_bits(gck_format fmt) { return format_table[fmt].precision - 1; }

static uint16_t exp_mask16(gck_format fmt) {
    return (uint16_t)(0x7fffu & ~((1u << mant_bits(fmt)) - 1u));
}

gck_class gck_bits16_class(uint16_t bits, gck_format fmt) {
    uint16_t em = exp_mask16(fmt), mm = (uint16_t)((1u << mant_bits(fmt)) - 1u);
    if ((bits & em) == em) return (bits & mm) ? GCK_CLASS_NAN : GCK_CLASS_INF;
    if ((bits & em) == 0) return (bits & mm) ? GCK_CLASS_SUBNORMAL : GCK_CLASS_ZERO;
    return GCK_CLASS_NORMAL;
}

uint16_t gck_bits16_next_up(uint16_t bits, gck_format fmt) {
    gck_class k = gck_bits16_class(bits, fmt);
    if (k == GCK_CLASS_NAN) return bits;
    if (bits == exp_mask16(fmt)) return bits; /* +Inf */
    if (bits == 0x8000u) return 0x0001u;      /* -0 -> smallest positive subnormal */
    if (bits & 0x8000u) return (uint16_t)(bits - 1u);
    return (uint16_t)(bits + 1u);
}

uint16_t gck_bits16_next_down(uint16_t bits, gck_format fmt) {
    return (uint16_t)(gck_bits16_next_up((uint16_t)(bits ^ 0x8000u), fmt) ^ 0x8000u);
}

double gck_fmt_f16_to_double(uint16_t h) { return gck_fmt_f16_bits(h); }

float gck_fmt_f16_to_float(uint16_t h) { return (float)gck_fmt_f16_to_double(h); }

uint16_t gck_fmt_f16_from_double(double x) {
    uint16_t sign = signbit(x) ? 0x8000u : 0;
    if (isnan(x)) {
        uint64_t u;
        memcpy(&u, &x, sizeof u);
        return (uint16_t)(sign | 0x7e00u | ((u >> 42) & 0x1ffu)); /* quiet, top payload */
    }
    double r = gck_fmt_round_to(x, GCK_F16);
    if (isinf(r)) return (uint16_t)(sign | 0x7c00u);
    double a = fabs(r);
    if (a == 0.0) return sign;
    if (a < 0x1p-14) return (uint16_t)(sign | (uint16_t)ldexp(a, 24));
    int e = binade(a);
    uint16_t m = (uint16_t)(ldexp(a, 10 - e) - 1024.0);
    return (uint16_t)(sign | (uint16_t)((e + 15) << 10) | m);
}

uint16_t gck_fmt_f16_from_float(float x) { return gck_fmt_f16_from_double((double)x); }

float gck_bf16_to_float(uint16_t h) {
    uint32_t u = (uint32_t)h << 16; /* the bits themselves: a signalling NaN stays one */
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

double gck_fmt_bf16_to_double(uint16_t h) { return gck_fmt_bf16_bits(h); }

uint16_t gck_fmt_bf16_from_double(double x) {
    float f = (float)gck_fmt_round_to(x, GCK_BF16); /* exact: bf16 values are f32 values */
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if (isnan(x)) u |= 0x00400000u; /* quiet, and non-zero in the kept bits */
    return (uint16_t)(u >> 16);
}

uint16_t gck_fmt_bf16_from_float(float x) { return gck_fmt_bf16_from_double((double)x); }

/* ---- any format, values as doubles ------------------------------------------------------- */

gck_class gck_fmt_classify(double x, gck_format fmt) {
    if (isnan(x)) return GCK_CLASS_NAN;
    if (isinf(x)) return GCK_CLASS_INF;
    if (x == 0.0) return GCK_CLASS_ZERO;
    return fabs(x) < format_table[fmt].min_normal ? GCK_CLASS_SUBNORMAL : GCK_CLASS_NORMAL;
}

double gck_fmt_ulp(double x, gck_format fmt) {
    const gck_format_info *f = &format_table[fmt];
    if (isnan(x)) return x;
    if (isinf(x)) return ldexp(1.0, f->emax - f->precision + 1);
    if (x == 0.0) return f->min_subnormal;
    int e = binade(x);
    if (e < f->emin) e = f->emin;
    return ldexp(1.0, e - f->precision + 1);
}

/* Next value below a positive finite x. */
static double next_down_positive(double x, gck_format fmt) {
    const gck_format_info *f = &format_table[fmt];
    double d = gck_fmt_ulp(x, fmt);
    if (x > f->min_normal && ldexp(1.0, binade(x)) == x) d *= 0.5; /* spacing halves below 2^e */
    return x - d;
}

double gck_fmt_next_up(double x, gck_format fmt) {
    const gck_format_info *f = &format_table[fmt];
    if (isnan(x) || (isinf(x) && x > 0)) return x;
    if (isinf(x)) return -f->max;
    if (x == 0.0) return f->min_subnormal;
    if (x < 0) return -next_down_positive(-x, fmt);
    double r = x + gck_fmt_ulp(x, fmt);
    return r > f->max ? INFINITY : r;
}

double gck_fmt_next_down(double x, gck_format fmt) { return -gck_fmt_next_up(-x, fmt); }

double gck_fmt_load(const void *base, gck_format fmt, int64_t index) {
    return gck_fmt_load_as(base, fmt, index);
}

void gck_fmt_store(void *base, gck_format fmt, int64_t index, double x) {
    switch (fmt) {
    case GCK_F16: ((uint16_t *)base)[index] = gck_fmt_f16_from_double(x); break;
    case GCK_BF16: ((uint16_t *)base)[index] = gck_fmt_bf16_from_double(x); break;
    case GCK_TF32: ((float *)base)[index] = (float)gck_fmt_round_to(x, GCK_TF32); break;
    case GCK_F32: ((float *)base)[index] = (float)x; break;
    case GCK_F64: ((double *)base)[index] = x; break;
    default: break;
    }
}

/* ---- the public functions, in gemmcheck's floating-point environment (fpenv.h) ------------ */

GCK_FPENV_GUARDED(double, gck_round_to, gck_fmt_round_to, (double x, gck_format fmt), (x, fmt))
GCK_FPENV_GUARDED(double, gck_round2_to, gck_fmt_round2_to, (double hi, double lo, gck_format fmt),
                  (hi, lo, fmt))
GCK_FPENV_GUARDED(double, gck_f16_to_double, gck_fmt_f16_to_double, (uint16_t h), (h))
GCK_FPENV_GUARDED(float, gck_f16_to_float, gck_fmt_f16_to_float, (uint16_t h), (h))
GCK_FPENV_GUARDED(uint16_t, gck_f16_from_double, gck_fmt_f16_from_double, (double x), (x))
GCK_FPENV_GUARDED(uint16_t, gck_f16_from_float, gck_fmt_f16_from_float, (float x), (x))
GCK_FPENV_GUARDED(double, gck_bf16_to_double, gck_fmt_bf16_to_double, (uint16_t h), (h))
GCK_FPENV_GUARDED(uint16_t, gck_bf16_from_double, gck_fmt_bf16_from_double, (double x), (x))
GCK_FPENV_GUARDED(uint16_t, gck_bf16_from_float, gck_fmt_bf16_from_float, (float x), (x))
GCK_FPENV_GUARDED(gck_class, gck_classify, gck_fmt_classify, (double x, gck_format fmt), (x, fmt))
GCK_FPENV_GUARDED(double, gck_ulp, gck_fmt_ulp, (double x, gck_format fmt), (x, fmt))
GCK_FPENV_GUARDED(double, gck_next_up, gck_fmt_next_up, (double x, gck_format fmt), (x, fmt))
GCK_FPENV_GUARDED(double, gck_next_down, gck_fmt_next_down, (double x, gck_format fmt), (x, fmt))
GCK_FPENV_GUARDED(double, gck_load, gck_fmt_load, (const void *base, gck_format fmt, int64_t index),
                  (base, fmt, index))
GCK_FPENV_GUARDED_VOID(gck_store, gck_fmt_store,
                       (void *base, gck_format fmt, int64_t index, double x), (base, fmt, index, x))
