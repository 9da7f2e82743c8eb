/* gemmcheck's own GEMM (kernels/): every path gives exactly the bits of its declared model (the
 * reference GEMM with FMA, inputs rounded to the compute type, alpha and beta in it), on any
 * thread count; BLAS semantics; invalid arguments named and nothing touched; paths reported. */
#include <criterion/criterion.h>
#include <math.h>
#include <mpfr.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemmcheck/gemmcheck.h"
#include "grid.h"
#include "kernels_internal.h"
#include "mix.h"
#include "testutil.h"

/* The reference evaluation gck_gemm declares for a compute type. */
static gck_ref_model declared_evaluation(gck_format compute) {
    gck_ref_model r = gck_ref_model_default(compute);
    r.fma = true;
    r.scale_compute = compute == GCK_F16 ? GCK_F32 : compute; /* f16: alpha and beta in f32 */
    return r;
}

/* Operands of a spec, filled with its values; D is a copy of C when computed in place, else
 * filled with a pattern so that an element the GEMM must not touch is seen. */
typedef struct operands {
    void *a, *b, *c, *d;
    size_t dbytes;
} operands;

static void *filled(const gck_spec *s, gck_operand x, size_t *bytes) {
    const gck_case *c = &s->c;
    int64_t n = gck_case_extent(c, x);
    size_t es = (size_t)gck_format_get(gck_case_type(c, x))->storage_bytes;
    *bytes = (size_t)(n > 0 ? n : 1) * es;
    void *p = malloc(*bytes);
    cr_assert_not_null(p);
    memset(p, 0x5a, *bytes);
    if (x != GCK_D) gck_spec_fill(s, x, p);
    return p;
}

static void make(const gck_spec *s, operands *o) {
    size_t bytes;
    o->a = filled(s, GCK_A, &bytes);
    o->b = filled(s, GCK_B, &bytes);
    o->c = filled(s, GCK_C, &bytes);
    if (s->c.d_is_c) {
        o->d = malloc(bytes);
        cr_assert_not_null(o->d);
        memcpy(o->d, o->c, bytes);
        o->dbytes = bytes;
    } else {
        o->d = filled(s, GCK_D, &o->dbytes);
    }
}

static void release(operands *o) {
    free(o->a);
    free(o->b);
    free(o->c);
    free(o->d);
}

/* ---- the pair dot product's declared tree, emulated independently of kernels/ -------------- */

static double bf16_read(uint16_t h) { /* denormals read as zero (DAZ) */
    uint32_t u = (h & 0x7f80) == 0 ? (uint32_t)(h & 0x8000) << 16 : (uint32_t)h << 16;
    float f; /* a bf16 is the high half of an f32 */
    memcpy(&f, &u, sizeof f);
    return f;
}

/* acc + p (p a double, exact): the exact sum as a double-double (TwoSum), rounded once to 24
 * bits with an unbounded exponent, flushed to a zero of its sign when that is below 2^-126; a
 * denormal acc read as zero. */
static float flush_step(float acc, double p) {
    double s = fabsf(acc) < 0x1p-126f ? (signbit(acc) ? -0.0 : 0.0) : acc;
    double hi = s + p;
    if (!isfinite(hi) || hi == 0) return (float)hi;
    double z = hi - s, lo = (s - (hi - z)) + (p - z);
    if (fabs(hi) >= 0x1p-100) return (float)gck_round2_to(hi, lo, GCK_F32);
    double r = gck_round2_to(hi * 0x1p100, lo * 0x1p100, GCK_F32);
    return fabs(r) < 0x1p-26 ? (signbit(r) ? -0.0f : 0.0f) : (float)(r * 0x1p-100);
}

/* acc + a*b of bf16 factors (x*y is exact in double). */
static float pair_step(float acc, uint16_t a, uint16_t b) {
    return flush_step(acc, bf16_read(a) * bf16_read(b));
}

/* The storage index of op(X)(row, col) of batch member b. */
static int64_t at(const gck_case *c, gck_operand x, int64_t b, int64_t row, int64_t col) {
    int64_t rs, cs;
    gck_case_op_strides(c, x, &rs, &cs);
    return b * gck_case_stride(c, x) + row * rs + col * cs;
}

/* The sum S of row a of op(A) and column b of op(B) (K elements each) by the pair tree: steps
 * (2p, 2p+1), the odd one first, an odd K padded with +0 * +0. */
static float pair_tree(const uint16_t *a, const uint16_t *b, int64_t K) {
    float acc = 0.0f;
    for (int64_t k = 0; k < K; k += 2) {
        bool odd = k + 1 < K;
        acc = pair_step(acc, odd ? a[k + 1] : 0, odd ? b[k + 1] : 0);
        acc = pair_step(acc, a[k], b[k]);
    }
    return acc;
}

/* The same by the AMX tile tree: K padded with zeros to steps of 32; in each, a chain of the
 * even k and one of the odd k from +0, s = even + odd, acc = acc + s. */
static float tile_tree(const uint16_t *a, const uint16_t *b, int64_t K) {
    float acc = 0.0f;
    for (int64_t k0 = 0; k0 < K; k0 += 32) {
        float chain[2] = {0.0f, 0.0f};
        for (int64_t k = k0; k < k0 + 32; k++)
            chain[k % 2] = pair_step(chain[k % 2], k < K ? a[k] : 0, k < K ? b[k] : 0);
        acc = flush_step(acc, (double)flush_step(chain[0], chain[1]));
    }
    return acc;
}

typedef float (*bf16_tree)(const uint16_t *a, const uint16_t *b, int64_t K);

/* D for a bf16 x bf16, f32-compute case by a tree; then alpha*S + beta*c in f32, rounded to D.
 * Each row of op(A) and column of op(B) is gathered once, along k. */
static void emulate_bf16_tree(const gck_case *c, const operands *o, bf16_tree tree) {
    const void *C = c->d_is_c ? o->d : o->c;
    const uint16_t *A = o->a, *B = o->b;
    bool rab = gck_case_reads_ab(c), rc = gck_case_reads_c(c);
    float alpha = (float)c->alpha, beta = (float)c->beta;
    int64_t K = c->k;
    uint16_t *row = malloc((size_t)(K > 0 ? K : 1) * sizeof *row);
    uint16_t *cols = malloc((size_t)(K > 0 ? K * c->n : 1) * sizeof *cols);
    cr_assert(row && cols);
    for (int64_t bi = 0; bi < c->batch; bi++) {
        if (rab)
            for (int64_t j = 0; j < c->n; j++)
                for (int64_t k = 0; k < K; k++) cols[j * K + k] = B[at(c, GCK_B, bi, k, j)];
        for (int64_t i = 0; i < c->m; i++) {
            if (rab)
                for (int64_t k = 0; k < K; k++) row[k] = A[at(c, GCK_A, bi, i, k)];
            for (int64_t j = 0; j < c->n; j++) {
                float acc = rab ? tree(row, cols + j * K, K) : 0.0f, t;
                float cv = rc ? (float)gck_load(C, c->type_c, at(c, GCK_C, bi, i, j)) : 0.0f;
                if (!rab)
                    t = rc ? beta * cv : 0.0f;
                else if (rc) {
                    t = alpha * acc;
                    t = t + beta * cv;
                } else
                    t = alpha * acc;
                gck_store(o->d, gck_case_type(c, GCK_D), at(c, GCK_D, bi, i, j), (double)t);
            }
        }
    }
    free(row);
    free(cols);
}

/* The trees a path may declare for a case: the reference evaluation's, the pair dot product's,
 * the tile dot product's. */
typedef enum tree { TREE_REF, TREE_PAIR, TREE_TILE, TREES } tree;

/* The declared D of the last spec computed on each tree, kept under the spec's reproducer string
 * (which determines the spec and its operands): the tests run each spec on every path in turn,
 * and the paths on one tree compare against one computation of it. The reference evaluation is
 * most of these tests' time (docs/KERNELS.md gives the suite's time before and after). */
static struct {
    char key[2048];
    operands want;
    bool set;
} memo[TREES];

static void forget(void) {
    for (int t = 0; t < TREES; t++)
        if (memo[t].set) {
            release(&memo[t].want);
            memo[t].set = false;
        }
}

/* D of spec s (reproducer `key`) by tree t, computed on the first call for the spec. */
static const operands *declared_d(const gck_spec *s, tree t, const char *key) {
    const gck_case *c = &s->c;
    if (memo[t].set && strcmp(memo[t].key, key) == 0) return &memo[t].want;
    if (memo[t].set) release(&memo[t].want);
    operands *want = &memo[t].want;
    make(s, want);
    if (t == TREE_PAIR)
        emulate_bf16_tree(c, want, pair_tree);
    else if (t == TREE_TILE)
        emulate_bf16_tree(c, want, tile_tree);
    else {
        gck_ref_model m = declared_evaluation(c->compute);
        char msg[512];
        cr_assert_eq(gck_ref_gemm(c, &m, want->a, want->b, c->d_is_c ? want->d : want->c, want->d,
                                  msg, sizeof msg),
                     GCK_OK, "%s", msg);
    }
    snprintf(memo[t].key, sizeof memo[t].key, "%s", key);
    memo[t].set = true;
    return want;
}

/* One spec on a path and thread count against the reference model: returns elements compared
 * (0 when D differs, with the spec reported). */
static int64_t compare(const gck_spec *s, gck_kpath path, int threads) {
    const gck_case *c = &s->c;
    operands got;
    make(s, &got);
    gck_gemm_config cfg = {.threads = threads, .path = path};
    char msg[512];
    gck_gemm_arg r =
        gck_gemm(c, got.a, got.b, c->d_is_c ? got.d : got.c, got.d, &cfg, msg, sizeof msg);
    char repro[2048];
    gck_spec_format(s, repro, sizeof repro);
    cr_assert_lt(strlen(repro), sizeof repro - 1, "the reproducer string is cut");
    cr_assert_eq(r, GCK_GEMM_OK, "%s: %s (%s)", repro, gck_gemm_arg_name(r), msg);
    tree t = gck_gemm_pair_dot(path, c->type_a, c->type_b, c->compute)   ? TREE_PAIR
             : gck_gemm_tile_dot(path, c->type_a, c->type_b, c->compute) ? TREE_TILE
                                                                         : TREE_REF;
    const operands *want = declared_d(s, t, repro);
    /* every element of D's extent, padding included: the same bits (a NaN's payload aside) */
    gck_format td = gck_case_type(c, GCK_D);
    int64_t n = gck_case_extent(c, GCK_D), differ = 0, first = -1;
    for (int64_t e = 0; e < n; e++)
        if (!same_value(gck_load(got.d, td, e), gck_load(want->d, td, e))) {
            if (first < 0) first = e;
            differ++;
        }
    cr_expect_eq(differ, 0,
                 "path %s, %d threads: %lld elements of D differ from the declared model, first "
                 "at %lld: %a vs %a: %s",
                 gck_kpath_name(path), threads, (long long)differ, (long long)first,
                 first >= 0 ? gck_load(got.d, td, first) : 0.0,
                 first >= 0 ? gck_load(want->d, td, first) : 0.0, repro);
    release(&got);
    return differ ? 0 : c->m * c->n * c->batch;
}

