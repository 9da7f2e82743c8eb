/* bench_floor: what "the exact oracle >= 10x faster than the superaccumulator at n = 2048" asks,
 * against the least arithmetic the exact splittings below need on this machine, all measured in
 * one run (built on x86-64 only: the peak rates come from its instructions).
 *
 *   bench_floor [--n N] [--types f16,bf16,f32,f64] [--rounds R]
 *
 * Measured (all cores):
 *   - the peak rate of multiply-adds: f64 fused multiply-adds (512-bit where the CPU has
 *     AVX-512F, else 256-bit FMA) and int8 dot products (VPDPBUSD, where it has AVX512-VNNI),
 *     each from independent register accumulators, no memory traffic;
 *   - gemmcheck's f64 GEMM (the slices' product) and OpenBLAS dgemm at M = N = K = n;
 *   - per input type: the exact oracle one product at a time (GEMMCHECK_OZAKI=never: the
 *     superaccumulator, whose speed the goal was set against) and as it chooses (splitting),
 *     each the fastest of R rounds (default 3; the first table; the splitting's first round
 *     too: the later ones reuse the blocks it kept, gck_big_free), after one small oracle call
 *     that makes the process's one-time calibrations (the rates of the f64 and int8 GEMMs
 *     that the splitting's cost model reads), as a campaign has made them by its second case.
 * The budget is a tenth of the one-by-one time. The floor of a scheme is its count of n^3
 * products at the peak rate, nothing else counted (no splitting pass, no per-element work, no
 * memory traffic, no exponent spread: every value as if its line's largest):
 *   - f64 slices: beta = floor((53 - ceil(log2 K)) / 2) bits per slice, ceil(p / beta) slices
 *     per operand for a p-bit significand, one f64 GEMM per pair of slices;
 *   - int8 slices: VPDPBUSD multiplies unsigned 8-bit by signed 8-bit digits: ceil(p / 8) x
 *     ceil(p / 7) int8 GEMMs;
 *   - int8 residues (Ozaki scheme II): the integer sums need 2p + ceil(log2 K) + 1 bits, each
 *     modulus below 2^8 adds under 8 bits: ceil((2p + ceil(log2 K) + 1) / 8) int8 GEMMs.
 * A second table breaks the splitting down by pass (oracles/oracle_ozaki.h, gck_oz_pass), with
 * f64 slices and, where VPDPBUSD runs, int8 slices and int8 residues: the time of each pass of
 * the plan, and the
 * rest of the whole oracle in that mode (each element's terms decoded and summed, the tails'
 * products). It links the library's internals (gemmcheck_internal) for the plan's timings. */
#define _DEFAULT_SOURCE 1
#include <cblas.h>
#include <immintrin.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gemmcheck/gemmcheck.h"
#include "oracle_ozaki.h" /* the splitting's passes (internal: linked from gemmcheck_internal) */

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void *alloc_or_die(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "bench_floor: out of memory\n");
        exit(2);
    }
    return p;
}

/* ---- peak rates: 12 independent accumulators, `iters` rounds; the multiply-adds done ------- */

static volatile double sink;

/* A function `name` (compiled for `isa`) running `iters` rounds of `op` on 12 independent
 * accumulators of type V, each of `lanes` multiply-adds per instruction; x and y its operands,
 * `sum` folds the accumulators into sink. */
#define PEAK(name, isa, V, lanes, init, x0, y0, op, sum)                                           \
    __attribute__((target(isa))) static double name(long iters) {                                  \
        V acc[12], x = x0, y = y0;                                                                 \
        _Pragma("GCC unroll 12") for (int r = 0; r < 12; r++) acc[r] = init(r);                    \
        for (long i = 0; i < iters; i++) {                                                         \
            _Pragma("GCC unroll 12") for (int r = 0; r < 12; r++) acc[r] = op(acc[r], x, y);       \
            __asm__ volatile("" : "+v"(x), "+v"(y)); /* not hoisted out of the loop */             \
        }                                                                                          \
        sink = sum(acc);                                                                           \
        return (double)iters * 12 * lanes;                                                         \
    }

#define FMA_PD512(a, x, y) _mm512_fmadd_pd(x, y, a)
#define FMA_PD256(a, x, y) _mm256_fmadd_pd(x, y, a)

__attribute__((target("avx512f"))) static double sum512d(const __m512d *acc) {
    __m512d s = acc[0];
    for (int r = 1; r < 12; r++) s = _mm512_add_pd(s, acc[r]);
    return _mm512_reduce_add_pd(s);
}

__attribute__((target("avx2"))) static double sum256d(const __m256d *acc) {
    double out[4], t = 0;
    for (int r = 0; r < 12; r++) {
        _mm256_storeu_pd(out, acc[r]);
        t += out[0] + out[1] + out[2] + out[3];
    }
    return t;
}

