/* The portable micro-kernels: plain C, one fused multiply-add per element and step (fmaf/fma are
 * correctly rounded, so this path is the declared model itself). The strided kernels read the
 * operands where they are stored; the packed ones are the same kernels on packed slivers. */
#include <math.h>
#include <string.h>

#include "format_internal.h"
#include "kernels_internal.h"

enum { MR = 4, NR = 4 };

static void skernel_f32(int64_t kc, const float *a, int64_t as, int64_t pf, const float *b,
                        int64_t bs, int64_t bj, float *w, int64_t ldw, bool first) {
    (void)pf; /* no prefetch in C */
    float acc[NR][MR];
    for (int j = 0; j < NR; j++)
        for (int i = 0; i < MR; i++) acc[j][i] = first ? 0.0f : w[i + j * ldw];
    for (int64_t k = 0; k < kc; k++, a += as, b += bs)
        for (int j = 0; j < NR; j++)
            for (int i = 0; i < MR; i++) acc[j][i] = fmaf(a[i], b[j * bj], acc[j][i]);
    for (int j = 0; j < NR; j++)
        for (int i = 0; i < MR; i++) w[i + j * ldw] = acc[j][i];
}

static void skernel_f64(int64_t kc, const double *a, int64_t as, int64_t pf, const double *b,
                        int64_t bs, int64_t bj, double *w, int64_t ldw, bool first) {
    (void)pf;
    double acc[NR][MR];
    for (int j = 0; j < NR; j++)
        for (int i = 0; i < MR; i++) acc[j][i] = first ? 0.0 : w[i + j * ldw];
    for (int64_t k = 0; k < kc; k++, a += as, b += bs)
        for (int j = 0; j < NR; j++)
            for (int i = 0; i < MR; i++) acc[j][i] = fma(a[i], b[j * bj], acc[j][i]);
    for (int j = 0; j < NR; j++)
        for (int i = 0; i < MR; i++) w[i + j * ldw] = acc[j][i];
}

static void ukernel_f32(int64_t kc, const float *a, const float *b, float *w, int64_t ldw,
                        bool first) {
    skernel_f32(kc, a, MR, 0, b, NR, 1, w, ldw, first);
}

static void ukernel_f64(int64_t kc, const double *a, const double *b, double *w, int64_t ldw,
                        bool first) {
    skernel_f64(kc, a, MR, 0, b, NR, 1, w, ldw, first);
}

/* f32 to the f16 value nearest (ties to even), as a float: subnormals kept, 65520 and up to
 * infinity, NaN kept a NaN. */
static inline float f_to_h_value(float f) {
    float a = fabsf(f);
    if (!(a < 65520.0f)) return isnan(f) ? f : copysignf(INFINITY, f);
    if (a < 0x1p-14f) /* subnormal grid 2^-24: the scaling is exact, the rounding the one */
        return copysignf(nearbyintf(a * 0x1p24f) * 0x1p-24f, f);
    uint32_t u;
    memcpy(&u, &a, sizeof u);
    u = (u + 0xfffu + (u >> 13 & 1)) & ~0x1fffu; /* 13 bits off, to nearest even */
    memcpy(&a, &u, sizeof a);
    return copysignf(a, f);
}

/* The f16 fused multiply-add (kernels_internal.h says why it is exact). This file is built with
 * the project's flags (no -ffast-math), so the TwoSum below is evaluated as written; gck_gemm
 * runs it in the default floating-point environment (nearbyintf: to nearest even). */
float gck_kfma16_step(uint16_t a, uint16_t b, float acc) {
    /* f16 to f32 exactly (the library's inline conversion); the product's 22 bits exact */
    float p = (float)gck_fmt_f16_bits(a) * (float)gck_fmt_f16_bits(b);
    float s = p + acc;
    if (isfinite(s)) {
        float z = s - p, e = (p - (s - z)) + (acc - z); /* p + acc = s + e exactly */
        uint32_t u;
        memcpy(&u, &s, sizeof u);
        if (e != 0 && !(u & 1)) s = nextafterf(s, e > 0 ? INFINITY : -INFINITY); /* to odd */
    }
    return f_to_h_value(s);
}

uint16_t gck_kfma16_sim(uint16_t a, uint16_t b, uint16_t c) {
    return gck_fmt_f16_from_float(gck_kfma16_step(a, b, gck_fmt_f16_to_float(c)));
}

static void ukernel_h16(int64_t kc, const uint16_t *a, const uint16_t *b, float *w, int64_t ldw,
                        bool first) {
    float acc[NR][MR];
    for (int j = 0; j < NR; j++)
        for (int i = 0; i < MR; i++) acc[j][i] = first ? 0.0f : w[i + j * ldw];
    for (int64_t k = 0; k < kc; k++, a += MR, b += NR)
        for (int j = 0; j < NR; j++)
            for (int i = 0; i < MR; i++) acc[j][i] = gck_kfma16_step(a[i], b[j], acc[j][i]);
    for (int j = 0; j < NR; j++)
        for (int i = 0; i < MR; i++) w[i + j * ldw] = acc[j][i];
}

// clang-format off
const gck_kpath_ops gck_kpath_portable_ops = {
    .mr32 = MR, .nr32 = NR, .mr64 = MR, .nr64 = NR, .mrh = MR, .nrh = NR, .f32 = ukernel_f32,
    .f64 = ukernel_f64, .h16 = ukernel_h16, .s32 = {{MR, NR, skernel_f32}},
    .s64 = {{MR, NR, skernel_f64}}};
// clang-format on
