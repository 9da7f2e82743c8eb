/* Exact sums of products by error-free splitting: the Ozaki scheme (K. Ozaki, T. Ogita,
 * S. Oishi, S. M. Rump, "Error-free transformations of matrix multiplication by using fast
 * routines of matrix multiplication and its applications", Numer. Algorithms 59, 2012), in its
 * integer form (H. Ootomo, K. Ozaki, R. Yokota, "DGEMM on integer matrix multiplication unit",
 * IJHPCA 2024).
 *
 * Each row i of op(A) gets a scale 2^Ea_i above its largest magnitude, and each value a_ik of it,
 * an integer multiple of its lowest set bit, is written exactly as
 *     a_ik = sum_s  dA_s(i,k) · 2^(Ea_i - beta·(s+1)),   |dA_s| < 2^beta, s = 0 .. SA-1,
 * where SA·beta covers the widest row (from its top bit to its lowest set bit); likewise
 * b_kj = sum_t dB_t(k,j)·2^(Eb_j - beta·(t+1)). Then
 *     S_ij = sum_{s,t} 2^(Ea_i + Eb_j - beta·(s+t+2)) · P_st(i,j),   P_st = dA_s · dB_t.
 * With beta = floor((53 - ceil(log2 K)) / 2), every product of digits is below 2^(2·beta) and any
 * partial sum of K of them below K·2^(2·beta) <= 2^53: every P_st is computed exactly by any f64
 * GEMM, whatever its order of summation, blocking or use of FMA. The P_st of equal s + t = d have
 * the same weight and are added in int64 (at most min(SA, SB) terms below 2^53 each), so an
 * element keeps SA + SB - 1 integer terms, which the exact oracle adds into its integer
 * accumulator and rounds once.
 *
 * The f64 GEMM is gemmcheck's own (kernels/), which is itself under test; so each term matrix Q_d
 * is checked exactly against the digits, by Freivalds' test in the integers modulo the prime
 * p = 2^61 - 1: Q_d·x = sum_{s+t=d} dA_s·(dB_t·x) (mod p) for a vector x of 32-bit values. A
 * wrong Q_d passes with probability at most 2^-32; a failed check drops the splitting and the
 * oracle sums the products one by one, as when splitting would not pay or not fit in memory.
 *
 * On int8 slices (beta = 7) a term is far below 2^53: |Q_d| <= min(SA, SB)·K·127², about 2^27
 * at K = 2048. So `group` consecutive terms are kept as one int64, Q_g = sum_r Q_(g·group+r) ·
 * 2^(7·(group-1-r)), as many as stay below 2^62 (five at K = 2048: every term of an f16 or bf16
 * product in one integer); the element then has nq = ceil(nd / group) terms 7·group bits apart,
 * and Freivalds' test checks each Q_g against the same combination of its terms' right-hand
 * sides.
 *
 * The bits of a value below its line's slices (its tail: zero for most values) are kept exactly
 * and their products added one by one (a·b = slices' product + tail_a·b + a·tail_b -
 * tail_a·tail_b), so that a few small values do not set the slice count of a whole line. */
#include "ozaki_internal.h"

#include "format_internal.h"
#include "freivalds.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bigmem.h"
#include "decode.h"
#include "gemmcheck/kernels.h"
#include "gemmcheck/oracle.h"
#include "oracle_common.h"
#include "parallel.h"
#include "stash.h"

static gck_ozaki_mode mode = GCK_OZAKI_AUTO;
static bool mode_set;

void gck_ozaki_set_mode(gck_ozaki_mode m) {
    mode = m;
    mode_set = true;
}

/* The modes by name, in gck_ozaki_mode's order. */
static const char *const mode_names[] = {"auto", "always", "never", "int8", "residues"};

static bool mode_parse(const char *s, gck_ozaki_mode *out) {
    for (size_t m = 0; m < sizeof mode_names / sizeof mode_names[0]; m++)
        if (!strcmp(s, mode_names[m])) return *out = (gck_ozaki_mode)m, true;
    return false;
}

gck_ozaki_options gck_ozaki_defaults(void) {
    gck_ozaki_options o = {GCK_OZAKI_AUTO, -1, 0, 0, 0, false};
    const char *e = getenv("GEMMCHECK_OZAKI");
    gck_ozaki_mode m;
    if (mode_set)
        o.mode = mode;
    else if (e && mode_parse(e, &m))
        o.mode = m;
    return o;
}

bool gck_oracle_env_ok(char *why, size_t why_len) {
    const char *e = getenv("GEMMCHECK_OZAKI");
    gck_ozaki_mode m;
    if (!e || mode_parse(e, &m)) return true;
    snprintf(why, why_len,
             "GEMMCHECK_OZAKI=%s is not a splitting mode (auto, always, never, int8, residues)", e);
    return false;
}

void gck_ozaki_free(gck_ozaki *o) {
    if (!o) return;
    free(o->ea);
    free(o->eb);
    free(o->need_a);
    free(o->need_b);
    free(o->spec_a);
    free(o->spec_b);
    free(o->gap_a);
    free(o->gap_b);
    free(o->hgap_a); /* one block with hgap_b */
    gck_big_free(o->q);
    free(o->ta_start);
    free(o->tb_start);
    free(o->ta);
    free(o->tb);
    free(o->sp_a);
    free(o->sp_b);
    gck_big_free(o->va_copy);
    gck_big_free(o->vb_copy);
    gck_big_free(o->tsum);
    free(o);
}

const char *gck_ozaki_gemm(const gck_ozaki *o) {
    return o->res ? "int8 residue" : o->int8 ? "int8" : "f64";
}

int gck_ozaki_gemms(const gck_ozaki *o) { return o->res ? o->crt.count : o->sa * o->sb; }

const char *gck_oz_pass_name(gck_oz_pass p) {
    static const char *const names[GCK_OZ_PASSES] = {"copy", "scales", "tails", "slices",
                                                     "gemm", "accum",  "verify"};
    return (unsigned)p < GCK_OZ_PASSES ? names[p] : "?";
}

double gck_ozaki_seconds(const gck_ozaki *o, gck_oz_pass p) {
    return (unsigned)p < GCK_OZ_PASSES ? o->sec[p] : 0;
}

/* Wall-clock seconds, for the passes' times. */
static double oz_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Adds the time since *t to pass p and restarts *t. */
static void oz_lap(gck_ozaki *o, gck_oz_pass p, double *t) {
    double now = oz_now();
    o->sec[p] += now - *t;
    *t = now;
}

void gck_ozaki_shape(const gck_ozaki *o, int *slices_a, int *slices_b, int *beta) {
    *slices_a = o->sa;
    *slices_b = o->sb;
    *beta = o->beta;
}

void gck_ozaki_tails(const gck_ozaki *o, int64_t *tails_a, int64_t *tails_b) {
    *tails_a = o->ntail_a;
    *tails_b = o->ntail_b;
}

void gck_ozaki_line_specials(const gck_ozaki *o, uint8_t *rows, uint8_t *cols) {
    int64_t la = (o->a_batched ? o->pairs : 1) * o->m, lb = (o->b_batched ? o->pairs : 1) * o->n;
    for (int64_t t = 0; t < la; t++) rows[t] |= o->spec_a[t];
    for (int64_t t = 0; t < lb; t++) cols[t] |= o->spec_b[t];
}

void gck_ozaki_range(const gck_ozaki *o, int32_t *lowest, int32_t *width) {
    *lowest = o->lowest;
    *width = o->width;
}

