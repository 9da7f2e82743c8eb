/* gemmcheck's GEMM (gemmcheck/kernels.h): arguments, paths, blocking, threads. */
#define _DEFAULT_SOURCE 1
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gemmcheck/refgemm.h"
#include "kernels_internal.h"
#include "parallel.h"
#include "text.h"

/* ---- paths ------------------------------------------------------------------------------- */

/* The paths, one list: each one's name and its table (the file of each x86 path ends in its
 * table: ukernel_avx2.c, ukernel_avx512.c, ukernel_avx512bf16.c, ukernel_avx512fp16.c,
 * ukernel_amx.c; ukernel_x86.c
 * says which the CPU can run). gck_kpath_auto, the default, is the last supported one; select.c
 * chooses per class of inputs by measured rate (gck_kpath_auto_for). */
static const struct {
    const char *name;
    const gck_kpath_ops *ops;
} paths[GCK_KPATH_COUNT] = {
    [GCK_KPATH_AUTO] = {"auto", NULL},
    [GCK_KPATH_PORTABLE] = {"portable", &gck_kpath_portable_ops},
    [GCK_KPATH_AVX2] = {"avx2", &gck_kpath_avx2_ops},
    [GCK_KPATH_AVX512] = {"avx512", &gck_kpath_avx512_ops},
    [GCK_KPATH_AVX512BF16] = {"avx512bf16", &gck_kpath_avx512bf16_ops},
    [GCK_KPATH_AVX512FP16] = {"avx512fp16", &gck_kpath_avx512fp16_ops},
    [GCK_KPATH_AMX] = {"amx", &gck_kpath_amx_ops},
};

const char *gck_kpath_name(gck_kpath p) {
    return (unsigned)p < GCK_KPATH_COUNT && paths[p].name ? paths[p].name : "unknown";
}

bool gck_kpath_parse(const char *name, gck_kpath *out) {
    for (int p = 0; p < GCK_KPATH_COUNT; p++)
        if (paths[p].name && !strcmp(name, paths[p].name)) {
            *out = (gck_kpath)p;
            return true;
        }
    return false;
}

/* The conformance probes the SIMD paths rely on, each run once per process and only when
 * something needs it: the checker's conversions need F16C's alone; the bf16 dot-product and
 * tile probes (the tile's 50,000 random steps are most of the time) only a path that uses
 * those instructions. A supervisor runs them all before it forks a worker
 * (gck_kernels_probe_all), so that a worker per case does not run them again. */
static pthread_once_t f16c_once = PTHREAD_ONCE_INIT, dot_once = PTHREAD_ONCE_INIT,
                      tile_once = PTHREAD_ONCE_INIT, fma16_once = PTHREAD_ONCE_INIT;
static bool f16c_ok, dot_ok, tile_ok, fma16_ok;
static char f16c_why[256], dot_why[256], tile_why[256], fma16_why[256];

static void probe_f16c(void) {
    const char *missing;
    if (gck_kpath_cpu_has(GCK_KPATH_AVX2, &missing) ||
        gck_kpath_cpu_has(GCK_KPATH_AVX512, &missing))
        f16c_ok =
            gck_kprobe_f16c(gck_kf16_to_f32_hw, gck_kf16_from_f32_hw, f16c_why, sizeof f16c_why);
}

static void probe_dot(void) {
    const char *missing;
    if (gck_kpath_cpu_has(GCK_KPATH_AVX512BF16, &missing))
        dot_ok = gck_kprobe_dot2(gck_kdot2_hw, dot_why, sizeof dot_why);
}

static void probe_tile(void) {
    const char *missing;
    if (gck_kpath_cpu_has(GCK_KPATH_AMX, &missing))
        tile_ok = gck_kprobe_tile(gck_ktile_hw, tile_why, sizeof tile_why);
}

static void probe_fma16(void) {
    const char *missing;
    if (gck_kpath_cpu_has(GCK_KPATH_AVX512FP16, &missing))
        fma16_ok = gck_kprobe_fma16(gck_kfma16_hw, fma16_why, sizeof fma16_why);
}

void gck_kernels_probe_all(void) {
    pthread_once(&f16c_once, probe_f16c);
    pthread_once(&dot_once, probe_dot);
    pthread_once(&tile_once, probe_tile);
    pthread_once(&fma16_once, probe_fma16);
}

void gck_kernels_amx_settle(void) {
    const char *missing;
    (void)gck_kpath_cpu_has(GCK_KPATH_AMX, &missing); /* asks, where the CPU has everything else */
}

bool gck_kpath_supported(gck_kpath p, char *why, size_t len) {
    const char *missing;
    switch (p) {
    case GCK_KPATH_AUTO:
    case GCK_KPATH_PORTABLE: return true;
    case GCK_KPATH_AVX2:
    case GCK_KPATH_AVX512:
    case GCK_KPATH_AVX512BF16:
    case GCK_KPATH_AVX512FP16:
    case GCK_KPATH_AMX:
        if (!gck_kpath_cpu_has(p, &missing))
            return gck_fail(GCK_EINVAL, why, len, "this CPU lacks %s", missing), false;
        pthread_once(&f16c_once, probe_f16c);
        if (p == GCK_KPATH_AVX512BF16) pthread_once(&dot_once, probe_dot);
        if (p == GCK_KPATH_AVX512FP16) pthread_once(&fma16_once, probe_fma16);
        if (p == GCK_KPATH_AMX) pthread_once(&tile_once, probe_tile);
        if (!f16c_ok)
            return gck_fail(GCK_EINVAL, why, len, "F16C differs from its documentation: %s",
                            f16c_why),
                   false;
        if (p == GCK_KPATH_AVX512BF16 && !dot_ok)
            return gck_fail(GCK_EINVAL, why, len, "%s", dot_why), false;
        if (p == GCK_KPATH_AMX && !tile_ok)
            return gck_fail(GCK_EINVAL, why, len, "%s", tile_why), false;
        if (p == GCK_KPATH_AVX512FP16 && !fma16_ok)
            return gck_fail(GCK_EINVAL, why, len, "%s", fma16_why), false;
        return true;
    default: gck_fail(GCK_EINVAL, why, len, "path %d does not exist", (int)p); return false;
    }
}