__attribute__((target("avx512f"))) static double sum512i(const __m512i *acc) {
    __m512i s = acc[0];
    for (int r = 1; r < 12; r++) s = _mm512_add_epi32(s, acc[r]);
    return _mm512_reduce_add_epi32(s);
}

/* VPDPBUSD with its accumulator tied, as the kernel writes it: through GCC 12's intrinsic each
 * accumulator is copied to a fresh register and back on every step, and the rate measured moved
 * with the code's placement (580-620 against 850-900 GOPS per core on the same Zen 5). */
__attribute__((target("avx512f,avx512vnni"), always_inline)) static inline __m512i
dpbusd_tied(__m512i a, __m512i x, __m512i y) {
    __asm__("vpdpbusd %2, %1, %0" : "+v"(a) : "v"(x), "v"(y));
    return a;
}

PEAK(f64_512, "avx512f", __m512d, 8, _mm512_set1_pd, _mm512_set1_pd(1.0000001),
     _mm512_set1_pd(0.9999999), FMA_PD512, sum512d)
PEAK(f64_256, "avx2,fma", __m256d, 4, _mm256_set1_pd, _mm256_set1_pd(1.0000001),
     _mm256_set1_pd(0.9999999), FMA_PD256, sum256d)
PEAK(int8_512, "avx512f,avx512vnni", __m512i, 64, _mm512_set1_epi32, _mm512_set1_epi8(3),
     _mm512_set1_epi8(5), dpbusd_tied, sum512i)

typedef struct peak_job {
    double (*fn)(long);
    double macs, seconds;
} peak_job;

static void *peak_thread(void *arg) {
    peak_job *j = arg;
    j->fn(1000); /* warm-up: the units' clocks */
    double t = now();
    j->macs = j->fn(60000000);
    j->seconds = now() - t;
    return NULL;
}

/* Multiply-adds per second of fn on every core at once; the best of five rounds. */
static double peak_rate(double (*fn)(long), int cores) {
    double best = 0;
    for (int round = 0; round < 5; round++) {
        pthread_t th[256];
        peak_job jobs[256];
        double macs = 0, slowest = 0;
        for (int c = 0; c < cores; c++) {
            jobs[c] = (peak_job){fn, 0, 0};
            if (pthread_create(&th[c], NULL, peak_thread, &jobs[c]) != 0) {
                fprintf(stderr, "bench_floor: cannot start a thread\n");
                exit(2);
            }
        }
        for (int c = 0; c < cores; c++) {
            pthread_join(th[c], NULL);
            macs += jobs[c].macs;
            slowest = jobs[c].seconds > slowest ? jobs[c].seconds : slowest;
        }
        best = macs / slowest > best ? macs / slowest : best;
    }
    return best;
}

/* ---- the GEMMs and the oracles ------------------------------------------------------------ */

/* The fastest of three calls of gemmcheck's f64 GEMM (the slices' product: op(A) transposed)
 * and of OpenBLAS dgemm on the same shape. */
static void gemm_seconds(int n, double *ours, double *openblas) {
    size_t nn = (size_t)n * (size_t)n;
    double *a = alloc_or_die(nn * sizeof *a), *b = alloc_or_die(nn * sizeof *b),
           *d = alloc_or_die(nn * sizeof *d);
    for (size_t x = 0; x < nn; x++) a[x] = b[x] = (double)(x % 7) - 3;
    gck_case g;
    gck_case_init(&g, n, n, n);
    g.transa = GCK_OP_T;
    char msg[256];
    *ours = *openblas = INFINITY;
    for (int r = 0; r < 3; r++) {
        double t = now();
        if (gck_gemm(&g, a, b, d, d, NULL, msg, sizeof msg) != GCK_GEMM_OK) {
            fprintf(stderr, "bench_floor: gck_gemm: %s\n", msg);
            exit(2);
        }
        t = now() - t;
        *ours = t < *ours ? t : *ours;
        t = now();
        cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, d, n);
        t = now() - t;
        *openblas = t < *openblas ? t : *openblas;
    }
    free(a), free(b), free(d);
}

/* The case n^3 of inputs t and its operands, values as gck_spec_fill draws them (D zero: its
 * pages touched, so that the oracles' times hold no first touches of the bench's own array). */
typedef struct operands {
    gck_case c;
    void *a, *b, *d;
} operands;