/* The paths this CPU supports, in enum order; where `say`, each other one is printed with why. */
static int supported_paths(gck_kpath *out, bool say) {
    int n = 0;
    for (int p = GCK_KPATH_AUTO + 1; p < GCK_KPATH_COUNT; p++) {
        char why[256];
        if (gck_kpath_supported((gck_kpath)p, why, sizeof why))
            out[n++] = (gck_kpath)p;
        else if (say)
            printf("[kernels] path %s not supported here: %s\n", gck_kpath_name((gck_kpath)p), why);
    }
    cr_assert_gt(n, 0, "not even the portable path is supported");
    return n;
}

#ifdef GCK_TEST_SANITIZED
#define BIT_CASES 1000 /* the sanitizers look for memory errors: a third keeps CI short */
#else
#define BIT_CASES 3000
#endif

/* The kernels backend and its rows (the grid draws its specs from them). */
static size_t open_kernels(gck_backend *be, const gck_support_row **rows) {
    char msg[512];
    cr_assert_eq(gck_backend_open(be, "kernels", msg, sizeof msg), GCK_OK, "%s", msg);
    return be->ops->table(be->state, rows);
}

/* Every supported path, 1 and 2 threads, over the grid of specs of the kernels backend's
 * table (every type tuple, shapes 0/1/edges/tall/long-K, layouts, transposes, lds, offsets,
 * batches, special values), bit for bit against gck_ref_gemm with the declared model. */
Test(kernels, every_path_gives_the_bits_of_its_declared_model, .timeout = 1200) {
    gck_backend be;
    const gck_support_row *rows;
    size_t nrows = open_kernels(&be, &rows);
    gck_kpath paths[GCK_KPATH_COUNT];
    int np = supported_paths(paths, true);
    int64_t elements[GCK_KPATH_COUNT] = {0}, cases = 0, h16 = 0;
    for (uint64_t i = 0; i < BIT_CASES; i++) {
        gck_spec s;
        grid_spec(i, rows, nrows, &s);
        const gck_case *c = &s.c;
        if ((double)c->m * (double)c->n * (double)c->k * (double)c->batch > 4e6) continue;
        for (int q = 0; q < np; q++) elements[q] += compare(&s, paths[q], 1 + (int)(i % 2));
        cases++;
        h16 += c->compute == GCK_F16;
    }
    for (int q = 0; q < np; q++)
        printf("[kernels] path %s: %lld cases (%lld computed in f16), %lld elements "
               "bit-identical to the declared model\n",
               gck_kpath_name(paths[q]), (long long)cases, (long long)h16, (long long)elements[q]);
    cr_expect_gt(cases, BIT_CASES * 5 / 6);
    cr_expect_gt(h16, 0, "the grid drew no f16-arithmetic row");
    forget();
    gck_backend_close(&be);
}

#ifdef GCK_TEST_SANITIZED
/* Fewer elements: K across KC's edges (1,025-2,051 where 48 KiB of L1 make KC 512) made the two
 * tests after next take 6 and 9 minutes under the sanitizers on a CPU with five paths. The skinny
 * shapes take KC from an L1 of 6 KiB (64 steps), the same edges at a tenth of the work; the row
 * chunks (whose MC grows as KC shrinks) run a third of their cases, each K edge twice. */
#define BIG_ELEMENTS 200000
#define LANES        100000
#define TEST_L1      6144
#define CHUNK_CASES  10
#else
#define BIG_ELEMENTS 26000000 /* per path: over 10^8 on a CPU with all four paths */
#define LANES        1000000
#define TEST_L1      0 /* the machine's */
#define CHUNK_CASES  30
#endif

/* The spec with shape m x n x k, one batch member and padded leading dimensions (from i), on a
 * path against its declared tree: the elements compared (the test fails when any differs). */
static int64_t compare_shape(gck_spec *s, gck_kpath path, uint64_t i, int64_t m, int64_t n,
                             int64_t k) {
    gck_case *c = &s->c;
    char msg[512];
    c->m = m;
    c->n = n;
    c->k = k;
    c->batch = 1;
    c->lda = gck_case_min_ld(c, GCK_A) + (int64_t)(i % 3);
    c->ldb = gck_case_min_ld(c, GCK_B) + (int64_t)(i % 5);
    c->ldc = gck_case_min_ld(c, GCK_C) + (int64_t)(i % 2);
    c->ldd = c->d_is_c ? c->ldc : gck_case_min_ld(c, GCK_D) + (int64_t)(i % 4);
    cr_assert_eq(gck_case_validate(c, msg, sizeof msg), GCK_OK, "%s", msg);
    int64_t got = compare(s, path, 1 + (int)(i % 2));
    cr_assert_gt(got, 0, "path %s: a %lldx%lldx%lld case differs", gck_kpath_name(path),
                 (long long)m, (long long)n, (long long)k);
    return got;
}

/* f16 x f16 in f16: the f16 accumulator (VFMADDPH on avx512fp16, the emulation elsewhere: in C
 * on portable, on 8 or 16 lanes on the other SIMD paths). */
static void make_h16(gck_case *c) {
    c->type_a = c->type_b = c->compute = GCK_F16;
    c->scale_type = GCK_F32;
}

/* Whether the path runs bf16 x bf16 in f32 on a tree of its own (the pair or the tile dot
 * product). */
static bool has_bf16_tree(gck_kpath p) {
    return gck_gemm_pair_dot(p, GCK_BF16, GCK_BF16, GCK_F32) ||
           gck_gemm_tile_dot(p, GCK_BF16, GCK_BF16, GCK_F32);
}

/* Large shapes on every supported path: M and N from 1 to a few hundred (across every register
 * tile and cache block edge), K across the pair and KC edges, every type tuple, layout and value
 * distribution of the grid, 1 and 2 threads; at least BIG_ELEMENTS elements of D per path, each
 * bit for bit against the path's declared tree. */
Test(kernels, every_path_meets_its_tree_on_large_shapes, .timeout = 1800) {
    static const int64_t ks[] = {1, 2, 3, 5, 8, 16, 17, 31, 33, 64};
    gck_backend be;
    const gck_support_row *rows;
    size_t nrows = open_kernels(&be, &rows);
    gck_kpath paths[GCK_KPATH_COUNT];
    int np = supported_paths(paths, false);
    int64_t elements[GCK_KPATH_COUNT] = {0}, cases[GCK_KPATH_COUNT] = {0};
    /* spec i on each path in turn, until each has its elements (a path stops at its own count) */
    for (uint64_t i = 0, done = 0; done < (uint64_t)np; i++)
        for (int q = 0; q < np; q++) {
            if (elements[q] >= BIG_ELEMENTS) continue;
            gck_spec s;
            grid_spec(i * 7919 + 13, rows, nrows, &s);
            gck_case *c = &s.c;
            if (i % 2 == 0 && has_bf16_tree(paths[q])) {
                c->type_a = c->type_b = GCK_BF16; /* half the cases on the pair or tile tree */
                c->compute = c->scale_type = GCK_F32;
            } else if (i % 4 == 1) /* a quarter in f16 arithmetic */
                make_h16(c);
            elements[q] +=
                compare_shape(&s, paths[q], i, 1 + (int64_t)(i * 37 % 301),
                              1 + (int64_t)(i * 53 % 263), ks[i % (sizeof ks / sizeof ks[0])]);
            cases[q]++;
            done += elements[q] >= BIG_ELEMENTS;
        }
    for (int q = 0; q < np; q++)
        printf("[kernels] path %s: %lld large cases, %lld elements bit-identical to the declared "
               "tree\n",
               gck_kpath_name(paths[q]), (long long)cases[q], (long long)elements[q]);
    forget();
    gck_backend_close(&be);
}

/* With the accumulator block limited to one MC block of rows and panels to two or three tiles,
 * products of a few hundred rows cross row chunks, panels and KC blocks (every element still one
 * accumulator, k ascending): on every supported path, bit for bit against the declared tree. */
Test(kernels, row_chunks_panels_and_k_blocks_keep_the_tree, .timeout = 1800) {
    gck_backend be;
    const gck_support_row *rows;
    size_t nrows = open_kernels(&be, &rows);
    gck_kpath paths[GCK_KPATH_COUNT];
    int np = supported_paths(paths, false);
    int64_t elements[GCK_KPATH_COUNT] = {0};
    for (uint64_t i = 0; i < CHUNK_CASES; i++) {
        /* R = MC; NC = 2 or 3 tiles of 12, or 8, which a panel may stretch by an eighth: N from
         * 97 to 120 is one wider panel or two */
        bool wide = i % 4 == 3;
        gck_kernels_limit(1, wide ? 96 : i % 2 ? 24 : 36, 0);
        for (int q = 0; q < np; q++) {
            gck_spec s;
            grid_spec(i * 104729 + 7, rows, nrows, &s);
            gck_case *c = &s.c;
            if (i % 3 == 0 && has_bf16_tree(paths[q])) {
                c->type_a = c->type_b = GCK_BF16; /* a third on the pair or tile tree */
                c->compute = c->scale_type = GCK_F32;
            } else if (i % 3 == 1)
                make_h16(c); /* a third in f16 arithmetic, across KC */
            /* the driver blocks f16 arithmetic as f32: its accumulators are floats */
            gck_blocking bk = gck_kernels_blocking(
                c->compute == GCK_F16 ? 4 : gck_format_get(c->compute)->storage_bytes, 8, 12);
            int64_t kc = bk.kc, ks[] = {kc - 1, kc + 1, 2 * kc - 1, 2 * kc + 1, 4 * kc + 3};
            /* KC's edges for tiles 12 wide (and 6: twice KC) */
            int64_t n = wide ? 97 + (int64_t)(i * 29 % 24) : 1 + (int64_t)(i * 29 % 61);
            elements[q] +=
                compare_shape(&s, paths[q], i, bk.mc + 1 + (int64_t)(i * 97 % 331), n, ks[i % 5]);
        }
        gck_kernels_limit(0, 0, 0);
    }
    for (int q = 0; q < np; q++)
        printf("[kernels] path %s: %d cases across row chunks, panels and KC blocks, %lld "
               "elements bit-identical to the declared tree\n",
               gck_kpath_name(paths[q]), CHUNK_CASES, (long long)elements[q]);
    forget();
    gck_backend_close(&be);
}