const int64_t *gck_ozaki_terms(const gck_ozaki *o, int64_t bi, int64_t i, int64_t j, int32_t *w0,
                               int *count, int *step) {
    int64_t pair = o->pairs == 1 ? 0 : bi, ma = o->a_batched ? bi : 0, mb = o->b_batched ? bi : 0;
    *w0 = o->ea[ma * o->m + i] + o->eb[mb * o->n + j] - 2 * o->beta - o->beta * (o->group - 1);
    *count = o->nq;
    *step = o->beta * o->group;
    return o->q + ((pair * o->n + j) * o->m + i) * o->nq;
}

/* ---- building the terms -------------------------------------------------------------------- */

typedef struct work {
    double *as, *bs, *p; /* a slice of op(A)ᵀ (K x M), the SB slices of op(B) (K x N), a product */
    uint64_t *x, *yb, *ra; /* Freivalds: x (N), dB_t·x (SB x K), dA_s·(dB_t·x) (M) */
    __int128 *acc;         /* sums of a matrix-vector product (max(M, K)) */
    __int128 *rhs;         /* ND x M */
    int8_t *a8, *b8;       /* int8 mode: the SA slices of op(A) and SB of op(B) as bytes */
    int32_t *p32;          /* int8 mode: a sum of slice products, column-major */
    int8_t *r8a, *r8b;     /* residues: op(A)'s and op(B)'s integers modulo one modulus */
    int32_t *ca, *cb;      /* residues: those integers in pieces of 28 bits (gck_oz_chunks) */
    uint8_t *t;            /* residues: each element's sum reduced, a plane per modulus */
} work;

static void work_free(work *w) {
    void *all[] = {w->as, w->bs, w->p,   w->x,   w->yb,  w->ra, w->acc, w->rhs,
                   w->a8, w->b8, w->p32, w->r8a, w->r8b, w->t,  w->ca,  w->cb};
    for (size_t t = 0; t < sizeof all / sizeof all[0]; t++) gck_big_free(all[t]);
}

static bool work_alloc(work *w, const gck_ozaki *o) {
    int64_t M = o->m, N = o->n, K = o->k, mk = M > K ? M : K;
    /* the large ones from the stash when it has them (the checker's bound leaves two); int8
     * slices are cut straight to bytes, with no slices as doubles */
    void *as = o->int8 ? NULL : gck_stash_take((size_t)(M * K) * sizeof(double)),
         *bs = o->int8 ? NULL : gck_stash_take((size_t)(o->sb * K * N) * sizeof(double));
    /* no product buffer for a plan of one f64 product: it is written into the terms (and the
     * tails' sums, which take this buffer's memory, get their own: sum_tails_ahead) */
    bool one = !o->int8 && o->nd == 1;
    void *p = one ? NULL : gck_stash_take((size_t)(M * N) * sizeof(double));
    if (!p && !one) p = gck_big_alloc((size_t)(M * N) * sizeof(double));
    if (!o->int8 && !as) as = gck_big_alloc((size_t)(M * K) * sizeof(double));
    if (!o->int8 && !bs) bs = gck_big_alloc((size_t)(o->sb * K * N) * sizeof(double));
    *w = (work){as,
                bs,
                p,
                malloc((size_t)N * sizeof(uint64_t)),
                malloc((size_t)(o->sb * K) * sizeof(uint64_t)),
                malloc((size_t)M * sizeof(uint64_t)),
                malloc((size_t)mk * sizeof(__int128)),
                malloc((size_t)(o->nq * M) * sizeof(__int128)),
                NULL,
                NULL,
                NULL,
                NULL,
                NULL,
                NULL,
                NULL,
                NULL};
    if (o->res) {
        w->r8a = gck_big_alloc((size_t)(M * K));
        w->r8b = gck_big_alloc((size_t)(K * N));
        w->t = gck_big_alloc((size_t)(o->crt.count * M * N));
        w->ca = gck_big_alloc((size_t)((o->sa + 3) / 4 * M * K) * sizeof(int32_t));
        w->cb = gck_big_alloc((size_t)((o->sb + 3) / 4 * K * N) * sizeof(int32_t));
        if (!w->r8a || !w->r8b || !w->t || !w->ca || !w->cb) return false;
    }
    if (o->int8) {
        w->a8 = gck_big_alloc((size_t)(o->sa * M * K));
        w->b8 = gck_big_alloc((size_t)(o->sb * K * N));
        w->p32 = gck_big_alloc((size_t)(M * N) * sizeof(int32_t));
        if (!w->a8 || !w->b8 || !w->p32) return false;
    }
    return ((w->as && w->bs) || o->int8) && (w->p || one) && w->x && w->yb && w->ra && w->acc &&
           w->rhs;
}

/* P = dA_s · dB_t with gemmcheck's f64 GEMM (exact: see the top of the file); a holds dA_s
 * transposed. */
static bool slice_product(const gck_ozaki *o, const double *a, const double *b, double *p) {
    gck_case g; /* f64, column-major, tight, alpha = 1, beta = 0 (C not read) */
    gck_case_init(&g, o->m, o->n, o->k);
    g.transa = GCK_OP_T, g.lda = o->k;
    char msg[256];
    return gck_gemm(&g, a, b, p, p, NULL, msg, sizeof msg) == GCK_GEMM_OK;
}

/* Q_d += P for the slice product P (M x N), the columns cut among the cores; a part that meets
 * a NaN or a value out of range (a wrong product: exact ones are integers below 2^53) says so. */
typedef struct accum_job {
    const double *p;
    const int32_t *p32; /* int8 mode: the product (column-major) instead of p */
    int64_t *q;
    const __int128 *rhs;
    const uint64_t *x;
    __int128 *acc;
    int64_t m, n, nd, d; /* nd: the terms kept per element (nq); d: the one being added to */
    int64_t weight;      /* int8 mode: what the product is multiplied by, 2^(7·(group-1-r)) */
    uint64_t *lhs;       /* residues: per row, the weighted sum of the terms' tests */
    int step, shift;     /* residues: the terms' step and shift (gck_oz_crt_terms) */
    bool bad[OZ_MAX_PARTS];
} accum_job;

static void accum_part(void *arg, int part, int64_t lo, int64_t hi) {
    accum_job *x = arg;
    bool bad = false;
    for (int64_t j = lo; j < hi; j++)
        for (int64_t i = 0; i < x->m; i++) {
            double v = x->p[i + j * x->m];
            if (!(fabs(v) < 0x1p60))
                bad = true;
            else
                x->q[(j * x->m + i) * x->nd + x->d] += (int64_t)v;
        }
    x->bad[part] = bad;
}

/* Q = P for a plan of one product (one slice of each operand), P written by the GEMM into Q's
 * own memory as doubles: each converted where it lies (memcpy: the same bytes read as a double,
 * written as an int64). */
static void convert_part(void *arg, int part, int64_t lo, int64_t hi) {
    accum_job *x = arg;
    bool bad = false;
    for (int64_t e = lo * x->m; e < hi * x->m; e++) {
        double v;
        memcpy(&v, x->q + e, sizeof v);
        if (!(fabs(v) < 0x1p60))
            bad = true;
        else
            x->q[e] = (int64_t)v;
    }
    x->bad[part] = bad;
}

/* Q_g += 2^(7·(group-1-r))·P as accum_part, from the int8 products' sums (every int32 is an
 * integer in range, and the group's sum stays below 2^62). */
static void accum_part32(void *arg, int part, int64_t lo, int64_t hi) {
    accum_job *x = arg;
    for (int64_t j = lo; j < hi; j++)
        for (int64_t i = 0; i < x->m; i++)
            x->q[(j * x->m + i) * x->nd + x->d] += x->weight * x->p32[i + j * x->m];
    x->bad[part] = false;
}

