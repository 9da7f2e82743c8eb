/* gemmcheck — number formats: binary16, bfloat16, tf32, binary32, binary64.
 *
 * One table (gck_format_info) holds every format fact; every other part of gemmcheck reads
 * the facts from there. Conversions round to nearest, ties to even, with gradual underflow
 * and overflow to ±Inf at |x| >= max + ulp(max)/2. NaN stays NaN (quiet) with its sign. */
#ifndef GEMMCHECK_FORMAT_H
#define GEMMCHECK_FORMAT_H

#include <stdbool.h>
#include <stdint.h>

#include "gemmcheck/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Number formats: element types (f16, bf16, f32, f64) and compute types (also tf32). */
typedef enum gck_format {
    GCK_F16 = 0, /**< IEEE 754 binary16 */
    GCK_BF16,    /**< bfloat16: binary32 range, 8-bit significand */
    GCK_TF32,    /**< NVIDIA TensorFloat-32: binary32 range, 11-bit significand (compute only) */
    GCK_F32,     /**< IEEE 754 binary32 */
    GCK_F64,     /**< IEEE 754 binary64 */
    GCK_FORMAT_COUNT
} gck_format;

/** Facts of one format. Values are exact binary numbers stored as double. */
typedef struct gck_format_info {
    const char *name;     /**< "f16", "bf16", "tf32", "f32", "f64" */
    int storage_bytes;    /**< bytes of one stored element (tf32 is stored as f32) */
    int precision;        /**< significand bits including the implicit bit */
    int emin;             /**< exponent of the smallest positive normal (IEEE convention) */
    int emax;             /**< exponent of the largest finite value */
    double max;           /**< largest finite value */
    double min_normal;    /**< smallest positive normal, 2^emin */
    double min_subnormal; /**< smallest positive subnormal, 2^(emin - precision + 1) */
    double epsilon;       /**< 2^(1 - precision): one ulp of 1 */
    bool is_storage;      /**< usable as an element type of A, B, C or D */
} gck_format_info;

/** The format table; `fmt` must be a valid gck_format. */
GCK_API const gck_format_info *gck_format_get(gck_format fmt);
/** Parse "f16", "bf16", "tf32", "f32", "f64", or an alias: fp16, half, float16, bfloat16, fp32,
 *  float32, float, single, fp64, float64, double (any letter case); false for anything else.
 *  gemmcheck itself always writes the short names. */
GCK_API bool gck_format_parse(const char *name, gck_format *out);

/** Classes of a value. */
typedef enum gck_class {
    GCK_CLASS_NAN = 0,
    GCK_CLASS_INF,
    GCK_CLASS_ZERO,
    GCK_CLASS_SUBNORMAL,
    GCK_CLASS_NORMAL
} gck_class;

/** Round x once to the nearest value of `fmt` (ties to even, gradual underflow, overflow to
 *  ±Inf); the result is returned as a double, which holds every value of every format. */
GCK_API double gck_round_to(double x, gck_format fmt);
/** Round the exact value hi + lo (|lo| <= ulp(hi)/2, as TwoSum produces) once to `fmt`. */
GCK_API double gck_round2_to(double hi, double lo, gck_format fmt);

/* binary16 */
GCK_API uint16_t gck_f16_from_double(double x);
GCK_API uint16_t gck_f16_from_float(float x);
GCK_API double gck_f16_to_double(uint16_t h);
GCK_API float gck_f16_to_float(uint16_t h);
/* bfloat16 */
GCK_API uint16_t gck_bf16_from_double(double x);
GCK_API uint16_t gck_bf16_from_float(float x);
GCK_API double gck_bf16_to_double(uint16_t h);
GCK_API float gck_bf16_to_float(uint16_t h);

/** Classification of a 16-bit pattern of `fmt` (GCK_F16 or GCK_BF16). */
GCK_API gck_class gck_bits16_class(uint16_t bits, gck_format fmt);
/** Next value towards +Inf / -Inf of a 16-bit pattern (NaN stays, +Inf/-Inf stay at the end). */
GCK_API uint16_t gck_bits16_next_up(uint16_t bits, gck_format fmt);
GCK_API uint16_t gck_bits16_next_down(uint16_t bits, gck_format fmt);
/** Classification of a double seen as a value of `fmt` (the value must be representable). */
GCK_API gck_class gck_classify(double x, gck_format fmt);
/** ulp(x) in `fmt`: the spacing of the format's values in the binade of x (min_subnormal
 *  below the normal range; ulp(max) for Inf; NaN for NaN). */
GCK_API double gck_ulp(double x, gck_format fmt);
/** Next value of `fmt` above / below x (x representable in fmt). */
GCK_API double gck_next_up(double x, gck_format fmt);
GCK_API double gck_next_down(double x, gck_format fmt);

/** Load element `index` of an array of `fmt` values as an exact double. */
GCK_API double gck_load(const void *base, gck_format fmt, int64_t index);
/** Round x to `fmt` and store it as element `index`. */
GCK_API void gck_store(void *base, gck_format fmt, int64_t index, double x);

#ifdef __cplusplus
}
#endif
#endif
