/* The case generator. Every draw comes from a hash of (seed, index, draw number), so case i of
 * a stream is the same on every machine and in every shard. */
#include "generator.h"
#include "format_internal.h"
#include "mix.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct draw {
    uint64_t state;
} draw;

static uint64_t next(draw *d) { return d->state = gck_splitmix64(d->state); }
static int64_t uniform(draw *d, int64_t lo, int64_t hi) {
    return lo + (int64_t)(next(d) % (uint64_t)(hi - lo + 1));
}
/* index into weights[] drawn with the given weights */
static size_t weighted(draw *d, const unsigned *w, size_t n) {
    unsigned total = 0;
    for (size_t i = 0; i < n; i++) total += w[i];
    unsigned r = (unsigned)(next(d) % total);
    for (size_t i = 0; i < n; i++) {
        if (r < w[i]) return i;
        r -= w[i];
    }
    return n - 1;
}
#define PICK(d, w) weighted(d, w, sizeof w / sizeof w[0])

static int64_t pick_dim(draw *d) {
    static const int64_t primes[] = {5,  7,  11, 13, 17, 19, 23, 29, 31,
                                     37, 41, 43, 47, 53, 59, 61, 97, 127};
    static const int64_t tiles[] = {8, 16, 32, 64, 128, 256};
    static const unsigned w[] = {3, 10, 8, 10, 14, 6};
    switch (PICK(d, w)) {
    case 0: return 0;
    case 1: return uniform(d, 1, 3);
    case 2: return primes[next(d) % (sizeof primes / sizeof primes[0])];
    case 3: return tiles[next(d) % 4] + uniform(d, -1, 1);
    case 4: return uniform(d, 1, 40);
    default: return tiles[next(d) % (sizeof tiles / sizeof tiles[0])] + uniform(d, -1, 1);
    }
}

static double pick_scale(draw *d, gck_format scale) {
    static const double fixed[] = {1.0, 0.0, -1.0, 0.5, 2.0};
    static const unsigned w[] = {30, 15, 10, 8, 7, 30};
    size_t i = PICK(d, w);
    if (i < 5) return fixed[i];
    double v = (double)uniform(d, 1, 4000) / 1000.0 * ((next(d) & 1) ? -1 : 1);
    return gck_fmt_round_to(v, scale);
}

static double footprint_bytes(const gck_case *c) {
    double bytes = 0;
    for (int x = GCK_A; x <= GCK_D; x++) {
        if (x == GCK_D && c->d_is_c) continue;
        bytes += (double)gck_case_extent(c, (gck_operand)x) *
                 gck_format_get(gck_case_type(c, (gck_operand)x))->storage_bytes;
    }
    return bytes;
}

static void set_lds(gck_case *c, draw *d, bool allow_huge) {
    int64_t *lds[] = {&c->lda, &c->ldb, &c->ldc, &c->ldd};
    for (int x = 0; x < 4; x++) {
        int64_t need = gck_case_min_ld(c, (gck_operand)x);
        static const unsigned w[] = {60, 22, 8, 10};
        int64_t pad = 0;
        switch (PICK(d, w)) {
        case 0: pad = 0; break;
        case 1: pad = uniform(d, 1, 8); break;
        case 2: pad = (need + 63) / 64 * 64 - need; break; /* up to a tile multiple */
        default: pad = allow_huge ? uniform(d, 500, 32000) : uniform(d, 9, 40); break;
        }
        *lds[x] = need + pad;
    }
    if (c->d_is_c) c->ldd = c->ldc;
}

void gck_fuzz_shape_class(const gck_case *c, char *buf, size_t len) {
    const char *cls;
    int64_t mx = c->m > c->n ? c->m : c->n;
    if (c->m == 0 || c->n == 0)
        cls = "empty";
    else if (c->k == 0)
        cls = "k0";
    else if (c->m == 1 || c->n == 1)
        cls = "vector";
    else if (mx <= 16 && c->k <= 16)
        cls = "small";
    else if (mx <= 128 && c->k <= 512)
        cls = "medium";
    else
        cls = "large";
    snprintf(buf, len, "%s%s", cls, c->batch > 1 ? "+batch" : "");
}