/* Freivalds' test of every Q_d on rows [lo, hi): Q_d·x against the sum of dA_s·(dB_t·x). */
static void verify_part(void *arg, int part, int64_t lo, int64_t hi) {
    accum_job *x = arg;
    bool bad = false;
    for (int64_t d = 0; d < x->nd; d++) {
        memset(x->acc + lo, 0, (size_t)(hi - lo) * sizeof *x->acc);
        for (int64_t j = 0; j < x->n; j++)
            for (int64_t i = lo; i < hi; i++)
                x->acc[i] += (__int128)x->q[(j * x->m + i) * x->nd + d] * (__int128)x->x[j];
        for (int64_t i = lo; i < hi; i++)
            if (gck_mod_p61_signed(x->acc[i]) !=
                gck_mod_p61((unsigned __int128)x->rhs[d * x->m + i]))
                bad = true;
    }
    x->bad[part] = bad;
}

/* Runs one of the passes above over `count` columns or rows; false when a part failed. */
static bool accum_pass(accum_job *x, int64_t count, void (*body)(void *, int, int64_t, int64_t)) {
    int parts = gck_parallel_parts(count, count == x->n ? x->m : x->n);
    if (parts > OZ_MAX_PARTS) parts = OZ_MAX_PARTS;
    gck_parallel_for(parts, count, x, body);
    for (int p = 0; p < parts; p++)
        if (x->bad[p]) return false;
    return true;
}

/* op(B)'s slices of member mb (as bytes in int8 mode), with dB_t·x for Freivalds' test. */
static void slices_of_b(gck_ozaki *o, const lines *vb, int64_t mb, work *w, uint64_t seed) {
    int64_t K = o->k, N = o->n;
    gck_freivalds_vector(seed, w->x, N);
    for (int t = 0; t < o->sb; t++)
        if (o->int8) {
            gck_oz_slice8(vb, o->eb, mb, o->sb, t, o->simd, w->b8 + t * K * N);
            gck_freivalds_matvec8(w->b8 + t * K * N, K, N, w->x, w->acc, w->yb + t * K);
        } else {
            gck_oz_slice(vb, o->eb, mb, o->beta, o->sb, t, o->simd, w->bs + t * K * N);
            gck_freivalds_matvec(w->bs + t * K * N, K, N, w->x, w->acc, w->yb + t * K);
        }
    memset(w->rhs, 0, (size_t)(o->nq * o->m) * sizeof *w->rhs);
}

/* The right-hand sides of Freivalds' test for op(A)'s slice s (in w->as, or its bytes in w->a8):
 * dA_s·(dB_t·x) added to term s + t's, for every t (at its weight within its group: ra < 2^61,
 * times at most 2^28). */
static void rhs_of_a(const gck_ozaki *o, work *w, int s) {
    for (int t = 0; t < o->sb; t++) {
        if (o->int8)
            gck_freivalds_matvec_rows8(w->a8 + s * o->m * o->k, o->m, o->k, w->yb + t * o->k,
                                       w->ra);
        else
            gck_freivalds_matvec_rows(w->as, o->m, o->k, w->yb + t * o->k, w->ra);
        int g = (s + t) / o->group, up = o->beta * (o->group - 1 - (s + t) % o->group);
        for (int64_t i = 0; i < o->m; i++) w->rhs[g * o->m + i] += (__int128)w->ra[i] << up;
    }
}

/* The terms of one pair of members on f64 slices: every slice product added into q (this
 * pair's block), each term matrix checked by Freivalds' test. false: a wrong product. */
static bool build_pair_f64(gck_ozaki *o, const lines *va, const lines *vb, int64_t ma, int64_t mb,
                           int64_t *q, work *w, uint64_t seed) {
    int64_t M = o->m, N = o->n, K = o->k;
    double clock = oz_now();
    slices_of_b(o, vb, mb, w, seed);
    accum_job x = {
        .p = w->p, .q = q, .rhs = w->rhs, .x = w->x, .acc = w->acc, .m = M, .n = N, .nd = o->nq};
    /* a plan of one product has it written into the terms' memory (convert_part) */
    bool one = o->nd == 1;
    double *p = one ? (double *)(void *)q : w->p;
    for (int s = 0; s < o->sa; s++) {
        gck_oz_slice(va, o->ea, ma, o->beta, o->sa, s, o->simd, w->as);
        rhs_of_a(o, w, s);
        oz_lap(o, GCK_OZ_SLICES, &clock);
        for (int t = 0; t < o->sb; t++) {
            if (!slice_product(o, w->as, w->bs + t * K * N, p)) return false;
            if (o->corrupt >= 0 && s + t == 0) p[o->corrupt % (M * N)] += 1;
            oz_lap(o, GCK_OZ_GEMM, &clock);
            x.d = s + t;
            if (!accum_pass(&x, N, one ? convert_part : accum_part)) return false;
            oz_lap(o, GCK_OZ_ACCUM, &clock);
        }
    }
    bool ok = accum_pass(&x, M, verify_part);
    oz_lap(o, GCK_OZ_VERIFY, &clock);
    return ok;
}

/* The same on int8 slices: the products of one term d (s + t = d) summed by the int8 GEMM in
 * int32 (as many at a time as stay within it: each is at most K·127² in magnitude), written
 * column-major (op(B)'s slice as the GEMM's A, op(A)'s as its B: the transposed product), and
 * added into q once per such sum. */
static bool build_pair_int8(gck_ozaki *o, const lines *va, const lines *vb, int64_t ma, int64_t mb,
                            int64_t *q, work *w, uint64_t seed) {
    int64_t M = o->m, N = o->n, K = o->k;
    double clock = oz_now();
    slices_of_b(o, vb, mb, w, seed);
    for (int s = 0; s < o->sa; s++) {
        gck_oz_slice8(va, o->ea, ma, o->sa, s, o->simd, w->a8 + s * M * K);
        rhs_of_a(o, w, s);
    }
    oz_lap(o, GCK_OZ_SLICES, &clock);
    accum_job x = {.p32 = w->p32,
                   .q = q,
                   .rhs = w->rhs,
                   .x = w->x,
                   .acc = w->acc,
                   .m = M,
                   .n = N,
                   .nd = o->nq};
    int64_t room = INT32_MAX / (K * 127 * 127); /* products one int32 sum holds (>= 1) */
    for (int d = 0; d < o->nd; d++) {
        int64_t summed = 0;
        for (int s = d < o->sb ? 0 : d - o->sb + 1; s < o->sa && s <= d; s++) {
            gck_igemm_args g = {.m = N,
                                .n = M,
                                .k = K,
                                .A = w->b8 + (d - s) * K * N,
                                .lda = K,
                                .B = w->a8 + s * M * K,
                                .ldb = K,
                                .C = w->p32,
                                .ldc = M,
                                .accumulate = summed > 0};
            if (!gck_igemm_s8(&g)) return false;
            if (o->corrupt >= 0 && d == 0) w->p32[o->corrupt % (M * N)] += 1;
            oz_lap(o, GCK_OZ_GEMM, &clock);
            x.d = d / o->group, x.weight = INT64_C(1) << (o->beta * (o->group - 1 - d % o->group));
            if (++summed == room || s == o->sa - 1 || s == d) {
                accum_pass(&x, N, accum_part32);
                summed = 0;
            }
            oz_lap(o, GCK_OZ_ACCUM, &clock);
        }
    }
    bool ok = accum_pass(&x, M, verify_part);
    oz_lap(o, GCK_OZ_VERIFY, &clock);
    return ok;
}