/* What the skinny shapes' cases ran on one path: cases, elements compared, and the jobs that
 * read an operand in place, on lane tiles, on each in-place tile shape (f64, f32). */
typedef struct tally {
    int64_t cases, elements;
    long sup, lane, shapes[2][GCK_SUP_SHAPES];
} tally;

/* compare_shape on path p, its jobs counted in t. */
static void tallied(gck_spec *s, gck_kpath p, tally *t, uint64_t i, int64_t m, int64_t n,
                    int64_t k) {
    long sup = gck_kernels_sup_jobs(), lane = gck_kernels_lane_jobs(), shapes[2][GCK_SUP_SHAPES];
    for (int f = 0; f < 2; f++)
        for (int h = 0; h < GCK_SUP_SHAPES; h++) shapes[f][h] = gck_kernels_shape_jobs(f, h);
    t->elements += compare_shape(s, p, i, m, n, k);
    t->cases++;
    t->sup += gck_kernels_sup_jobs() - sup;
    t->lane += gck_kernels_lane_jobs() - lane;
    for (int f = 0; f < 2; f++)
        for (int h = 0; h < GCK_SUP_SHAPES; h++)
            t->shapes[f][h] += gck_kernels_shape_jobs(f, h) - shapes[f][h];
}

/* Grid spec `seed` made all of type t, column-major and not transposed. */
static void plain_spec(gck_spec *s, uint64_t seed, gck_format t, const gck_support_row *rows,
                       size_t nrows) {
    grid_spec(seed, rows, nrows, s);
    gck_case *c = &s->c;
    c->type_a = c->type_b = c->type_c = c->type_d = c->compute = c->scale_type = t;
    c->order = GCK_COL_MAJOR;
    c->transa = c->transb = GCK_OP_N;
}

/* Jobs that read op(A) in place (rows contiguous) and pack op(B), with every width from 1 to 24
 * columns, in f32 and in f64, in both orders, taken as large (L2 limited to one byte, so that
 * each column tile counts a pass over op(A)): the cases of the AVX-512 tiles for such jobs
 * (packed_b in f64, wide in f32), across KC; on each path, bit for bit against the declared
 * tree. */
static void wide_a_cases(const gck_kpath *paths, int np, tally *tallies,
                         const gck_support_row *rows, size_t nrows) {
    gck_kernels_limit(0, 0, 1);
    for (uint64_t i = 0; i < 96; i++) {
        gck_spec s;
        grid_spec(i * 4099 + 29, rows, nrows, &s);
        gck_case *c = &s.c;
        gck_format t = i % 2 ? GCK_F32 : GCK_F64;
        c->type_a = c->type_b = c->type_c = c->type_d = c->compute = c->scale_type = t;
        c->order = i / 48 ? GCK_COL_MAJOR : GCK_ROW_MAJOR;
        c->transa = c->order == GCK_COL_MAJOR ? GCK_OP_N : GCK_OP_T;
        gck_blocking bk = gck_kernels_blocking(gck_format_get(t)->storage_bytes, 8, 6);
        int64_t ks[] = {1, 9, bk.kc - 1, bk.kc + 1, 2 * bk.kc + 3};
        for (int q = 0; q < np; q++)
            tallied(&s, paths[q], &tallies[q], i, 97 + (int64_t)(i * 61 % 300),
                    1 + (int64_t)(i / 2 % 24), ks[i % 5]);
    }
    /* f32 shapes whose AVX-512 tile wins only on a tie or by a column: 64 x 4 (taller than 32 x
     * 4, same padding: more rows than op(B) is read in place for), 16 x 8 (16 rows, op(B) read in
     * place along k, a multiple of 8 columns) */
    static const int64_t shapes[][3] = {{320, 4, 300}, {448, 3, 77}, {16, 400, 300}, {12, 200, 9}};
    for (uint64_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        gck_spec s;
        plain_spec(&s, i * 5003 + 7, GCK_F32, rows, nrows);
        for (int q = 0; q < np; q++)
            tallied(&s, paths[q], &tallies[q], 96 + i, shapes[i][0], shapes[i][1], shapes[i][2]);
    }
    /* one or two columns of op(A) 4 KiB apart (compare_shape leaves lda tight when i % 3 is
     * 0): blocks of as few steps as L1's ways allow (gck_kernels_kc_ways), K across them; then
     * jobs whose op(A) fits in half of L1, read in place by each of many column slivers
     * (sup_reads) */
    static const int64_t more[][3] = {{1024, 1, 43}, {1024, 2, 300}, {2048, 1, 17},
                                      {64, 64, 64},  {96, 90, 40},   {33, 47, 29}};
    for (uint64_t i = 0; i < 12; i++) {
        gck_spec s;
        gck_format t = i % 2 ? GCK_F64 : GCK_F32;
        plain_spec(&s, i * 7919 + 5, t, rows, nrows);
        const int64_t *sh = more[i / 2];
        /* the first three: 4 KiB either way */
        int64_t m = t == GCK_F64 && i < 6 ? sh[0] / 2 : sh[0];
        for (int q = 0; q < np; q++)
            tallied(&s, paths[q], &tallies[q], 102 + 3 * i, m, sh[1], sh[2]);
    }
    gck_kernels_limit(0, 0, 0);
}

/* Jobs of 1 to 4 rows with op(B) stored along k (column-major and N, or row-major and T) and in
 * the compute type: the lane tiles' cases, across their 8 or 16 columns and 8- or 16-step
 * transpositions, the gathered steps and KC, in f32 and f64; on each path. */
static void lane_cases(const gck_kpath *paths, int np, tally *tallies, const gck_support_row *rows,
                       size_t nrows) {
    static const int64_t lane_cols[] = {1, 7, 8, 9, 15, 16, 17, 40, 97, 200};
    for (uint64_t i = 0; i < 40; i++) {
        gck_spec s;
        grid_spec(i * 3571 + 11, rows, nrows, &s);
        gck_case *c = &s.c;
        gck_format t = i % 5 == 3 ? GCK_F64 : GCK_F32; /* f64 on 4, 1, 2 and 3 rows in turn */
        c->type_b = c->compute = c->scale_type = t;
        if (i % 2) c->type_a = c->type_c = c->type_d = t;
        c->order = i % 3 ? GCK_COL_MAJOR : GCK_ROW_MAJOR;
        c->transb = c->order == GCK_COL_MAJOR ? GCK_OP_N : GCK_OP_T;
        gck_blocking bk = gck_kernels_blocking(gck_format_get(t)->storage_bytes, 8, 6);
        /* K across the packed blocks and the lane tiles' longer ones, of the 1-row tile too */
        int64_t es = gck_format_get(t)->storage_bytes;
        int64_t ks[] = {
            1, 7, 8, 9, 17, 64, 301, bk.kc + 9, gck_kernels_kc_lanes(&bk, 1, (int)es) + 9, 1100};
        for (int q = 0; q < np; q++)
            tallied(&s, paths[q], &tallies[q], i, 1 + (int64_t)(i % 4), lane_cols[i % 10],
                    ks[i * 7 % 10]);
    }
}

/* What a path's skinny cases must have run: in-place jobs for a quarter of the cases, lane tiles
 * exactly where the path has them, and every in-place tile shape of its tables (or the bits say
 * nothing about them). */
static void expect_ran(gck_kpath p, const tally *t) {
    cr_expect_gt(t->sup, t->cases / 4, "path %s: only %ld jobs read in place", gck_kpath_name(p),
                 t->sup);
    const gck_kpath_ops *ops = gck_kpath_ops_of(p);
    bool has_lanes = false;
    for (int h = 0; h < GCK_SUP_SHAPES; h++)
        has_lanes |= (ops->s32[h].fn && ops->s32[h].lanes) || (ops->s64[h].fn && ops->s64[h].lanes);
    if (has_lanes)
        cr_expect_gt(t->lane, 0, "path %s: no job ran on its lane tiles", gck_kpath_name(p));
    else
        cr_expect_eq(t->lane, 0, "path %s has no lane tiles but %ld jobs ran on them",
                     gck_kpath_name(p), t->lane);
    for (int h = 0; h < GCK_SUP_SHAPES; h++) {
        if (ops->s32[h].fn)
            cr_expect_gt(t->shapes[1][h], 0, "path %s: no job ran on its f32 %d x %d in-place tile",
                         gck_kpath_name(p), ops->s32[h].mr, ops->s32[h].nr);
        if (ops->s64[h].fn)
            cr_expect_gt(t->shapes[0][h], 0, "path %s: no job ran on its f64 %d x %d in-place tile",
                         gck_kpath_name(p), ops->s64[h].mr, ops->s64[h].nr);
    }
}

/* A path's lane tiles (TBL: s32 or s64) called as the kernel type allows but the driver never
 * calls them: A read in place (each step's R values `as` = R + 3 apart) as well as packed, B stored
 * along k (bs = 1) or along the columns (bj = 1), kc from 1 to 40 across the transposition
 * blocks, W fresh or accumulated; and B stored along k with its columns a whole number of lines
 * apart, starting at each element of a line (where a tile first steps to the next line and loads
 * whole lines from there on): bit for bit what one FMA per element and step, k ascending, gives.
 * The calls made. */