void gck_kfloats(float *dst, const void *src, gck_format t, int64_t ss, int64_t n) {
    pthread_once(&f16c_once, probe_f16c);
    gck_kline_to_f32(dst, 1, src, t, ss, n, f16c_ok);
}

gck_kpath gck_kpath_auto(void) {
    const char *env = getenv("GEMMCHECK_KERNELS_PATH");
    gck_kpath p;
    if (env && gck_kpath_parse(env, &p) && p != GCK_KPATH_AUTO && gck_kpath_supported(p, NULL, 0))
        return p;
    for (int best = GCK_KPATH_COUNT - 1; best > GCK_KPATH_PORTABLE; best--)
        if (gck_kpath_supported((gck_kpath)best, NULL, 0)) return (gck_kpath)best;
    return GCK_KPATH_PORTABLE;
}

bool gck_kpath_env_ok(char *why, size_t why_len) {
    const char *amx = getenv("GEMMCHECK_AMX");
    if (amx && *amx && strcmp(amx, "0") != 0 && strcmp(amx, "1") != 0) {
        snprintf(why, why_len,
                 "GEMMCHECK_AMX=%s: 0 (never ask Linux for the AMX tile state) or 1 "
                 "(ask)",
                 amx);
        return false;
    }
    const char *env = getenv("GEMMCHECK_KERNELS_PATH");
    gck_kpath p;
    char no[256] = "";
    if (!env) return true;
    if (!gck_kpath_parse(env, &p)) {
        char names[128] = "";
        for (int q = 0; q < GCK_KPATH_COUNT; q++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", q ? ", " : "",
                     paths[q].name);
        snprintf(why, why_len, "GEMMCHECK_KERNELS_PATH=%s names no path (%s)", env, names);
        return false;
    }
    if (p == GCK_KPATH_AUTO || gck_kpath_supported(p, no, sizeof no)) return true;
    snprintf(why, why_len, "GEMMCHECK_KERNELS_PATH=%s cannot run here: %s", env, no);
    return false;
}

const gck_kpath_ops *gck_kpath_ops_of(gck_kpath p) {
    return p > GCK_KPATH_AUTO && (unsigned)p < GCK_KPATH_COUNT ? paths[p].ops : NULL;
}

/* ---- the model ---------------------------------------------------------------------------- */

/* Whether a case runs on the path's bf16 kernel: the pair dot product or the AMX tiles. */
static bool uses_bf16dot(const gck_kpath_ops *ops, gck_format ta, gck_format tb, gck_format k) {
    return ops && ops->bf16dot && ta == GCK_BF16 && tb == GCK_BF16 && k == GCK_F32;
}

static const gck_kpath_ops *resolved_ops(gck_kpath path) {
    return gck_kpath_ops_of(path == GCK_KPATH_AUTO ? gck_kpath_auto() : path);
}

gck_model gck_kgemm_model(gck_kpath path, gck_format ta, gck_format tb, gck_format compute) {
    gck_ref_model r = gck_ref_model_default(compute);
    r.fma = true;
    r.scale_compute = compute == GCK_F16 ? GCK_F32 : compute; /* f16: alpha and beta in f32 */
    gck_model m = gck_ref_model_declared(&r);
    if (uses_bf16dot(resolved_ops(path), ta, tb, compute)) m.daz = m.ftz = true;
    return m;
}

bool gck_kgemm_pair_dot(gck_kpath path, gck_format ta, gck_format tb, gck_format compute) {
    const gck_kpath_ops *ops = resolved_ops(path);
    return uses_bf16dot(ops, ta, tb, compute) && !ops->bf16tile;
}

bool gck_kgemm_tile_dot(gck_kpath path, gck_format ta, gck_format tb, gck_format compute) {
    const gck_kpath_ops *ops = resolved_ops(path);
    return uses_bf16dot(ops, ta, tb, compute) && ops->bf16tile;
}

/* ---- blocking ----------------------------------------------------------------------------- */

static int64_t cache_bytes(int name, int64_t fallback) {
    long v = sysconf(name);
    return v > 0 ? (int64_t)v : fallback;
}

/* L2 per core, as the machine reports it (1 MiB when it does not). */
static int64_t l2_size(void) { return cache_bytes(_SC_LEVEL2_CACHE_SIZE, 1 << 20); }

static int64_t limit_l1;

/* L1 data per core, as the machine reports it (32 KiB when it does not) or a test limits it. */
static int64_t l1_size(void) {
    return limit_l1 > 0 ? limit_l1 : cache_bytes(_SC_LEVEL1_DCACHE_SIZE, 32768);
}

static int64_t clamp_to(int64_t v, int64_t lo, int64_t hi, int64_t multiple) {
    v = v < lo ? lo : v > hi ? hi : v;
    return v / multiple * multiple;
}

/* test limits (gck_kernels_limit, gck_kernels_limit_l1); 0: none */
static int64_t limit_w, limit_nc, limit_l2;

void gck_kernels_limit(int64_t w_bytes, int64_t nc, int64_t l2_bytes) {
    limit_w = w_bytes;
    limit_nc = nc;
    limit_l2 = l2_bytes;
}

void gck_kernels_limit_l1(int64_t l1_bytes) { limit_l1 = l1_bytes; }