/* m, n, k: independent draws, or one of the shapes where kernels change path. */
static void pick_shape(draw *d, int64_t *m, int64_t *n, int64_t *k) {
    *m = pick_dim(d);
    *n = pick_dim(d);
    *k = pick_dim(d);
    static const unsigned ws[] = {70, 8, 8, 8, 6};
    switch (PICK(d, ws)) {
    case 1: /* tall-skinny */
        *m = uniform(d, 100, 2000);
        *n = uniform(d, 1, 4);
        break;
    case 2: /* short-wide */
        *m = uniform(d, 1, 4);
        *n = uniform(d, 100, 2000);
        break;
    case 3: /* long K: accumulation growth */
        *m = uniform(d, 1, 8);
        *n = uniform(d, 1, 8);
        *k = uniform(d, 500, 20000);
        break;
    case 4: /* a square tile boundary */
        *m = *n = *k = 32 * uniform(d, 1, 4) + uniform(d, -1, 1);
        break;
    default: break;
    }
}

/* A tight m x n x k case of the target's types. */
static void case_for_target(gck_case *c, const gck_fuzz_target *t, int64_t m, int64_t n, int64_t k,
                            bool d_is_c) {
    gck_case_init(c, m, n, k);
    c->type_a = t->a;
    c->type_b = t->b;
    c->type_c = t->c;
    c->type_d = t->d;
    c->compute = t->compute;
    c->d_is_c = d_is_c;
}

/* Halve the largest of m, n, k. */
static void halve_largest(gck_case *c) {
    int64_t *big = c->m >= c->n && c->m >= c->k ? &c->m : c->n >= c->k ? &c->n : &c->k;
    *big = *big / 2;
}

/* Batch strides: tight, padded, or 0 (a broadcast input). */
static void set_strides(gck_case *c, draw *d) {
    int64_t *strides[] = {&c->stride_a, &c->stride_b, &c->stride_c, &c->stride_d};
    for (int x = 0; x < 4; x++) {
        int64_t fp = gck_case_footprint(c, (gck_operand)x);
        bool input = x == GCK_A || x == GCK_B || (x == GCK_C && !c->d_is_c);
        static const unsigned w[] = {60, 25, 15};
        size_t kind = PICK(d, w);
        *strides[x] = kind == 2 && input ? 0 : fp + (kind == 1 ? uniform(d, 1, 64) : 0);
    }
    if (c->d_is_c) c->stride_d = c->stride_c;
}

/* The batch strides of a batched case made tight for its leading dimensions (a broadcast input
 * stays one). */
static void tight_strides(gck_case *c) {
    if (c->batch <= 1) return;
    c->stride_a = c->stride_a ? gck_case_footprint(c, GCK_A) : 0;
    c->stride_b = c->stride_b ? gck_case_footprint(c, GCK_B) : 0;
    c->stride_c = c->stride_c ? gck_case_footprint(c, GCK_C) : 0;
    c->stride_d = c->d_is_c ? c->stride_c : gck_case_footprint(c, GCK_D);
    if (c->d_is_c && c->stride_c == 0) c->stride_c = c->stride_d = gck_case_footprint(c, GCK_C);
}

/* Shrink the case until its operands fit the byte budget: first the huge padding and the strides
 * it made, then the largest dimension, again and again (an empty dimension among them: with
 * k = 0, C and D of m x n still take bytes). */
static void fit_bytes(gck_case *c, draw *d, double max_bytes) {
    if (footprint_bytes(c) <= max_bytes) return;
    set_lds(c, d, false); /* no huge padding */
    tight_strides(c);
    while (footprint_bytes(c) > max_bytes && (c->m > 1 || c->n > 1 || c->k > 1)) {
        halve_largest(c);
        set_lds(c, d, false);
        tight_strides(c);
    }
}

/* Misalignment, value distributions and special values of a spec whose case is set. */
static void pick_values(gck_spec *out, draw *d, unsigned promises) {
    for (int x = 0; x < 4; x++) {
        int per = 64 / gck_format_get(gck_case_type(&out->c, (gck_operand)x))->storage_bytes;
        out->offset[x] = (next(d) & 1) ? 0 : uniform(d, 1, per - 1);
    }
    static const unsigned wd[] = {25, 20, 12, 12, 11, 10, 10};
    out->dist_ab = (gck_dist)PICK(d, wd);
    out->dist_c = (gck_dist)PICK(d, wd);
    static const unsigned wsp[] = {75, 12, 9, 4};
    static const int sps[] = {0, 5, 30, 200};
    out->special_pm = sps[PICK(d, wsp)];
    if (out->c.alpha == 0 && !(promises & GCK_PROMISE_ALPHA0_NO_READ_AB)) out->special_pm = 0;
    out->c_nan = out->c.beta == 0 && (promises & GCK_PROMISE_BETA0_NO_READ_C) && (next(d) & 1);
    out->seed = next(d);
}

