/* bench_kernels: GFLOP/s of gemmcheck's GEMM (kernels/) beside OpenBLAS and BLIS on the same
 * shapes, in one run, with the machine's peak calibrated at the start.
 *
 *   bench_kernels [--sizes 256,512,1024,2048,4096] [--threads 1,2] [--rounds 1] [--pairs 11]
 *                 [--no-skinny] [--no-peers]
 *
 * Peers run in child processes of this program (`--peer`), because OpenBLAS and BLIS read their
 * kernel choice (OPENBLAS_CORETYPE, BLIS_ARCH_TYPE) and thread count once, when loaded: OpenBLAS
 * and BLIS as they select themselves and with their best kernels for this CPU forced (AVX-512:
 * SkylakeX and skx; AVX2: Haswell and haswell; with GEMMCHECK_KERNELS_PATH=avx2 on an AVX-512
 * CPU, all four held to AVX2: OpenBLAS Zen and Haswell, BLIS zen3 and haswell). Every figure is the
 * best of several timed calls after a warm-up call; with --rounds R, gemmcheck and the peers of a
 * line are timed R times in turn, each keeping its best (on a shared machine a neighbour's burst
 * then costs one round of one side, not the ratio). Best-of figures taken at different moments
 * still carry the machine's swings into their ratio (on a shared VM, up to a third from one minute
 * to the next), so each goal's ratio is also measured in pairs (--pairs P): the peer of the line
 * (its best sgemm or dgemm, or oneDNN's bf16 GEMM), kept loaded in a child (`--peer ... --serve`),
 * and gemmcheck are timed alternately, call for call (in batches of at least 50 ms; which side goes
 * first alternating), and the line shows the median and the quartiles of the P ratios of the two
 * times: a swing that slows both sides of a pair leaves its ratio alone. A mixed product and
 * the slower of its pure types alternate in this process. The peak is measured, not computed
 * from a nominal clock (the best of five calibrations): independent chains of FMAs of the widest
 * vectors the CPU has (512 or 256 bits; and VDPBF16PS where present) on one core for about
 * 0.2 s, 2 flops per multiply-add. */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <immintrin.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_time.h"
#include "gemmcheck/gemmcheck.h"

/* ---- peak ----------------------------------------------------------------------------------- */

/* Rounds of 12 independent chains of one instruction, 100,000 deep, until 0.2 s have passed:
 * the instruction's throughput in flops per second on one core (flops: per instruction). */
#define CHAINS 12
#define PEAK_LOOP(OP, flops, REDUCE)                                                               \
    long iters = 0;                                                                                \
    double t0 = bench_now(), t;                                                                    \
    do {                                                                                           \
        for (int r = 0; r < 100000; r++)                                                           \
            _Pragma("GCC unroll 16") for (int c = 0; c < CHAINS; c++) acc[c] = OP;                 \
        iters += 100000;                                                                           \
    } while ((t = bench_now() - t0) < 0.2);                                                        \
    float sink = 0;                                                                                \
    for (int c = 0; c < CHAINS; c++) sink += REDUCE(acc[c]);                                       \
    if (sink == 12345.0f) puts("");                                                                \
    return (double)iters * CHAINS * (flops) / t / 1e9

__attribute__((target("avx512f"))) static double peak_fma32(void) {
    __m512 acc[CHAINS], x = _mm512_set1_ps(1.0f - 0x1p-20f), y = _mm512_set1_ps(0x1p-30f);
    for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_set1_ps((float)c);
    PEAK_LOOP(_mm512_fmadd_ps(acc[c], x, y), 16 * 2, _mm512_reduce_add_ps);
}

__attribute__((target("avx2,fma"))) static float first_lane(__m256 v) {
    return _mm256_cvtss_f32(v);
}

__attribute__((target("avx2,fma"))) static double peak_fma32_avx2(void) {
    __m256 acc[CHAINS], x = _mm256_set1_ps(1.0f - 0x1p-20f), y = _mm256_set1_ps(0x1p-30f);
    for (int c = 0; c < CHAINS; c++) acc[c] = _mm256_set1_ps((float)c);
    PEAK_LOOP(_mm256_fmadd_ps(acc[c], x, y), 8 * 2, first_lane);
}

__attribute__((target("avx512f,avx512bf16"))) static double peak_dpbf16(void) {
    __m512 acc[CHAINS];
    __m512bh x = (__m512bh)_mm512_set1_epi32(0x3f803f80),
             y = (__m512bh)_mm512_set1_epi32(0x30003000);
    for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_set1_ps((float)c);
    PEAK_LOOP(_mm512_dpbf16_ps(acc[c], x, y), 32 * 2, _mm512_reduce_add_ps);
}

/* VFMADDPH's peak (32 f16 lanes); the accumulators stay finite: acc*x + y shrinks them */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512fp16"))) static float first_half(__m512h v) {
    return (float)v[0];
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512fp16"))) static double peak_fma16(void) {
    __m512h acc[CHAINS], x = _mm512_set1_ph((_Float16)0.999f), y = _mm512_set1_ph((_Float16)0.001f);
    for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_set1_ph((_Float16)(float)c);
    PEAK_LOOP(_mm512_fmadd_ph(acc[c], x, y), 32 * 2, first_half);
}

