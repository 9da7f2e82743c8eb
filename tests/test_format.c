/* Number formats: the format table, exhaustive checks over all 65,536 patterns of binary16 and
 * bfloat16, and conversions from double checked against MPFR's IEEE emulation. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "testutil.h"

Test(format, table_facts_follow_from_precision_and_exponents) {
    for (int fi = 0; fi < GCK_FORMAT_COUNT; fi++) {
        const gck_format_info *f = gck_format_get((gck_format)fi);
        cr_expect_eq(f->max, ldexp(2.0 - ldexp(1.0, 1 - f->precision), f->emax), "%s max", f->name);
        cr_expect_eq(f->min_normal, ldexp(1.0, f->emin), "%s min_normal", f->name);
        cr_expect_eq(f->min_subnormal, ldexp(1.0, f->emin - f->precision + 1), "%s min_sub",
                     f->name);
        cr_expect_eq(f->epsilon, ldexp(1.0, 1 - f->precision), "%s epsilon", f->name);
        gck_format back;
        cr_expect(gck_format_parse(f->name, &back) && back == (gck_format)fi);
    }
    const gck_format_info *f32 = gck_format_get(GCK_F32), *f64 = gck_format_get(GCK_F64);
    cr_expect_eq(f32->max, FLT_MAX);
    cr_expect_eq(f32->min_normal, FLT_MIN);
    cr_expect_eq(f32->min_subnormal, FLT_TRUE_MIN);
    cr_expect_eq(f32->precision, FLT_MANT_DIG);
    cr_expect_eq(f64->max, DBL_MAX);
    cr_expect_eq(f64->min_subnormal, DBL_TRUE_MIN);
    cr_expect_eq(f64->precision, DBL_MANT_DIG);
    cr_expect_eq(gck_format_get(GCK_F16)->max, 65504.0);
    gck_format dummy;
    cr_expect_not(gck_format_parse("f8", &dummy));
    cr_expect_not(gck_format_parse("", &dummy));
}

/* The value of a 16-bit pattern built by MPFR from its fields, independent of the library. */
static double mpfr_decode16(uint16_t h, gck_format fmt) {
    int mbits = gck_format_get(fmt)->precision - 1;
    int ebits = 15 - mbits;
    int bias = (1 << (ebits - 1)) - 1;
    unsigned e = (h >> mbits) & ((1u << ebits) - 1u), m = h & ((1u << mbits) - 1u);
    int neg = h >> 15;
    if (e == (1u << ebits) - 1u) return m ? NAN : (neg ? -INFINITY : INFINITY);
    mpfr_t v;
    mpfr_init2(v, 64);
    unsigned long sig = e ? (m | (1ul << mbits)) : m;
    long exp = (e ? (long)e : 1) - bias - mbits;
    mpfr_set_ui_2exp(v, sig, exp, MPFR_RNDN);
    if (neg) mpfr_neg(v, v, MPFR_RNDN);
    double d = mpfr_get_d(v, MPFR_RNDN);
    mpfr_clear(v);
    return d;
}

/* Next value of the format in direction rnd (RNDU / RNDD) after x, by MPFR. */
static double mpfr_next(double x, gck_format fmt, mpfr_rnd_t rnd) {
    mpfr_t v;
    mpfr_init2(v, 3300); /* x + 2^-3000 exactly */
    mpfr_set_d(v, x, MPFR_RNDN);
    mpfr_t tiny;
    mpfr_init2(tiny, 8);
    mpfr_set_ui_2exp(tiny, 1, -3000, MPFR_RNDN);
    if (rnd == MPFR_RNDU)
        mpfr_add(v, v, tiny, MPFR_RNDN);
    else
        mpfr_sub(v, v, tiny, MPFR_RNDN);
    double d = mpfr_round_exact(v, fmt, rnd);
    mpfr_clears(v, tiny, (mpfr_ptr)0);
    return d;
}

typedef uint16_t (*enc_fn)(double);
typedef uint16_t (*encf_fn)(float);
typedef double (*dec_fn)(uint16_t);