void gck_fuzz_generate(const gck_fuzz_config *cfg, uint64_t index, gck_spec *out) {
    draw d = {gck_splitmix64(cfg->seed ^ gck_splitmix64(index * GCK_GOLDEN_GAMMA + 1))};
    /* The targets in turn, from one the seed picks: any ntargets consecutive cases of a stream
     * reach every declared tuple, so which tuples a campaign reached depends on how many cases
     * it ran, never on its seed (the reports' test cases stay the same set). The draw that
     * picked a target at random before is still made: the rest of the case is as it was. */
    uint64_t pick = next(&d) % cfg->ntargets;
    uint64_t turn = gck_splitmix64(cfg->seed ^ 0x7475726e) % cfg->ntargets;
    const gck_fuzz_target *t =
        &cfg->targets[cfg->random_targets ? pick : (index % cfg->ntargets + turn) % cfg->ntargets];
    unsigned p = t->promises;
    int64_t m, n, k;
    pick_shape(&d, &m, &n, &k);
    gck_case c;
    case_for_target(&c, t, m, n, k, false);
    c.order = (p & GCK_PROMISE_ROW_MAJOR) && (next(&d) & 1) ? GCK_ROW_MAJOR : GCK_COL_MAJOR;
    c.transa = (next(&d) & 1) ? GCK_OP_T : GCK_OP_N;
    c.transb = (next(&d) & 1) ? GCK_OP_T : GCK_OP_N;
    bool sep_ok = (p & GCK_PROMISE_D_SEPARATE) != 0,
         inplace_ok = (p & GCK_PROMISE_D_IN_PLACE) && t->c == t->d;
    c.d_is_c = inplace_ok && (!sep_ok || (next(&d) & 1));
    c.scale_type = (p & GCK_PROMISE_SCALE_F64) ? GCK_F64 : GCK_F32;
    gck_format scale_vals = (p & GCK_PROMISE_SCALE_F64)   ? GCK_F64
                            : (p & GCK_PROMISE_SCALE_F32) ? GCK_F32
                                                          : GCK_F16;
    c.alpha = pick_scale(&d, scale_vals);
    c.beta = pick_scale(&d, scale_vals);
    if (p & GCK_PROMISE_PRODUCT_ONLY) c.alpha = 1, c.beta = 0; /* (the draws above still made) */
    if ((p & GCK_PROMISE_BATCHED) && next(&d) % 4 == 0) c.batch = uniform(&d, 2, 5);
    /* the cost budget: halve the largest of m, n, k until the product fits */
    while ((double)c.m * (double)c.n * (double)c.k * (double)c.batch > cfg->max_flops)
        halve_largest(&c);
    set_lds(&c, &d, true);
    if (c.batch > 1) set_strides(&c, &d);
    fit_bytes(&c, &d, cfg->max_bytes);
    gck_spec_init(out, &c);
    pick_values(out, &d, p);
    if (gck_case_validate(&out->c, NULL, 0) != GCK_OK) {
        /* every draw above is valid by construction; keep the stream going regardless */
        case_for_target(&c, t, 1, 1, 1, inplace_ok);
        c.scale_type = out->c.scale_type;
        gck_spec_init(out, &c);
    }
}