gck_blocking gck_kernels_blocking(int es, int mr, int nr) {
    int64_t l1 = l1_size();
    int64_t l2 = l2_size();
    /* a B sliver of KC steps in half of L1 (the A slivers stream through the other half); an
     * MC x KC block of A in half of L2; a panel of B of NC columns packed a KC block at a time
     * and reused across the row blocks (BLIS's analytical model, Low et al., ACM TOMS 43(2),
     * 2016, simplified); the accumulator block within 32 MiB, so that B is packed once per KC
     * block for all the rows of a job up to that (measured: f64 2048^3 on one Zen 5 core went
     * from 77 to 85-90 GFLOP/s against an MC-row accumulator with B packed for all K). The B
     * panel, KC x NC, within L2 (at least 512 columns): on a Zen 4 core (1 MiB of L2) f64
     * 4096^3 went from 47.3-48.2 to 50.6-51.0 GFLOP/s on one thread and from 95.8-96.7 to
     * 100.6-102.4 on two with NC 512 instead of 4096; f32 and f16 at NC 768 within noise.
     * op(A) is packed once per panel, and that pass costs the same per value while a
     * narrower type's multiply-adds go twice as fast, so the least NC is 4096 bytes' worth of
     * values (512 f64, 1024 f32): on a Zen 5 core (1 MiB of L2), 2048^3 at NC 1020 instead of
     * 504, best of 15-20 calls, three rounds alternated, GFLOP/s: f32 one thread 169-186
     * against 168-177, two 334-359 against 321-344; f16 2048^3 0.97x the best sgemm against
     * 0.83x (bench_kernels, docs/PERFORMANCE.md) */
    (void)mr;
    int64_t kc = clamp_to(l1 / 2 / (nr * (int64_t)es), 64, 1024, 8);
    int64_t mc = clamp_to(l2 / 2 / (kc * es), mr, 4096, mr);
    int64_t nc = clamp_to(limit_nc > 0 ? limit_nc : l2 / (kc * es), nr, 4096, nr);
    int64_t nc_min = 4096 / es; /* 512 f64 columns, 1024 f32 */
    if (limit_nc <= 0 && nc < nc_min) nc = clamp_to(nc_min, nr, 4096, nr);
    int64_t w = limit_w > 0 ? limit_w : (int64_t)32 << 20;
    if (nc < nr) nc = nr;
    /* a panel may be an eighth wider than NC, so that a job just over a whole number of panels
     * does not pack all of op(A) once more for a sliver of a panel: 2048 f64 columns at NC 680
     * (an Intel core's 2 MiB of L2) took four panels of 512, and now three of 688 (driver.h) */
    int64_t nc_max = nc + nc / 8 / nr * nr;
    int64_t ways = cache_bytes(_SC_LEVEL1_DCACHE_ASSOC, 8);
    return (gck_blocking){mc < mr ? mr : mc, kc, nc, nc_max, w, l1, ways};
}

/* A lane tile runs a job of at most its rows: each line of op(B) it reads is used once, by the
 * one tile of rows, so its block need not keep op(B) in L1, only the packed sliver of op(A) that
 * every tile of columns reuses. Fewer, longer calls: each call's chain of dependent FMAs starts
 * from W and ends in it, through memory. On a Zen 5 core (one thread, best of 200 calls, three
 * rounds alternated) f32 GFLOP/s, 384 steps a block against 1,536 and 6,144: 1 x 2048 x 1024
 * 23.1-23.7 / 26.1-27.0 / 26.4-26.7, 2 x 2048 x 1024 36.6-37.4 / 41.6-43.1 / 41.4-42.8, 4 x 2048
 * x 1024 75.1-76.3 / 85.6-87.4 / 86.1-87.0, 4 x 64 x 4096 54.8-57.4 / 56.7-60.3 / 57.1-60.5; f64
 * 4 x 2048 x 1024 48.3-52.2 / 54.4-56.7 / 53.6-56.7, 1 x 2048 x 1024 14.0-14.9 / 15.0-15.3. */
int64_t gck_kernels_kc_lanes(const gck_blocking *bk, int64_t mr, int es) {
    return clamp_to(bk->l1 / 2 / (mr * es), bk->kc, 8192, 8);
}

/* The lines of a strided operand one set of L1 may hold before it counts as crowded: two thirds
 * of its ways, the rest left to the other data the kernels touch. */
static int64_t set_lines_limit(int64_t ways) { return ways * 2 / 3; }

/* A set of L1 holds one line of each way; lines `l1 / ways` bytes apart share one. Columns of
 * op(A) a multiple of that apart (a power-of-two leading dimension) put the lines a tile reads of
 * every one of them into the same sets, and a block of more columns than the sets have ways for
 * evicts lines before they are used: on a Zen 5 core (48 KiB, 12 ways), one thread, f32 2048 x 1
 * x 1024 (96 x 1 tile, 32 steps a block) ran 31 GFLOP/s and 38-39 at 8 steps, f64 (48 x 1) 13.6
 * and 19-21, 2048 x 2 x 1024 f32 52 and 61, f64 27 and 32; at a leading dimension of 2000 each
 * column's lines sit 192 bytes from the last one's, and 16 or 32 steps ran alike (41-42). Tiles
 * of three or more columns do enough multiply-adds per line to hide it and lose at 8 steps
 * (2048 x 4, 8, 16: 116 -> 115, 162 -> 112, 163 -> 81 in f32): driver.h asks only for tiles of
 * one or two columns. */
int64_t gck_kernels_kc_ways(int64_t kc, int64_t l1, int64_t ways, int64_t col_bytes,
                            int64_t window) {
    enum { LINE = 64, MAX_LINES = 1024 };
    int64_t lines = ways > 0 ? l1 / ways / LINE : 0, limit = set_lines_limit(ways);
    if (lines < 1 || lines > MAX_LINES || limit < 1 || col_bytes <= 0) return kc;
    int64_t w = (window + LINE - 1) / LINE + 1; /* an unaligned window spans one more line */
    if (w > lines) w = lines;
    int64_t held[MAX_LINES] = {0};
    for (int64_t c = 0; c < kc; c++) {
        int64_t first = c * col_bytes % (lines * LINE) / LINE;
        for (int64_t t = 0; t < w; t++)
            if (++held[(first + t) % lines] > limit) return c < 4 ? (kc < 4 ? kc : 4) : c;
    }
    return kc;
}

/* ---- arguments ---------------------------------------------------------------------------- */

static const char *const arg_names[GCK_GEMM_RESULT_COUNT] = {"ok",
                                                             "order",
                                                             "transa",
                                                             "transb",
                                                             "M",
                                                             "N",
                                                             "K",
                                                             "alpha",
                                                             "beta",
                                                             "A",
                                                             "type_a",
                                                             "lda",
                                                             "stride_a",
                                                             "B",
                                                             "type_b",
                                                             "ldb",
                                                             "stride_b",
                                                             "C",
                                                             "type_c",
                                                             "ldc",
                                                             "stride_c",
                                                             "D",
                                                             "type_d",
                                                             "ldd",
                                                             "stride_d",
                                                             "batch",
                                                             "compute",
                                                             "scale_type",
                                                             "threads",
                                                             "path",
                                                             "out of memory"};