#define LINE_ELEMS(EL) ((int)(64 / sizeof(EL)))
#define LANE_CONTRACT(NAME, EL, FMA, TBL)                                                          \
    static long NAME(gck_kpath p, uint64_t seed) {                                                 \
        const gck_kpath_ops *ops = gck_kpath_ops_of(p);                                            \
        long calls = 0;                                                                            \
        for (int h = 0; h < GCK_SUP_SHAPES && ops->TBL[h].fn; h++) {                               \
            if (!ops->TBL[h].lanes) continue;                                                      \
            int64_t R = ops->TBL[h].mr, L = ops->TBL[h].nr, ldw = R + 2;                           \
            cr_assert(R <= 4 && L <= 16, "lane tile %d x %d", (int)R, (int)L);                     \
            for (int64_t kc = 1; kc <= 40; kc++)                                                   \
                for (int v = 0; v < 8 + LINE_ELEMS(EL); v++) {                                     \
                    /* v >= 8: B along k, lines apart, starting at element v - 8 of a line */      \
                    bool lined = v >= 8, first = v & 1, along_k = lined || !(v & 2),               \
                         packed = !lined && (v & 4);                                               \
                    int64_t as = packed ? R : R + 3, bs = along_k ? 1 : L + 1,                     \
                            bj = !along_k ? 1                                                      \
                                 : lined  ? (kc + 5 + LINE_ELEMS(EL) - 1) / LINE_ELEMS(EL) *       \
                                               LINE_ELEMS(EL)                                      \
                                         : kc + 5;                                                 \
                    EL a[40 * 7], bline[64 * 16 + 64] __attribute__((aligned(64))),                \
                        *b = bline + (lined ? v - 8 : 0), w[6 * 16], e[6 * 16];                    \
                    for (size_t i = 0; i < sizeof a / sizeof *a; i++)                              \
                        a[i] = (EL)((double)(gck_mix64(seed + i) >> 11) * 0x1p-52 - 1);            \
                    for (size_t i = 0; i < sizeof bline / sizeof *bline; i++)                      \
                        bline[i] = (EL)((double)(gck_mix64(~seed + i) >> 11) * 0x1p-52 - 1);       \
                    for (size_t i = 0; i < sizeof w / sizeof *w; i++)                              \
                        w[i] = e[i] = (EL)((double)(gck_mix64(seed ^ i) >> 11) * 0x1p-53);         \
                    for (int64_t r = 0; r < R; r++)                                                \
                        for (int64_t j = 0; j < L; j++) {                                          \
                            EL x = first ? 0 : e[r + j * ldw];                                     \
                            for (int64_t k = 0; k < kc; k++)                                       \
                                x = FMA(a[k * as + r], b[k * bs + j * bj], x);                     \
                            e[r + j * ldw] = x;                                                    \
                        }                                                                          \
                    ops->TBL[h].fn(kc, a, as, 0, b, bs, bj, w, ldw, first);                        \
                    calls++;                                                                       \
                    cr_assert(!memcmp(w, e, sizeof w),                                             \
                              "path %s: lane tile %d x %d, kc %d, as %d, bs %d, bj %d, first %d: " \
                              "W differs from one FMA per element and step",                       \
                              gck_kpath_name(p), (int)R, (int)L, (int)kc, (int)as, (int)bs,        \
                              (int)bj, (int)first);                                                \
                    seed += 7;                                                                     \
                }                                                                                  \
        }                                                                                          \
        return calls;                                                                              \
    }
LANE_CONTRACT(lane_contract_f32, float, fmaf, s32)
LANE_CONTRACT(lane_contract_f64, double, fma, s64)

Test(kernels, lane_tiles_keep_the_kernel_contract) {
    gck_kpath paths[GCK_KPATH_COUNT];
    int np = supported_paths(paths, false);
    long calls = 0;
    int with_lanes = 0;
    for (int q = 0; q < np; q++) {
        long c = lane_contract_f32(paths[q], 11) + lane_contract_f64(paths[q], 13);
        with_lanes += c > 0;
        calls += c;
    }
    printf("[kernels] lane tiles called with A read in place and packed, B along k (from every "
           "element of a line too) and along the columns: %ld calls on %d of %d paths, W "
           "bit-identical to one FMA per element and step\n",
           calls, with_lanes, np);
    /* every path but portable has lane tiles */
    cr_expect_eq(with_lanes, np - 1, "%d of %d paths ran lane tiles", with_lanes, np);
}

/* How many columns of op(A) read in place, col_bytes apart and `window` bytes of each at a time,
 * share an L1 set at most: every byte those windows may span (one starting anywhere in its first
 * line) mapped to its set by address, each column counted once a set. */
static int64_t most_columns_a_set(int64_t cols, int64_t l1, int64_t ways, int64_t col_bytes,
                                  int64_t window) {
    int64_t sets = l1 / ways / 64, most = 0;
    int64_t *n = calloc((size_t)sets, sizeof *n), *last = malloc((size_t)sets * sizeof *last);
    cr_assert(n && last);
    for (int64_t s = 0; s < sets; s++) last[s] = -1;
    for (int64_t c = 0; c < cols; c++)
        for (int64_t a = c * col_bytes / 64 * 64; a < c * col_bytes / 64 * 64 + 63 + window; a++) {
            int64_t s = a / 64 % sets;
            if (last[s] != c) last[s] = c, n[s]++;
            if (n[s] > most) most = n[s];
        }
    free(n);
    free(last);
    return most;
}

/* gck_kernels_kc_ways against the sets counted address by address: its columns never crowd a set
 * past two thirds of its ways, one column more would (for blocks cut short, of more than four
 * steps), and on a 48 KiB, 12-way L1 (a Zen 5's) columns 8 KiB apart (f32 2048 x 1 x 1024) get 8
 * steps, not 32, and 8000 bytes apart (lda 2000) at least 16. */
Test(kernels, in_place_blocks_keep_within_l1_ways) {
    static const int64_t l1s[][2] = {{49152, 12}, {32768, 8}, {6144, 12}, {65536, 4}};
    static const int64_t strides[] = {4096,   8192, 8000, 16000, 12288, 1024,
                                      64 * 7, 2112, 4160, 40960, 3904,  64};
    static const int64_t windows[] = {1152, 768, 1536, 384, 96};
    long checked = 0, cut = 0;
    for (size_t l = 0; l < sizeof l1s / sizeof l1s[0]; l++)
        for (size_t s = 0; s < sizeof strides / sizeof strides[0]; s++)
            for (size_t w = 0; w < sizeof windows / sizeof windows[0]; w++)
                for (int64_t kc = 1; kc <= 256; kc = kc < 8 ? kc + 1 : kc * 2) {
                    int64_t L1 = l1s[l][0], ways = l1s[l][1], limit = ways * 2 / 3;
                    int64_t got = gck_kernels_kc_ways(kc, L1, ways, strides[s], windows[w]);
                    int64_t floor4 = kc < 4 ? kc : 4;
                    cr_assert(got >= floor4 && got <= kc, "kc %lld -> %lld", (long long)kc,
                              (long long)got);
                    if (got > 4)
                        cr_assert_leq(most_columns_a_set(got, L1, ways, strides[s], windows[w]),
                                      limit, "%lld columns %lld bytes apart crowd a set",
                                      (long long)got, (long long)strides[s]);
                    if (got < kc && got >= 4) {
                        cut++;
                        cr_assert_gt(most_columns_a_set(got + 1, L1, ways, strides[s], windows[w]),
                                     limit, "kc %lld cut to %lld, yet %lld columns fit",
                                     (long long)kc, (long long)got, (long long)got + 1);
                    }
                    checked++;
                }
    cr_expect_eq(gck_kernels_kc_ways(32, 49152, 12, 8192, 96 * 4 * 3), 8);
    cr_expect_geq(gck_kernels_kc_ways(32, 49152, 12, 8000, 96 * 4 * 3), 16);
    printf("[kernels] in-place blocks: %ld cases, %ld cut short, none crowding an L1 set\n",
           checked, cut);
    cr_expect_gt(cut, 0);
}

/* Skinny shapes, where the kernels read an operand where it is stored instead of packing it (few
 * rows: op(B) in place; few columns: op(A) in place when its rows are contiguous; transposed when
 * that reads in place): M or N from 1 across the tiles' edges, the other up to a few hundred, K
 * across the KC edges, in f32, f64 and the grid's own tuples (where one operand is in the compute
 * type), every layout, 1 and 2 threads; bit for bit against the declared tree, and the in-place
 * kernels must have run. */
Test(kernels, skinny_shapes_read_in_place_keep_the_tree, .timeout = 1800) {
    static const int64_t thin[] = {1,  2,  3,  4,  5,  7,  8,  9,  12, 15, 16, 17, 23,
                                   24, 25, 31, 33, 47, 48, 49, 63, 64, 65, 95, 96, 97};
    enum { NTHIN = sizeof thin / sizeof thin[0] };
    gck_backend be;
    const gck_support_row *rows;
    size_t nrows = open_kernels(&be, &rows);
    gck_kernels_limit_l1(TEST_L1);
    gck_kpath paths[GCK_KPATH_COUNT];
    int np = supported_paths(paths, false);
    tally tallies[GCK_KPATH_COUNT] = {0};
    for (uint64_t i = 0; i < 4 * NTHIN; i++) {
        gck_spec s;
        grid_spec(i * 6151 + 3, rows, nrows, &s);
        gck_case *c = &s.c;
        if (i % 3 < 2) { /* all in f32 or all in f64 */
            gck_format t = i % 3 ? GCK_F64 : GCK_F32;
            c->type_a = c->type_b = c->type_c = c->type_d = c->compute = c->scale_type = t;
        }
        gck_blocking bk = gck_kernels_blocking(gck_format_get(c->compute)->storage_bytes, 8, 6);
        int64_t ks[] = {1, 5, bk.kc - 1, bk.kc + 1, 2 * bk.kc + 1};
        int64_t small = thin[i % NTHIN], large = 1 + (int64_t)(i * 89 % 389);
        for (int q = 0; q < np; q++)
            tallied(&s, paths[q], &tallies[q], i, i % 2 ? small : large, i % 2 ? large : small,
                    ks[i / 2 % 5]);
    }
    lane_cases(paths, np, tallies, rows, nrows);
    wide_a_cases(paths, np, tallies, rows, nrows);
    for (int q = 0; q < np; q++) {
        printf("[kernels] path %s: %lld skinny cases (%ld jobs read an operand in place, %ld of "
               "them on tiles with the columns in the lanes), %lld elements bit-identical to the "
               "declared tree\n",
               gck_kpath_name(paths[q]), (long long)tallies[q].cases, tallies[q].sup,
               tallies[q].lane, (long long)tallies[q].elements);
        expect_ran(paths[q], &tallies[q]);
    }
    forget();
    gck_backend_close(&be);
}

static bool same_model(const gck_model *a, const gck_model *b) {
    return a->compute == b->compute && a->inputs_rounded == b->inputs_rounded &&
           a->input_format == b->input_format && a->acc == b->acc && a->block == b->block &&
           a->epilogue == b->epilogue && a->orders == b->orders && a->ftz == b->ftz &&
           a->daz == b->daz;
}

/* Products the driver computes transposed (op(B) read in place as the A operand: many rows, few
 * columns) into a C and D whose leading dimension is a power of two (or 1,024 for 520 rows), so
 * that writing D a column of W at a time would crowd an L1 set: the epilogue writes such a D by
 * rows. f32 and f64, and C and D in bf16 and f16 with f32 compute; alpha 1, 2 and -1, beta 0, 1/2
 * and 2 (C read); 1 and 2 threads; on every path: every element of D's extent bit for bit what
 * the declared tree gives, and epilogues by rows ran on every path. */