/* ---- timing --------------------------------------------------------------------------------- */

/* The best GFLOP/s of fn over calls after a warm-up: at least 3 calls and 0.3 s (short calls
 * repeat long enough for the clock to settle), at most 1000. */
static double best_gflops(void (*fn)(void *), void *arg, double flops) {
    fn(arg);
    double best = 0, spent = 0;
    for (int r = 0; r < 1000 && (r < 3 || spent < 0.3); r++) {
        double t0 = bench_now();
        fn(arg);
        double t = bench_now() - t0;
        spent += t;
        if (flops / t / 1e9 > best) best = flops / t / 1e9;
    }
    return best;
}

static void *random_buffer(size_t n, size_t es, gck_format t, unsigned seed) {
    void *p = malloc(n * es);
    if (!p) {
        fprintf(stderr, "bench_kernels: out of memory\n");
        exit(2);
    }
    srand(seed);
    for (size_t i = 0; i < n; i++) gck_store(p, t, (int64_t)i, (double)rand() / RAND_MAX - 0.5);
    return p;
}

/* ---- a peer, in a child process ------------------------------------------------------------- */

typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *, int, const float *,
                         int, float, float *, int);
typedef void (*dgemm_fn)(int, int, int, int, int, int, double, const double *, int, const double *,
                         int, double, double *, int);
typedef struct peer_call {
    void *fn;
    bool dbl;
    int m, n, k;
    void *a, *b, *c;
} peer_call;

static void run_peer(void *arg) {
    peer_call *p = arg;
    if (p->dbl)
        ((dgemm_fn)p->fn)(102, 111, 111, p->m, p->n, p->k, 1.0, p->a, p->m, p->b, p->k, 0.0, p->c,
                          p->m);
    else
        ((sgemm_fn)p->fn)(102, 111, 111, p->m, p->n, p->k, 1.0f, p->a, p->m, p->b, p->k, 0.0f, p->c,
                          p->m);
}

/* oneDNN's bf16 GEMM (dnnl.h, row-major; C in f32): what PyTorch's CPU bf16 matmul runs on. */
typedef int (*dnnl_bf16_fn)(char, char, int64_t, int64_t, int64_t, float, const uint16_t *, int64_t,
                            const uint16_t *, int64_t, float, float *, int64_t);

static void run_dnnl(void *arg) {
    peer_call *p = arg;
    if (((dnnl_bf16_fn)p->fn)('N', 'N', p->m, p->n, p->k, 1.0f, p->a, p->k, p->b, p->n, 0.0f, p->c,
                              p->n) != 0) {
        fprintf(stderr, "bench_kernels: dnnl_gemm_bf16bf16f32 failed\n");
        exit(2);
    }
}

/* --peer LIB s|d|b M N K: prints the GFLOP/s of cblas_[sd]gemm of LIB (column-major, N, N), or
 * with b of LIB's dnnl_gemm_bf16bf16f32 (oneDNN); with --serve after them, times calls on request
 * instead (paired_ratio). */
static int peer_main(char **argv, bool serve) {
    void *h = dlopen(argv[0], RTLD_NOW | RTLD_LOCAL);
    if (!h) return fprintf(stderr, "bench_kernels: %s\n", dlerror()), 2;
    char kind = argv[1][0];
    const char *name = kind == 'b'   ? "dnnl_gemm_bf16bf16f32"
                       : kind == 'd' ? "cblas_dgemm"
                                     : "cblas_sgemm";
    peer_call p = {dlsym(h, name), kind == 'd', atoi(argv[2]), atoi(argv[3]),
                   atoi(argv[4]),  NULL,        NULL,          NULL};
    if (!p.fn) return fprintf(stderr, "bench_kernels: %s lacks %s\n", argv[0], name), 2;
    gck_format t = kind == 'b' ? GCK_BF16 : p.dbl ? GCK_F64 : GCK_F32;
    size_t es = (size_t)gck_format_get(t)->storage_bytes;
    p.a = random_buffer((size_t)p.m * (size_t)p.k, es, t, 1);
    p.b = random_buffer((size_t)p.k * (size_t)p.n, es, t, 2);
    if (kind == 'b') /* C in f32 */
        p.c = random_buffer((size_t)p.m * (size_t)p.n, 4, GCK_F32, 3);
    else
        p.c = random_buffer((size_t)p.m * (size_t)p.n, es, t, 3);
    void (*fn)(void *) = kind == 'b' ? run_dnnl : run_peer;
    if (!serve) {
        printf("%.2f\n", best_gflops(fn, &p, 2.0 * p.m * p.n * p.k));
        return 0;
    }
    fn(&p); /* --serve: a warm-up, then for each line read (a number of calls), their seconds */
    char line[32];
    while (fgets(line, sizeof line, stdin)) {
        long calls = atol(line) > 0 ? atol(line) : 1;
        double t0 = bench_now();
        for (long r = 0; r < calls; r++) fn(&p);
        printf("%.9f\n", bench_now() - t0);
        fflush(stdout);
    }
    return 0;
}

typedef struct peer {
    const char *name, *lib, *env; /* env: one VAR=value or NULL */
} peer;

typedef struct shape {
    int m, n, k;
} shape;

