/* The exact oracle's plan (exact_internal.h): A and B decoded once per GEMM, and the choice of
 * how an element's products are summed (see oracle_exact.c). */
#include "exact_internal.h"
#include "format_internal.h"
#include "fpenv.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bigmem.h"
#include "decode.h"
#include "oracle_common.h"
#include "oracle_ozaki.h"
#include "parallel.h"
#include "tiles.h"

static const char *const path_names[] = {"zero",     "fix64",     "fix128",
                                         "bucket64", "bucket128", "ozaki"};

void gck_exact_plan_free(gck_exact_plan *p) {
    if (!p) return;
    void *arrays[] = {p->afix, p->bfix, p->apk, p->bpk, p->asig, p->bsig,        p->aexp,
                      p->bexp, p->alo,  p->ahi, p->blo, p->bhi,  p->row_special, p->col_special};
    for (size_t t = 0; t < sizeof arrays / sizeof arrays[0]; t++) gck_big_free(arrays[t]);
    gck_ozaki_free(p->oz);
    free(p);
}

const char *gck_exact_plan_path(const gck_exact_plan *p) { return path_names[p->path]; }

void gck_exact_plan_describe(const gck_exact_plan *p, char *buf, size_t len) {
    int sa, sb, beta;
    if (p->oz) {
        gck_ozaki_shape(p->oz, &sa, &sb, &beta);
        int64_t ta, tb;
        gck_ozaki_tails(p->oz, &ta, &tb);
        bool res = !strcmp(gck_ozaki_gemm(p->oz), "int8 residue"); /* checked once rebuilt */
        snprintf(buf, len,
                 "ozaki: %d x %d slices of %d bits, %d %s GEMMs per member, %s by Freivalds' "
                 "test; %lld + %lld values with a tail",
                 sa, sb, beta, gck_ozaki_gemms(p->oz), gck_ozaki_gemm(p->oz),
                 res ? "the sums rebuilt from them checked" : "each checked", (long long)ta,
                 (long long)tb);
    } else
        snprintf(buf, len, "%s, products one by one (no splitting: %s)", path_names[p->path],
                 p->oz_why[0] ? p->oz_why : "A and B not read");
}

void gck_exact_plan_limit_block(gck_exact_plan *p, int64_t products) {
    if (products >= 1 && products < p->block) p->block = products;
}

/* One operand seen as lines (rows of op(A), columns of op(B)) along k. */
typedef struct opview {
    const void *base;
    gck_format type;
    int64_t stride, members, lines, K, ls, ks; /* element (line, k) at line·ls + k·ks */
} opview;

typedef struct opstats {
    int32_t emin;    /* shortest form: smallest exponent of a last bit */
    int32_t emax;    /* largest exponent of a top bit, plus one */
    int mbits;       /* shortest form: widest significand */
    int32_t emin_r;  /* stored form: smallest exponent of a last bit */
    int32_t emaxe_r; /* stored form: largest exponent of a last bit */
    int mbits_r;     /* stored form: widest significand */
} opstats;

/* Both passes below are instantiated per storage layout (FOR_EACH_LAYOUT). */

/* Pass 1: specials per line; exponent ranges over the operand in the shortest form (for fixed
 * point) and in the stored form (for buckets: its last-bit exponents spread no wider than the
 * values' exponents, which keeps the buckets few). Over the lines [lo, hi) of all members; when
 * the lines are adjacent (ls = 1) step by step across them, so that the reads are adjacent. */
static inline __attribute__((always_inline)) void
op_stats_as(const opview *v, layout lay, uint8_t *special, opstats *st, int64_t lo, int64_t hi) {
    *st = (opstats){INT32_MAX, INT32_MIN, 0, INT32_MAX, INT32_MIN, 0};
    bool across = v->ls == 1 && v->ks != 1;
    for (int64_t b = lo / v->lines; b <= (hi - 1) / v->lines; b++) {
        const void *base = gck_oracle_member(v->base, v->type, v->stride, b);
        int64_t l0 = b * v->lines > lo ? 0 : lo - b * v->lines,
                l1 = (b + 1) * v->lines < hi ? v->lines : hi - b * v->lines;
        int64_t outer = across ? v->K : l1 - l0, inner = across ? l1 - l0 : v->K;
        for (int64_t u = 0; u < outer; u++)
            for (int64_t w = 0; w < inner; w++) {
                int64_t line = across ? l0 + w : l0 + u, k = across ? u : w;
                bool sp;
                dec d = decode_raw(raw_at(base, lay.bytes, line * v->ls + k * v->ks), lay.fb,
                                   lay.eb, &sp);
                special[b * v->lines + line] |= sp;
                if (!d.m) continue;
                int nb = bits_of(d.m);
                if (d.e < st->emin_r) st->emin_r = d.e;
                if (d.e > st->emaxe_r) st->emaxe_r = d.e;
                if (nb > st->mbits_r) st->mbits_r = nb;
                if (d.e + nb > st->emax) st->emax = d.e + nb;
                dec sd = strip(d);
                if (sd.e < st->emin) st->emin = sd.e;
                if (bits_of(sd.m) > st->mbits) st->mbits = bits_of(sd.m);
            }
    }
}