static void by_rows_on_path(gck_kpath p, const gck_support_row *rows, size_t nrows) {
    static const int64_t shapes[][4] = {{512, 64, 64, 512},   {256, 64, 40, 256},
                                        {300, 48, 33, 512},   {1024, 16, 100, 1024},
                                        {520, 100, 17, 1024}, {2048, 8, 9, 2048}};
    static const gck_format outs[] = {GCK_F32, GCK_F64, GCK_BF16, GCK_F16};
    long by_rows = 0, elements = 0;
    for (size_t h = 0; h < sizeof shapes / sizeof shapes[0]; h++)
        for (int v = 0; v < 16; v++) {
            gck_format out = outs[v % 4];
            gck_spec s;
            plain_spec(&s, h * 131 + (uint64_t)v, out == GCK_F64 ? GCK_F64 : GCK_F32, rows, nrows);
            gck_case *c = &s.c;
            c->type_c = c->type_d = out;
            c->alpha = v / 4 == 1 ? 2 : v / 4 == 3 ? -1 : 1;
            c->beta = v / 4 == 2 ? 0.5 : v / 4 == 3 ? 2 : 0;
            c->d_is_c = false;
            c->m = shapes[h][0], c->n = shapes[h][1], c->k = shapes[h][2], c->batch = 1;
            c->lda = gck_case_min_ld(c, GCK_A), c->ldb = gck_case_min_ld(c, GCK_B);
            c->ldc = c->ldd = shapes[h][3];
            char msg[512];
            cr_assert_eq(gck_case_validate(c, msg, sizeof msg), GCK_OK, "%s", msg);
            long before = gck_kernels_rows_epilogues();
            int64_t got = compare(&s, p, 1 + v % 2);
            cr_assert_gt(got, 0, "path %s: a %lldx%lldx%lld case differs", gck_kpath_name(p),
                         (long long)c->m, (long long)c->n, (long long)c->k);
            elements += got;
            by_rows += gck_kernels_rows_epilogues() - before;
        }
    printf("[kernels] path %s: %ld elements of products computed transposed bit-identical to the "
           "declared tree, %ld epilogues by rows\n",
           gck_kpath_name(p), elements, by_rows);
    cr_expect_gt(by_rows, 0, "path %s: no epilogue wrote D by rows", gck_kpath_name(p));
}
Test(kernels, transposed_products_write_d_by_rows, .timeout = 600) {
    gck_backend be;
    const gck_support_row *rows;
    size_t nrows = open_kernels(&be, &rows);
    gck_kpath paths[GCK_KPATH_COUNT];
    for (int q = 0, np = supported_paths(paths, false); q < np; q++)
        by_rows_on_path(paths[q], rows, nrows);
    forget();
    gck_backend_close(&be);
}

/* Sums kept in D itself instead of W (alpha 1, C not read, D column-major in the compute type,
 * a block of whole tiles): f32 and f64 products with M and N whole tiles of the paths' shapes or
 * not, K across KC blocks, D's leading dimension padded or not, 1 and 2 threads, on every path:
 * every element of D's extent, its padding included, bit for bit what the declared tree gives.
 * Blocks (of the products in one block of k) went straight to D on every path, and none did with
 * alpha 2 or with C read. */
Test(kernels, sums_kept_in_d_keep_the_tree, .timeout = 600) {
    static const int64_t shapes[][3] = {{64, 64, 64},   {96, 48, 600},  {32, 24, 1000},
                                        {33, 47, 29},   {128, 96, 385}, {16, 16, 2000},
                                        {256, 36, 777}, {48, 12, 1537}, {200, 200, 64}};
    gck_backend be;
    const gck_support_row *rows;
    size_t nrows = open_kernels(&be, &rows);
    gck_kpath paths[GCK_KPATH_COUNT];
    int np = supported_paths(paths, false);
    for (int q = 0; q < np; q++) {
        long direct = 0, elements = 0;
        for (size_t h = 0; h < sizeof shapes / sizeof shapes[0]; h++)
            for (int v = 0; v < 8; v++) { /* f32 or f64; alpha 1 and beta 0, alpha 2, or beta 1/2 */
                gck_spec s;
                plain_spec(&s, h * 31 + (uint64_t)v, v & 1 ? GCK_F64 : GCK_F32, rows, nrows);
                s.c.alpha = v >> 1 == 2 ? 2 : 1;
                s.c.beta = v >> 1 == 3 ? 0.5 : 0;
                s.c.d_is_c = false;
                long before = gck_kernels_direct_blocks();
                elements += compare_shape(&s, paths[q], h + (uint64_t)v, shapes[h][0], shapes[h][1],
                                          shapes[h][2]);
                long now = gck_kernels_direct_blocks() - before;
                if (v >> 1 >= 2)
                    cr_expect_eq(now, 0, "path %s: %ld blocks kept their sums in D with %s",
                                 gck_kpath_name(paths[q]), now, v >> 1 == 2 ? "alpha 2" : "C read");
                direct += now;
            }
        printf("[kernels] path %s: %lld elements bit-identical to the declared tree, %ld blocks "
               "with their sums kept in D\n",
               gck_kpath_name(paths[q]), (long long)elements, direct);
        cr_expect_gt(direct, 0, "path %s: no block kept its sums in D", gck_kpath_name(paths[q]));
    }
    forget();
    gck_backend_close(&be);
}

/* On every supported path, the backend's rows declare gck_gemm_model of their types, which is the
 * reference evaluation's model, with DAZ and FTZ added exactly where the pair or the tile dot
 * product runs (bf16 x bf16 in f32 on avx512bf16, on amx). */
Test(kernels, the_backend_declares_the_model_it_computes) {
    for (int p = GCK_KPATH_AUTO; p < GCK_KPATH_COUNT; p++) {
        if (!gck_kpath_supported((gck_kpath)p, NULL, 0)) continue;
        char spec[64], msg[512];
        snprintf(spec, sizeof spec, "kernels:%s", gck_kpath_name((gck_kpath)p));
        gck_backend be;
        cr_assert_eq(gck_backend_open(&be, spec, msg, sizeof msg), GCK_OK, "%s", msg);
        const gck_support_row *rows;
        size_t n = be.ops->table(be.state, &rows), dots = 0, tiles = 0;
        cr_expect_eq(n, 528); /* 512 tuples in f32 and f64, 16 f16 x f16 in f16 */
        for (size_t r = 0; r < n; r++) {
            const gck_support_row *row = &rows[r];
            gck_ref_model e = declared_evaluation(row->compute);
            gck_model want = gck_ref_model_declared(&e),
                      api = gck_gemm_model((gck_kpath)p, row->a, row->b, row->compute);
            bool dot = gck_gemm_pair_dot((gck_kpath)p, row->a, row->b, row->compute),
                 tile = gck_gemm_tile_dot((gck_kpath)p, row->a, row->b, row->compute);
            want.daz = want.ftz = dot || tile;
            dots += dot, tiles += tile;
            cr_expect(!(dot && tile));
            cr_expect(same_model(&row->model, &want), "%s row %zu", spec, r);
            cr_expect(same_model(&api, &want), "%s row %zu", spec, r);
            gck_kpath resolved = p == GCK_KPATH_AUTO
                                     ? gck_kpath_auto_for(row->a, row->b, row->compute)
                                     : (gck_kpath)p;
            bool bf = row->a == GCK_BF16 && row->b == GCK_BF16 && row->compute == GCK_F32;
            cr_expect_eq(dot, resolved == GCK_KPATH_AVX512BF16 && bf);
            cr_expect_eq(tile, resolved == GCK_KPATH_AMX && bf);
        }
        printf("[kernels] %s: %zu rows, %zu on the pair dot product, %zu on the tile dot product\n",
               spec, n, dots, tiles);
        gck_backend_close(&be);
    }
}

/* ---- conformance probes --------------------------------------------------------------------- */

/* Wrong implementations of VDPBF16PS each probe must reject. */
static float dot_even_first(float acc, uint16_t a0, uint16_t b0, uint16_t a1, uint16_t b1) {
    return gck_kdot2_sdm(acc, a1, b1, a0, b0);
}
static float dot_one_rounding(float acc, uint16_t a0, uint16_t b0, uint16_t a1, uint16_t b1) {
    return (float)((double)acc + gck_bf16_to_double(a0) * gck_bf16_to_double(b0) +
                   gck_bf16_to_double(a1) * gck_bf16_to_double(b1));
}
static float dot_no_daz(float acc, uint16_t a0, uint16_t b0, uint16_t a1, uint16_t b1) {
    return fmaf(gck_bf16_to_float(a0), gck_bf16_to_float(b0),
                fmaf(gck_bf16_to_float(a1), gck_bf16_to_float(b1), acc));
}
/* Wrong implementations of TDPBF16PS: one chain in k order; the chains added into acc one after
 * the other; no DAZ (the VDPBF16PS pair order, step after step, is the first). */
static float tile_one_chain(float acc, const uint16_t a[32], const uint16_t b[32]) {
    for (int k = 0; k < 32; k += 2) acc = gck_kdot2_sdm(acc, a[k + 1], b[k + 1], a[k], b[k]);
    return acc;
}
static float tile_chains_into_acc(float acc, const uint16_t a[32], const uint16_t b[32]) {
    float chain[2] = {0, 0};
    for (int k = 0; k < 32; k++) chain[k % 2] = pair_step(chain[k % 2], a[k], b[k]);
    return flush_step(flush_step(acc, chain[0]), chain[1]);
}
static float tile_no_daz(float acc, const uint16_t a[32], const uint16_t b[32]) {
    float chain[2] = {0, 0};
    for (int k = 0; k < 32; k++)
        chain[k % 2] = fmaf(gck_bf16_to_float(a[k]), gck_bf16_to_float(b[k]), chain[k % 2]);
    return acc + (chain[0] + chain[1]);
}
/* This file's emulation of the tile step, for the probe. */
static float tile_emulated(float acc, const uint16_t a[32], const uint16_t b[32]) {
    float chain[2] = {0, 0};
    for (int k = 0; k < 32; k++) chain[k % 2] = pair_step(chain[k % 2], a[k], b[k]);
    return flush_step(acc, (double)flush_step(chain[0], chain[1]));
}
static uint16_t cvt_truncating(float x) { return (uint16_t)(gck_bf16_from_float(x) & 0xfffe); }
static float f16_to_f32_sw(uint16_t h) { return gck_f16_to_float(h); }
static uint16_t f16_from_f32_sw(float x) { return gck_f16_from_float(x); }
static uint16_t f16_from_f32_chopped(float x) {
    uint16_t h = gck_f16_from_float(x);
    return (h & 0x7c00) == 0x7c00 ? h : (uint16_t)(h & 0xfffe);
}

/* Wrong implementations of VFMADDPH: the product rounded to f16 first; the sum rounded to f32
 * first (an emulation without round-to-odd); subnormal results flushed to zero. */