/* ---- the same on int8 residues (ozaki_residues.c) ----------------------------------------- */

/* One of the residues' passes, its range cut among the cores: op(A)'s or op(B)'s integers
 * reduced modulo modulus u (what 0), the GEMM's sums reduced into plane u (1), the elements
 * rebuilt into their terms (2), the digits' integers cut into pieces (3). */
typedef struct res_job {
    const gck_ozaki *o;
    work *w;
    int what, u, S;
    const int8_t *digits;
    int32_t *chunks;
    int64_t plane;
    int8_t *into;
    int64_t *q;
} res_job;

static void res_part(void *arg, int part, int64_t lo, int64_t hi) {
    (void)part;
    const res_job *x = arg;
    const gck_ozaki *o = x->o;
    int64_t mn = o->m * o->n;
    if (x->what == 3)
        gck_oz_chunks(x->digits, x->S, x->plane, lo, hi, x->chunks);
    else if (x->what == 0)
        gck_oz_residues8(x->chunks, (x->S + 3) / 4, x->plane, lo, hi, o->crt.p[x->u], o->simd,
                         x->into);
    else if (x->what == 1)
        gck_oz_reduce_sums(&o->crt, x->u, x->w->p32, lo, hi, o->simd, x->w->t + x->u * mn);
    else
        gck_oz_crt_terms(&o->crt, x->w->t, mn, lo, hi, o->nq, o->beta * o->group,
                         o->beta * (o->group * o->nq - o->nd), o->simd, x->q);
}

static void res_pass(res_job *x, int what, int64_t count) {
    x->what = what;
    int parts = gck_parallel_parts(count, 64);
    gck_parallel_for(parts < OZ_MAX_PARTS ? parts : OZ_MAX_PARTS, count, x, res_part);
}

/* Freivalds' test of the terms as one integer per element: sum_g 2^(step·(nq-1-g))·Q_g·x (the
 * terms hold the pieces of X·2^shift, with their carries) against 2^shift·A·(B·x) for op(A)'s
 * and op(B)'s integers of digits (rhs, one per row), modulo p = 2^61 - 1, where 2^e is
 * 2^(e mod 61). */
static void verify_whole_part(void *arg, int part, int64_t lo, int64_t hi) {
    accum_job *x = arg;
    bool bad = false;
    for (int64_t i = lo; i < hi; i++) x->lhs[i] = 0;
    for (int64_t d = 0; d < x->nd; d++) {
        memset(x->acc + lo, 0, (size_t)(hi - lo) * sizeof *x->acc);
        for (int64_t j = 0; j < x->n; j++)
            for (int64_t i = lo; i < hi; i++)
                x->acc[i] += (__int128)x->q[(j * x->m + i) * x->nd + d] * (__int128)x->x[j];
        unsigned __int128 w = (unsigned __int128)1 << (x->step * (x->nd - 1 - d) % 61);
        for (int64_t i = lo; i < hi; i++)
            x->lhs[i] = gck_mod_p61(x->lhs[i] + w * gck_mod_p61_signed(x->acc[i]));
    }
    unsigned __int128 up = (unsigned __int128)1 << (x->shift % 61);
    for (int64_t i = lo; i < hi; i++)
        bad |= x->lhs[i] != gck_mod_p61(up * gck_mod_p61((unsigned __int128)x->rhs[i]));
    x->bad[part] = bad;
}

/* The terms of one pair of members on int8 residues: op(A)'s and op(B)'s digits as on int8
 * slices, each line's digits taken as one integer and reduced modulo every modulus, one int8
 * GEMM per modulus, each element's sum rebuilt from its residues and cut into terms, and the
 * terms checked by Freivalds' test against the digits. */
static bool build_pair_res(gck_ozaki *o, const lines *va, const lines *vb, int64_t ma, int64_t mb,
                           int64_t *q, work *w, uint64_t seed) {
    int64_t M = o->m, N = o->n, K = o->k;
    double clock = oz_now();
    slices_of_b(o, vb, mb, w, seed);
    /* Freivalds: B·x for op(B)'s integers, sum_t 2^(7·(SB-1-t))·dB_t·x, then A·(B·x) */
    for (int64_t k = 0; k < K; k++) {
        unsigned __int128 v = 0;
        for (int t = 0; t < o->sb; t++)
            v = gck_mod_p61((v << 7) + w->yb[t * K + k]); /* below 2^68 + 2^61 */
        w->yb[k] = (uint64_t)v;
    }
    for (int s = 0; s < o->sa; s++) {
        gck_oz_slice8(va, o->ea, ma, o->sa, s, o->simd, w->a8 + s * M * K);
        gck_freivalds_matvec_rows8(w->a8 + s * M * K, M, K, w->yb, w->ra);
        for (int64_t i = 0; i < M; i++)
            w->rhs[i] = gck_mod_p61(((unsigned __int128)w->rhs[i] << 7) + w->ra[i]);
    }
    oz_lap(o, GCK_OZ_SLICES, &clock);
    res_job r = {.o = o, .w = w, .q = q},
            ra = {.o = o,
                  .w = w,
                  .S = o->sa,
                  .digits = w->a8,
                  .chunks = w->ca,
                  .plane = M * K,
                  .into = w->r8a},
            rb = {.o = o,
                  .w = w,
                  .S = o->sb,
                  .digits = w->b8,
                  .chunks = w->cb,
                  .plane = K * N,
                  .into = w->r8b};
    res_pass(&ra, 3, M * K);
    res_pass(&rb, 3, K * N);
    for (int u = 0; u < o->crt.count; u++) {
        r.u = ra.u = rb.u = u;
        res_pass(&ra, 0, M * K);
        res_pass(&rb, 0, K * N);
        oz_lap(o, GCK_OZ_SLICES, &clock);
        gck_igemm_args g = {.m = N,
                            .n = M,
                            .k = K,
                            .A = w->r8b,
                            .lda = K,
                            .B = w->r8a,
                            .ldb = K,
                            .C = w->p32,
                            .ldc = M};
        if (!gck_igemm_s8(&g)) return false;
        if (o->corrupt >= 0 && u == 0) w->p32[o->corrupt % (M * N)] += 1;
        oz_lap(o, GCK_OZ_GEMM, &clock);
        res_pass(&r, 1, M * N);
        oz_lap(o, GCK_OZ_ACCUM, &clock);
    }
    res_pass(&r, 2, M * N);
    oz_lap(o, GCK_OZ_ACCUM, &clock);
    accum_job x = {.q = q,
                   .rhs = w->rhs,
                   .x = w->x,
                   .acc = w->acc,
                   .m = M,
                   .n = N,
                   .nd = o->nq,
                   .lhs = w->ra,
                   .step = o->beta * o->group,
                   .shift = o->beta * (o->group * o->nq - o->nd)};
    bool ok = accum_pass(&x, M, verify_whole_part);
    oz_lap(o, GCK_OZ_VERIFY, &clock);
    return ok;
}

/* The weights' range: the lowest bit of any term and the bits any sum needs above it. */
static void weight_range(gck_ozaki *o, int64_t la, int64_t lb) {
    int32_t lo_a = INT32_MAX, hi_a = INT32_MIN, lo_b = INT32_MAX, hi_b = INT32_MIN;
    for (int64_t l = 0; l < la; l++) {
        if (o->ea[l] < lo_a) lo_a = o->ea[l];
        if (o->ea[l] > hi_a) hi_a = o->ea[l];
    }
    for (int64_t l = 0; l < lb; l++) {
        if (o->eb[l] < lo_b) lo_b = o->eb[l];
        if (o->eb[l] > hi_b) hi_b = o->eb[l];
    }
    /* the lowest term's weight; kept in groups, the last group's weight lies lower by the
     * terms it lacks (their places are zero bits, which the sums' frames must still hold) */
    o->lowest = lo_a + lo_b - o->beta * (o->sa + o->sb) - o->beta * (o->group * o->nq - o->nd);
    /* the top term: below min(SA, SB)·2^53 <= 2^56 at weight Ea + Eb - 2·beta; ND terms add at
     * most 4 bits of carries */
    o->width = hi_a + hi_b - 2 * o->beta + 64 - o->lowest;
}