/* The lines cut among the cores, each part with its own ranges, merged. */
#define STATS_PARTS 64
typedef struct stats_job {
    const opview *v;
    uint8_t *special;
    opstats st[STATS_PARTS];
} stats_job;

static void op_stats_part(void *arg, int part, int64_t lo, int64_t hi) {
    stats_job *x = arg;
    const opview *v = x->v;
#define STATS(lay) op_stats_as(v, lay, x->special, &x->st[part], lo, hi)
    FOR_EACH_LAYOUT(v->type, STATS)
#undef STATS
}

static void op_stats(const opview *v, uint8_t *special, opstats *st) {
    *st = (opstats){INT32_MAX, INT32_MIN, 0, INT32_MAX, INT32_MIN, 0};
    int64_t n = v->members * v->lines;
    if (!n || !v->K) return;
    stats_job x = {.v = v, .special = special};
    int parts = gck_parallel_parts(n, v->K);
    parts = parts < STATS_PARTS ? parts : STATS_PARTS;
    gck_parallel_for(parts, n, &x, op_stats_part);
    for (int p = 0; p < parts; p++) {
        const opstats *q = &x.st[p];
        st->emin = q->emin < st->emin ? q->emin : st->emin;
        st->emax = q->emax > st->emax ? q->emax : st->emax;
        st->mbits = q->mbits > st->mbits ? q->mbits : st->mbits;
        st->emin_r = q->emin_r < st->emin_r ? q->emin_r : st->emin_r;
        st->emaxe_r = q->emaxe_r > st->emaxe_r ? q->emaxe_r : st->emaxe_r;
        st->mbits_r = q->mbits_r > st->mbits_r ? q->mbits_r : st->mbits_r;
    }
}

/* Pass 2: the representation the path uses. Fixed point: the shortest form, relative to
 * st->emin. Buckets: the stored form with r = e - st->emin_r; zeros get bucket 0 (adding 0
 * anywhere changes nothing) and stay out of the line's range lo..hi (in buckets). */
static inline __attribute__((always_inline)) void op_fill_as(const opview *v, layout lay, int path,
                                                             const opstats *st, int32_t *lo,
                                                             int32_t *hi, int64_t *fix, sigexp *pk,
                                                             int64_t *sig, int32_t *ex) {
    bool fixed = path == PATH_FIX64 || path == PATH_FIX128;
    for (int64_t b = 0; b < v->members; b++) {
        const void *base = gck_oracle_member(v->base, v->type, v->stride, b);
        for (int64_t line = 0; line < v->lines; line++) {
            int64_t t = b * v->lines + line;
            int32_t l = INT32_MAX, h = 0;
            for (int64_t k = 0; k < v->K; k++) {
                bool sp;
                dec d = decode_raw(raw_at(base, lay.bytes, line * v->ls + k * v->ks), lay.fb,
                                   lay.eb, &sp);
                int64_t x = t * v->K + k;
                if (fixed) {
                    d = strip(d);
                    int64_t sg = d.neg ? -(int64_t)d.m : (int64_t)d.m;
                    fix[x] = d.m ? (int64_t)((uint64_t)sg << (d.e - st->emin)) : 0;
                    continue;
                }
                int32_t r = d.e - st->emin_r, q = d.m ? r >> BUCKET_LOG : 0;
                int64_t sg = d.neg ? -(int64_t)d.m : (int64_t)d.m;
                sg = d.m ? (int64_t)((uint64_t)sg << (r & ((1 << BUCKET_LOG) - 1))) : 0;
                if (d.m && q < l) l = q;
                if (d.m && q > h) h = q;
                if (path == PATH_BUCKET64)
                    pk[x] = (sigexp){(int32_t)sg, (uint32_t)q};
                else {
                    sig[x] = sg;
                    ex[x] = q;
                }
            }
            if (!fixed) {
                lo[t] = l == INT32_MAX ? 0 : l;
                hi[t] = h;
            }
        }
    }
}