static uint16_t fma16_unfused(uint16_t a, uint16_t b, uint16_t c) {
    uint16_t p = gck_f16_from_float(gck_f16_to_float(a) * gck_f16_to_float(b));
    return gck_f16_from_double(gck_f16_to_double(p) + gck_f16_to_double(c));
}
static uint16_t fma16_via_f32(uint16_t a, uint16_t b, uint16_t c) {
    return gck_f16_from_float(fmaf(gck_f16_to_float(a), gck_f16_to_float(b), gck_f16_to_float(c)));
}
static uint16_t fma16_ftz(uint16_t a, uint16_t b, uint16_t c) {
    uint16_t r = gck_kfma16_sim(a, b, c);
    return (r & 0x7c00) == 0 ? (uint16_t)(r & 0x8000) : r;
}

/* VDPBF16PS, VCVTNEPS2BF16 and the F16C conversions match their documentation on this CPU
 * (where it has them); the documented lane itself and the software conversions pass; and each
 * probe rejects a plausible wrong implementation. */
Test(kernels, instructions_conform_to_their_documentation) {
    char why[512] = "";
    const char *missing;
    cr_expect(gck_kprobe_dot2(gck_kdot2_sdm, why, sizeof why), "%s", why);
    cr_expect(!gck_kprobe_dot2(dot_even_first, why, sizeof why));
    cr_expect(strstr(why, "odd pair") != NULL, "%s", why);
    cr_expect(!gck_kprobe_dot2(dot_one_rounding, why, sizeof why));
    cr_expect(!gck_kprobe_dot2(dot_no_daz, why, sizeof why));
    cr_expect(gck_kprobe_tile(gck_ktile_sdm, why, sizeof why), "%s", why);
    cr_expect(gck_kprobe_tile(tile_emulated, why, sizeof why), "%s", why);
    cr_expect(!gck_kprobe_tile(tile_one_chain, why, sizeof why));
    cr_expect(strstr(why, "two chains") != NULL, "%s", why);
    cr_expect(!gck_kprobe_tile(tile_chains_into_acc, why, sizeof why));
    cr_expect(!gck_kprobe_tile(tile_no_daz, why, sizeof why));
    cr_expect(!gck_kprobe_cvtneps2bf16(cvt_truncating, why, sizeof why));
    cr_expect(gck_kprobe_f16c(f16_to_f32_sw, f16_from_f32_sw, why, sizeof why), "%s", why);
    cr_expect(!gck_kprobe_f16c(f16_to_f32_sw, f16_from_f32_chopped, why, sizeof why));
    cr_expect(gck_kprobe_fma16(gck_kfma16_sim, why, sizeof why), "%s", why);
    cr_expect(!gck_kprobe_fma16(fma16_unfused, why, sizeof why));
    cr_expect(strstr(why, "one rounding") != NULL, "%s", why);
    cr_expect(!gck_kprobe_fma16(fma16_via_f32, why, sizeof why));
    cr_expect(strstr(why, "f32's precision") != NULL, "%s", why);
    cr_expect(!gck_kprobe_fma16(fma16_ftz, why, sizeof why));
    cr_expect(strstr(why, "subnormal") != NULL, "%s", why);
    int ran = 0;
    if (gck_kpath_cpu_has(GCK_KPATH_AVX512BF16, &missing)) {
        cr_expect(gck_kprobe_dot2(gck_kdot2_hw, why, sizeof why), "%s", why);
        cr_expect(gck_kprobe_cvtneps2bf16(gck_kcvtbf16_hw, why, sizeof why), "%s", why);
        ran += 2;
    } else
        printf("[kernels] VDPBF16PS and VCVTNEPS2BF16 not probed: the CPU lacks %s\n", missing);
    if (gck_kpath_cpu_has(GCK_KPATH_AMX, &missing)) {
        cr_expect(gck_kprobe_tile(gck_ktile_hw, why, sizeof why), "%s", why);
        ran++;
    } else
        printf("[kernels] TDPBF16PS not probed: the CPU lacks %s\n", missing);
    if (gck_kpath_cpu_has(GCK_KPATH_AVX512FP16, &missing)) {
        cr_expect(gck_kprobe_fma16(gck_kfma16_hw, why, sizeof why), "%s", why);
        ran++;
    } else
        printf("[kernels] VFMADDPH not probed: the CPU lacks %s\n", missing);
    if (gck_kpath_cpu_has(GCK_KPATH_AVX2, &missing)) {
        cr_expect(gck_kprobe_f16c(gck_kf16_to_f32_hw, gck_kf16_from_f32_hw, why, sizeof why), "%s",
                  why);
        ran++;
    } else
        printf("[kernels] F16C not probed: the CPU lacks %s\n", missing);
    printf("[kernels] %d instruction probes ran on this CPU, all as documented\n", ran);
}

/* The library's documented lane and this file's independent emulation (a double-double sum
 * rounded once) agree on LANES edge-weighted random lanes. */
Test(kernels, the_documented_lane_has_two_independent_emulations) {
    uint64_t s = 99;
    for (int i = 0; i < LANES; i++) {
        uint16_t v[4];
        for (int q = 0; q < 4; q++) {
            s = s * 6364136223846793005u + 1442695040888963407u;
            /* exponents: denormal, near the square root of the flush boundary, around 1 */
            uint64_t pick = (s >> 40) % 6;
            uint16_t e = (uint16_t)(pick == 0   ? (s >> 50) % 3
                                    : pick <= 2 ? 60 + (s >> 50) % 8
                                                : 100 + (s >> 50) % 60);
            v[q] = (uint16_t)((s >> 20 & 0x8000) | (uint16_t)(e << 7) | (s >> 33 & 0x7f));
        }
        float acc = (float)((double)(int32_t)(s >> 32) * ((s >> 8 & 1) ? 0x1p-150 : 0x1p-20));
        float want = pair_step(pair_step(acc, v[2], v[3]), v[0], v[1]);
        float got = gck_kdot2_sdm(acc, v[0], v[1], v[2], v[3]);
        cr_assert(same_value(got, want) && signbit(got) == signbit(want),
                  "%a + %04x*%04x + %04x*%04x: %a vs %a", acc, v[2], v[3], v[0], v[1], got, want);
    }
}

/* a*b + c rounded once to binary16 by MPFR: 11 bits, binary16's exponent range (emin -23 in
 * MPFR's convention puts the least subnormal, 2^-24, at its least exponent), subnormalized. */
static uint16_t fma16_mpfr(uint16_t a, uint16_t b, uint16_t c) {
    mpfr_exp_t emin = mpfr_get_emin(), emax = mpfr_get_emax();
    mpfr_set_emin(-23);
    mpfr_set_emax(16);
    mpfr_t x, y, z, r;
    mpfr_inits2(11, x, y, z, r, (mpfr_ptr)0);
    mpfr_set_d(x, gck_f16_to_double(a), MPFR_RNDN); /* exact */
    mpfr_set_d(y, gck_f16_to_double(b), MPFR_RNDN);
    mpfr_set_d(z, gck_f16_to_double(c), MPFR_RNDN);
    int t = mpfr_fma(r, x, y, z, MPFR_RNDN);
    t = mpfr_subnormalize(r, t, MPFR_RNDN);
    (void)t;
    double v = mpfr_get_d(r, MPFR_RNDN); /* exact: an f16 value or an infinity */
    mpfr_clears(x, y, z, r, (mpfr_ptr)0);
    mpfr_set_emin(emin);
    mpfr_set_emax(emax);
    return gck_f16_from_double(v);
}

/* The f16 fused multiply-add every path declares for f16 arithmetic (gck_kfma16_sim, the portable
 * path's step and the probe's reference) against MPFR: every a with b = c = the same 64 values
 * (signs, subnormals, the extremes, around 1), then random finite triples, half with c near
 * -a*b (cancellation, ties broken below f32's precision). Results compared as bits, NaN aside
 * (none arises from finite inputs but an inf - inf, which is not drawn). */
Test(kernels, the_f16_fma_emulation_agrees_with_mpfr, .timeout = 300) {
    static const uint16_t some[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x0002, 0x03ff, 0x83ff, 0x0400,
                                    0x8400, 0x0401, 0x1000, 0x3800, 0x3bff, 0x3c00, 0xbc00, 0x3c01,
                                    0x3e00, 0x4000, 0x4c00, 0x4bff, 0x5bff, 0x7bfe, 0x7bff, 0xfbff,
                                    0x2e66, 0xae66, 0x3555, 0x0155, 0x8155, 0x6000, 0xe000, 0x1400};
    enum { NSOME = sizeof some / sizeof some[0] };
    /* the C step, and the vector steps of the SIMD paths' f16 kernels where this CPU runs them */
    typedef struct {
        const char *name;
        gck_kfma16_fn f;
    } step;
    step fn[3] = {{"C", gck_kfma16_sim}};
    int nfn = 1;
    if (gck_kpath_supported(GCK_KPATH_AVX2, NULL, 0)) fn[nfn++] = (step){"AVX2", gck_kfma16_avx2};
    if (gck_kpath_supported(GCK_KPATH_AVX512, NULL, 0))
        fn[nfn++] = (step){"AVX-512", gck_kfma16_avx512};
    long compared = 0;
    for (uint32_t a = 0; a < 0x10000; a++) {
        if ((a & 0x7c00) == 0x7c00) continue;
        for (int q = 0; q < NSOME; q++) {
            uint16_t b = some[q], c = some[(q * 7 + a) % NSOME];
            uint16_t want = fma16_mpfr((uint16_t)a, b, c);
            for (int f = 0; f < nfn; f++) {
                uint16_t got = fn[f].f((uint16_t)a, b, c);
                cr_assert_eq(got, want, "%04x*%04x + %04x: %s emulation %04x, MPFR %04x", a, b, c,
                             fn[f].name, got, want);
            }
            compared++;
        }
    }
    uint64_t s = 7;
    for (int i = 0; i < LANES; i++) {
        uint16_t v[3];
        for (int q = 0; q < 3; q++) {
            do {
                s = s * 6364136223846793005u + 1442695040888963407u;
                v[q] = (uint16_t)(s >> 40);
            } while ((v[q] & 0x7c00) == 0x7c00);
        }
        if (i % 2) { /* c near -a*b */
            float p = gck_f16_to_float(v[0]) * gck_f16_to_float(v[1]);
            v[2] = (uint16_t)(gck_f16_from_float(-p) ^ (uint16_t)(s >> 20 & 3));
            if ((v[2] & 0x7c00) == 0x7c00) continue;
        }
        uint16_t want = fma16_mpfr(v[0], v[1], v[2]);
        for (int f = 0; f < nfn; f++) {
            uint16_t got = fn[f].f(v[0], v[1], v[2]);
            cr_assert_eq(got, want, "%04x*%04x + %04x: %s emulation %04x, MPFR %04x", v[0], v[1],
                         v[2], fn[f].name, got, want);
        }
        compared++;
    }
    printf("[kernels] the f16 fused multiply-add: %ld triples equal to MPFR's, on %d emulation%s (",
           compared, nfn, nfn > 1 ? "s" : "");
    for (int f = 0; f < nfn; f++) printf("%s%s", f ? ", " : "", fn[f].name);
    printf(")\n");
}