static operands make_operands(gck_format t, int n) {
    operands x;
    gck_case_init(&x.c, n, n, n);
    gck_format out = t == GCK_F64 ? GCK_F64 : GCK_F32;
    x.c.type_a = x.c.type_b = t;
    x.c.type_c = x.c.type_d = x.c.compute = x.c.scale_type = out;
    x.c.d_is_c = false;
    gck_spec s;
    gck_spec_init(&s, &x.c);
    size_t nn = (size_t)n * (size_t)n, es = (size_t)gck_format_get(t)->storage_bytes;
    x.a = alloc_or_die(nn * es), x.b = alloc_or_die(nn * es);
    x.d = alloc_or_die(nn * (out == GCK_F64 ? 8 : 4));
    memset(x.d, 0, nn * (out == GCK_F64 ? 8 : 4)); /* D's pages in place, as a backend's D */
    gck_spec_fill(&s, GCK_A, x.a);
    gck_spec_fill(&s, GCK_B, x.b);
    return x;
}

/* The exact oracle on n^3 of type t, splitting `ozaki`; *path: how it summed. */
static double oracle_seconds(gck_format t, int n, const char *ozaki, char *path, size_t len) {
    operands x = make_operands(t, n);
    gck_case c = x.c;
    void *a = x.a, *b = x.b, *d = x.d;
    setenv("GEMMCHECK_OZAKI", ozaki, 1);
    char msg[256];
    double secs = now();
    gck_status st = gck_oracle_exact(&c, a, b, NULL, d, 0, msg, sizeof msg);
    secs = now() - secs;
    unsetenv("GEMMCHECK_OZAKI");
    if (st != GCK_OK) {
        fprintf(stderr, "bench_floor: %s\n", msg);
        exit(2);
    }
    if (path) { /* the plan's description, as the checker reports it */
        gck_check_result *r = alloc_or_die(sizeof *r);
        gck_backend be;
        if (gck_backend_open(&be, "ref", msg, sizeof msg) == GCK_OK) {
            const gck_support_row *row = gck_backend_find_row(&be, &c, NULL, 0);
            gck_check_options opt = {.sample_above = 1e300, .sample_lines = 1};
            if (row && gck_check_values(&c, row, &opt, a, b, NULL, d, r, msg, sizeof msg) == GCK_OK)
                snprintf(path, len, "%s", r->oracle_path);
            gck_backend_close(&be);
        }
        free(r);
    }
    free(a), free(b), free(d);
    return secs;
}

/* One line of the passes' table: the splitting of type t in mode md (gck_ozaki_new, each pass
 * timed by it), and the whole exact oracle in that mode (GEMMCHECK_OZAKI=env); the rest, each
 * element's terms decoded and summed with its tails' products, is the difference. */
static void pass_row(gck_format t, int n, gck_ozaki_mode md, const char *env) {
    operands x = make_operands(t, n);
    gck_ozaki_options opt = gck_ozaki_defaults();
    opt.mode = md;
    char why[256];
    double build = now();
    gck_ozaki *o = gck_ozaki_new(&x.c, x.a, x.b, &opt, why, sizeof why);
    build = now() - build;
    free(x.a), free(x.b), free(x.d);
    const char *name = gck_format_get(t)->name;
    if (!o) {
        printf("| %s | %s slices: not split (%s) |\n", name, env, why);
        return;
    }
    int sa, sb, beta;
    gck_ozaki_shape(o, &sa, &sb, &beta);
    printf("| %s | %d x %d slices of %d bits, %d %s GEMMs |", name, sa, sb, beta,
           gck_ozaki_gemms(o), gck_ozaki_gemm(o));
    for (int p = 0; p < GCK_OZ_PASSES; p++) printf(" %.3f |", gck_ozaki_seconds(o, p));
    gck_ozaki_free(o);
    double whole = oracle_seconds(t, n, env, NULL, 0);
    printf(" %.3f | %.3f | %.3f |\n", build, whole - build, whole);
    fflush(stdout);
}

static int ceil_div(int a, int b) { return (a + b - 1) / b; }

/* Whether the comma-separated list holds name. */
static bool listed(const char *list, const char *name) {
    size_t len = strlen(name);
    for (const char *s = list; *s; s += strcspn(s, ","), s += *s == ',')
        if (strcspn(s, ",") == len && !strncmp(s, name, len)) return true;
    return false;
}