/* The slice counts of least estimated cost, in f64 multiply-adds: SA·SB slice products of M·N·K
 * each (`weight` f64 multiply-adds per multiply-add of the slices' GEMM), `pass` more per element
 * of each product (0 keeps the f64 splitting's original choice), and every tail value TAIL_COST
 * times for each element it meets (its product with the partner value, summed ahead); *cost:
 * that cost. TAIL_COST as measured on a Zen 4 at 2048^3 (f16, 1,794 + 1,781 tails): the sums
 * ahead took 0.010 s on two cores for 7.3 million tail products, some 80 f64 multiply-adds each
 * at the GEMM's 58.6 G a second. */
#define TAIL_COST 80.0
/* On int8 slices (not residues) an element's terms with its tails often exceed the 128-bit lane
 * and go down the limbs: priced as before, 200 (at 80, bench_floor's forced int8 plan for f32 at
 * 2048^3 became 4 x 4 slices with more tails, 2.7 s, against 4 x 5 and 1.4 s). */
#define TAIL_COST_INT8 200.0
#define RES_REBUILD    4
/* Residues, per modulus: two passes over each element (its sum reduced, and its share of the
 * rebuilding) and RES_OPERAND f64 multiply-adds per value of op(A) and op(B) (its digits cut into
 * the modulus's residues); on a Zen 4 at 2048^3 (f16 on 4 x 4 slices, 9 moduli) the residues'
 * slices pass took 0.040 s and the rebuilding 0.030, about 30 and 46 multiply-adds per value
 * and modulus. Priced lower, AUTO took that plan (0.27 s) over one f64 GEMM (0.22 s) whenever
 * the f64 rate it measured came out low. */
#define RES_OPERAND 30.0
/* On int8 plans the tails summed ahead took fresh memory (the f64 plans' slices lent theirs, and
 * the tails' partners were then copied out as doubles), whose first touches (zeroing huge pages)
 * made bench_floor's tails pass 0.13-0.19 s at 2048^3 on a Zen 5 against 0.01-0.05 s on f64
 * slices, with as many tails or fewer; the partners are now read in place, and memory is kept
 * between calls (bigmem.h); priced at INT8_TAILS f64 multiply-adds for each value of op(A), op(B)
 * and the product while the process keeps too little memory for them (tails_memory_kept), which
 * keeps f16 and bf16 on f64 slices and f32 on 5 x 5 residues with their 1,236 tails rather than
 * 7 x 7 without (0.45 s against 0.43-0.63 s there). */
#define INT8_TAILS 200.0

/* Whether the blocks this process keeps (bigmem.h) hold the int8 plans' arrays: four doubles an
 * element of every product (the terms and the tails' sums), so that summing the tails ahead
 * touches no fresh page and INT8_TAILS does not apply. On the Intel Xeon with AMX at 2048^3 (f16,
 * 1,794 + 1,781 tails on 3 x 3 slices) the kept blocks brought the tails pass to 0.009 s and
 * the plan to 0.170 s, against 0.254 s for the 4 x 4 slices without tails that the fresh-memory
 * price chose (bench_floor, docs/PERFORMANCE.md). */
static bool tails_memory_kept(const gck_ozaki *o) {
    return (double)gck_big_kept() >= 32.0 * (double)o->pairs * (double)o->m * (double)o->n;
}

/* The bits the residues must tell apart on SA x SB slices: P > 4·|X| for |X| < K·2^(7·(SA+SB)). */
static int res_bits(int sa, int sb, int64_t k) {
    int log2k = 0;
    while ((INT64_C(1) << log2k) < k) log2k++;
    return 7 * (sa + sb) + log2k + 2;
}
static void choose_slices(gck_ozaki *o, const int64_t *ha, const int64_t *hb, double weight,
                          double pass, double *cost) {
    int maxa = gck_oz_most_needed(ha), maxb = gck_oz_most_needed(hb);
    if (maxa > OZ_MAX_BITS / o->beta) maxa = OZ_MAX_BITS / o->beta;
    if (maxb > OZ_MAX_BITS / o->beta) maxb = OZ_MAX_BITS / o->beta;
    double mn = (double)o->m * (double)o->n * (double)o->pairs, mnk = mn * (double)o->k;
    bool fresh = o->int8 && !tails_memory_kept(o); /* the tails' memory priced (INT8_TAILS) */
    *cost = INFINITY;
    for (int sa = 1; sa <= maxa; sa++)
        for (int sb = 1; sb <= maxb; sb++) {
            /* int8: a pass per term, its products summed in int32 (up to K·127² each);
             * residues: a GEMM and a pass per modulus, and a pass rebuilding each element from
             * its residues (about RES_REBUILD passes' work) */
            int gemms = sa * sb, passes = o->int8 ? sa + sb - 1 : sa * sb;
            double operands = 0;
            if (o->res) {
                gck_oz_crt crt;
                if (!gck_oz_crt_init(&crt, res_bits(sa, sb, o->k))) continue;
                gemms = crt.count, passes = 2 * crt.count + RES_REBUILD;
                operands = RES_OPERAND * crt.count * (double)o->pairs * (double)o->k *
                           (double)(o->m + o->n);
            }
            int64_t ta = gck_oz_tails_beyond(ha, sa), tb = gck_oz_tails_beyond(hb, sb);
            double c = gemms * weight * mnk + passes * pass * mn + operands +
                       (o->int8 && !o->res ? TAIL_COST_INT8 : TAIL_COST) * (double)o->pairs *
                           ((double)o->n * (double)ta + (double)o->m * (double)tb);
            if (fresh && ta + tb)
                c += INT8_TAILS * (double)o->pairs *
                     ((double)o->k * (double)(o->m + o->n) + (double)o->m * (double)o->n);
            if (c < *cost) *cost = c, o->sa = sa, o->sb = sb;
        }
}

/* ---- AUTO's choice of the slices' GEMM ---------------------------------------------------------
 * The f64 splitting takes slices of up to 26 bits, the int8 one slices of 7 bits: more products,
 * each on a GEMM several times faster where VPDPBUSD runs. Both are planned, and their costs
 * compared in f64 multiply-adds, from the rates this process measured (the kernels' f64 path,
 * gck_kpath_rate; the int8 GEMM, gck_igemm_rate), plus a pass over each product's M·N elements
 * (OZ_PASS: adding it to its term, about 1 ns an element on a Zen 4, some 25 f64 multiply-adds
 * there); the int8 GEMM sums a term's products in int32 itself, so its plan passes once a term. */
#define OZ_PASS 25.0

/* The int8 plan's scales and needs in `t` (a copy of *o with 7-bit slices, on arrays of its own:
 * the same scales, the needs from the same gaps) and its histograms; false when out of memory
 * (t's arrays then malloc'd or NULL). */