static void exhaustive16(gck_format fmt, enc_fn enc, encf_fn encf, dec_fn dec) {
    const gck_format_info *f = gck_format_get(fmt);
    long checks = 0, nans = 0, ties = 0;
    for (uint32_t u = 0; u <= 0xffff; u++) {
        uint16_t h = (uint16_t)u;
        double x = dec(h);
        double ref = mpfr_decode16(h, fmt);
        cr_assert(same_value(x, ref), "%s %#06x decodes to %a, MPFR says %a", f->name, h, x, ref);
        gck_class k = gck_bits16_class(h, fmt);
        cr_assert_eq(k, gck_classify(x, fmt), "%s %#06x class", f->name, h);
        checks += 2;
        if (k == GCK_CLASS_NAN) {
            cr_assert_eq(gck_bits16_class(enc(x), fmt), GCK_CLASS_NAN);
            cr_assert_eq(gck_bits16_class(encf((float)x), fmt), GCK_CLASS_NAN);
            cr_assert_eq(gck_bits16_next_up(h, fmt), h);
            nans++;
            continue;
        }
        cr_assert_eq(enc(x), h, "%s %#06x: encode(decode) = %#06x", f->name, h, enc(x));
        cr_assert_eq(encf((float)x), h, "%s %#06x via float", f->name, h);
        cr_assert_eq(gck_round_to(x, fmt), x);
        cr_assert(
            same_value((double)(fmt == GCK_F16 ? gck_f16_to_float(h) : gck_bf16_to_float(h)), x));
        /* neighbours */
        uint16_t up = gck_bits16_next_up(h, fmt), down = gck_bits16_next_down(h, fmt);
        double xu = dec(up), xd = dec(down);
        if (isinf(x)) {
            /* the end of the line: +Inf goes down to max, -Inf up to -max */
            cr_assert(same_value(x > 0 ? xu : xd, x));
            cr_assert_eq(x > 0 ? xd : xu, x > 0 ? f->max : -f->max);
            cr_assert_eq(x > 0 ? gck_next_down(x, fmt) : gck_next_up(x, fmt),
                         x > 0 ? f->max : -f->max);
        } else {
            cr_assert(same_value(xu, mpfr_next(x, fmt, MPFR_RNDU)), "%s next_up(%a) = %a", f->name,
                      x, xu);
            cr_assert(same_value(gck_next_up(x, fmt), xu), "%s gck_next_up(%a)", f->name, x);
            cr_assert(same_value(xd, mpfr_next(x, fmt, MPFR_RNDD)), "%s next_down(%a) = %a",
                      f->name, x, xd);
            cr_assert(same_value(gck_next_down(x, fmt), xd), "%s gck_next_down(%a)", f->name, x);
        }
        checks += 4;
        /* ulp: the spacing of the binade of |x| */
        if (isfinite(x)) {
            double a = fabs(x);
            double expect = a == f->max ? a - dec(gck_bits16_next_down(h & 0x7fffu, fmt))
                                        : dec(gck_bits16_next_up(h & 0x7fffu, fmt)) - a;
            cr_assert_eq(gck_ulp(x, fmt), expect, "%s ulp(%a)", f->name, x);
            checks++;
        }
        /* every halfway case between x > 0 and its successor, and just off it */
        if (isfinite(x) && !signbit(x)) {
            double y = xu;
            double mid = isinf(y) ? f->max + 0.5 * gck_ulp(f->max, fmt) : 0.5 * (x + y);
            uint16_t even = isinf(y) ? up : ((h & 1u) ? up : h);
            uint16_t lo = h, hi = up;
            for (int s = 0; s < 2; s++) {
                double sg = s ? -1.0 : 1.0;
                uint16_t sb = s ? 0x8000u : 0;
                cr_assert_eq(enc(sg * mid), (uint16_t)(even | sb), "%s tie %a", f->name, sg * mid);
                cr_assert_eq(encf((float)(sg * mid)), (uint16_t)(even | sb), "%s tie via float",
                             f->name);
                cr_assert_eq(enc(sg * nextafter(mid, 0.0)), (uint16_t)(lo | sb), "%s below tie %a",
                             f->name, mid);
                cr_assert_eq(enc(sg * nextafter(mid, INFINITY)), (uint16_t)(hi | sb),
                             "%s above tie %a", f->name, mid);
                cr_assert_eq(encf(nextafterf((float)(sg * mid), (float)(sg * INFINITY))),
                             (uint16_t)(hi | sb));
                cr_assert_eq(encf(nextafterf((float)(sg * mid), 0.0f)), (uint16_t)(lo | sb));
                checks += 6;
                ties++;
            }
        }
    }
    fprintf(stderr,
            "[exhaustive %s] 65536 patterns (%ld NaN), %ld halfway cases, %ld checks "
            "passed\n",
            f->name, nans, ties, checks);
}

Test(format, f16_all_65536_patterns_and_halfway_cases) {
    exhaustive16(GCK_F16, gck_f16_from_double, gck_f16_from_float, gck_f16_to_double);
}