int main(int argc, char **argv) {
    int n = 2048, rounds = 3;
    const char *types = "f16,bf16,f32,f64";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--n") && i + 1 < argc && atoi(argv[i + 1]) >= 64 &&
            atoi(argv[i + 1]) <= 8192)
            n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--types") && i + 1 < argc)
            types = argv[++i];
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc &&
                 strspn(argv[i + 1], "0123456789") == strlen(argv[i + 1]) &&
                 atoi(argv[i + 1]) >= 1 && atoi(argv[i + 1]) <= 20)
            rounds = atoi(argv[++i]);
        else {
            fprintf(stderr,
                    "bench_floor: bad argument '%s' (--n 64..8192, --types L, --rounds 1..20)\n",
                    argv[i]);
            return 2;
        }
    }
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int cores = online < 1 ? 1 : online > 256 ? 256 : (int)online;
    __builtin_cpu_init();
    bool has512 = __builtin_cpu_supports("avx512f");
    bool vnni = has512 && __builtin_cpu_supports("avx512vnni");
    if (!has512 && !__builtin_cpu_supports("fma")) {
        fprintf(stderr, "bench_floor: this CPU has neither AVX-512F nor FMA\n");
        return 2;
    }
    double f64_peak = peak_rate(has512 ? f64_512 : f64_256, cores);
    double int8_peak = vnni ? peak_rate(int8_512, cores) : NAN;
    double ours, openblas;
    gemm_seconds(n, &ours, &openblas);
    oracle_seconds(GCK_F16, 256, "auto", NULL, 0); /* the one-time calibrations, untimed */
    double n3 = (double)n * n * n;
    int logk = 0;
    while ((1 << logk) < n) logk++;
    int beta = (53 - logk) / 2;
    char int8[96] = "none (no AVX512-VNNI)";
    if (vnni)
        snprintf(int8, sizeof int8, "%.1f G (VPDPBUSD; one int8 GEMM at peak: %.3f s)",
                 int8_peak / 1e9, n3 / int8_peak);
    printf("n = K = %d on %d cores. Peak multiply-adds per second: f64 %.1f G (%s), int8 %s. "
           "One f64 GEMM: gemmcheck's %.3f s (%.0f%% of peak), OpenBLAS dgemm %.3f s, at peak "
           "%.3f s. The oracles: the fastest of %d rounds.\n\n",
           n, cores, f64_peak / 1e9, has512 ? "512-bit FMA" : "256-bit FMA", int8, ours,
           100 * n3 / f64_peak / ours, openblas, n3 / f64_peak, rounds);
    printf("| inputs | one by one (s) | budget: a tenth (s) | oracle today (s) | its first round "
           "(s) | gain | f64 slices: GEMMs, floor (s) | int8 slices: GEMMs, floor (s) | int8 "
           "residues: GEMMs, floor (s) | least floor / budget | how today's oracle summed |\n"
           "|---|---|---|---|---|---|---|---|---|---|---|\n");
    const gck_format all[] = {GCK_F16, GCK_BF16, GCK_F32, GCK_F64};
    for (int f = 0; f < 4; f++) {
        const gck_format_info *fi = gck_format_get(all[f]);
        if (!listed(types, fi->name)) continue;
        char path[192] = "", round_path[192];
        double obo = INFINITY, today = INFINITY, first = 0;
        for (int r = 0; r < rounds; r++) { /* alternating, so that a slow spell hits both */
            obo = fmin(obo, oracle_seconds(all[f], n, "never", NULL, 0));
            /* the plan of the fastest round is described (a later round may plan otherwise: the
             * tails' memory is kept from the first) */
            double t = oracle_seconds(all[f], n, "auto", round_path, sizeof round_path);
            if (t < today) snprintf(path, sizeof path, "%s", round_path);
            today = fmin(today, t);
            first = r ? first : t;
        }
        int p = fi->precision, s64 = ceil_div(p, beta), g64 = s64 * s64;
        int g8 = ceil_div(p, 8) * ceil_div(p, 7), gres = ceil_div(2 * p + logk + 1, 8);
        double t64 = g64 * n3 / f64_peak, t8 = g8 * n3 / int8_peak, tres = gres * n3 / int8_peak;
        double least = vnni ? fmin(t64, fmin(t8, tres)) : t64, budget = obo / 10;
        printf("| %s | %.2f | %.3f | %.3f | %.3f | %.1fx | %d, %.3f | %d, %.3f | %d, %.3f | %.2f "
               "| %s |\n",
               fi->name, obo, budget, today, first, obo / today, g64, t64, g8, t8, gres, tres,
               least / budget, path);
        fflush(stdout);
    }
    printf("\nThe splitting's passes (oracles/oracle_ozaki.h, seconds on all cores), with f64 and "
           "with int8 slices and on int8 residues: the plan's passes, their sum (the splitting), "
           "the rest of the "
           "oracle (each element's terms decoded and summed, with its tails' products) and the "
           "whole oracle in that mode\n\n| inputs | slices |");
    for (int p = 0; p < GCK_OZ_PASSES; p++) printf(" %s |", gck_oz_pass_name(p));
    printf(" splitting | rest | whole |\n|---|---|");
    for (int p = 0; p < GCK_OZ_PASSES + 3; p++) printf("---|");
    printf("\n");
    for (int f = 0; f < 4; f++) {
        if (!listed(types, gck_format_get(all[f])->name)) continue;
        pass_row(all[f], n, GCK_OZAKI_ALWAYS, "always");
        if (vnni) pass_row(all[f], n, GCK_OZAKI_INT8, "int8");
        if (vnni) pass_row(all[f], n, GCK_OZAKI_RESIDUES, "residues");
    }
    return 0;
}