/* The command line of a peer child, `self --peer LIB KIND M N K [--serve]`, holding its numbers
 * (argv points into the struct: filled in place, not copied). */
typedef struct peer_args {
    char m[16], n[16], k[16], kind[2];
    char *argv[9];
} peer_args;

#define OPENBLAS "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0"
#define BLIS     "/usr/lib/x86_64-linux-gnu/blis-pthread/libblis.so.4"

/* Each library as it selects itself, and with its best kernels for this CPU's widest vectors
 * forced: AVX-512 (OpenBLAS SkylakeX; BLIS skx, id 0 of BLIS 0.9.0's arch_t) or AVX2 (OpenBLAS
 * Haswell; BLIS haswell, id 3), chosen at run time. Where GEMMCHECK_KERNELS_PATH=avx2 holds the
 * kernels to AVX2 on a CPU with AVX-512, each library is held to its AVX2 kernels too, as it
 * would select them on an AVX2-only server CPU: OpenBLAS Haswell and Zen, BLIS haswell and zen3
 * (id 6), so that the avx2 path can be measured on any x86 machine against its own kind. */
static peer peers[] = {{"OpenBLAS", OPENBLAS, NULL},
                       {"OpenBLAS SkylakeX", OPENBLAS, "OPENBLAS_CORETYPE=SkylakeX"},
                       {"BLIS", BLIS, NULL},
                       {"BLIS skx", BLIS, "BLIS_ARCH_TYPE=0"}};
enum { NPEERS = sizeof peers / sizeof peers[0] };

static void choose_peers(bool avx512, bool held_to_avx2) {
    if (avx512) return;
    peers[1] = (peer){"OpenBLAS Haswell", OPENBLAS, "OPENBLAS_CORETYPE=Haswell"};
    peers[3] = (peer){"BLIS haswell", BLIS, "BLIS_ARCH_TYPE=3"};
    if (!held_to_avx2) return;
    peers[0] = (peer){"OpenBLAS Zen", OPENBLAS, "OPENBLAS_CORETYPE=Zen"};
    peers[2] = (peer){"BLIS zen3", BLIS, "BLIS_ARCH_TYPE=6"};
}

static const char *self;

static void peer_args_fill(peer_args *a, const char *lib, char kind, shape s, bool serve) {
    snprintf(a->m, sizeof a->m, "%d", s.m);
    snprintf(a->n, sizeof a->n, "%d", s.n);
    snprintf(a->k, sizeof a->k, "%d", s.k);
    a->kind[0] = kind, a->kind[1] = 0;
    char *v[] = {(char *)self, "--peer", (char *)lib, a->kind,
                 a->m,         a->n,     a->k,        serve ? "--serve" : NULL,
                 NULL};
    memcpy(a->argv, v, sizeof v);
}

#define DNNL "/usr/lib/x86_64-linux-gnu/libdnnl.so.2"
/* PyTorch's bf16 matmul (bf16 out), timed as the other peers: the best of five after a warm-up. */
static const char torch_script[] =
    "import sys, time, torch\n"
    "m, n, k, t = map(int, sys.argv[1:5]); torch.set_num_threads(t)\n"
    "a = (torch.rand(m, k) - 0.5).bfloat16(); b = (torch.rand(k, n) - 0.5).bfloat16()\n"
    "torch.matmul(a, b); best = 0.0\n"
    "for _ in range(5):\n"
    "    t0 = time.perf_counter(); torch.matmul(a, b); dt = time.perf_counter() - t0\n"
    "    best = max(best, 2.0 * m * n * k / dt * 1e-9)\n"
    "print('%.2f' % best)\n";

/* A child running argv with `threads` as the BLAS and OpenMP thread counts and one VAR=value more
 * in env (or NULL), its errors hidden when quiet: its pid (-1 when it cannot start), *from reading
 * its standard output and, when to is not NULL, *to writing its standard input. */
static pid_t child_start(char *const argv[], int threads, const char *env, bool quiet, int *to,
                         int *from) {
    int out[2], in[2] = {-1, -1};
    if (pipe(out) != 0) return -1;
    if (to && pipe(in) != 0) {
        close(out[0]);
        close(out[1]);
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        char th[16];
        snprintf(th, sizeof th, "%d", threads);
        setenv("OPENBLAS_NUM_THREADS", th, 1);
        setenv("BLIS_NUM_THREADS", th, 1);
        setenv("OMP_NUM_THREADS", th, 1);
        if (env) putenv((char *)env);
        dup2(out[1], 1);
        close(out[0]);
        if (to) {
            dup2(in[0], 0);
            close(in[1]);
        }
        int null = quiet ? open("/dev/null", O_WRONLY) : -1;
        if (null >= 0) dup2(null, 2); /* a missing module is a missing peer, not noise */
        execv(argv[0], argv);
        _exit(127);
    }
    close(out[1]);
    *from = out[0];
    if (to) close(in[0]), *to = in[1];
    if (pid < 0) {
        close(out[0]);
        if (to) close(in[1]);
    }
    return pid;
}

