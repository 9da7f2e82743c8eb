/* gemmcheck's GEMM (gemmcheck/kernels.h): arguments, paths, blocking, threads. */
#define _DEFAULT_SOURCE 1
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gemmcheck/refgemm.h"
#include "kernels_internal.h"
#include "parallel.h"
#include "text.h"

/* ---- paths ------------------------------------------------------------------------------- */

static const char *const path_names[GCK_KPATH_COUNT] = {"auto", "portable", "avx2", "avx512"};

const char *gck_kpath_name(gck_kpath p) {
    return (unsigned)p < GCK_KPATH_COUNT ? path_names[p] : "unknown";
}

bool gck_kpath_parse(const char *name, gck_kpath *out) {
    for (int p = 0; p < GCK_KPATH_COUNT; p++)
        if (!strcmp(name, path_names[p])) {
            *out = (gck_kpath)p;
            return true;
        }
    return false;
}

bool gck_kpath_supported(gck_kpath p, char *why, size_t len) {
    const char *missing;
    switch (p) {
    case GCK_KPATH_AUTO:
    case GCK_KPATH_PORTABLE: return true;
    case GCK_KPATH_AVX2:
    case GCK_KPATH_AVX512:
        if (gck_kpath_cpu_has(p, &missing)) return true;
        gck_fail(GCK_EINVAL, why, len, "this CPU lacks %s", missing);
        return false;
    default: gck_fail(GCK_EINVAL, why, len, "path %d does not exist", (int)p); return false;
    }
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

const gck_kpath_ops *gck_kpath_ops_of(gck_kpath p) {
    switch (p) {
    case GCK_KPATH_PORTABLE: return &gck_kpath_portable_ops;
    case GCK_KPATH_AVX2: return &gck_kpath_avx2_ops;
    case GCK_KPATH_AVX512: return &gck_kpath_avx512_ops;
    default: return NULL;
    }
}

/* ---- the model ---------------------------------------------------------------------------- */

gck_model gck_gemm_model(gck_format compute) {
    gck_ref_model r = gck_ref_model_default(compute);
    r.fma = true;
    r.scale_compute = compute;
    return gck_ref_model_declared(&r);
}

/* ---- blocking ----------------------------------------------------------------------------- */

static int64_t cache_bytes(int name, int64_t fallback) {
    long v = sysconf(name);
    return v > 0 ? (int64_t)v : fallback;
}

static int64_t clamp_to(int64_t v, int64_t lo, int64_t hi, int64_t multiple) {
    v = v < lo ? lo : v > hi ? hi : v;
    return v / multiple * multiple;
}

gck_blocking gck_kernels_blocking(int es, int mr, int nr) {
    int64_t l1 = cache_bytes(_SC_LEVEL1_DCACHE_SIZE, 32768);
    int64_t l2 = cache_bytes(_SC_LEVEL2_CACHE_SIZE, 1 << 20);
    /* an A sliver and a B sliver of KC steps in half of L1; an MC x KC block of A in half of
     * L2; a panel of B of NC columns reused across the row blocks */
    int64_t kc = clamp_to(l1 / 2 / ((mr + nr) * (int64_t)es), 64, 1024, 8);
    int64_t mc = clamp_to(l2 / 2 / (kc * es), mr, 4096, mr);
    int64_t nc = clamp_to(4096, nr, 4096, nr);
    return (gck_blocking){mc < mr ? mr : mc, kc, nc};
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
    if (c->compute != GCK_F32 && c->compute != GCK_F64)
        return refuse(GCK_GEMM_ARG_COMPUTE, msg, len, "compute (%s) must be f32 or f64",
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
    bool ok;
} kjob;

#define KT       float
#define KN(name) name##_f32
#define KUK      f32
#define KMR      mr32
#define KNR      nr32
#include "driver.h"
#undef KT
#undef KN
#undef KUK
#undef KMR
#undef KNR
#define KT       double
#define KN(name) name##_f64
#define KUK      f64
#define KMR      mr64
#define KNR      nr64
#include "driver.h"

static const void *member(const void *base, gck_format t, int64_t stride, int64_t b) {
    return base ? (const char *)base + b * stride * gck_format_get(t)->storage_bytes : NULL;
}

static void *run_job(void *arg) {
    kjob *j = arg;
    const gck_case *c = j->c;
    j->ok = true;
    for (int64_t b = j->b0; b < j->b1 && j->ok; b++) {
        const void *Ab = member(j->A, c->type_a, c->stride_a, b);
        const void *Bb = member(j->B, c->type_b, c->stride_b, b);
        const void *Cb = member(j->C, c->type_c, c->stride_c, b);
        void *Db = (void *)member(j->D, gck_case_type(c, GCK_D), gck_case_stride(c, GCK_D), b);
        j->ok = c->compute == GCK_F32 ? block_f32(j, Ab, Bb, Cb, Db, j->i0, j->i1, j->j0, j->j1)
                                      : block_f64(j, Ab, Bb, Cb, Db, j->i0, j->i1, j->j0, j->j1);
    }
    return NULL;
}

/* Threads: batch members if there are enough, else ranges of the longer of M and N, in whole
 * register tiles; never K (every element keeps its one accumulator). */
static int split(const gck_case *c, const kjob *proto, int threads, kjob *jobs) {
    const gck_kpath_ops *ops = proto->ops;
    int64_t mr = c->compute == GCK_F32 ? ops->mr32 : ops->mr64;
    int64_t nr = c->compute == GCK_F32 ? ops->nr32 : ops->nr64;
    bool by_batch = c->batch >= threads, by_rows = !by_batch && c->m > c->n;
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

gck_gemm_arg gck_gemm(const gck_case *c, const void *A, const void *B, const void *C, void *D,
                      const gck_gemm_config *cfg, char *msg, size_t len) {
    gck_gemm_arg bad = check_args(c, A, B, C, D, cfg, msg, len);
    if (bad != GCK_GEMM_OK || c->m == 0 || c->n == 0) return bad;
    gck_kpath path = cfg && cfg->path != GCK_KPATH_AUTO ? cfg->path : gck_kpath_auto();
    kjob proto = {.c = c,
                  .ops = gck_kpath_ops_of(path),
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