const char *gck_gemm_arg_name(gck_gemm_arg a) {
    return (unsigned)a < GCK_GEMM_RESULT_COUNT ? arg_names[a] : "unknown";
}

/* The argument a gck_case_validate message names: its first word. */
static gck_gemm_arg arg_of_message(const char *m) {
    size_t n = strcspn(m, " (");
    for (int a = 1; a < GCK_GEMM_OUT_OF_MEMORY; a++)
        if (strlen(arg_names[a]) == n && !strncmp(m, arg_names[a], n)) return (gck_gemm_arg)a;
    return GCK_GEMM_ARG_BATCH; /* the case's remaining checks are about batch extents */
}

/* Refuse with the argument `a`, the reason written by gck_fail into msg. */
#define refuse(a, msg, len, ...) (gck_fail(GCK_EINVAL, msg, len, __VA_ARGS__), (a))

static gck_gemm_arg check_args(const gck_case *c, const void *A, const void *B, const void *C,
                               const void *D, const gck_gemm_config *cfg, char *msg, size_t len) {
    char why[512];
    if (gck_case_validate(c, why, sizeof why) != GCK_OK)
        return refuse(arg_of_message(why), msg, len, "%s", why);
    if (c->compute == GCK_F16 && (c->type_a != GCK_F16 || c->type_b != GCK_F16))
        return refuse(GCK_GEMM_ARG_COMPUTE, msg, len,
                      "compute f16 takes f16 A and B only (A is %s, B is %s)",
                      gck_format_get(c->type_a)->name, gck_format_get(c->type_b)->name);
    if (c->compute != GCK_F32 && c->compute != GCK_F64 && c->compute != GCK_F16)
        return refuse(GCK_GEMM_ARG_COMPUTE, msg, len, "compute (%s) must be f32 or f64, or f16",
                      gck_format_get(c->compute)->name);
    bool empty = c->m == 0 || c->n == 0;
    if (!empty && gck_case_reads_ab(c) && !A)
        return refuse(GCK_GEMM_ARG_A, msg, len, "A is NULL and alpha*op(A)*op(B) is needed");
    if (!empty && gck_case_reads_ab(c) && !B)
        return refuse(GCK_GEMM_ARG_B, msg, len, "B is NULL and alpha*op(A)*op(B) is needed");
    if (!empty && gck_case_reads_c(c) && !C)
        return refuse(GCK_GEMM_ARG_C, msg, len, "C is NULL and beta (%g) is not 0", c->beta);
    if (!empty && !D) return refuse(GCK_GEMM_ARG_D, msg, len, "D is NULL");
    if (c->d_is_c && D != C)
        return refuse(GCK_GEMM_ARG_D, msg, len, "D must be C's buffer when D is computed in place");
    if (cfg && (cfg->threads < 0 || cfg->threads > 1024))
        return refuse(GCK_GEMM_ARG_THREADS, msg, len, "threads (%d) must be 0..1024", cfg->threads);
    if (cfg && !gck_kpath_supported(cfg->path, why, sizeof why))
        return refuse(GCK_GEMM_ARG_PATH, msg, len, "path %s: %s", gck_kpath_name(cfg->path), why);
    if (msg && len) msg[0] = '\0';
    return GCK_GEMM_OK;
}

/* ---- the driver --------------------------------------------------------------------------- */

/* One thread's share: batch members b0..b1, rows i0..i1 and columns j0..j1 of each. */
typedef struct kjob {
    const gck_case *c;
    const gck_kpath_ops *ops;
    const void *A, *B, *C;
    void *D;
    int64_t ars, acs, brs, bcs, crs, ccs, drs, dcs;
    int64_t b0, b1, i0, i1, j0, j1;
    struct kbufs *bufs; /* the job's packing buffers, taken when it starts */
    bool ok;
} kjob;

/* One operand as the packing reads it: op(X)(x, k) at base + (x*xs + k*ks)*es bytes. */
typedef struct kpanel {
    const char *base;
    gck_format t;
    int64_t es, xs, ks;
    bool f16c;
} kpanel;

static void *kalloc(size_t bytes) { return aligned_alloc(64, (bytes + 63) / 64 * 64); }

/* Packing buffers, kept from one call to the next (a fresh allocation per call costs page faults
 * comparable to a small product's arithmetic, and a thread started for one call would lose its
 * own at its end): a job takes a set from a shared cache, grows what it needs, and gives the set
 * back; at most KBUF_SETS sets are kept, holding at most KBUF_KEEP bytes together (a set given
 * back past that is kept empty). */
enum { KBUF_SETS = 16 };
#define KBUF_KEEP ((size_t)128 << 20)
typedef struct kbufs {
    void *p[KBUF_COUNT];
    size_t size[KBUF_COUNT];
} kbufs;
static pthread_mutex_t kbufs_lock = PTHREAD_MUTEX_INITIALIZER;
static kbufs *kbufs_cache[KBUF_SETS];
static int kbufs_cached;
static size_t kbufs_bytes; /* held by the cached sets */

static size_t kbufs_size(const kbufs *b) {
    size_t n = 0;
    for (int i = 0; i < KBUF_COUNT; i++) n += b->size[i];
    return n;
}

static void kbufs_empty(kbufs *b) {
    for (int i = 0; i < KBUF_COUNT; i++) {
        free(b->p[i]);
        b->p[i] = NULL;
        b->size[i] = 0;
    }
}

kbufs *gck_kbufs_take(void) {
    pthread_mutex_lock(&kbufs_lock);
    kbufs *b = kbufs_cached ? kbufs_cache[--kbufs_cached] : NULL;
    if (b) kbufs_bytes -= kbufs_size(b);
    pthread_mutex_unlock(&kbufs_lock);
    return b ? b : calloc(1, sizeof *b);
}