/* Whether the child pid exited with status 0. */
static bool child_ok(pid_t pid) {
    int st;
    return waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* What a child running argv prints, as GFLOP/s (0 when it fails; child_start's arguments). */
static double child_gflops(char *const argv[], int threads, const char *env, bool quiet) {
    int from;
    pid_t pid = child_start(argv, threads, env, quiet, NULL, &from);
    if (pid < 0) return 0;
    /* to its end: a child may write its line in pieces (with PYTHONUNBUFFERED=1 in the
     * environment, Python's print wrote "16.06" and then "\n"; the pipe, closed after the first
     * read, failed the second write, and the PyTorch peer was lost in 5 of 6 runs at 64^3) */
    char buf[64] = "";
    size_t got = 0;
    for (ssize_t r; got < sizeof buf - 1 && (r = read(from, buf + got, sizeof buf - 1 - got)) != 0;)
        if (r > 0)
            got += (size_t)r;
        else if (errno != EINTR)
            break;
    close(from);
    return child_ok(pid) && got > 0 ? atof(buf) : 0;
}

/* A bf16 peer's GFLOP/s: oneDNN (torch false) or PyTorch through /usr/bin/python3; 0 when it is
 * not installed. */
static double bf16_peer_gflops(bool torch, int m, int n, int k, int threads) {
    char th[16];
    snprintf(th, sizeof th, "%d", threads);
    peer_args a;
    peer_args_fill(&a, DNNL, 'b', (shape){m, n, k}, false);
    char *py[] = {"/usr/bin/python3", "-c", (char *)torch_script, a.m, a.n, a.k, th, NULL};
    return child_gflops(torch ? py : a.argv, threads, NULL, true);
}

static double peer_gflops(const peer *p, bool dbl, int m, int n, int k, int threads) {
    peer_args a;
    peer_args_fill(&a, p->lib, dbl ? 'd' : 's', (shape){m, n, k}, false);
    return child_gflops(a.argv, threads, p->env, false);
}

/* ---- gemmcheck's kernels -------------------------------------------------------------------- */

typedef struct own_call {
    gck_case c;
    gck_gemm_config cfg;
    void *a, *b, *d;
} own_call;

static void run_own(void *arg) {
    own_call *o = arg;
    char msg[256];
    if (gck_gemm(&o->c, o->a, o->b, o->d, o->d, &o->cfg, msg, sizeof msg) != GCK_GEMM_OK) {
        fprintf(stderr, "bench_kernels: gck_gemm: %s\n", msg);
        exit(2);
    }
}

/* A product of m x n x kk with inputs ta, tb, C and D td, compute k, on `threads` threads, its
 * operands random (as the peers'). */
static own_call own_init(gck_format ta, gck_format tb, gck_format td, gck_format k, int m, int n,
                         int kk, int threads) {
    own_call o = {.cfg = {threads, GCK_KPATH_AUTO}};
    gck_case_init(&o.c, m, n, kk);
    o.c.type_a = ta;
    o.c.type_b = tb;
    o.c.type_c = o.c.type_d = td;
    o.c.compute = k;
    o.c.scale_type = k == GCK_F64 ? GCK_F64 : GCK_F32; /* f16 arithmetic: alpha, beta in f32 */
    o.c.alpha = 1;
    o.c.beta = 0;
    o.c.d_is_c = true;
    o.a = random_buffer((size_t)m * (size_t)kk, (size_t)gck_format_get(ta)->storage_bytes, ta, 1);
    o.b = random_buffer((size_t)kk * (size_t)n, (size_t)gck_format_get(tb)->storage_bytes, tb, 2);
    o.d = random_buffer((size_t)m * (size_t)n, (size_t)gck_format_get(td)->storage_bytes, td, 3);
    return o;
}

static void own_free(own_call *o) {
    free(o->a);
    free(o->b);
    free(o->d);
}

static double own_gflops(gck_format ta, gck_format tb, gck_format td, gck_format k, int m, int n,
                         int kk, int threads) {
    own_call o = own_init(ta, tb, td, k, m, n, kk, threads);
    double g = best_gflops(run_own, &o, 2.0 * m * n * kk);
    own_free(&o);
    return g;
}

/* ---- ratios measured in pairs ---------------------------------------------------------------- */

static int pairs = 11; /* --pairs: 0 for none */

/* The median and quartiles of the ratios of a line's pairs; n 0 when none were measured. */
typedef struct pair_ratio {
    double med, lo, hi;
    int n;
} pair_ratio;

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* One side of a pair: gemmcheck's product (own), or a served peer (to, from). */
typedef struct side {
    own_call *own;
    FILE *to, *from;
} side;

/* The seconds of `calls` calls of one side (0 when a served peer fails). */
static double side_seconds(side *x, long calls) {
    if (x->own) {
        double t0 = bench_now();
        for (long c = 0; c < calls; c++) run_own(x->own);
        return bench_now() - t0;
    }
    char line[64];
    if (fprintf(x->to, "%ld\n", calls) < 0 || fflush(x->to) != 0 ||
        !fgets(line, sizeof line, x->from))
        return 0;
    return atof(line);
}

/* `pairs` pairs of batches of `calls` calls of x and of y, after one pair of warm-up, x first and
 * y first in turn: the median and quartiles of y's time over x's. */
static pair_ratio pair_up(side *x, side *y, long calls) {
    double r[64];
    int n = 0;
    for (int i = -1; i < pairs && i < 64; i++) {
        bool yfirst = i & 1;
        double t1 = side_seconds(yfirst ? y : x, calls), t2 = side_seconds(yfirst ? x : y, calls);
        double tx = yfirst ? t2 : t1, ty = yfirst ? t1 : t2;
        if (tx <= 0 || ty <= 0) break;
        if (i >= 0) r[n++] = ty / tx;
    }
    pair_ratio pr = {0, 0, 0, 0};
    if (n == 0) return pr;
    qsort(r, (size_t)n, sizeof r[0], cmp_double);
    pr = (pair_ratio){r[n / 2], r[n / 4], r[(3 * n) / 4], n};
    if (n % 2 == 0) pr.med = (r[n / 2 - 1] + r[n / 2]) / 2;
    return pr;
}

/* Calls of shape s that take at least 50 ms at `gflops` (the faster side's rate). */
static long batch_calls(shape s, double gflops) {
    return (long)ceil(0.05 * gflops * 1e9 / (2.0 * s.m * s.n * s.k));
}

/* gemmcheck's product o against the peer p's (sgemm, dgemm or oneDNN's bf16 GEMM by kind 's',
 * 'd' or 'b'; its errors hidden when quiet) on the same shape, `gflops` the faster side's rate:
 * each pair's ratio is the peer's time over ours (above 1: gemmcheck faster). */
static pair_ratio paired_ratio(own_call *o, const peer *p, char kind, shape s, int threads,
                               double gflops, bool quiet) {
    pair_ratio pr = {0, 0, 0, 0};
    if (pairs <= 0 || gflops <= 0) return pr;
    peer_args a;
    peer_args_fill(&a, p->lib, kind, s, true);
    /* the calling thread and the child (which inherits the mask) on the same `threads` CPUs: a
     * peer woken on another, idle CPU of a VM ran its batches slowly (OpenBLAS's sgemm 512^3 at
     * 50-70% of its best rate; on the same CPU it kept it) */
    cpu_set_t all, same;
    bool pinned = sched_getaffinity(0, sizeof all, &all) == 0;
    if (pinned) {
        CPU_ZERO(&same);
        for (int c = 0, k = 0; c < CPU_SETSIZE && k < threads; c++)
            if (CPU_ISSET(c, &all)) CPU_SET(c, &same), k++;
        pinned = sched_setaffinity(0, sizeof same, &same) == 0;
    }
    int to, from;
    pid_t pid = child_start(a.argv, threads, p->env, quiet, &to, &from);
    if (pid < 0) {
        if (pinned) sched_setaffinity(0, sizeof all, &all);
        return pr;
    }
    side ours = {o, NULL, NULL}, peer_side = {NULL, fdopen(to, "w"), fdopen(from, "r")};
    run_own(o); /* a warm-up */
    if (peer_side.to && peer_side.from) pr = pair_up(&ours, &peer_side, batch_calls(s, gflops));
    if (peer_side.to)
        fclose(peer_side.to);
    else
        close(to);
    if (peer_side.from)
        fclose(peer_side.from);
    else
        close(from);
    bool ok = child_ok(pid);
    if (pinned) sched_setaffinity(0, sizeof all, &all);
    return ok ? pr : (pair_ratio){0, 0, 0, 0};
}

/* Two of gemmcheck's products in this process, x against y (`gflops` the faster one's rate):
 * each pair's ratio is y's time over x's. */
static pair_ratio paired_own(own_call *x, own_call *y, shape s, double gflops) {
    if (pairs <= 0 || gflops <= 0) return (pair_ratio){0, 0, 0, 0};
    side a = {x, NULL, NULL}, b = {y, NULL, NULL};
    run_own(x); /* a warm-up */
    run_own(y);
    return pair_up(&a, &b, batch_calls(s, gflops));
}

/* "0.93x (0.91-0.95)", or "—" when no pairs were measured. */
static const char *pair_text(pair_ratio pr, char *buf, size_t len) {
    if (pr.n == 0) return "—";
    snprintf(buf, len, "%.2fx (%.2f-%.2f)", pr.med, pr.lo, pr.hi);
    return buf;
}

/* ---- the table ------------------------------------------------------------------------------ */

static bool has_peers = true;
static int rounds = 1; /* --rounds: each line's measurements repeated in turn */

/* The kernels' automatic choice: each supported path's measured rate per class of inputs (the
 * measurement gck_kpath_auto_for makes once per process) and the path each class runs on. */
static void print_choice(void) {
    printf("kernels, the automatic choice: each path's rate, GFLOP/s on one thread (192x192x384, "
           "f16-in-f16 192x192x96, measured at start-up; another path must be %.2fx the "
           "default's to be chosen)\n\n"
           "| inputs |",
           GCK_KPATH_MARGIN);
    for (int p = GCK_KPATH_PORTABLE + 1; p < GCK_KPATH_COUNT; p++)
        printf(" %s |", gck_kpath_name((gck_kpath)p));
    printf(" chosen |\n|---|");
    for (int p = GCK_KPATH_PORTABLE + 1; p <= GCK_KPATH_COUNT; p++) printf("---|");
    printf("\n");
    for (int k = 0; k < GCK_KCLASS_COUNT; k++) {
        printf("| %s |", gck_kclass_name((gck_kclass)k));
        for (int p = GCK_KPATH_PORTABLE + 1; p < GCK_KPATH_COUNT; p++) {
            double r = gck_kpath_rate((gck_kpath)p, (gck_kclass)k);
            if (r > 0)
                printf(" %.1f |", r);
            else
                printf(" — |");
        }
        printf(" %s |\n", gck_kpath_name(gck_kpath_auto_class((gck_kclass)k)));
    }
    printf("\n");
}

/* One line of the f32 or f64 table: ours, every peer, ours over the best peer, share of peak.
 * With --rounds R, ours and the peers are timed R times in turn and each keeps its best: a
 * neighbour that takes the core for a moment then costs one side one round, not the line. */
static void blas_line(bool dbl, shape s, int threads, double peak) {
    gck_format t = dbl ? GCK_F64 : GCK_F32;
    double ours = 0, g[NPEERS] = {0}, best = 0;
    int bp = -1;
    for (int r = 0; r < rounds; r++) {
        ours = fmax(ours, own_gflops(t, t, t, t, s.m, s.n, s.k, threads));
        for (int p = 0; p < NPEERS && has_peers; p++)
            g[p] = fmax(g[p], peer_gflops(&peers[p], dbl, s.m, s.n, s.k, threads));
    }
    printf("| %dx%dx%d | %d | %.1f |", s.m, s.n, s.k, threads, ours);
    for (int p = 0; p < NPEERS; p++) {
        if (g[p] > best) best = g[p], bp = p;
        printf(" %.1f |", g[p]);
    }
    pair_ratio pr = {0, 0, 0, 0};
    if (bp >= 0) {
        own_call o = own_init(t, t, t, t, s.m, s.n, s.k, threads);
        pr = paired_ratio(&o, &peers[bp], dbl ? 'd' : 's', s, threads, fmax(ours, best), false);
        own_free(&o);
    }
    char pb[48];
    printf(" %.2fx | %s | %.0f%% |\n", best > 0 ? ours / best : 0, pair_text(pr, pb, sizeof pb),
           100 * ours / (peak * threads));
    fflush(stdout);
}

/* The products of the mixed table's line, in its order. */
static const gck_format mixed_ty[8][3] = {
    {GCK_BF16, GCK_BF16, GCK_F32}, {GCK_F16, GCK_F16, GCK_F32}, {GCK_BF16, GCK_F16, GCK_F32},
    {GCK_F16, GCK_F32, GCK_F32},   {GCK_F32, GCK_F64, GCK_F64}, {GCK_F32, GCK_F32, GCK_F32},
    {GCK_F64, GCK_F64, GCK_F64},   {GCK_F16, GCK_F16, GCK_F16}};

/* The mixed line's pairs (v: the best-of rates of mixed_ty's products; bp: the best sgemm peer or
 * -1, bs its rate; dnnl: oneDNN's bf16 rate or 0): pr[0], pr[1] bf16 and f16 against the best
 * sgemm, pr[2] bf16 against oneDNN's bf16, pr[3..5] bf16 x f16, f16 x f32 and f32 x f64 against
 * the slower of their pure types. */
static void mixed_pairs(shape s, int threads, const double v[8], int bp, double bs, double dnnl,
                        pair_ratio pr[6]) {
    static const peer onednn = {"oneDNN", DNNL, NULL};
    enum { SGEMM = -1, ONEDNN = -2 };
    /* each pair: the index in mixed_ty of gemmcheck's product, and what it is against: the best
     * sgemm, oneDNN's bf16, or the slower of two pure products (indices in mixed_ty) */
    static const struct {
        int own, vs[2];
    } pair_of[6] = {{0, {SGEMM}}, {1, {SGEMM}}, {0, {ONEDNN}},
                    {2, {0, 1}},  {3, {1, 5}},  {4, {5, 6}}};
    for (int i = 0; i < 6; i++) {
        int x = pair_of[i].own, y = pair_of[i].vs[0];
        pr[i] = (pair_ratio){0, 0, 0, 0};
        if ((y == SGEMM && bp < 0) || (y == ONEDNN && dnnl <= 0)) continue;
        const gck_format *t = mixed_ty[x];
        own_call o = own_init(t[0], t[1], t[2], t[2], s.m, s.n, s.k, threads);
        if (y == SGEMM)
            pr[i] = paired_ratio(&o, &peers[bp], 's', s, threads, fmax(v[x], bs), false);
        else if (y == ONEDNN)
            pr[i] = paired_ratio(&o, &onednn, 'b', s, threads, fmax(v[x], dnnl), true);
        else {
            if (v[pair_of[i].vs[1]] <= v[y]) y = pair_of[i].vs[1]; /* the second on a tie */
            const gck_format *u = mixed_ty[y];
            own_call q = own_init(u[0], u[1], u[2], u[2], s.m, s.n, s.k, threads);
            pr[i] = paired_own(&o, &q, s, fmax(v[x], v[y]));
            own_free(&q);
        }
        own_free(&o);
    }
}

/* One line of the bf16/f16/mixed table, against the best sgemm/dgemm of the same line (with
 * --rounds, as blas_line); the last type, f16 x f16 in f16 (D in f16), against the best sgemm and
 * VFMADDPH's peak (peak_h: 0 where the CPU lacks it). */
static void mixed_line(shape s, int threads, double peak_dp, double peak_h) {
    const gck_format(*ty)[3] = mixed_ty;
    double v[8] = {0}, bs = 0, dnnl = 0, torch = 0;
    int bp = -1;
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < 8; i++)
            v[i] = fmax(v[i],
                        own_gflops(ty[i][0], ty[i][1], ty[i][2], ty[i][2], s.m, s.n, s.k, threads));
        for (int p = 0; p < NPEERS && has_peers; p++) {
            double g = peer_gflops(&peers[p], false, s.m, s.n, s.k, threads);
            if (g > bs) bs = g, bp = p;
        }
        if (has_peers) {
            dnnl = fmax(dnnl, bf16_peer_gflops(false, s.m, s.n, s.k, threads));
            torch = fmax(torch, bf16_peer_gflops(true, s.m, s.n, s.k, threads));
        }
    }
    double bf = v[0], hf = v[1], bh = v[2], hs = v[3], sd = v[4], s32 = v[5], d64 = v[6], hh = v[7];
    pair_ratio pr[6];
    mixed_pairs(s, threads, v, bp, bs, dnnl, pr);
    char pb[6][48];
    char pk[16] = "—", pdn[16] = "—", pto[16] = "—", vs[16] = "—", pkh[16] = "—";
    if (peak_h > 0) snprintf(pkh, sizeof pkh, "%.0f%%", 100 * hh / (peak_h * threads));
    if (peak_dp > 0) snprintf(pk, sizeof pk, "%.0f%%", 100 * bf / (peak_dp * threads));
    if (dnnl > 0) snprintf(pdn, sizeof pdn, "%.1f", dnnl);
    if (torch > 0) snprintf(pto, sizeof pto, "%.1f", torch);
    if (fmax(dnnl, torch) > 0) snprintf(vs, sizeof vs, "%.2fx", bf / fmax(dnnl, torch));
    printf("| %dx%dx%d | %d | %.1f | %s | %.2fx | %s | %s | %s | %s | %s | %.1f | %.2fx | %s | "
           "%.1f | %.2fx | %s | %.1f | %.2fx | %s | %.1f | %.2fx | %s | %.1f | %.2fx | %s |\n",
           s.m, s.n, s.k, threads, bf, pk, bs > 0 ? bf / bs : 0, pair_text(pr[0], pb[0], 48), pdn,
           pto, vs, pair_text(pr[2], pb[2], 48), hf, bs > 0 ? hf / bs : 0,
           pair_text(pr[1], pb[1], 48), bh, bh / fmin(bf, hf), pair_text(pr[3], pb[3], 48), hs,
           hs / fmin(hf, s32), pair_text(pr[4], pb[4], 48), sd, sd / fmin(s32, d64),
           pair_text(pr[5], pb[5], 48), hh, bs > 0 ? hh / bs : 0, pkh);
    fflush(stdout);
}