static gck_case small_case(void) {
    gck_case c;
    gck_case_init(&c, 3, 2, 4);
    c.type_a = c.type_b = c.type_c = c.type_d = c.compute = GCK_F32;
    c.alpha = 1;
    c.beta = 0.5;
    c.scale_type = GCK_F32;
    c.d_is_c = false;
    return c;
}

/* Each invalid argument is named by its code and its message, and D is left untouched. */
Test(kernels, invalid_arguments_are_named_and_nothing_is_written) {
    float a[16] = {0}, b[16] = {0}, cc[16] = {0}, d[16];
    struct {
        const char *what;
        gck_gemm_arg want;
        const char *text;
    } t[] = {
        {"m", GCK_GEMM_ARG_M, "M (-1)"},
        {"lda", GCK_GEMM_ARG_LDA, "lda (2)"},
        {"ldb", GCK_GEMM_ARG_LDB, "ldb (3)"},
        {"ldc", GCK_GEMM_ARG_LDC, "ldc (1)"},
        {"ldd", GCK_GEMM_ARG_LDD, "ldd (1)"},
        {"type_a", GCK_GEMM_ARG_TYPE_A, "type_a"},
        {"compute", GCK_GEMM_ARG_COMPUTE, "compute f16 takes f16 A and B only (A is f32"},
        {"compute_bf16", GCK_GEMM_ARG_COMPUTE, "compute (bf16) must be f32 or f64, or f16"},
        {"alpha", GCK_GEMM_ARG_ALPHA, "alpha"},
        {"batch", GCK_GEMM_ARG_BATCH, "batch (0)"},
        {"order", GCK_GEMM_ARG_ORDER, "order"},
        {"A", GCK_GEMM_ARG_A, "A is NULL"},
        {"C", GCK_GEMM_ARG_C, "C is NULL"},
        {"D", GCK_GEMM_ARG_D, "D must be C"},
        {"threads", GCK_GEMM_ARG_THREADS, "threads"},
        {"path", GCK_GEMM_ARG_PATH, "path"},
        {"stride_d", GCK_GEMM_ARG_STRIDE_D, "stride_d"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        gck_case c = small_case();
        const void *A = a, *C = cc;
        void *D = d;
        gck_gemm_config cfg = {0, GCK_KPATH_AUTO};
        const char *w = t[i].what;
        if (!strcmp(w, "m")) c.m = -1;
        if (!strcmp(w, "lda")) c.lda = 2;
        if (!strcmp(w, "ldb")) c.ldb = 3;
        if (!strcmp(w, "ldc")) c.ldc = 1;
        if (!strcmp(w, "ldd")) c.ldd = 1;
        if (!strcmp(w, "type_a")) c.type_a = GCK_TF32;
        if (!strcmp(w, "compute")) c.compute = GCK_F16;
        if (!strcmp(w, "compute_bf16")) c.compute = GCK_BF16;
        if (!strcmp(w, "alpha")) c.alpha = NAN;
        if (!strcmp(w, "batch")) c.batch = 0;
        if (!strcmp(w, "order")) c.order = (gck_order)7;
        if (!strcmp(w, "A")) A = NULL;
        if (!strcmp(w, "C")) C = NULL;
        if (!strcmp(w, "D")) {
            c.d_is_c = true;
            c.ldd = c.ldc;
        }
        if (!strcmp(w, "threads")) cfg.threads = -1;
        if (!strcmp(w, "path")) cfg.path = (gck_kpath)99;
        if (!strcmp(w, "stride_d")) {
            c.batch = 2;
            c.stride_a = c.stride_b = c.stride_c = 0;
            c.stride_d = 1;
        }
        memset(d, 0x77, sizeof d);
        char msg[256] = "";
        gck_gemm_arg r = gck_gemm(&c, A, b, C, D, &cfg, msg, sizeof msg);
        cr_expect_eq(r, t[i].want, "%s: got %s (%s)", w, gck_gemm_arg_name(r), msg);
        cr_expect(strstr(msg, t[i].text) != NULL, "%s: '%s' lacks '%s'", w, msg, t[i].text);
        unsigned char *p = (unsigned char *)d;
        for (size_t k = 0; k < sizeof d; k++) cr_expect_eq(p[k], 0x77, "%s wrote D", w);
    }
}

/* beta = 0 does not read C (NaN there stays out of D), alpha = 0 and K = 0 do not read A and B
 * (NULL accepted), M or N = 0 returns at once with NULL operands. */
Test(kernels, blas_semantics) {
    gck_case c = small_case();
    float a[12], b[8], cc[6], d[6];
    for (int i = 0; i < 12; i++) a[i] = (float)(i + 1);
    for (int i = 0; i < 8; i++) b[i] = (float)(i % 3);
    for (int i = 0; i < 6; i++) cc[i] = NAN;
    c.beta = 0;
    cr_assert_eq(gck_gemm(&c, a, b, cc, d, NULL, NULL, 0), GCK_GEMM_OK);
    for (int i = 0; i < 6; i++) cr_expect(isfinite(d[i]), "D[%d] = %g", i, d[i]);
    c.beta = 0.5;
    c.alpha = 0;
    for (int i = 0; i < 6; i++) cc[i] = (float)i;
    cr_assert_eq(gck_gemm(&c, NULL, NULL, cc, d, NULL, NULL, 0), GCK_GEMM_OK);
    for (int i = 0; i < 6; i++) cr_expect_eq(d[i], 0.5f * (float)i);
    c.alpha = 1;
    c.k = 0;
    cr_assert_eq(gck_gemm(&c, NULL, NULL, cc, d, NULL, NULL, 0), GCK_GEMM_OK);
    for (int i = 0; i < 6; i++) cr_expect_eq(d[i], 0.5f * (float)i);
    c.k = 4;
    c.m = 0;
    c.lda = c.ldc = c.ldd = 1;
    cr_expect_eq(gck_gemm(&c, NULL, NULL, NULL, NULL, NULL, NULL, 0), GCK_GEMM_OK);
}

/* Paths: the portable one everywhere, an unknown one refused with the reason, and the
 * environment variable steering the automatic choice. */
Test(kernels, paths_are_reported) {
    char why[256] = "";
    cr_expect(gck_kpath_supported(GCK_KPATH_PORTABLE, why, sizeof why));
    cr_expect(!gck_kpath_supported((gck_kpath)99, why, sizeof why));
    cr_expect(strstr(why, "does not exist") != NULL, "%s", why);
    gck_kpath p;
    cr_expect(gck_kpath_parse("portable", &p) && p == GCK_KPATH_PORTABLE);
    cr_expect(!gck_kpath_parse("avx9000", &p));
    cr_assert_eq(setenv("GEMMCHECK_KERNELS_PATH", "portable", 1), 0);
    cr_expect_eq(gck_kpath_auto(), GCK_KPATH_PORTABLE);
    for (int k = 0; k < GCK_KCLASS_COUNT; k++) /* forced: whatever the rates */
        cr_expect_eq(gck_kpath_auto_for(GCK_BF16, GCK_BF16, k ? GCK_F32 : GCK_F64),
                     GCK_KPATH_PORTABLE);
    unsetenv("GEMMCHECK_KERNELS_PATH");
}

/* The rule on given rates: the default path unless another is GCK_KPATH_MARGIN times as fast.
 * The rates of issue 44's Intel Emerald Rapids core (bf16 2048^3, one thread: 43.5 GFLOP/s on
 * the pair dot product, 108.9 converting to f32) move bf16 off avx512bf16; a near tie does not
 * move anything. */
Test(kernels, the_choice_follows_the_measured_rates_with_a_margin) {
    double r[GCK_KPATH_COUNT] = {0};
    r[GCK_KPATH_AVX2] = 60, r[GCK_KPATH_AVX512] = 108.9, r[GCK_KPATH_AVX512BF16] = 43.5;
    cr_expect_eq(gck_kpath_choose(r, GCK_KPATH_AVX512BF16), GCK_KPATH_AVX512);
    r[GCK_KPATH_AVX512BF16] = 150; /* a core where the pair dot product is the fast one */
    cr_expect_eq(gck_kpath_choose(r, GCK_KPATH_AVX512BF16), GCK_KPATH_AVX512BF16);
    r[GCK_KPATH_AVX512BF16] = 0;     /* a CPU without it */
    r[GCK_KPATH_AVX2] = 1.2 * 108.9; /* within the margin of the default: no move */
    cr_expect_eq(gck_kpath_choose(r, GCK_KPATH_AVX512), GCK_KPATH_AVX512);
    r[GCK_KPATH_AVX2] = 1.3 * 108.9;
    cr_expect_eq(gck_kpath_choose(r, GCK_KPATH_AVX512), GCK_KPATH_AVX2);
    double failed[GCK_KPATH_COUNT] = {0, 0, 40, 0, 0}; /* the default's measurement failed */
    cr_expect_eq(gck_kpath_choose(failed, GCK_KPATH_AVX512), GCK_KPATH_AVX2);
    double none[GCK_KPATH_COUNT] = {0};
    cr_expect_eq(gck_kpath_choose(none, GCK_KPATH_PORTABLE), GCK_KPATH_PORTABLE);
    cr_expect_eq(gck_kclass_of(GCK_BF16, GCK_BF16, GCK_F32), GCK_KCLASS_BF16);
    cr_expect_eq(gck_kclass_of(GCK_BF16, GCK_F16, GCK_F32), GCK_KCLASS_F16);
    cr_expect_eq(gck_kclass_of(GCK_BF16, GCK_F32, GCK_F32), GCK_KCLASS_F32);
    cr_expect_eq(gck_kclass_of(GCK_BF16, GCK_BF16, GCK_F64), GCK_KCLASS_F64);
    cr_expect_eq(gck_kclass_of(GCK_F16, GCK_F16, GCK_F16), GCK_KCLASS_F16F16);
    double h16[GCK_KPATH_COUNT] = {0}; /* f16 arithmetic: VFMADDPH against the emulations */
    h16[GCK_KPATH_AVX2] = 7, h16[GCK_KPATH_AVX512] = h16[GCK_KPATH_AMX] = 11;
    h16[GCK_KPATH_AVX512FP16] = 300;
    cr_expect_eq(gck_kpath_choose(h16, GCK_KPATH_AMX), GCK_KPATH_AVX512FP16);
}

/* The measured rates on this CPU: every supported SIMD path has a rate on every class, a path it
 * cannot run and the portable reference have none, and each class runs on a supported path whose
 * rate obeys the rule. The automatic call computes exactly what the chosen path computes (the
 * same bits as gck_gemm on that path, pair dot product or not), and the choice does not change
 * within the process. */
Test(kernels, the_automatic_choice_is_measured_and_kept) {
    unsetenv("GEMMCHECK_KERNELS_PATH");
    for (int k = 0; k < GCK_KCLASS_COUNT; k++) {
        gck_format in, compute;
        gck_kclass_types((gck_kclass)k, &in, &compute);
        cr_expect_eq(gck_kclass_of(in, in, compute), (gck_kclass)k);
        double r[GCK_KPATH_COUNT];
        for (int p = 0; p < GCK_KPATH_COUNT; p++) {
            r[p] = gck_kpath_rate((gck_kpath)p, (gck_kclass)k);
            bool simd = p > GCK_KPATH_PORTABLE && gck_kpath_supported((gck_kpath)p, NULL, 0);
            cr_expect(simd ? r[p] > 0 : r[p] == 0, "%s on %s: %g", gck_kpath_name((gck_kpath)p),
                      gck_kclass_name((gck_kclass)k), r[p]);
        }
        gck_kpath chosen = gck_kpath_auto_for(in, in, compute);
        cr_expect(gck_kpath_supported(chosen, NULL, 0));
        cr_expect_eq(chosen, gck_kpath_choose(r, gck_kpath_auto()));
        cr_expect_eq(chosen, gck_kpath_auto_for(in, in, compute));
        cr_expect_eq(chosen, gck_kpath_auto_class((gck_kclass)k));
        printf("[kernels] %s inputs: auto runs %s (", gck_kclass_name((gck_kclass)k),
               gck_kpath_name(chosen));
        for (int p = GCK_KPATH_PORTABLE + 1; p < GCK_KPATH_COUNT; p++)
            printf("%s%s %.1f", p > GCK_KPATH_PORTABLE + 1 ? ", " : "",
                   gck_kpath_name((gck_kpath)p), r[p]);
        printf(" GFLOP/s)\n");
        /* the automatic call and the chosen path: the same bits */
        gck_case c;
        gck_case_init(&c, 37, 29, 41);
        c.type_a = c.type_b = in;
        c.type_c = c.type_d = c.compute = compute;
        c.scale_type = compute == GCK_F64 ? GCK_F64 : GCK_F32;
        unsigned char a[37 * 41 * 8], b[41 * 29 * 8], d1[37 * 29 * 8], d2[37 * 29 * 8];
        for (int e = 0; e < 37 * 41; e++) gck_store(a, c.type_a, e, ldexp(1 + e % 13, -(e % 9)));
        for (int e = 0; e < 41 * 29; e++) gck_store(b, c.type_b, e, ldexp(3 - e % 11, -(e % 7)));
        memset(d1, 0, sizeof d1);
        memset(d2, 0, sizeof d2);
        gck_gemm_config automatic = {1, GCK_KPATH_AUTO}, explicit = {1, chosen};
        cr_assert_eq(gck_gemm(&c, a, b, d1, d1, &automatic, NULL, 0), GCK_GEMM_OK);
        cr_assert_eq(gck_gemm(&c, a, b, d2, d2, &explicit, NULL, 0), GCK_GEMM_OK);
        cr_expect(memcmp(d1, d2, sizeof d1) == 0, "%s", gck_kclass_name((gck_kclass)k));
    }
}

/* ---- the int8 GEMM -------------------------------------------------------------------------- */

/* C = A·Bᵀ by int64 sums, one element at a time: the truth gck_igemm_s8 must equal bit for bit. */
static int64_t int8_dot(const int8_t *a, const int8_t *b, int64_t k) {
    int64_t s = 0;
    for (int64_t t = 0; t < k; t++) s += (int64_t)a[t] * b[t];
    return s;
}

/* Shapes across the tile edges (6 rows, 64 columns, panels of 1024 columns, k in groups of 4, of
 * 64 and blocks of 2048), values drawn from the whole int8 range with its ends over-weighted,
 * leading dimensions beyond the line; on both implementations, 1 and 2 threads, stored and
 * accumulated. */
Test(kernels, the_int8_gemm_is_exact_on_every_path, .timeout = 120) {
    static const int64_t ms[] = {1, 5, 6, 7, 13, 200}, ns[] = {1, 63, 64, 65, 130, 1090},
                         ks[] = {0, 1, 3, 4, 5, 67, 511, 512, 513, 2051};
    uint64_t z = 0x1a2b3c;
    int cases = 0, on[GCK_IPATH_COUNT] = {0};
    printf("[kernels] int8 GEMM here: %s\n", gck_igemm_path(false));
    for (size_t mi = 0; mi < sizeof ms / sizeof *ms; mi++)
        for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++)
            for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++) {
                int64_t m = ms[mi], n = ns[ni], k = ks[ki], lda = k + 3, ldb = k + 1, ldc = n + 2;
                if (n > 1024 && m > 7) continue; /* past a panel of 1024 columns: a few rows */
                int8_t *A = malloc((size_t)(m * lda + 1)), *B = malloc((size_t)(n * ldb + 1));
                int32_t *C = malloc(sizeof(int32_t) * (size_t)(ldc * m)),
                        *start = malloc(sizeof(int32_t) * (size_t)(ldc * m));
                for (int64_t e = 0; e < m * lda; e++) {
                    z = gck_splitmix64(z);
                    A[e] = (int8_t)(z % 5 == 0 ? (z & 64 ? 127 : -128) : (int8_t)(z >> 24));
                }
                for (int64_t e = 0; e < n * ldb; e++) {
                    z = gck_splitmix64(z);
                    B[e] = (int8_t)(z % 5 == 0 ? (z & 64 ? 127 : -128) : (int8_t)(z >> 24));
                }
                for (int64_t e = 0; e < ldc * m; e++)
                    start[e] = (int32_t)(e * 7919 % 100003) - 50000;
                for (int v = 0; v < 4 * GCK_IPATH_COUNT; v++) {
                    gck_ipath path = (gck_ipath)(v / 4);
                    bool acc = v & 1;
                    if (!gck_ipath_supported(path)) continue;
                    memcpy(C, start, sizeof(int32_t) * (size_t)(ldc * m));
                    bool portable = path == GCK_IPATH_PORTABLE; /* the public flag */
                    gck_igemm_args g = {m,   n, k,   A,   lda,           B,
                                        ldb, C, ldc, acc, v & 2 ? 2 : 1, portable};
                    cr_assert(portable ? gck_igemm_s8(&g) : gck_igemm_s8_on(&g, path));
                    for (int64_t i = 0; i < m; i++)
                        for (int64_t j = 0; j < ldc; j++) {
                            int64_t want = j >= n ? start[i * ldc + j]
                                                  : int8_dot(A + i * lda, B + j * ldb, k) +
                                                        (acc ? start[i * ldc + j] : 0);
                            cr_assert_eq(C[i * ldc + j], want,
                                         "m %lld n %lld k %lld (%lld, %lld) %s acc %d",
                                         (long long)m, (long long)n, (long long)k, (long long)i,
                                         (long long)j, gck_ipath_name(path), acc);
                        }
                    cases++, on[path]++;
                }
                free(A), free(B), free(C), free(start);
            }
    printf("[kernels] int8 GEMM: %d products equal to int64 sums element by element (portable %d, "
           "avx512vnni %d, amx %d)\n",
           cases, on[GCK_IPATH_PORTABLE], on[GCK_IPATH_VNNI], on[GCK_IPATH_AMX]);
}