static bool int8_scales(const gck_ozaki *o, const lines *va, const lines *vb, gck_ozaki *t,
                        int64_t *ha, int64_t *hb) {
    *t = *o;
    t->int8 = true, t->beta = 7;
    int64_t la = va->members * o->m, lb = vb->members * o->n;
    t->ea = malloc((size_t)la * sizeof *t->ea);
    t->eb = malloc((size_t)lb * sizeof *t->eb);
    t->need_a = malloc((size_t)la);
    t->need_b = malloc((size_t)lb);
    if (!t->ea || !t->eb || !t->need_a || !t->need_b) return false;
    memcpy(t->ea, o->ea, (size_t)la * sizeof *t->ea);
    memcpy(t->eb, o->eb, (size_t)lb * sizeof *t->eb);
    gck_oz_needs(7, o->gap_a, la, o->hgap_a, t->need_a, ha);
    gck_oz_needs(7, o->gap_b, lb, o->hgap_b, t->need_b, hb);
    return true;
}

/* The f64 GEMM's rate the cost model weighs: the options', else the kernels' measured one (GFLOP/s
 * on one thread; 0 when unknown). */
static double f64_rate(const gck_ozaki_options *opt) {
    return opt->rate_f64 > 0
               ? opt->rate_f64
               : gck_kpath_rate(gck_kpath_auto_for(GCK_F64, GCK_F64, GCK_F64), GCK_KCLASS_F64);
}

/* AUTO: whether an int8 plan, on slices or on residues, costs less than OZ_INT8_MARGIN of the f64
 * one (`cost`: its cost, *o its plan); if so, *o, ha, hb and `cost` become the cheapest int8
 * plan's. The margin: the rates are measured once per process, on small products, and move by
 * 10-20% between processes on a busy machine; within that, the f64 plan (one GEMM per pair of
 * slices, fewer passes, less memory) is kept. On a Zen 4, f16 at 4096^3 took 4 x 4 residues in
 * one process (complete check 4.98 s, oracle 1.93) and one f64 GEMM in another (4.63 s, 1.71);
 * the f32 and f64 plans' residues cost a half and a third of their f64 plans'. */
#define OZ_INT8_MARGIN 0.85
static void maybe_int8(gck_ozaki *o, const gck_ozaki_options *opt, const lines *va, const lines *vb,
                       int64_t *ha, int64_t *hb, double *cost) {
    double r64 = f64_rate(opt), r8 = opt->rate_int8 > 0 ? opt->rate_int8 : gck_igemm_rate();
    if (!(r64 > 0) || !(r8 > 0)) return;
    double best = *cost + OZ_PASS * o->sa * o->sb * (double)o->m * (double)o->n * o->pairs;
    int64_t h8a[OZ_NEED_BINS], h8b[OZ_NEED_BINS];
    gck_ozaki t; /* the needs once, then the slice counts on slices and on residues */
    bool ok = int8_scales(o, va, vb, &t, h8a, h8b), won = false;
    int sa = 0, sb = 0, res = 0;
    for (int r = 0; ok && r < 2; r++) {
        double c8;
        t.res = r;
        choose_slices(&t, h8a, h8b, r64 / r8, OZ_PASS, &c8);
        if (c8 < (won ? best : OZ_INT8_MARGIN * best))
            best = c8, won = true, sa = t.sa, sb = t.sb, res = r;
    }
    if (!won) {
        free(t.ea), free(t.eb), free(t.need_a), free(t.need_b);
        return;
    }
    free(o->ea), free(o->eb), free(o->need_a), free(o->need_b);
    *o = t;
    o->sa = sa, o->sb = sb, o->res = res;
    memcpy(ha, h8a, sizeof h8a);
    memcpy(hb, h8b, sizeof h8b);
    *cost = best;
}

/* Whether the mode splits whenever it can (ALWAYS, INT8, RESIDUES). */
static bool forced(gck_ozaki_mode md) {
    return md == GCK_OZAKI_ALWAYS || md == GCK_OZAKI_INT8 || md == GCK_OZAKI_RESIDUES;
}

/* Whether to split: always in ALWAYS mode (memory permitting), else when the product is large
 * and splitting costs at most half of summing one by one, `obo` f64 multiply-adds per product:
 * the f64 GEMM's rate over the one-by-one rate, both measured in this process
 * (one_by_one_cost), else OZ_ONE_BY_ONE (as measured on a Zen 3: 0.35 ns per product against
 * 0.035 per multiply-add). */
#define OZ_ONE_BY_ONE 10.0
static bool decide(gck_ozaki *o, gck_ozaki_mode md, double cost, double obo, char *why,
                   size_t len) {
    int64_t products = o->pairs * o->m * o->n * o->k;
    double bytes = 8.0 * ((double)o->pairs * (double)o->m * (double)o->n * o->nq +
                          (double)o->m * (double)o->k + (double)o->sb * (double)o->k * o->n +
                          (double)o->m * (double)o->n);
    if (o->va_copy) /* op(A) or op(B) copied line by line */
        bytes += (double)o->va.members * (double)o->m * (double)o->k * o->va.lay.bytes;
    if (o->vb_copy) bytes += (double)o->vb.members * (double)o->n * (double)o->k * o->vb.lay.bytes;
    if (o->ntail_a || o->ntail_b) /* the tails' sums (read from the operands in place) */
        bytes += 8.0 * (double)o->pairs * (double)o->m * (double)o->n;
    if (bytes > (double)OZ_MAX_BYTES)
        snprintf(why, len, "splitting would take %.1f GiB", bytes / (1 << 30));
    else if (forced(md))
        return true;
    else if (products < OZ_MIN_PRODUCTS)
        snprintf(why, len, "too few products (%lld) for splitting to pay", (long long)products);
    else if (cost > obo / 2 * (double)products)
        snprintf(why, len,
                 "splitting would cost %.1f f64 multiply-adds per product (%d x %d slices and "
                 "%lld + %lld tails), one by one %.1f",
                 cost / (double)products, o->sa, o->sb, (long long)o->ntail_a,
                 (long long)o->ntail_b, obo);
    else
        return true;
    return false;
}

/* Summing one product by one in f64 multiply-adds: the kernels' f64 rate (GFLOP/s, 2 per
 * multiply-add) over the measured one-by-one rate (G products per second), both on one thread;
 * OZ_ONE_BY_ONE when either is unknown. */
static double one_by_one_cost(const gck_ozaki_options *opt) {
    if (!(opt->rate_one_by_one > 0)) return OZ_ONE_BY_ONE;
    double r64 = f64_rate(opt);
    return r64 > 0 ? r64 / 2 / opt->rate_one_by_one : OZ_ONE_BY_ONE;
}

/* The lines of v copied line by line (element (line, k) at line·K + k), in v's format, when its
 * lines are strided: every pass over the lines (scales, tails, slices) then reads adjacent
 * values instead of one per cache line and page. The steps k cut among the cores, copied in
 * blocks of 64 x 64. */
typedef struct line_major_job {
    const lines *v;
    char *dst;
} line_major_job;

static inline __attribute__((always_inline)) void
line_major_as(const line_major_job *x, int64_t bytes, int64_t lo, int64_t hi) {
    const lines *v = x->v;
    int64_t n = v->count, K = v->k, blocks = (n + 63) / 64;
    for (int64_t t = lo; t < hi; t++) {
        int64_t b = t / blocks, l0 = t % blocks * 64, l1 = l0 + 64 < n ? l0 + 64 : n;
        const char *src = (const char *)v->base + b * v->member_bytes;
        char *dst = x->dst + b * n * K * bytes;
        /* a block of 64 x 64 through a buffer in L1: read along the lines (adjacent where
         * ls = 1), written out a line's 64 values at a time (strides of a power of two would
         * put every value of a step in one cache set) */
        char buf[64 * 64 * 8];
        for (int64_t k0 = 0; k0 < K; k0 += 64) {
            int64_t k1 = k0 + 64 < K ? k0 + 64 : K;
            for (int64_t k = k0; k < k1; k++)
                for (int64_t l = l0; l < l1; l++)
                    memcpy(buf + ((l - l0) * 64 + (k - k0)) * bytes,
                           src + (l * v->ls + k * v->ks) * bytes, (size_t)bytes);
            for (int64_t l = l0; l < l1; l++)
                memcpy(dst + (l * K + k0) * bytes, buf + (l - l0) * 64 * bytes,
                       (size_t)((k1 - k0) * bytes));
        }
    }
}