void gck_kbufs_give(kbufs *b) {
    if (!b) return;
    bool kept, full;
    pthread_mutex_lock(&kbufs_lock);
    kept = kbufs_cached < KBUF_SETS;
    full = kbufs_bytes + kbufs_size(b) > KBUF_KEEP;
    if (kept && full) kbufs_empty(b);
    if (kept) {
        kbufs_bytes += kbufs_size(b);
        kbufs_cache[kbufs_cached++] = b;
    }
    pthread_mutex_unlock(&kbufs_lock);
    if (kept) return;
    kbufs_empty(b);
    free(b);
}

/* The cached sets, freed when the library is unloaded (or the process exits). */
__attribute__((destructor)) static void kbufs_release(void) {
    pthread_mutex_lock(&kbufs_lock);
    while (kbufs_cached) {
        kbufs *b = kbufs_cache[--kbufs_cached];
        kbufs_empty(b);
        free(b);
    }
    kbufs_bytes = 0;
    pthread_mutex_unlock(&kbufs_lock);
}

/* Buffer `slot` of the set of at least `bytes` bytes, 64-byte aligned; NULL when out of memory. */
void *gck_kbuf(kbufs *b, int slot, size_t bytes) {
    if (!b) return NULL;
    if (b->size[slot] >= bytes) return b->p[slot];
    free(b->p[slot]);
    b->p[slot] = kalloc(bytes);
    b->size[slot] = b->p[slot] ? bytes : 0;
    return b->p[slot];
}

/* bf16 bits as they are stored (the pair dot product reads them unconverted). */
static inline void kline_bits16(uint16_t *dst, int64_t ds, const void *src, gck_format t,
                                int64_t ss, int64_t n, bool f16c) {
    (void)t;
    (void)f16c;
    gck_kline_bits16(dst, ds, src, ss, n);
}

/* Whether n values `stride` bytes apart (each within one line) would put more lines into one
 * set of L1 than two thirds of its ways: a stride of whole lines s maps them to the sets with a
 * period of sets / gcd(s, sets) values, so each set the period passes holds n / period of them;
 * any other stride spreads them over the lines' offsets as well (not counted as crowding). */
static bool lines_crowd_a_set(int64_t n, int64_t stride, const gck_blocking *bk) {
    int64_t sets = bk->l1_ways > 0 ? bk->l1 / bk->l1_ways / 64 : 0;
    if (sets < 1 || stride % 64) return false;
    int64_t a = stride / 64 % sets, b = sets;
    while (a) {
        int64_t t = b % a;
        b = a;
        a = t;
    }
    int64_t period = sets / b; /* b: gcd(stride in lines, sets), or sets where it is 0 */
    return (n + period - 1) / period > set_lines_limit(bk->l1_ways);
}

/* The epilogue's block where D is stored by rows (driver.h): EPI_ROWS rows of W by EPI_COLS
 * columns, so that each row of D gets EPI_COLS values in a run (four lines of f32, eight of
 * f64) and the block (16 KiB of f64) stays in L1 while it goes out. On a Zen 5 thread, f32 2048
 * x 64 x 64 ran 142 GFLOP/s on 32 x 64 blocks, 139 on 64 x 32 and 130-135 on 64 x 16. */
#define EPI_ROWS 32
#define EPI_COLS 64

/* Packing an operand stored along k goes through a buffer of PACK_CHUNK steps of at most
 * PACK_MAX_LEN runs (the widest tile of any path: 32 rows). Packing one stored along its rows
 * (op(A) not transposed in column-major order) reads a run of each column a leading dimension
 * apart, where the hardware's prefetchers find no stream: the run PACK_PF columns on is requested
 * first. On the Intel Xeon with AMX (family 6 model 167), f64 2048^3 on one thread, perf's share
 * of the packing of op(A) went from 8.1% to 7.2% (6.2% to 5.6% with the wider panels of
 * gck_kernels_blocking), and 30 calls alternated in one process went from 42.8 to 44.4 GFLOP/s
 * on average (best 47.1 to 48.7; 2 threads 74.0 to 76.5), with the wider panels together;
 * separate processes of the two builds, alternated, did not tell them apart (best of 6 calls, 5
 * rounds: 41.2-53.4 against 42.4-52.5), the host's own swings being larger. */
enum { PACK_CHUNK = 64, PACK_MAX_LEN = 32, PACK_PF = 4 };

/* Operands read where they are stored, not packed (BLIS's "sup" case): op(B) when a job has
 * at most SUP_TILES_B row tiles to reuse its packed slivers, op(A) (rows contiguous, ars = 1)
 * when it has at most SUP_TILES_A column slivers or, for a job of at least two tiles of rows,
 * when the job's op(A) takes at most half of L1 (each column sliver's pass then reads it from
 * L1, and packing it saved nothing: on a Zen 5 core, one thread, best of 5,000 calls, two or
 * three rounds, GFLOP/s packed / in place: f32 64^3 147-150 / 175-178, 32^3 63-64 / 75, f64
 * 48^3 69 / 80-81; with all of L1 instead of half, f32 96^3 188 -> 210 and 128 x 128 x 64 182 ->
 * 197 on one thread, but two threads ran 256 x 256 x 64 (jobs of 128 rows) at 297-303 instead
 * of 330-334, and with up to 1 MiB f64 256 x 256 x 128 fell from 97 to 47); only operands
 * already in the compute type, on paths with kernels for it, and only whole tiles (edges are
 * packed). op(B) read in place by up to 16 row tiles still beats packing it (a Zen 3 core,
 * GFLOP/s at 4, 8 and 16 tiles: f32
 * 128x2048x1024 69, 84, -; 256x2048x1024 64, 56, 82; f64 64x2048x1024 27, 38, -;
 * 128x2048x1024 31, 32, 37; 64x64x16384 20, 34, 33). */
#ifndef SUP_TILES_A
#define SUP_TILES_A 4
#endif
#ifndef SUP_TILES_B
#define SUP_TILES_B 16
#endif
enum { SUP_A = 1, SUP_B = 2 };

static atomic_long sup_jobs;

long gck_kernels_sup_jobs(void) { return atomic_load(&sup_jobs); }

static atomic_long lane_jobs, shape_jobs[2][GCK_SUP_SHAPES], direct_blocks, rows_epilogues;

long gck_kernels_direct_blocks(void) { return atomic_load(&direct_blocks); }

long gck_kernels_rows_epilogues(void) { return atomic_load(&rows_epilogues); }

