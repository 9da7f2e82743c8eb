/* The automatic choice of a path per class of inputs, by measured rate (gemmcheck/kernels.h),
 * and the public functions that make it: gck_gemm, gck_gemm_model, gck_gemm_pair_dot. A
 * flag says what a core can run, not how fast: on an Intel Emerald Rapids core VDPBF16PS runs at
 * half the rate of f32 FMA, and the avx512bf16 path multiplied bf16 at 43.5 GFLOP/s where
 * converting to f32 ran at 108.9 (issue 44), while on AMD Zen 4 the pair dot product is the
 * faster one. So each supported SIMD path's rate on each class is measured once per process, and
 * the default path (the widest instruction set) gives way only to one measurably faster. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "format_internal.h"
#include "fpenv.h"
#include "gemmcheck/kernels.h"
#include "kernels_internal.h"

static const char *const class_names[GCK_KCLASS_COUNT] = {"f64", "f32", "f16", "bf16",
                                                          "f16-in-f16"};

const char *gck_kclass_name(gck_kclass cls) {
    return (unsigned)cls < GCK_KCLASS_COUNT ? class_names[cls] : "unknown";
}

void gck_kclass_types(gck_kclass cls, gck_format *input, gck_format *compute) {
    static const gck_format in[GCK_KCLASS_COUNT] = {GCK_F64, GCK_F32, GCK_F16, GCK_BF16, GCK_F16};
    *input = (unsigned)cls < GCK_KCLASS_COUNT ? in[cls] : GCK_F32;
    *compute = cls == GCK_KCLASS_F64 ? GCK_F64 : cls == GCK_KCLASS_F16F16 ? GCK_F16 : GCK_F32;
}

gck_kclass gck_kclass_of(gck_format a, gck_format b, gck_format compute) {
    if (compute == GCK_F64) return GCK_KCLASS_F64;
    if (compute == GCK_F16) return GCK_KCLASS_F16F16;
    if (a == GCK_BF16 && b == GCK_BF16) return GCK_KCLASS_BF16;
    if (a == GCK_F16 || b == GCK_F16) return GCK_KCLASS_F16;
    return GCK_KCLASS_F32;
}

gck_kpath gck_kpath_choose(const double rates[GCK_KPATH_COUNT], gck_kpath dflt) {
    int best = dflt;
    for (int p = GCK_KPATH_AUTO + 1; p < GCK_KPATH_COUNT; p++)
        if (rates[p] > rates[best]) best = p;
    return rates[best] >= GCK_KPATH_MARGIN * rates[dflt] ? (gck_kpath)best : dflt;
}

/* ---- the measurement ------------------------------------------------------------------------ */

enum { CAL_M = 192, CAL_N = 192, CAL_K = 384, CAL_RUNS = 3 };

static double rates[GCK_KPATH_COUNT][GCK_KCLASS_COUNT];
static pthread_once_t measured = PTHREAD_ONCE_INIT;

/* The timed calls: CAL_RUNS rounds after a warm-up round, each round one call of every live
 * context in turn; best[i], the best rate of context i's rounds (0 when a call fails, and that
 * context leaves the rounds); n at most GCK_KPATH_COUNT. */
static void best_rates(int n, bool (*call)(void *ctx), void *const ctx[], double ops,
                       double best[]) {
    bool live[GCK_KPATH_COUNT];
    for (int i = 0; i < n; i++) best[i] = 0, live[i] = ctx[i] != NULL;
    for (int run = 0; run <= CAL_RUNS; run++) /* run 0: the warm-up */
        for (int i = 0; i < n; i++) {
            if (!live[i]) continue;
            struct timespec t0, t1;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            if (!call(ctx[i])) {
                live[i] = false, best[i] = 0;
                continue;
            }
            clock_gettime(CLOCK_MONOTONIC, &t1);
            double t = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
            double r = t > 0 ? ops / t * 1e-9 : 0;
            if (run > 0 && r > best[i]) best[i] = r;
        }
}

double gck_kbest_rate(bool (*call)(void *ctx), void *ctx, double ops) {
    double best;
    best_rates(1, call, &ctx, ops, &best);
    return best;
}

/* One calibration call: the class's product on one path. */
typedef struct cal_call {
    gck_case c;
    const void *a, *b;
    void *d;
    gck_gemm_config cfg;
} cal_call;

static bool cal_gemm(void *ctx) {
    cal_call *x = ctx;
    return gck_kgemm(&x->c, x->a, x->b, x->d, x->d, &x->cfg, NULL, 0) == GCK_GEMM_OK;
}

/* The path whose f16-arithmetic kernel p runs, the first supported one (the AVX-512 paths
 * without VFMADDPH share one kernel, the emulation, about a fifteenth of the f32 rate: it is
 * measured once and its rate given to each of them). */
static int h16_owner(int p) {
    gck_ukernel_h16 k = gck_kpath_ops_of((gck_kpath)p)->h16;
    for (int q = GCK_KPATH_PORTABLE + 1; q < p; q++)
        if (gck_kpath_supported((gck_kpath)q, NULL, 0) && gck_kpath_ops_of((gck_kpath)q)->h16 == k)
            return q;
    return p;
}

/* Every supported SIMD path's rate on one class, GFLOP/s (0 when a call fails). The class's
 * case: its input types and compute type, C and D in the compute type, alpha and beta in f64 or
 * f32. The paths' calls are interleaved, one of each per round, so that a swing in the host's
 * speed falls on all of them alike: timed one path after another, on the Intel Xeon with AMX
 * (family 6 model 167, 2026-12-02) the f64 rates of `amx` and `avx512`, which run the same
 * kernel, came out 35.6 and 50.4 GFLOP/s, and f64 moved off the default. */