/* Edge cases from real bug reports (see the comments); each for the first target. */
size_t gck_fuzz_edge_cases(const gck_fuzz_config *cfg, gck_spec *out, size_t cap) {
    size_t n = 0;
    for (size_t ti = 0; ti < cfg->ntargets && n < cap; ti++) {
        const gck_fuzz_target *t = &cfg->targets[ti];
        bool inplace_ok = (t->promises & GCK_PROMISE_D_IN_PLACE) && t->c == t->d;
        struct {
            int64_t m, n, k, ldb_extra;
            double beta;
            bool cnan;
        } edges[] = {
            {17, 33, 9, 0, 0.0, true},              /* beta = 0 with NaN in C at edge tiles */
            {16, 1, 0, 0, 0.5, false},              /* K = 0 with beta != 1: D = beta*C */
            {126, 1, 126, 31509 - 126, 1.0, false}, /* ldb far beyond K (OpenBLAS report) */
            {7, 5, 5, 0, 1.0, false},               /* odd M and K (f16 kernels) */
            {3, 1, 5, 0, 0.0, false},               /* a 3x1x5 product (GEMV-shaped path) */
            {5, 7, 3, 2, 1.0, false},               /* the last column of an odd shape, padded */
        };
        for (size_t e = 0; e < sizeof edges / sizeof edges[0] && n < cap; e++) {
            gck_case c;
            case_for_target(&c, t, edges[e].m, edges[e].n, edges[e].k, inplace_ok);
            c.ldd = c.d_is_c ? c.ldc : c.ldd;
            c.ldb += edges[e].ldb_extra;
            c.beta = (t->promises & GCK_PROMISE_PRODUCT_ONLY) ? 0.0 : edges[e].beta;
            c.scale_type = (t->promises & GCK_PROMISE_SCALE_F64) ? GCK_F64 : GCK_F32;
            if (gck_case_validate(&c, NULL, 0) != GCK_OK) continue;
            gck_spec_init(&out[n], &c);
            out[n].c_nan = edges[e].cnan && (t->promises & GCK_PROMISE_BETA0_NO_READ_C);
            out[n].dist_ab = e % 2 ? GCK_DIST_INT : GCK_DIST_UNIFORM;
            out[n].seed = cfg->seed + e;
            n++;
        }
        if (ti >= 3) break; /* the first few tuples are enough */
    }
    return n;
}

size_t gck_fuzz_targets_from_rows(const gck_support_row *rows, size_t n, gck_fuzz_target *out,
                                  size_t cap) {
    size_t k = 0;
    for (size_t r = 0; r < n && k < cap; r++)
        out[k++] = (gck_fuzz_target){rows[r].a,       rows[r].b,        rows[r].c, rows[r].d,
                                     rows[r].compute, rows[r].promises, false};
    return k;
}

size_t gck_fuzz_parse_types(const char *text, const gck_support_row *rows, size_t nrows,
                            gck_fuzz_target *out, size_t cap, char *msg, size_t len) {
    char buf[1024];
    if (strlen(text) >= sizeof buf) {
        snprintf(msg, len, "--types is too long");
        return 0;
    }
    strcpy(buf, text);
    size_t n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
        if (n == cap) {
            snprintf(msg, len, "--types lists more than %zu tuples", cap);
            return 0;
        }
        char *colon = strchr(tok, ':');
        if (colon) *colon = '\0';
        gck_format f[4], compute;
        char *s2 = NULL, *ty = strtok_r(tok, ",", &s2);
        for (int i = 0; i < 4; i++, ty = strtok_r(NULL, ",", &s2))
            if (!ty || !gck_format_parse(ty, &f[i]) || !gck_format_get(f[i])->is_storage) {
                snprintf(msg, len,
                         "--types '%s': each tuple is A,B,C,D[:compute] with types "
                         "f16, bf16, f32, f64",
                         text);
                return 0;
            }
        if (ty) {
            snprintf(msg, len, "--types '%s': a tuple has more than four types", text);
            return 0;
        }
        compute = f[3] == GCK_F64 ? GCK_F64 : GCK_F32;
        if (colon && !gck_format_parse(colon + 1, &compute)) {
            snprintf(msg, len, "--types '%s': unknown compute type '%s'", text, colon + 1);
            return 0;
        }
        gck_fuzz_target t = {f[0],
                             f[1],
                             f[2],
                             f[3],
                             compute,
                             GCK_PROMISE_D_IN_PLACE | GCK_PROMISE_D_SEPARATE |
                                 GCK_PROMISE_SCALE_F32 | GCK_PROMISE_SCALE_F64,
                             true};
        for (size_t r = 0; r < nrows; r++)
            if (rows[r].a == f[0] && rows[r].b == f[1] && rows[r].c == f[2] && rows[r].d == f[3] &&
                rows[r].compute == compute) {
                t.promises = rows[r].promises;
                break;
            }
        out[n++] = t;
    }
    if (n == 0) snprintf(msg, len, "--types is empty");
    return n;
}