long gck_kernels_lane_jobs(void) { return atomic_load(&lane_jobs); }

long gck_kernels_shape_jobs(bool f32, int s) {
    return s >= 0 && s < GCK_SUP_SHAPES ? atomic_load(&shape_jobs[f32][s]) : 0;
}

static bool has_shape(const gck_kpath_ops *ops, bool f32, int s) {
    return s < GCK_SUP_SHAPES && (f32 ? ops->s32[s].fn != NULL : ops->s64[s].fn != NULL);
}

static int sup_reads(const gck_case *c, const gck_kpath_ops *ops, int64_t ars, int64_t rows,
                     int64_t cols) {
    bool f32 = c->compute == GCK_F32;
    if (c->compute == GCK_F16 || uses_bf16dot(ops, c->type_a, c->type_b, c->compute) ||
        !has_shape(ops, f32, 0))
        return 0;
    /* in tiles of the in-place kernels' first shape */
    int64_t mr = f32 ? ops->s32[0].mr : ops->s64[0].mr, nr = f32 ? ops->s32[0].nr : ops->s64[0].nr;
    /* and, for a job of at least two tiles of rows, op(A) within half of L1 */
    bool a_in_l1 =
        rows >= 2 * mr && (double)rows * (double)c->k * (f32 ? 4 : 8) <= (double)l1_size() / 2;
    return (c->type_a == c->compute && ars == 1 && (cols <= SUP_TILES_A * nr || a_in_l1) ? SUP_A
                                                                                         : 0) |
           (c->type_b == c->compute && rows <= SUP_TILES_B * mr ? SUP_B : 0);
}

/* rows x cols padded to whole tiles */
static double padded(int64_t rows, int64_t cols, int64_t mr, int64_t nr) {
    return (double)((rows + mr - 1) / mr * mr) * (double)((cols + nr - 1) / nr * nr);
}

/* Whether a path has 512-bit tiles beside 256-bit ones for jobs that read op(A) in place
 * (packed_b in f64, wide in f32): its passes over a large op(A) are counted (sup_shape). */
static bool has_a_tiles_512(const gck_kpath_ops *ops, bool f32) {
    for (int s = 0; has_shape(ops, f32, s); s++)
        if (f32 ? ops->s32[s].packed_b || ops->s32[s].wide : ops->s64[s].packed_b) return true;
    return false;
}

/* The tile for a job whose operands are read in place (`reads`, as sup_reads says; brs: op(B)'s
 * stride along k; K: its steps): the path's shape of least work, its rows x cols padded to whole
 * tiles (the default, first, on a tie); a shape with columns in its lanes only for a job of at
 * most its rows that reads only op(B) in place, stored along k (with B's columns contiguous the
 * lane tile would read a few values per step a leading dimension apart: 2048 x 1 x 1024 f32
 * transposed onto it ran 3 GFLOP/s, against 17-19 streaming A as it is); a `packed_b` shape only
 * for a job that reads only op(A) in place, and of fewer than twice its columns. When such a
 * job's op(A) takes more than twice L2, each column tile streams it from further away: on a path
 * with packed_b shapes (AVX-512's: twice as wide) its work is then (1 + 2/NR) times the padded
 * work, and 0.75 of that on the packed_b shapes, which picks, for f64 2048 x N x 1024, the tiles
 * that ukernel_x86.c's measurements found fastest for N = 1 to 24; with op(A) nearer, only the
 * padding counts (f64 on one Zen 4 thread with 1 MiB of L2, GFLOP/s counting the passes or not:
 * 300 x 20 x 500, op(A) 1.2 MB, 39 against 48; from 2.4 MB on the passes win or tie: 600 x 16 x
 * 500 46 / 44, 1000 x 12 x 300 49 / 46, 500 x 10 x 600 33 / 24, 400 x 24 x 800 50 / 43, 600 x 8
 * x 1000 47 / 39, 2000 x 20 x 300 42 / 45). The same holds for f32 on a path with `wide`
 * shapes, where a taller shape wins a tie while the passes count (64 x 4 against 32 x 4: f32 2048
 * x 4 x 1024 77 against 55 GFLOP/s). A `wide` shape's work counts WIDE_WORK of its own: two or
 * more 512-bit vectors of rows load half as many vectors and broadcasts per multiply-add as the
 * 256-bit tiles (docs/KERNELS.md, "AVX-512 f32 tiles"). In f64 the `wide` shapes serve only jobs
 * that read op(B) in place stored along k (brs 1), at WIDE_WORK64 of their padded work: on a Zen 5
 * core (512-bit FMA at twice the 256-bit rate) the 16 x 8 and 24 x 8 tiles ran such jobs of whole
 * tiles in 0.49-0.57 of the AVX2 tiles' time (f64 64 x 64 x 16384 57 -> 111 GFLOP/s, 16 x 2048 x
 * 1024 66 -> 128; 12 x 2048 x 1024, padded to 16 rows, 63 -> 87), and 0.55 keeps a half-empty
 * 16-row tile off an 8-row job; a job reading only op(A) in place keeps the packed_b shapes, and
 * op(B) read in place with its columns contiguous (the transposed 2048 x 24 x 1024: 97 against 115
 * as it is) the AVX2 ones. *work: that work. */
#define WIDE_WORK   0.8
#define WIDE_WORK64 0.55
static int sup_shape(const gck_kpath_ops *ops, bool f32, int64_t rows, int64_t cols, int64_t K,
                     int reads, int64_t brs, double *work) {
    int64_t l2 = limit_l2 > 0 ? limit_l2 : l2_size();
    bool lanes = reads == SUP_B && brs == 1;
    bool passes = reads == SUP_A && (double)rows * (double)K * (f32 ? 4 : 8) > 2.0 * (double)l2 &&
                  has_a_tiles_512(ops, f32);
    int best = 0;
    for (int s = 0; has_shape(ops, f32, s); s++) {
        int mr = f32 ? ops->s32[s].mr : ops->s64[s].mr, nr = f32 ? ops->s32[s].nr : ops->s64[s].nr;
        bool packed_b = f32 ? ops->s32[s].packed_b : ops->s64[s].packed_b;
        if ((f32 ? ops->s32[s].lanes : ops->s64[s].lanes) && (!lanes || rows > mr)) continue;
        if (packed_b && (reads != SUP_A || nr >= 2 * cols)) continue;
        bool wide = f32 ? ops->s32[s].wide : ops->s64[s].wide;
        if (!f32 && wide && (!(reads & SUP_B) || brs != 1)) continue;
        double p = padded(rows, cols, mr, nr);
        if (passes) p *= (1.0 + 2.0 / nr) * (packed_b ? 0.75 : 1.0);
        if (wide) p *= f32 ? WIDE_WORK : WIDE_WORK64;
        int best_mr = f32 ? ops->s32[best].mr : ops->s64[best].mr;
        if (s == 0 || p < *work || (passes && p == *work && mr > best_mr)) best = s, *work = p;
    }
    return best;
}