/* line_major_as with the value's size a constant (a move, not a call of memcpy). */
static void line_major_part(void *arg, int part, int64_t lo, int64_t hi) {
    (void)part;
    const line_major_job *x = arg;
    switch (x->v->lay.bytes) {
    case 2: line_major_as(x, 2, lo, hi); break;
    case 4: line_major_as(x, 4, lo, hi); break;
    default: line_major_as(x, 8, lo, hi); break;
    }
}

/* v in line-major order: itself when its steps are adjacent already, else a copy (*copy, to be
 * freed; NULL and false when out of memory). */
static bool line_major(lines *v, void **copy) {
    *copy = NULL;
    if (v->ks == 1 || v->k < 2) return true;
    int64_t n = v->count, K = v->k, bytes = v->lay.bytes;
    if (!(*copy = gck_big_alloc((size_t)(v->members * n * K * bytes)))) return false;
    line_major_job x = {v, *copy};
    int64_t blocks = v->members * ((n + 63) / 64);
    gck_parallel_for(gck_parallel_parts(blocks, 64 * K), blocks, &x, line_major_part);
    v->base = *copy;
    v->ls = K, v->ks = 1, v->member_bytes = n * K * bytes;
    return true;
}

/* Operand x (GCK_A or GCK_B) of the case as lines: the rows of op(A) or the columns of op(B). */
static lines lines_of(const gck_case *c, gck_operand x, const void *X) {
    bool a = x == GCK_A;
    gck_format t = a ? c->type_a : c->type_b;
    int64_t rs, cs, stride = a ? c->stride_a : c->stride_b;
    gck_case_op_strides(c, x, &rs, &cs);
    return (lines){.base = X,
                   .type = t,
                   .lay = layout_of(t),
                   .stride = stride,
                   .members = stride ? c->batch : 1,
                   .count = a ? c->m : c->n,
                   .k = c->k,
                   .ls = a ? rs : cs,
                   .ks = a ? cs : rs,
                   .member_bytes = stride * gck_format_get(t)->storage_bytes};
}

/* The tails of both operands; *tmina, *tminb: the lowest bit of any tail of each. False (with
 * why) when out of memory. */
static bool prepare_tails(gck_ozaki *o, int32_t *tmina, int32_t *tminb, char *why, size_t len) {
    if ((o->ntail_a && !gck_oz_collect_tails(&o->va, o->ea, o->need_a, o->beta, o->sa, o->ntail_a,
                                             &o->ta_start, &o->ta, &o->sp_a, tmina, o->simd)) ||
        (o->ntail_b && !gck_oz_collect_tails(&o->vb, o->eb, o->need_b, o->beta, o->sb, o->ntail_b,
                                             &o->tb_start, &o->tb, &o->sp_b, tminb, o->simd))) {
        snprintf(why, len, "out of memory for the tails");
        return false;
    }
    return true;
}

/* The lines of op(A) (of op(B)) of every member that have a tail. */
static int64_t lines_with_tails(const int64_t *start, int64_t count) {
    int64_t n = 0;
    for (int64_t t = 0; start && t < count; t++) n += start[t + 1] > start[t];
    return n;
}

/* Whether to sum the tails' products ahead: always in ALWAYS mode (when there are tails), else
 * when it pays. Ahead: per pair, the sums written (M·N) and op(A) read at the steps op(B)'s tails
 * have (at most M·K), then every element meeting a tail adds one double; one by one, each such
 * element adds its tail products in integers and leaves the double lane's shortest path: about 16
 * times the cost of a value of those passes per element, as 8 per tail product (on a Zen 4 at
 * 2048^3 with bf16's 304 + 319 tails, met by about 1.2 of 4.2 million elements: ahead 0.024 s in
 * all, one by one 0.048). */
static bool ahead_pays(const gck_ozaki *o, gck_ozaki_mode md) {
    double products = (double)o->ntail_a * (double)o->n + (double)o->ntail_b * (double)o->m,
           met = (double)lines_with_tails(o->ta_start, o->va.members * o->m) * (double)o->n +
                 (double)lines_with_tails(o->tb_start, o->vb.members * o->n) * (double)o->m,
           passes = (double)o->m * (double)o->n + (o->ntail_b ? (double)o->m * (double)o->k : 0);
    return products > 0 && (forced(md) || 16 * met + 8 * products >= passes * (double)o->pairs);
}

/* The tails' sums (gck_oz_build_tsum), for one pair in the residues' reductions or the
 * product's memory when the work is done with it (its pages are in place already; a plan of one
 * f64 product has no product buffer: the sums then get memory of their own); when out of memory
 * the elements add their tail products one by one. */
static void sum_tails_ahead(gck_ozaki *o, work *w) {
    if (o->pairs == 1) {
        if (o->res && o->crt.count >= 8 && w->t) { /* 8 or more bytes an element */
            o->tsum = (double *)(void *)w->t;
            w->t = NULL;
        } else {
            o->tsum = w->p ? w->p : gck_big_alloc((size_t)(o->m * o->n) * sizeof *o->tsum);
            w->p = NULL;
        }
        if (!o->tsum) return;
    }
    gck_oz_build_tsum(o);
}

/* The terms of every pair of members, the tails' range below them, and the tails summed ahead
 * where it pays; low: the lowest bit of any value of op(A), of op(B), of any tail of each.
 * False (with why) when out of memory or a slice product failed its check. */
static bool build_terms(gck_ozaki *o, gck_ozaki_mode md, const lines *va, const lines *vb,
                        const int32_t low[4], char *why, size_t why_len) {
    int32_t lowa = low[0], lowb = low[1], tmina = low[2], tminb = low[3];
    weight_range(o, va->members * o->m, vb->members * o->n);
    /* the tails' products lie below the slices': tail x value */
    if (tmina != INT32_MAX && tmina + lowb < o->lowest)
        o->width += o->lowest - (tmina + lowb), o->lowest = tmina + lowb;
    if (tminb != INT32_MAX && lowa + tminb < o->lowest)
        o->width += o->lowest - (lowa + tminb), o->lowest = lowa + tminb;
    work w = {0};
    int64_t mn = o->m * o->n;
    /* residues write every term (gck_oz_crt_terms), and so does a plan of one f64 product (its
     * GEMM writes it into the terms, beta = 0); other slices add into them */
    bool written = o->res || (!o->int8 && o->nd == 1);
    o->q = written ? gck_big_alloc((size_t)(o->pairs * mn * o->nq) * sizeof *o->q)
                   : gck_big_calloc((size_t)(o->pairs * mn * o->nq), sizeof *o->q);
    bool ok = o->q && work_alloc(&w, o);
    if (!ok) snprintf(why, why_len, "out of memory for the slices");
    for (int64_t p = 0; ok && p < o->pairs; p++) {
        ok = (o->res    ? build_pair_res
              : o->int8 ? build_pair_int8
                        : build_pair_f64)(o, va, vb, o->a_batched ? p : 0, o->b_batched ? p : 0,
                                          o->q + p * mn * o->nq, &w, 0x6f7a616b69u + (uint64_t)p);
        if (!ok) {
            snprintf(why, why_len, "an %s slice product failed its check (Freivalds)",
                     gck_ozaki_gemm(o));
            fprintf(stderr,
                    "gemmcheck: warning: the %s GEMM of a slice product (Ozaki splitting) gave a "
                    "wrong result; the exact oracle sums the products one by one instead\n",
                    gck_ozaki_gemm(o));
        }
    }
    double clock = oz_now();
    if (ok && ahead_pays(o, md)) sum_tails_ahead(o, &w);
    oz_lap(o, GCK_OZ_TAILS, &clock);
    if (o->q) work_free(&w);
    return ok;
}

