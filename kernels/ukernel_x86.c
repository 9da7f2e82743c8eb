/* x86-64 micro-kernels with intrinsics, each compiled for its instruction set by a target
 * attribute and run only where CPUID (and the OS's saved state) says the set is usable. Each
 * keeps one accumulator per element of the tile and adds the products of k ascending with one
 * fused multiply-add each: the declared model, so the bits equal the portable path's.
 *
 * The tile is column-major: MR rows as whole vectors (two per column), NR columns, each B value
 * broadcast (the register blocking of BLIS's Haswell and SkylakeX kernels). The loops over the
 * columns are unrolled so that the accumulator arrays live in registers, not on the stack.
 *
 * Each path is one file ending in its table (ukernel_avx2.c, ukernel_avx512.c,
 * ukernel_avx512bf16.c, ukernel_avx512fp16.c, ukernel_amx.c, sharing ukernel_x86.h); this one says
 * which of them the CPU can run, and defines the tables empty in a build for another machine. */
#include "ukernel_x86.h"

#if defined(__x86_64__) && defined(__GNUC__)

/* What an AVX-512 path needs besides its own instructions, or NULL. */
static const char *avx512_lacks(void) {
    if (!__builtin_cpu_supports("avx512f")) return "AVX-512F";
    if (!__builtin_cpu_supports("f16c")) return "F16C";
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
        return "AVX2 and FMA (for the in-place kernels)";
    return NULL;
}

bool gck_kpath_cpu_has(gck_kpath p, const char **missing) {
    __builtin_cpu_init();
    *missing = NULL;
    switch (p) {
    case GCK_KPATH_AVX2:
        if (!__builtin_cpu_supports("avx2"))
            *missing = "AVX2";
        else if (!__builtin_cpu_supports("fma"))
            *missing = "FMA";
        else if (!__builtin_cpu_supports("f16c"))
            *missing = "F16C";
        break;
    case GCK_KPATH_AVX512: *missing = avx512_lacks(); break;
    case GCK_KPATH_AVX512BF16:
        if (!(*missing = avx512_lacks()) && !__builtin_cpu_supports("avx512bf16"))
            *missing = "AVX512-BF16";
        break;
    case GCK_KPATH_AVX512FP16:
        if (!(*missing = avx512_lacks()) &&
            (!__builtin_cpu_supports("avx512fp16") || !__builtin_cpu_supports("avx512bw") ||
             !__builtin_cpu_supports("avx512vl")))
            *missing = "AVX512-FP16 (with AVX512-BW and AVX512-VL)";
        break;
    case GCK_KPATH_AMX:
        /* GCC's CPU model reads AMX as present only where XCR0 enables the tile state; Linux's
         * permission is asked for last, only where the CPU has everything else */
        if (!(*missing = avx512_lacks()) &&
            (!__builtin_cpu_supports("amx-tile") || !__builtin_cpu_supports("amx-bf16")))
            *missing = "AMX-TILE and AMX-BF16";
        if (!*missing) gck_kamx_permit(missing);
        break;
    default: *missing = "an instruction set this build knows"; break;
    }
    return !*missing;
}

#else

const gck_kpath_ops gck_kpath_avx2_ops = {0};
const gck_kpath_ops gck_kpath_avx512_ops = {0};
const gck_kpath_ops gck_kpath_avx512bf16_ops = {0};
const gck_kpath_ops gck_kpath_amx_ops = {0};
const gck_kpath_ops gck_kpath_avx512fp16_ops = {0};
const gck_ktile_fn gck_ktile_hw = NULL;
const gck_kfma16_fn gck_kfma16_hw = NULL;
const gck_kfma16_fn gck_kfma16_avx2 = NULL;
const gck_kfma16_fn gck_kfma16_avx512 = NULL;

bool gck_kamx_permit(const char **why) {
    *why = "x86-64 with a GCC-compatible compiler (this build has neither)";
    return false;
}

bool gck_kamx_int8(void) { return false; }

void gck_kernels_amx_default(bool ask) { (void)ask; }

void gck_kamx_i8_tile(int64_t steps, const int8_t *a, int64_t sa, const int8_t *b, int64_t sb,
                      int32_t *c, int64_t ldc, bool add) {
    (void)steps, (void)a, (void)sa, (void)b, (void)sb, (void)c, (void)ldc, (void)add;
}
const gck_kdot2_fn gck_kdot2_hw = NULL;
const gck_kcvt_bf16_fn gck_kcvtbf16_hw = NULL;
const gck_kf16_to_f32_fn gck_kf16_to_f32_hw = NULL;
const gck_kf16_from_f32_fn gck_kf16_from_f32_hw = NULL;

void gck_kf16c_to_f32(float *dst, int64_t ds, const void *src, int64_t ss, int64_t n) {
    (void)dst, (void)ds, (void)src, (void)ss, (void)n; /* never called: no path has F16C here */
}

void gck_kf16c_from_f32(void *dst, int64_t ds, const float *src, int64_t n) {
    (void)dst, (void)ds, (void)src, (void)n; /* never called: no path has F16C here */
}

bool gck_kpath_cpu_has(gck_kpath p, const char **missing) {
    (void)p;
    *missing = "x86-64 with a GCC-compatible compiler (this build has neither)";
    return false;
}

#endif