static void op_fill(const opview *v, int path, const opstats *st, int32_t *lo, int32_t *hi,
                    int64_t *fix, sigexp *pk, int64_t *sig, int32_t *ex) {
#define FILL(lay) op_fill_as(v, lay, path, st, lo, hi, fix, pk, sig, ex)
    FOR_EACH_LAYOUT(v->type, FILL)
#undef FILL
}

/* The path (fixed point in 64 or 128 bits, or buckets), the number of bucket copies, the block
 * of bucket terms between folds and the bucket count, from the operands' exponent ranges. */
static void choose_path(gck_exact_plan *p, const gck_case *c, const opstats *sa, const opstats *sb,
                        bool any, int growth) {
    int wa = sa->emax - sa->emin, wb = sb->emax - sb->emin;  /* fixed-point widths */
    int P = sa->mbits_r + sb->mbits_r + 2 * BUCKET_PRESHIFT; /* widest bucket term */
    if (!any)
        p->path = PATH_ZERO;
    else if (wa + wb + growth <= 63)
        p->path = PATH_FIX64;
    else if (wa <= 62 && wb <= 62 && wa + wb + growth <= 125)
        p->path = PATH_FIX128;
    else if (sa->mbits_r + BUCKET_PRESHIFT <= 31 && sb->mbits_r + BUCKET_PRESHIFT <= 31 && P <= 60)
        p->path = PATH_BUCKET64;
    else
        p->path = PATH_BUCKET128;
    /* Four copies keep products that land in the same bucket from waiting on each other; with
     * few products per element one copy is cheaper to fold. */
    p->ncopy = c->k >= 256 ? 4 : 1;
    /* Bucket terms are below 2^P; `block` of them stay below 2^63, or 2^62 for a single copy
     * (2^124 for __int128 buckets): the limits the fold's carry chain needs. */
    int room = (p->path == PATH_BUCKET64 ? (p->ncopy == 1 ? 62 : 63) : 124) - P;
    p->block = (int64_t)1 << (room < 30 ? room : 30);
    /* bucket indices, rounded up to whole limbs (the fold runs over eight at a time) */
    int nbk =
        ((sa->emaxe_r - sa->emin_r) >> BUCKET_LOG) + ((sb->emaxe_r - sb->emin_r) >> BUCKET_LOG) + 1;
    p->nbuckets = (nbk + 7) & ~7;
}

/* The path's encoded operands: na values of op(A), nb of op(B). */
static bool alloc_encoded(gck_exact_plan *p, int64_t na, int64_t nb) {
    switch (p->path) {
    case PATH_FIX64:
    case PATH_FIX128:
        return (p->afix = gck_big_alloc((size_t)na * sizeof *p->afix)) &&
               (p->bfix = gck_big_alloc((size_t)nb * sizeof *p->bfix));
    case PATH_BUCKET64:
        return (p->apk = gck_big_alloc((size_t)na * sizeof *p->apk)) &&
               (p->bpk = gck_big_alloc((size_t)nb * sizeof *p->bpk));
    case PATH_BUCKET128:
        return (p->asig = gck_big_alloc((size_t)na * sizeof *p->asig)) &&
               (p->bsig = gck_big_alloc((size_t)nb * sizeof *p->bsig)) &&
               (p->aexp = gck_big_alloc((size_t)na * sizeof *p->aexp)) &&
               (p->bexp = gck_big_alloc((size_t)nb * sizeof *p->bexp));
    default: return true;
    }
}

/* The frames: S's (bit 0 at the smallest product's last bit, room for every product and K of
 * carries, at least the 5 limbs a 128-bit sum needs) and the largest final frame (alpha·S,
 * beta·c for any c of C's format, and -D̂ for any double; each element sizes its own frame from
 * its actual terms, see finish). */
/* The largest final frame (alpha·S, beta·c for any c of C's format, and -D̂ for any double; each
 * element sizes its own frame from its actual terms, see finish), from S's frame. */
static void size_final(gck_exact_plan *p, const gck_case *c) {
    const gck_format_info *fc = gck_format_get(c->type_c);
    p->alpha = decode_double(c->alpha);
    p->beta = decode_double(c->beta);
    int64_t s_lo = (int64_t)p->base_s + p->alpha.e, s_hi = s_lo + 32 * p->nlimbs_s + 96;
    int64_t c_lo = fc->emin - fc->precision + 1 + p->beta.e, c_hi = fc->emax + p->beta.e + 160;
    int64_t lo = s_lo < c_lo ? s_lo : c_lo, hi = s_hi > c_hi ? s_hi : c_hi;
    if (lo > -1074) lo = -1074;
    if (hi < 1024 + 96) hi = 1024 + 96;
    p->nlimbs_f = (int)((hi - lo) >> 5) + 4;
}