/* The terms' layout for the chosen slices: ND terms kept nq to an element in groups (int8:
 * terms below 2^top, so a group's sum below 2^(top + 7·(group-1))·128/127 <= 2^61·128/127 <
 * 2^62), and a residue plan's moduli; false (with why) when the moduli cannot hold its sums. */
static bool term_layout(gck_ozaki *o, char *why, size_t why_len) {
    o->nd = o->sa + o->sb - 1;
    o->group = 1;
    if (o->int8) {
        int top = bits_of((uint64_t)(o->sa < o->sb ? o->sa : o->sb) * (uint64_t)o->k * 127 * 127);
        o->group = (61 - top) / o->beta + 1;
    }
    o->nq = (o->nd + o->group - 1) / o->group;
    if (o->res && !gck_oz_crt_init(&o->crt, res_bits(o->sa, o->sb, o->k))) {
        snprintf(why, why_len, "too many bits for the residues' moduli");
        return false;
    }
    return true;
}

/* Each line's scale, NaN/Inf flag and gaps (gck_oz_line_scales), and from the gaps the slices
 * of o->beta bits each value needs (ha, hb: the histograms); false when out of memory. */
static bool scale_lines(gck_ozaki *o, const lines *va, const lines *vb, int64_t *ha, int64_t *hb,
                        int32_t *lowa, int32_t *lowb) {
    int64_t la = va->members * o->m, lb = vb->members * o->n;
    bool ok = (o->spec_a = malloc((size_t)la)) && (o->spec_b = malloc((size_t)lb)) &&
              (o->gap_a = malloc((size_t)la * sizeof *o->gap_a)) &&
              (o->gap_b = malloc((size_t)lb * sizeof *o->gap_b)) &&
              (o->hgap_a = calloc(2 * OZ_NEED_TAB, sizeof *o->hgap_a)) &&
              (o->hgap_b = o->hgap_a + OZ_NEED_TAB) &&
              gck_oz_line_scales(va, o->ea, o->spec_a, o->gap_a, o->hgap_a, lowa, o->simd) &&
              gck_oz_line_scales(vb, o->eb, o->spec_b, o->gap_b, o->hgap_b, lowb, o->simd);
    if (ok) {
        gck_oz_needs(o->beta, o->gap_a, la, o->hgap_a, o->need_a, ha);
        gck_oz_needs(o->beta, o->gap_b, lb, o->hgap_b, o->need_b, hb);
    }
    return ok;
}

gck_ozaki *gck_ozaki_new(const gck_case *c, const void *A, const void *B,
                         const gck_ozaki_options *opt, char *why, size_t why_len) {
    gck_ozaki_mode md = opt->mode;
    snprintf(why, why_len, "splitting is off (GEMMCHECK_OZAKI=never)");
    if (md == GCK_OZAKI_NEVER || !gck_case_reads_ab(c)) return NULL;
    gck_ozaki *o = calloc(1, sizeof *o);
    if (!o) return NULL;
    o->m = c->m, o->n = c->n, o->k = c->k;
    o->corrupt = opt->corrupt;
    o->simd = !opt->portable_slices && gck_ozaki_simd_slices();
    o->pairs = c->stride_a || c->stride_b ? c->batch : 1;
    o->a_batched = c->stride_a != 0, o->b_batched = c->stride_b != 0;
    int64_t ma = c->stride_a ? c->batch : 1, mb = c->stride_b ? c->batch : 1;
    lines va = lines_of(c, GCK_A, A), vb = lines_of(c, GCK_B, B);
    double clock = oz_now();
    o->va_given = va;
    bool may_split = forced(md) || o->pairs * c->m * c->n * c->k >= OZ_MIN_PRODUCTS;
    if (may_split && (!line_major(&va, &o->va_copy) || !line_major(&vb, &o->vb_copy))) {
        snprintf(why, why_len, "out of memory");
        gck_ozaki_free(o);
        return NULL;
    }
    oz_lap(o, GCK_OZ_COPY, &clock);
    o->ea = malloc((size_t)(ma * c->m) * sizeof *o->ea);
    o->eb = malloc((size_t)(mb * c->n) * sizeof *o->eb);
    o->need_a = malloc((size_t)(ma * c->m));
    o->need_b = malloc((size_t)(mb * c->n));
    int log2k = 0;
    while ((INT64_C(1) << log2k) < c->k) log2k++;
    o->int8 = md == GCK_OZAKI_INT8 || md == GCK_OZAKI_RESIDUES;
    o->res = md == GCK_OZAKI_RESIDUES;
    o->beta = o->int8 ? 7 : (53 - log2k) / 2; /* int8: digits within ±127 */
    if (!o->ea || !o->eb || !o->need_a || !o->need_b || log2k > 40 ||
        (o->int8 && c->k > GCK_IGEMM_MAX_K)) {
        snprintf(why, why_len, "%s",
                 log2k > 40                          ? "K too large"
                 : o->int8 && c->k > GCK_IGEMM_MAX_K ? "K above the int8 GEMM's 65,536"
                                                     : "out of memory");
        gck_ozaki_free(o);
        return NULL;
    }
    int64_t ha[OZ_NEED_BINS] = {0}, hb[OZ_NEED_BINS] = {0};
    int32_t lowa = INT32_MAX, lowb = INT32_MAX, tmina = INT32_MAX, tminb = INT32_MAX;
    bool scaled = scale_lines(o, &va, &vb, ha, hb, &lowa, &lowb);
    if (!scaled || !gck_oz_most_needed(ha) || !gck_oz_most_needed(hb)) {
        snprintf(why, why_len, !scaled ? "out of memory" : "no non-zero finite product");
        gck_ozaki_free(o);
        return NULL;
    }
    double cost;
    choose_slices(o, ha, hb, 1.0, 0.0, &cost);
    if (md == GCK_OZAKI_AUTO && may_split && c->k <= GCK_IGEMM_MAX_K)
        maybe_int8(o, opt, &va, &vb, ha, hb, &cost);
    if (!term_layout(o, why, why_len)) {
        gck_ozaki_free(o);
        return NULL;
    }
    o->ntail_a = gck_oz_tails_beyond(ha, o->sa);
    o->ntail_b = gck_oz_tails_beyond(hb, o->sb);
    o->va = va;
    o->vb = vb;
    bool ok = decide(o, md, cost, one_by_one_cost(opt), why, why_len);
    o->low_a = lowa, o->low_b = lowb;
    oz_lap(o, GCK_OZ_SCALES, &clock);
    ok = ok && prepare_tails(o, &tmina, &tminb, why, why_len);
    oz_lap(o, GCK_OZ_TAILS, &clock);
    ok = ok && build_terms(o, md, &va, &vb, (int32_t[4]){lowa, lowb, tmina, tminb}, why, why_len);
    if (!ok) {
        gck_ozaki_free(o);
        return NULL;
    }
    return o;
}