#define KT              float
#define PT              float
#define KP              1
#define KN(name)        name##_f32
#define KLINE           gck_kline_to_f32
#define KIN             gck_kline_to_f32
#define KOUT            gck_kline_from_f32
#define KUK(o, kb, ...) (o)->f32(kb, __VA_ARGS__)
#define KMR             mr32
#define KSK             s32
#define KSKT            gck_skernel_f32
#define KSAME(t)        ((t) == GCK_F32)
#define KNR             nr32
#include "driver.h"
#define KT              double
#define PT              double
#define KP              1
#define KN(name)        name##_f64
#define KLINE           gck_kline_to_f64
#define KIN             gck_kline_to_f64
#define KOUT            gck_kline_from_f64
#define KUK(o, kb, ...) (o)->f64(kb, __VA_ARGS__)
#define KMR             mr64
#define KSK             s64
#define KSKT            gck_skernel_f64
#define KSAME(t)        ((t) == GCK_F64)
#define KNR             nr64
#include "driver.h"
#define KT              float
#define PT              uint16_t
#define KP              2
#define KN(name)        name##_bf16dot
#define KLINE           kline_bits16
#define KIN             gck_kline_to_f32
#define KOUT            gck_kline_from_f32
#define KUK(o, kb, ...) (o)->bf16dot((kb) / 2, __VA_ARGS__)
#define KMR             mrbf
#define KSAME(t)        ((t) == GCK_BF16)
#define KNR             nrbf
#include "driver.h"
#define KT              float
#define PT              uint16_t
#define KP              1
#define KNOSUP          1 /* the in-place kernels are f32 and f64 only */
#define KN(name)        name##_h16
#define KLINE           kline_bits16
#define KIN             gck_kline_to_f32
#define KOUT            gck_kline_from_f32
#define KUK(o, kb, ...) (o)->h16(kb, __VA_ARGS__)
#define KMR             mrh
#define KSAME(t)        ((t) == GCK_F16)
#define KNR             nrh
#include "driver.h"

/* The register tile a case runs with. */
static void tile_of(const gck_case *c, const gck_kpath_ops *ops, int64_t *mr, int64_t *nr) {
    bool dot = uses_bf16dot(ops, c->type_a, c->type_b, c->compute);
    if (c->compute == GCK_F16) {
        *mr = ops->mrh, *nr = ops->nrh;
        return;
    }
    *mr = dot ? ops->mrbf : c->compute == GCK_F32 ? ops->mr32 : ops->mr64;
    *nr = dot ? ops->nrbf : c->compute == GCK_F32 ? ops->nr32 : ops->nr64;
}

static const void *member(const void *base, gck_format t, int64_t stride, int64_t b) {
    return base ? (const char *)base + b * stride * gck_format_get(t)->storage_bytes : NULL;
}

static void *run_job(void *arg) {
    kjob *j = arg;
    const gck_case *c = j->c;
    j->bufs = gck_kbufs_take();
    j->ok = j->bufs != NULL;
    for (int64_t b = j->b0; b < j->b1 && j->ok; b++) {
        const void *Ab = member(j->A, c->type_a, c->stride_a, b);
        const void *Bb = member(j->B, c->type_b, c->stride_b, b);
        const void *Cb = member(j->C, c->type_c, c->stride_c, b);
        void *Db = (void *)member(j->D, gck_case_type(c, GCK_D), gck_case_stride(c, GCK_D), b);
        if (c->compute == GCK_F16)
            j->ok = block_h16(j, Ab, Bb, Cb, Db, j->i0, j->i1, j->j0, j->j1);
        else if (uses_bf16dot(j->ops, c->type_a, c->type_b, c->compute))
            j->ok = block_bf16dot(j, Ab, Bb, Cb, Db, j->i0, j->i1, j->j0, j->j1);
        else if (c->compute == GCK_F32)
            j->ok = block_f32(j, Ab, Bb, Cb, Db, j->i0, j->i1, j->j0, j->j1);
        else
            j->ok = block_f64(j, Ab, Bb, Cb, Db, j->i0, j->i1, j->j0, j->j1);
    }
    gck_kbufs_give(j->bufs);
    return NULL;
}

/* Threads: batch members if there are enough, else ranges of the longer of M and N, in whole
 * register tiles; never K (every element keeps its one accumulator). */
static int split(const gck_case *c, const kjob *proto, int threads, kjob *jobs) {
    int64_t mr, nr;
    tile_of(c, proto->ops, &mr, &nr);
    bool by_batch = c->batch >= threads, by_rows = !by_batch && c->m > c->n;
    if (!by_batch && c->m == c->n) { /* each thread reads all of the other operand: the smaller
                                      * one, or on a tie the one read in place (not packed) */
        int rows_split = sup_reads(c, proto->ops, proto->ars, (c->m + threads - 1) / threads, c->n);
        int cols_split = sup_reads(c, proto->ops, proto->ars, c->m, (c->n + threads - 1) / threads);
        if ((rows_split & SUP_B) && c->m >= threads * mr)
            by_rows = true;
        else if ((cols_split & SUP_A) && c->n >= threads * nr)
            by_rows = false;
    }
    int64_t len = by_batch  ? c->batch
                  : by_rows ? c->m
                            : c->n,
            unit = by_batch  ? 1
                   : by_rows ? mr
                             : nr;
    int64_t units = (len + unit - 1) / unit;
    if (threads > units) threads = (int)units;
    for (int t = 0; t < threads; t++) {
        int64_t lo = units * t / threads * unit, hi = units * (t + 1) / threads * unit;
        if (hi > len) hi = len;
        jobs[t] = *proto;
        if (by_batch) {
            jobs[t].b0 = lo;
            jobs[t].b1 = hi;
        } else if (by_rows) {
            jobs[t].i0 = lo;
            jobs[t].i1 = hi;
        } else {
            jobs[t].j0 = lo;
            jobs[t].j1 = hi;
        }
    }
    return threads;
}