static void measure_class(gck_kclass cls, void *a, void *b, void *d) {
    cal_call x[GCK_KPATH_COUNT];
    void *ctx[GCK_KPATH_COUNT] = {0};
    /* f16 arithmetic on a quarter of K: the emulations would add 30 ms to the start-up at full
     * size, and every path of the class is measured alike */
    int64_t k = cls == GCK_KCLASS_F16F16 ? CAL_K / 4 : CAL_K;
    cal_call one = {.a = a, .b = b, .d = d, .cfg = {1, GCK_KPATH_AUTO}};
    gck_case_init(&one.c, CAL_M, CAL_N, k);
    gck_kclass_types(cls, &one.c.type_a, &one.c.compute);
    one.c.type_b = one.c.type_a;
    one.c.type_c = one.c.type_d = one.c.compute;
    one.c.scale_type = one.c.compute == GCK_F64 ? GCK_F64 : GCK_F32;
    for (int p = GCK_KPATH_PORTABLE + 1; p < GCK_KPATH_COUNT; p++) {
        x[p] = one; /* the same case on each path */
        x[p].cfg.path = (gck_kpath)p;
        if (gck_kpath_supported((gck_kpath)p, NULL, 0) &&
            (cls != GCK_KCLASS_F16F16 || h16_owner(p) == p))
            ctx[p] = &x[p];
    }
    gck_format ta = one.c.type_a;
    int64_t ea = (int64_t)CAL_M * k, eb = k * CAL_N;
    for (int64_t e = 0; e < ea; e++) gck_fmt_store(a, ta, e, 0.5 + (double)(e % 7) / 16);
    for (int64_t e = 0; e < eb; e++) gck_fmt_store(b, ta, e, 0.25 + (double)(e % 5) / 8);
    double r[GCK_KPATH_COUNT];
    best_rates(GCK_KPATH_COUNT, cal_gemm, ctx, 2.0 * CAL_M * CAL_N * (double)k, r);
    for (int p = GCK_KPATH_PORTABLE + 1; p < GCK_KPATH_COUNT; p++)
        if (gck_kpath_supported((gck_kpath)p, NULL, 0))
            rates[p][cls] = ctx[p] ? r[p] : r[h16_owner(p)];
}

static void measure_all(void) {
    size_t bytes = sizeof(double) * CAL_K * (CAL_M > CAL_N ? CAL_M : CAL_N);
    void *a = malloc(bytes), *b = malloc(bytes), *d = malloc(sizeof(double) * CAL_M * CAL_N);
    for (int cls = 0; a && b && d && cls < GCK_KCLASS_COUNT; cls++)
        measure_class((gck_kclass)cls, a, b, d);
    free(a);
    free(b);
    free(d);
}

double gck_kpath_rate(gck_kpath p, gck_kclass cls) {
    if ((unsigned)p >= GCK_KPATH_COUNT || (unsigned)cls >= GCK_KCLASS_COUNT) return 0;
    pthread_once(&measured, measure_all);
    return rates[p][cls];
}

gck_kpath gck_kpath_auto_class(gck_kclass cls) {
    gck_kpath dflt = gck_kpath_auto(), forced;
    const char *env = getenv("GEMMCHECK_KERNELS_PATH");
    if (dflt == GCK_KPATH_PORTABLE ||
        (env && gck_kpath_parse(env, &forced) && forced == dflt)) /* forced, or no choice */
        return dflt;
    double r[GCK_KPATH_COUNT];
    for (int p = 0; p < GCK_KPATH_COUNT; p++) r[p] = gck_kpath_rate((gck_kpath)p, cls);
    return gck_kpath_choose(r, dflt);
}

gck_kpath gck_kpath_auto_for(gck_format a, gck_format b, gck_format compute) {
    return gck_kpath_auto_class(gck_kclass_of(a, b, compute));
}

/* ---- the public functions that resolve GCK_KPATH_AUTO, in gemmcheck's floating-point
 * environment (fpenv.h) ------------------------------------------------------------------------ */

static gck_kpath resolved(gck_kpath path, gck_format ta, gck_format tb, gck_format compute) {
    return path == GCK_KPATH_AUTO ? gck_kpath_auto_for(ta, tb, compute) : path;
}

gck_model gck_gemm_model(gck_kpath path, gck_format ta, gck_format tb, gck_format compute) {
    return gck_kgemm_model(resolved(path, ta, tb, compute), ta, tb, compute);
}

bool gck_gemm_pair_dot(gck_kpath path, gck_format ta, gck_format tb, gck_format compute) {
    return gck_kgemm_pair_dot(resolved(path, ta, tb, compute), ta, tb, compute);
}

bool gck_gemm_tile_dot(gck_kpath path, gck_format ta, gck_format tb, gck_format compute) {
    return gck_kgemm_tile_dot(resolved(path, ta, tb, compute), ta, tb, compute);
}

static gck_gemm_arg gemm_auto(const gck_case *c, const void *A, const void *B, const void *C,
                              void *D, const gck_gemm_config *cfg, char *msg, size_t len) {
    gck_gemm_config r = cfg ? *cfg : (gck_gemm_config){0, GCK_KPATH_AUTO};
    if (c && r.path == GCK_KPATH_AUTO) r.path = resolved(r.path, c->type_a, c->type_b, c->compute);
    return gck_kgemm(c, A, B, C, D, &r, msg, len);
}

GCK_GUARDED(gck_gemm_arg, gck_gemm, gemm_auto,
            (const gck_case *c, const void *A, const void *B, const void *C, void *D,
             const gck_gemm_config *cfg, char *msg, size_t len),
            (c, A, B, C, D, cfg, msg, len))