Test(format, bf16_all_65536_patterns_and_halfway_cases) {
    exhaustive16(GCK_BF16, gck_bf16_from_double, gck_bf16_from_float, gck_bf16_to_double);
}

/* A double spread over the interesting range of fmt (and beyond it), or any bit pattern. */
static double random_double(test_rng *r, gck_format fmt) {
    const gck_format_info *f = gck_format_get(fmt);
    uint64_t bits = rng_next(r);
    if ((bits & 7) == 0) {
        double d;
        uint64_t b2 = rng_next(r);
        memcpy(&d, &b2, sizeof d);
        return d;
    }
    int lo = f->emin - f->precision - 3, hi = f->emax + 2;
    if (lo < -1074) lo = -1074;
    if (hi > 1023) hi = 1023;
    double m = 1.0 + rng_unit(r);
    if ((bits & 0x30) == 0) /* near a tie: p+1 significant bits, then a tiny nudge */
        m = ldexp(floor(ldexp(m, f->precision - 1)) + 0.5, 1 - f->precision) +
            ldexp((double)((int)(bits >> 8 & 3) - 1), -52);
    double x = ldexp(m, (int)rng_range(r, lo, hi));
    return (bits & 8) ? -x : x;
}

Test(format, conversion_from_double_matches_mpfr_on_a_million_values) {
    test_rng r = {test_seed("format.conversion", 20261121)};
    const gck_format fmts[] = {GCK_F16, GCK_BF16, GCK_TF32, GCK_F32};
    long n = 0;
    for (size_t fi = 0; fi < sizeof fmts / sizeof fmts[0]; fi++) {
        gck_format fmt = fmts[fi];
        for (int t = 0; t < 300000; t++, n++) {
            double x = random_double(&r, fmt);
            double want = mpfr_round_format(x, fmt);
            double got = gck_round_to(x, fmt);
            cr_assert(same_value(got, want), "%s: round(%a) = %a, MPFR %a",
                      gck_format_get(fmt)->name, x, got, want);
            if (fmt == GCK_F16) {
                cr_assert(same_value(gck_f16_to_double(gck_f16_from_double(x)), want),
                          "f16 bits of %a", x);
                if (isnan(x) || (double)(float)x == x)
                    cr_assert(same_value(gck_f16_to_double(gck_f16_from_float((float)x)), want));
            } else if (fmt == GCK_BF16) {
                cr_assert(same_value(gck_bf16_to_double(gck_bf16_from_double(x)), want),
                          "bf16 bits of %a", x);
            }
        }
    }
    fprintf(stderr, "[conversion] %ld random doubles rounded, all equal to MPFR\n", n);
}

Test(format, range_boundaries_match_mpfr) {
    long n = 0;
    for (int fi = 0; fi < GCK_FORMAT_COUNT; fi++) {
        gck_format fmt = (gck_format)fi;
        const gck_format_info *f = gck_format_get(fmt);
        double half_ulp_max = 0.5 * gck_ulp(f->max, fmt), sub = f->min_subnormal;
        const double probes[] = {
            f->max,
            f->max + half_ulp_max,
            nextafter(f->max + half_ulp_max, 0.0),
            f->max + 2 * half_ulp_max,
            f->max + 0.75 * half_ulp_max * 2,
            DBL_MAX,
            0.5 * sub,
            nextafter(0.5 * sub, 1.0),
            nextafter(0.5 * sub, 0.0),
            1.5 * sub,
            2.5 * sub,
            sub,
            0.25 * sub,
            f->min_normal,
            f->min_normal - 0.5 * sub,
            nextafter(f->min_normal - 0.5 * sub, 0.0),
            f->min_normal - sub,
            DBL_TRUE_MIN,
            0.0,
            1.0,
            1.0 + 0.5 * f->epsilon,
            1.0 + 1.5 * f->epsilon,
            INFINITY,
            NAN,
        };
        for (size_t p = 0; p < sizeof probes / sizeof probes[0]; p++) {
            for (int s = 0; s < 2; s++) {
                double x = s ? -probes[p] : probes[p];
                if (fmt == GCK_F64 && isinf(x + 0.0) && !isinf(probes[p])) continue;
                cr_assert(same_value(gck_round_to(x, fmt), mpfr_round_format(x, fmt)),
                          "%s: round(%a) = %a, MPFR %a", f->name, x, gck_round_to(x, fmt),
                          mpfr_round_format(x, fmt));
                n++;
            }
        }
        /* the facts themselves */
        cr_expect(isinf(gck_round_to(f->max + half_ulp_max, fmt)) || fmt == GCK_F64);
        cr_expect_eq(gck_round_to(nextafter(f->max + half_ulp_max, 0.0), fmt), f->max);
        cr_expect_eq(gck_round_to(0.5 * sub, fmt), 0.0);
        cr_expect(signbit(gck_round_to(-0.5 * sub, fmt)));
        cr_expect_eq(gck_round_to(1.5 * sub, fmt), 2 * sub);
        cr_expect_eq(gck_round_to(2.5 * sub, fmt), 2 * sub);
        cr_expect_eq(gck_round_to(f->min_normal - 0.5 * sub, fmt), f->min_normal);
    }
    fprintf(stderr, "[boundaries] %ld boundary values equal to MPFR\n", n);
}

