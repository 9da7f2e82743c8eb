/* Runs of stored values converted to the compute type (packing) and computed values converted to
 * D's type (the epilogue): the only places the kernels meet element types. Every conversion is
 * exact or one rounding to nearest even, the same bits as gck_load/gck_store; the strides are in
 * elements, and a run with both strides 1 is a plain loop the compiler vectorises. */
#include <string.h>

#include "format_internal.h"
#include "kernels_internal.h"

/* bf16 bits into f32 (exact): inlined here, the run loops call it per element */
static inline float bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* dst[i*ds] = CONV(src[i*ss]) for i < n, with the contiguous case as its own loop. */
#define RUN(DT, ST, CONV)                                                                          \
    do {                                                                                           \
        const ST *s_ = src;                                                                        \
        if (ds == 1 && ss == 1)                                                                    \
            for (int64_t i = 0; i < n; i++) dst[i] = CONV(s_[i]);                                  \
        else                                                                                       \
            for (int64_t i = 0; i < n; i++) dst[i * ds] = CONV(s_[i * ss]);                        \
    } while (0)

#define AS_IS(x) (x)

/* a run of the compute type itself, contiguous at both ends: a copy (memcpy keeps many loads in
 * flight, which a packing that streams an operand from memory needs) */
#define COPY_OR_RUN(DT)                                                                            \
    do {                                                                                           \
        if (ds == 1 && ss == 1)                                                                    \
            memcpy(dst, src, (size_t)n * sizeof(DT));                                              \
        else                                                                                       \
            RUN(DT, DT, AS_IS);                                                                    \
    } while (0)

void gck_kline_to_f32(float *dst, int64_t ds, const void *src, gck_format t, int64_t ss, int64_t n,
                      bool f16c) {
    switch (t) {
    case GCK_F32: COPY_OR_RUN(float); break;
    case GCK_F64: RUN(float, double, (float)); break;
    case GCK_BF16: RUN(float, uint16_t, bf16_to_f32); break;
    case GCK_F16:
        if (f16c)
            gck_kf16c_to_f32(dst, ds, src, ss, n);
        else
            RUN(float, uint16_t, gck_fmt_f16_to_float);
        break;
    default: break; /* refused by gck_gemm's argument checks */
    }
}

void gck_kline_to_f64(double *dst, int64_t ds, const void *src, gck_format t, int64_t ss, int64_t n,
                      bool f16c) {
    (void)f16c;
    switch (t) {
    case GCK_F32: RUN(double, float, (double)); break;
    case GCK_F64: COPY_OR_RUN(double); break;
    case GCK_BF16: RUN(double, uint16_t, (double)bf16_to_f32); break;
    case GCK_F16: RUN(double, uint16_t, gck_fmt_f16_to_double); break;
    default: break;
    }
}

void gck_kline_bits16(uint16_t *dst, int64_t ds, const void *src, int64_t ss, int64_t n) {
    COPY_OR_RUN(uint16_t);
}

#undef RUN
#undef COPY_OR_RUN

/* dst[i*ds] = CONV(src[i]) for i < n. */
#define OUT(DT, CONV)                                                                              \
    do {                                                                                           \
        DT *d_ = dst;                                                                              \
        if (ds == 1)                                                                               \
            for (int64_t i = 0; i < n; i++) d_[i] = CONV(src[i]);                                  \
        else                                                                                       \
            for (int64_t i = 0; i < n; i++) d_[i * ds] = CONV(src[i]);                             \
    } while (0)

void gck_kline_from_f32(void *dst, gck_format t, int64_t ds, const float *src, int64_t n,
                        bool f16c) {
    switch (t) {
    case GCK_F32: OUT(float, AS_IS); break;
    case GCK_F64: OUT(double, (double)); break;
    case GCK_BF16: OUT(uint16_t, gck_fmt_bf16_from_float); break;
    case GCK_F16:
        if (f16c)
            gck_kf16c_from_f32(dst, ds, src, n);
        else
            OUT(uint16_t, gck_fmt_f16_from_float);
        break;
    default: break;
    }
}

void gck_kline_from_f64(void *dst, gck_format t, int64_t ds, const double *src, int64_t n,
                        bool f16c) {
    (void)f16c; /* F16C rounds from f32 only: f64 through f32 would round twice */
    switch (t) {
    case GCK_F32: OUT(float, (float)); break;
    case GCK_F64: OUT(double, AS_IS); break;
    case GCK_BF16: OUT(uint16_t, gck_fmt_bf16_from_double); break;
    case GCK_F16: OUT(uint16_t, gck_fmt_f16_from_double); break;
    default: break;
    }
}