static int parse_list(const char *s, int *out, int max) {
    int n = 0;
    for (char *end; *s && n < max; s = *end ? end + 1 : end) {
        long v = strtol(s, &end, 10);
        if (end == s || v <= 0 || v > 65536 || (*end && *end != ',')) {
            fprintf(stderr, "bench_kernels: bad list '%s'\n", s);
            exit(2);
        }
        out[n++] = (int)v;
    }
    return n;
}

int main(int argc, char **argv) {
    self = argv[0];
    if (argc == 7 && !strcmp(argv[1], "--peer")) return peer_main(argv + 2, false);
    if (argc == 8 && !strcmp(argv[1], "--peer") && !strcmp(argv[7], "--serve"))
        return peer_main(argv + 2, true);
    signal(SIGPIPE, SIG_IGN); /* a served peer that dies: a failed write, not this process's end */
    int sizes[8] = {256, 512, 1024, 2048, 4096}, nsizes = 5, threads[4] = {1, 2}, nthreads = 2;
    bool skinny = true;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sizes") && i + 1 < argc)
            nsizes = parse_list(argv[++i], sizes, 8);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            nthreads = parse_list(argv[++i], threads, 4);
        else if (!strcmp(argv[i], "--no-skinny"))
            skinny = false;
        else if (!strcmp(argv[i], "--no-peers"))
            has_peers = false;
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
            if (strchr(argv[++i], ',')) {
                fprintf(stderr, "bench_kernels: --rounds takes one number, not '%s'\n", argv[i]);
                return 2;
            }
            parse_list(argv[i], &rounds, 1);
        } else if (!strcmp(argv[i], "--pairs") && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (end == argv[i] || *end || v < 0 || v > 64) {
                fprintf(stderr, "bench_kernels: --pairs takes a number from 0 to 64, not '%s'\n",
                        argv[i]);
                return 2;
            }
            pairs = (int)v;
        } else {
            fprintf(stderr,
                    "bench_kernels: unknown argument '%s' (--sizes L, --threads L, "
                    "--rounds R, --pairs P, --no-skinny, --no-peers)\n",
                    argv[i]);
            return 2;
        }
    }
    __builtin_cpu_init();
    bool avx512 = __builtin_cpu_supports("avx512f"), bf16 = __builtin_cpu_supports("avx512bf16");
    bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    /* the kernels held to AVX2 on an AVX-512 CPU: the BLAS peers, the peak and the 16-bit lines
     * are those of an AVX2 CPU (no VDPBF16PS or VFMADDPH: the path does not use them); the bf16
     * peers (oneDNN, PyTorch) still choose their own kernels */
    bool held = avx512 && gck_kpath_auto() == GCK_KPATH_AVX2;
    if (held) avx512 = bf16 = false;
    choose_peers(avx512, held);
    /* the best of five calibrations: a neighbour taking the core for a moment would otherwise
     * lower the peak, and every share of it, for the whole run */
    double p32 = 0, pdp = 0, ph = 0;
    char dpbuf[32], phbuf[32];
    bool fp16 = avx512 && __builtin_cpu_supports("avx512fp16");
    for (int r = 0; r < 5; r++) {
        double f = avx512 ? peak_fma32() : avx2 ? peak_fma32_avx2() : 0;
        double d = bf16 ? peak_dpbf16() : 0, h = fp16 ? peak_fma16() : 0;
        p32 = f > p32 ? f : p32;
        pdp = d > pdp ? d : pdp;
        ph = h > ph ? h : ph;
    }
    print_choice();
    if (held)
        printf(
            "GEMMCHECK_KERNELS_PATH=avx2 on a CPU with AVX-512: OpenBLAS and BLIS are held to "
            "their AVX2 kernels too (oneDNN and PyTorch, the bf16 peers, are not), the peak is of "
            "256-bit FMAs\n\n");
    printf("kernels default path: %s; calibrated peak per core (%s FMA): f32 %.1f, f64 %.1f, "
           "VDPBF16PS %s, VFMADDPH %s GFLOP/s (%% of peak: per thread count, peak x threads)\n\n",
           gck_kpath_name(gck_kpath_auto()),
           avx512 ? "512-bit"
           : avx2 ? "256-bit"
                  : "no vector",
           p32, p32 / 2, bf16 ? (snprintf(dpbuf, sizeof dpbuf, "%.1f", pdp), dpbuf) : "absent",
           fp16 ? (snprintf(phbuf, sizeof phbuf, "%.1f", ph), phbuf) : "absent");
    shape sq[8], sk[] = {{1, 2048, 1024}, {4, 2048, 1024},  {16, 2048, 1024}, {2048, 1, 1024},
                         {2048, 4, 1024}, {2048, 16, 1024}, {64, 64, 16384}};
    for (int i = 0; i < nsizes; i++) sq[i] = (shape){sizes[i], sizes[i], sizes[i]};
    for (int d = 0; d < 2; d++) {
        printf("%s: GFLOP/s\n\n| M x N x K | threads | gemmcheck | %s | %s | %s | %s | vs best | "
               "paired with the best: median (quartiles) | of peak |\n"
               "|---|---|---|---|---|---|---|---|---|---|\n",
               d ? "f64 (dgemm)" : "f32 (sgemm)", peers[0].name, peers[1].name, peers[2].name,
               peers[3].name);
        for (int t = 0; t < nthreads; t++) {
            for (int i = 0; i < nsizes; i++) blas_line(d, sq[i], threads[t], d ? p32 / 2 : p32);
            for (size_t i = 0; skinny && i < sizeof sk / sizeof sk[0]; i++)
                blas_line(d, sk[i], threads[t], d ? p32 / 2 : p32);
        }
        printf("\n");
    }
    gck_kpath bfpath = gck_kpath_auto_class(GCK_KCLASS_BF16);
    printf(
        "bf16, f16 and mixed inputs (D and compute f32; f32 x f64 in f64): GFLOP/s, against the "
        "best sgemm of the line, the best bf16 peer (oneDNN's dnnl_gemm_bf16bf16f32, f32 out; "
        "PyTorch's matmul, bf16 out) or the slower of the pure types\n\n| M x N x K | threads | "
        "bf16 (%s) | of %s peak | vs best sgemm | paired | oneDNN bf16 | PyTorch bf16 | vs best "
        "bf16 peer | paired with oneDNN | f16 | vs best sgemm | paired | bf16 x f16 | vs slower | "
        "paired | f16 x f32 | vs slower | paired | f32 x f64 | vs slower | paired | f16 in f16 "
        "(%s; D f16) | vs best sgemm | of VFMADDPH peak |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
        "---|---|---|\n",
        gck_kpath_name(bfpath),
        bfpath == GCK_KPATH_AVX512BF16 ? "VDPBF16PS"
        : bfpath == GCK_KPATH_AMX      ? "(AMX: not calibrated)"
                                       : "f32 FMA",
        gck_kpath_name(gck_kpath_auto_class(GCK_KCLASS_F16F16)));
    /* the share of the peak of the instructions the bf16 path multiplies with (VDPBF16PS, or f32
     * FMAs after conversion; none measured for AMX tiles) */
    double bfpeak = bfpath == GCK_KPATH_AVX512BF16 ? pdp : bfpath == GCK_KPATH_AMX ? 0 : p32;
    for (int t = 0; t < nthreads; t++)
        for (int i = 0; i < nsizes; i++) mixed_line(sq[i], threads[t], bfpeak, ph);
    return 0;
}