/* S's frame: bit 0 at the smallest product's last bit, room for every product and K of carries,
 * at least the 5 limbs a 128-bit sum needs. */
static void size_frames(gck_exact_plan *p, const gck_case *c, const opstats *sa, const opstats *sb,
                        int growth) {
    bool fixed = p->path == PATH_FIX64 || p->path == PATH_FIX128;
    p->base_s = fixed ? sa->emin + sb->emin : sa->emin_r + sb->emin_r;
    int width = fixed ? (sa->emax - sa->emin) + (sb->emax - sb->emin)
                      : (sa->emax - sa->emin_r) + (sb->emax - sb->emin_r);
    p->nlimbs_s = (width + growth) / 32 + 6;
    size_final(p, c);
}

gck_exact_plan *gck_exact_plan_new(const gck_case *c, const void *A, const void *B, const void *C) {
    gck_ozaki_options o = gck_ozaki_defaults();
    return gck_exact_plan_new_with(c, A, B, C, &o);
}

gck_exact_plan *gck_exact_plan_new_with(const gck_case *c, const void *A, const void *B,
                                        const void *C, const gck_ozaki_options *opt) {
    gck_exact_plan *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->c = c;
    p->A = A;
    p->B = B;
    p->C = C;
    bool rab = gck_case_reads_ab(c);
    int64_t members_a = c->stride_a == 0 ? 1 : c->batch,
            members_b = c->stride_b == 0 ? 1 : c->batch;
    int64_t la = members_a * c->m, lb = members_b * c->n;
    p->row_special = calloc((size_t)(la + 1), 1);
    p->col_special = calloc((size_t)(lb + 1), 1);
    p->alo = malloc((size_t)(la + 1) * sizeof *p->alo);
    p->ahi = malloc((size_t)(la + 1) * sizeof *p->ahi);
    p->blo = malloc((size_t)(lb + 1) * sizeof *p->blo);
    p->bhi = malloc((size_t)(lb + 1) * sizeof *p->bhi);
    if (!p->row_special || !p->col_special || !p->alo || !p->ahi || !p->blo || !p->bhi) {
        gck_exact_plan_free(p);
        return NULL;
    }
    int64_t ars, acs, brs, bcs;
    gck_case_op_strides(c, GCK_A, &ars, &acs);
    gck_case_op_strides(c, GCK_B, &brs, &bcs);
    opview va = {A, c->type_a, c->stride_a, members_a, c->m, c->k, ars, acs};
    opview vb = {B, c->type_b, c->stride_b, members_b, c->n, c->k, bcs, brs};
    int growth = 2 + bits_of((uint64_t)c->k + 1);
    /* splitting first: its scales' pass finds the lines' NaN and Inf, and the operands' ranges
     * (another pass over both) are needed only when it is not used (it is not when A or B has
     * no non-zero finite value) */
    if (rab && (p->oz = gck_ozaki_new(c, A, B, opt, p->oz_why, sizeof p->oz_why))) {
        int32_t width;
        p->path = PATH_OZAKI;
        gck_ozaki_line_specials(p->oz, p->row_special, p->col_special);
        gck_ozaki_range(p->oz, &p->base_s, &width);
        p->nlimbs_s = width / 32 + 6;
        size_final(p, c);
    } else {
        opstats sa = {0, 0, 0, 0, 0, 0}, sb = sa;
        if (rab) {
            op_stats(&va, p->row_special, &sa);
            op_stats(&vb, p->col_special, &sb);
        }
        bool any = rab && sa.emin != INT32_MAX && sb.emin != INT32_MAX;
        if (!any) sa = sb = (opstats){0, 0, 0, 0, 0, 0};
        choose_path(p, c, &sa, &sb, any, growth);
        if (!alloc_encoded(p, la * c->k, lb * c->k)) {
            gck_exact_plan_free(p);
            return NULL;
        }
        if (p->path != PATH_ZERO) {
            op_fill(&va, p->path, &sa, p->alo, p->ahi, p->afix, p->apk, p->asig, p->aexp);
            op_fill(&vb, p->path, &sb, p->blo, p->bhi, p->bfix, p->bpk, p->bsig, p->bexp);
        }
        size_frames(p, c, &sa, &sb, growth);
    }
    p->rab = rab;
    p->rc = gck_case_reads_c(c);
    p->td = gck_case_type(c, GCK_D);
    p->fo = gck_format_get(p->td);
    gck_case_op_strides(c, GCK_C, &p->crs, &p->ccs);
    return p;
}