/* At the largest k the extremes sum to ±2^30 and nearby, exactly; one more k, a negative size or
 * a short leading dimension is refused with C untouched. */
Test(kernels, the_int8_gemm_holds_its_extremes_and_refuses_the_rest, .timeout = 60) {
    int64_t k = GCK_IGEMM_MAX_K;
    int8_t *A = malloc((size_t)(2 * k + 2)), *B = malloc((size_t)(2 * k + 2));
    memset(A, 0x80, (size_t)(2 * k + 2)); /* -128 */
    memset(B, 0x80, (size_t)k);           /* column 0: -128 */
    memset(B + k, 0x7f, (size_t)(k + 2)); /* column 1: 127 */
    A[k + 5] = 127;                       /* row 1 differs in one place */
    int32_t C[4];
    for (int portable = 0; portable < 2; portable++) {
        gck_igemm_args g = {2, 2, k, A, k, B, k, C, 2, false, 0, portable};
        cr_assert(gck_igemm_s8(&g));
        cr_expect_eq(C[0], INT64_C(1) << 30);
        cr_expect_eq(C[2], (INT64_C(1) << 30) - 128 * 128 - 127 * 128); /* C row-major */
        cr_expect_eq(C[1], -(int64_t)k * 128 * 127);
        cr_expect_eq(C[3], -(int64_t)(k - 1) * 128 * 127 + 127 * 127);
        int32_t before[4];
        memcpy(before, C, sizeof C);
        g.k = k + 1, g.lda = g.ldb = k + 1;
        cr_expect(!gck_igemm_s8(&g));
        g.k = 8, g.lda = 7;
        cr_expect(!gck_igemm_s8(&g));
        g.lda = 8, g.m = -1;
        cr_expect(!gck_igemm_s8(&g));
        cr_expect(memcmp(before, C, sizeof C) == 0);
    }
    free(A), free(B);
}

/* gck_kfloats gives the values gck_load gives: every f16 and bf16 bit pattern (NaN as NaN, its
 * payload aside) and f32 values, read contiguously and one every three elements. */
Test(kernels, runs_into_floats_equal_the_stored_values) {
    static const gck_format types[] = {GCK_F16, GCK_BF16, GCK_F32};
    uint32_t *src = malloc(3 * 65536 * sizeof *src);
    float *dst = malloc(65536 * sizeof *dst);
    for (int t = 0; t < 3; t++) {
        size_t es = gck_format_get(types[t])->storage_bytes;
        for (uint32_t x = 0; x < 3 * 65536; x++) {
            uint32_t u = t < 2 ? x & 0xffff : x * 2654435761u;
            if (es == 2)
                ((uint16_t *)src)[x] = (uint16_t)u;
            else
                src[x] = u;
        }
        for (int64_t ss = 1; ss <= 3; ss += 2) {
            gck_kfloats(dst, src, types[t], ss, 65536);
            for (int64_t x = 0; x < 65536; x++) {
                double want = gck_load(src, types[t], x * ss), got = dst[x];
                cr_assert((isnan(want) && isnan(got)) || memcmp(&want, &got, 8) == 0,
                          "%s value %lld (stride %lld): %a, not %a", gck_format_get(types[t])->name,
                          (long long)x, (long long)ss, got, want);
            }
        }
    }
    free(src);
    free(dst);
}