Test(format, round2_rounds_an_exact_double_double_once) {
    test_rng r = {test_seed("format.round2", 7)};
    const gck_format fmts[] = {GCK_F16, GCK_BF16, GCK_TF32, GCK_F32};
    mpfr_t s, a, b;
    mpfr_inits2(2200, s, a, b, (mpfr_ptr)0);
    long n = 0;
    for (size_t fi = 0; fi < sizeof fmts / sizeof fmts[0]; fi++) {
        gck_format fmt = fmts[fi];
        for (int t = 0; t < 100000; t++, n++) {
            double x = random_double(&r, fmt), y = random_double(&r, fmt);
            if (!isfinite(x) || !isfinite(y)) continue;
            if (t % 3 == 0) y = ldexp(y, -(int)rng_range(&r, 20, 60)); /* small tail */
            if (t % 5 == 0) {                                          /* exact tie plus a tail */
                double g = gck_round_to(x, fmt);
                x = g + 0.5 * gck_ulp(g, fmt);
                y = ldexp(x, -60) * ((t & 1) ? 1 : -1);
            }
            double hi = x + y;
            if (!isfinite(hi)) continue;
            double yy = hi - x, lo = (x - (hi - yy)) + (y - yy);
            mpfr_set_d(a, x, MPFR_RNDN);
            mpfr_set_d(b, y, MPFR_RNDN);
            mpfr_add(s, a, b, MPFR_RNDN); /* exact at 2200 bits */
            double want = mpfr_round_exact(s, fmt, MPFR_RNDN);
            double got = gck_round2_to(hi, lo, fmt);
            cr_assert(same_value(got, want), "%s: %a + %a -> %a, MPFR %a",
                      gck_format_get(fmt)->name, hi, lo, got, want);
        }
    }
    mpfr_clears(s, a, b, (mpfr_ptr)0);
    fprintf(stderr, "[round2] %ld double-double roundings equal to MPFR\n", n);
}

Test(format, load_and_store_round_trip_every_storage_type) {
    const double v[] = {1.5, -0.0, 65504.0, 1e-7, -3.0};
    for (int fi = 0; fi < GCK_FORMAT_COUNT; fi++) {
        gck_format fmt = (gck_format)fi;
        unsigned char buf[64];
        for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
            gck_store(buf, fmt, (int64_t)i, v[i]);
            cr_expect(same_value(gck_load(buf, fmt, (int64_t)i), gck_round_to(v[i], fmt)),
                      "%s element %zu", gck_format_get(fmt)->name, i);
        }
    }
}

Test(format, names_users_write_are_read_and_the_short_ones_written) {
    static const struct {
        const char *name;
        gck_format fmt;
    } ok[] = {{"f16", GCK_F16},     {"fp16", GCK_F16},    {"half", GCK_F16},
              {"float16", GCK_F16}, {"BF16", GCK_BF16},   {"bfloat16", GCK_BF16},
              {"tf32", GCK_TF32},   {"fp32", GCK_F32},    {"float32", GCK_F32},
              {"float", GCK_F32},   {"single", GCK_F32},  {"F64", GCK_F64},
              {"fp64", GCK_F64},    {"float64", GCK_F64}, {"double", GCK_F64}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        gck_format f = GCK_FORMAT_COUNT;
        cr_expect(gck_format_parse(ok[i].name, &f) && f == ok[i].fmt, "%s", ok[i].name);
    }
    static const char *const bad[] = {"", "fp8", "f 32", "float128", "int8", "bf"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gck_format f;
        cr_expect(!gck_format_parse(bad[i], &f), "'%s' was taken", bad[i]);
    }
    /* what gemmcheck writes is the short name, whatever was read */
    gck_format f;
    cr_assert(gck_format_parse("bfloat16", &f));
    cr_expect_str_eq(gck_format_get(f)->name, "bf16");
}