/* The job for D^T = op(B)^T op(A)^T: op(B)^T is the new A and op(A)^T the new B, C and D are
 * read and written transposed; *ct is the case with M and N (and A's and B's parts) swapped. */
static void transpose_job(const gck_case *c, gck_case *ct, kjob *j) {
    *ct = *c;
    ct->m = c->n;
    ct->n = c->m;
    ct->type_a = c->type_b;
    ct->type_b = c->type_a;
    ct->stride_a = c->stride_b;
    ct->stride_b = c->stride_a;
    const void *a = j->A;
    j->A = j->B;
    j->B = a;
    int64_t ars = j->ars, acs = j->acs, t;
    j->ars = j->bcs;
    j->acs = j->brs;
    j->brs = acs;
    j->bcs = ars;
    t = j->crs, j->crs = j->ccs, j->ccs = t;
    t = j->drs, j->drs = j->dcs, j->dcs = t;
    j->c = ct;
    j->i1 = ct->m;
    j->j1 = ct->n;
}

/* What a case costs on its tile, in padded rows x cols: on the shape that fits it when it reads
 * an operand in place, else on the path's tile (*sup: whether it reads any operand in place).
 * Reading op(A) in place costs no more than reading the same values as op(B) since A is streamed
 * down its columns (driver.h): on a Zen 3, 2048 x N x 1024 as it is (A in place) and transposed
 * (the same values as B in place), GFLOP/s for N = 6, 8, 12, 16, 24: f32 48/22, 47/29, 55/29,
 * 47/54, 53/25; f64 18/12, 19/15, 24/16, 21/24, 25/18; this cost picks the faster of each. */
static double case_cost(const gck_case *c, const gck_kpath_ops *ops, int64_t ars, int64_t brs,
                        bool *sup) {
    int reads = sup_reads(c, ops, ars, c->m, c->n);
    double w = 0;
    *sup = reads != 0;
    if (*sup) /* a shape other than the path's own tile loses ties (f64 2048 x 16 x 1024: 21
               * GFLOP/s on 12 x 4 as it is, 24 on 8 x 6 transposed) */
        return sup_shape(ops, c->compute == GCK_F32, c->m, c->n, c->k, reads, brs, &w) ? w + 0.5
                                                                                       : w;
    int64_t mr, nr;
    tile_of(c, ops, &mr, &nr);
    return padded(c->m, c->n, mr, nr);
}

/* Whether to compute D^T = op(B)^T op(A)^T instead: reading an operand in place wins (1 x 2048 x
 * 1024 f32 on a Zen 3: 4.1 GFLOP/s as it is, reading B in place, against 1.4 transposed and
 * packed), else the lower cost (M is the dimension of MR-tall slivers, N of NR-wide ones, and a
 * short M, 16 rows of a 32-row tile, wastes more than a wide N). Every element keeps its one
 * accumulator and its order of k, so the bits are the same either way. */
static bool transposed_pays(const gck_case *c, const kjob *proto) {
    gck_case ct;
    kjob t = *proto;
    transpose_job(c, &ct, &t);
    bool sup, sup_t;
    double as_is = case_cost(c, proto->ops, proto->ars, proto->brs, &sup);
    double swapped = case_cost(&ct, t.ops, t.ars, t.brs, &sup_t);
    return sup != sup_t ? sup_t : swapped < as_is;
}

gck_gemm_arg gck_kgemm(const gck_case *c, const void *A, const void *B, const void *C, void *D,
                       const gck_gemm_config *cfg, char *msg, size_t len) {
    gck_gemm_arg bad = check_args(c, A, B, C, D, cfg, msg, len);
    if (bad != GCK_GEMM_OK || c->m == 0 || c->n == 0) return bad;
    gck_kpath path = cfg && cfg->path != GCK_KPATH_AUTO ? cfg->path : gck_kpath_auto();
    const gck_kpath_ops *ops = gck_kpath_ops_of(path);
    if (c->compute == GCK_F16 && !ops->h16) /* the emulation: the same bits */
        ops = &gck_kpath_portable_ops;
    kjob proto = {.c = c,
                  .ops = ops,
                  .A = A,
                  .B = B,
                  .C = gck_case_reads_c(c) ? C : NULL,
                  .D = D,
                  .b0 = 0,
                  .b1 = c->batch,
                  .i0 = 0,
                  .i1 = c->m,
                  .j0 = 0,
                  .j1 = c->n};
    gck_case_op_strides(c, GCK_A, &proto.ars, &proto.acs);
    gck_case_op_strides(c, GCK_B, &proto.brs, &proto.bcs);
    gck_case_op_strides(c, GCK_C, &proto.crs, &proto.ccs);
    gck_case_op_strides(c, GCK_D, &proto.drs, &proto.dcs);
    gck_case ct;
    if (transposed_pays(c, &proto)) {
        transpose_job(c, &ct, &proto);
        c = &ct;
    }
    /* a thread for every 2^20 multiply-adds at least: small products stay on one */
    double work = (double)c->m * (double)c->n * (double)(c->k + 1) * (double)c->batch;
    int threads = gck_thread_count(cfg ? cfg->threads : 0, (long long)(work / 1048576.0) + 1);
    kjob jobs[1024];
    threads = split(c, &proto, threads, jobs);
    gck_parallel(jobs, (size_t)threads, sizeof jobs[0], run_job);
    for (int t = 0; t < threads; t++)
        if (!jobs[t].ok)
            return refuse(GCK_GEMM_OUT_OF_MEMORY, msg, len,
                          "out of memory for the packing buffers (K = %" PRId64 ")", c->k);
    return GCK_GEMM_OK;
}
