/* Test specs: reproducer strings and the value distributions (docs/REPRO.md). */
#include "gemmcheck/spec.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format_internal.h"
#include "fpenv.h"
#include "mix.h"
#include "text.h"

static const char *const dist_names[GCK_DIST_COUNT] = {"int",    "unif", "normal", "logu",
                                                       "cancel", "sub",  "big"};

const char *gck_dist_name(gck_dist d) { return (unsigned)d < GCK_DIST_COUNT ? dist_names[d] : "?"; }

bool gck_dist_parse(const char *name, gck_dist *out) {
    for (int d = 0; d < GCK_DIST_COUNT; d++)
        if (strcmp(name, dist_names[d]) == 0) {
            *out = (gck_dist)d;
            return true;
        }
    return false;
}

void gck_spec_init(gck_spec *s, const gck_case *c) {
    memset(s, 0, sizeof *s);
    s->c = *c;
    s->dist_ab = GCK_DIST_UNIFORM;
    s->dist_c = GCK_DIST_UNIFORM;
    s->seed = 1;
}

/* ---- values ------------------------------------------------------------------------------ */

/* The hash of one element position and stream: row_hash of its operand, stream, batch member
 * and row, then col_hash of its column (a fill computes the first once per row). */
static uint64_t row_hash(uint64_t seed, gck_operand x, int64_t b, int64_t r, unsigned stream) {
    uint64_t h = gck_mix64(seed + GCK_GOLDEN_GAMMA * (1 + (uint64_t)x + 4 * (uint64_t)stream));
    h = gck_mix64(h ^ (uint64_t)b);
    return gck_mix64(h ^ (uint64_t)r * 0xd6e8feb86659fd93ull);
}

static uint64_t col_hash(uint64_t row, int64_t col) {
    return gck_mix64(row ^ (uint64_t)col * 0xa0761d6478bd642full);
}

static uint64_t pos_hash(uint64_t seed, gck_operand x, int64_t b, int64_t r, int64_t col,
                         unsigned stream) {
    return col_hash(row_hash(seed, x, b, r, stream), col);
}

static double unit(uint64_t h) { return (double)(h >> 11) * 0x1p-53; } /* [0, 1) */

static double clamp_exp(int e, int lo, int hi) { return e < lo ? lo : e > hi ? hi : e; }

/* h: the element's hash in stream 0 */
static double dist_value(const gck_spec *s, gck_operand x, gck_dist d, int64_t b, int64_t r,
                         int64_t col, gck_format f, uint64_t h) {
    const gck_format_info *fi = gck_format_get(f);
    const gck_format_info *fd = gck_format_get(gck_case_type(&s->c, GCK_D));
    uint64_t h2 = gck_mix64(h + 1);
    double sign = (h2 >> 63) ? -1.0 : 1.0;
    double u = unit(h);
    switch (d) {
    case GCK_DIST_INT: return (double)((int)(h % 9) - 4);
    case GCK_DIST_UNIFORM: return 2.0 * u - 1.0;
    case GCK_DIST_NORMAL: {
        /* Irwin-Hall with four uniforms: mean 0, variance 1, no transcendental functions */
        double sum = u + unit(h2) + unit(gck_mix64(h + 2)) + unit(gck_mix64(h + 3));
        return (sum - 2.0) * 1.7320508075688772;
    }
    case GCK_DIST_LOGU: {
        int e = (int)(h2 % 41) - 20;
        return sign * ldexp(1.0 + u, (int)clamp_exp(e, fi->emin, fi->emax - 1));
    }
    case GCK_DIST_CANCEL: {
        /* A(i,k) = X(i,k/2)(1+e_a), B(k,j) = (-1)^k Y(k/2,j)(1+e_b): pairs of products cancel
         * up to the small relative parts e ~ 2^-(p/2+1). C is small. */
        double small = ldexp(2.0 * unit(h2) - 1.0, -(fi->precision / 2 + 1));
        if (x == GCK_C) return ldexp(2.0 * u - 1.0, -4);
        int64_t pr = x == GCK_A ? r : r / 2, pc = x == GCK_A ? col / 2 : col;
        uint64_t hb = pos_hash(s->seed, x, b, pr, pc, 1);
        double big = ldexp(1.0 + unit(hb), (int)(hb % 7));
        double sgn = (x == GCK_B && (r & 1)) ? -1.0 : 1.0;
        if (hb >> 63) sgn = -sgn;
        return sgn * big * (1.0 + small);
    }
    case GCK_DIST_SUBNORMAL: return sign * ldexp(2.0 * u, fi->emin);
    case GCK_DIST_BIG: {
        int e = x == GCK_C ? fd->emax - 1 - (int)(h2 % 3) : fd->emax / 2 - 1 + (int)(h2 % 3);
        return sign * ldexp(1.0 + u, (int)clamp_exp(e, fi->emin, fi->emax - 1));
    }
    default: return 0.0;
    }
}

/* The value of an element whose row hashes in streams 0 and 2 are r0 and r2 (r2 is read only
 * when the spec has specials). */
static double value_at(const gck_spec *s, gck_operand x, int64_t b, int64_t row, int64_t col,
                       uint64_t r0, uint64_t r2) {
    gck_format f = gck_case_type(&s->c, x);
    if (x == GCK_C && s->c_nan) return NAN;
    if (s->special_pm > 0) {
        uint64_t hs = col_hash(r2, col);
        if ((int)(hs % 1000) < s->special_pm) {
            static const double specials[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0};
            return specials[(hs >> 10) % (sizeof specials / sizeof specials[0])];
        }
    }
    gck_dist d = x == GCK_C ? s->dist_c : s->dist_ab;
    double v = gck_fmt_round_to(dist_value(s, x, d, b, row, col, f, col_hash(r0, col)), f);
    if (isinf(v)) v = copysign(gck_format_get(f)->max, v); /* distributions stay finite */
    return v;
}

/* A row's hashes in stream 0 (values) and 2 (specials; 0 when the spec has none). */
static void row_hashes(const gck_spec *s, gck_operand x, int64_t b, int64_t row, uint64_t r[2]) {
    r[0] = row_hash(s->seed, x, b, row, 0);
    r[1] = s->special_pm > 0 ? row_hash(s->seed, x, b, row, 2) : 0;
}

static double spec_value(const gck_spec *s, gck_operand x, int64_t b, int64_t row, int64_t col) {
    uint64_t r[2];
    row_hashes(s, x, b, row, r);
    return value_at(s, x, b, row, col, r[0], r[1]);
}

/* Every element of the operand as spec_value gives it, row by row: the row's hashes once, so an
 * element's hash in streams 0 and 2 (its value, its special) costs one mixing step each, not
 * four. */
static void spec_fill(const gck_spec *s, gck_operand x, void *base) {
    const gck_case *c = &s->c;
    int64_t rows = x == GCK_A ? c->m : x == GCK_B ? c->k : c->m;
    int64_t cols = x == GCK_A ? c->k : x == GCK_B ? c->n : c->n;
    int64_t rs, cs;
    gck_case_op_strides(c, x, &rs, &cs);
    int64_t stride = gck_case_stride(c, x);
    int64_t members = stride == 0 ? 1 : c->batch;
    gck_format f = gck_case_type(c, x);
    for (int64_t b = 0; b < members; b++)
        for (int64_t i = 0; i < rows; i++) {
            uint64_t r[2];
            row_hashes(s, x, b, i, r);
            for (int64_t j = 0; j < cols; j++)
                gck_fmt_store(base, f, b * stride + i * rs + j * cs,
                              value_at(s, x, b, i, j, r[0], r[1]));
        }
}

/* ---- reproducer strings ------------------------------------------------------------------ */

static void spec_format(const gck_spec *s, char *buf, size_t len) {
    const gck_case *c = &s->c;
    snprintf(buf, len,
             "gck1 m=%" PRId64 " n=%" PRId64 " k=%" PRId64 " order=%s ta=%c tb=%c "
             "types=%s,%s,%s,%s compute=%s scale=%s alpha=%.17g beta=%.17g lda=%" PRId64
             " ldb=%" PRId64 " ldc=%" PRId64 " ldd=%" PRId64 " d=%s batch=%" PRId64 " sa=%" PRId64
             " sb=%" PRId64 " sc=%" PRId64 " sd=%" PRId64 " off=%" PRId64 ",%" PRId64 ",%" PRId64
             ",%" PRId64 " vab=%s vc=%s sp=%d cnan=%d seed=%" PRIu64,
             c->m, c->n, c->k, c->order == GCK_COL_MAJOR ? "col" : "row",
             c->transa == GCK_OP_N ? 'N' : 'T', c->transb == GCK_OP_N ? 'N' : 'T',
             gck_format_get(c->type_a)->name, gck_format_get(c->type_b)->name,
             gck_format_get(c->type_c)->name, gck_format_get(c->type_d)->name,
             gck_format_get(c->compute)->name, gck_format_get(c->scale_type)->name, c->alpha,
             c->beta, c->lda, c->ldb, c->ldc, c->ldd, c->d_is_c ? "c" : "sep", c->batch,
             c->stride_a, c->stride_b, c->stride_c, c->stride_d, s->offset[0], s->offset[1],
             s->offset[2], s->offset[3], gck_dist_name(s->dist_ab), gck_dist_name(s->dist_c),
             s->special_pm, s->c_nan ? 1 : 0, s->seed);
    size_t used = strlen(buf);
    if (s->mem_budget > 0 && used < len)
        used += (size_t)snprintf(buf + used, len - used, " mem=%" PRId64, s->mem_budget);
    if (s->limit_threads && used < len) snprintf(buf + used, len - used, " thr=%d", s->max_threads);
}

static bool parse_i64(const char *v, int64_t *out) {
    if (!*v || (*v != '-' && (*v < '0' || *v > '9'))) return false;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (*end || errno == ERANGE) return false;
    *out = x;
    return true;
}

enum {
    K_M,
    K_N,
    K_K,
    K_ORDER,
    K_TA,
    K_TB,
    K_TYPES,
    K_COMPUTE,
    K_SCALE,
    K_ALPHA,
    K_BETA,
    K_LDA,
    K_LDB,
    K_LDC,
    K_LDD,
    K_D,
    K_BATCH,
    K_SA,
    K_SB,
    K_SC,
    K_SD,
    K_OFF,
    K_VAB,
    K_VC,
    K_SP,
    K_CNAN,
    K_SEED,
    K_REQUIRED, /* the keys above are required; those below optional */
    K_MEM = K_REQUIRED,
    K_THR,
    K_COUNT
};
static const char *const key_names[K_COUNT] = {
    "m",    "n",   "k",   "order", "ta",  "tb",   "types", "compute", "scale", "alpha",
    "beta", "lda", "ldb", "ldc",   "ldd", "d",    "batch", "sa",      "sb",    "sc",
    "sd",   "off", "vab", "vc",    "sp",  "cnan", "seed",  "mem",     "thr"};

/* Which of two words v is: 0 for w0, 1 for w1, -1 for neither. */
static int choose(const char *v, const char *w0, const char *w1) {
    return strcmp(v, w0) == 0 ? 0 : strcmp(v, w1) == 0 ? 1 : -1;
}

/* types=A,B,C,D: four storage formats. */
static gck_status parse_types(gck_case *c, const char *v, char *msg, size_t len) {
    gck_format *t[4] = {&c->type_a, &c->type_b, &c->type_c, &c->type_d};
    char tmp[64];
    if (strlen(v) >= sizeof tmp)
        return gck_fail(GCK_EINVAL, msg, len, "types='%s' is malformed", v);
    strcpy(tmp, v);
    char *save = NULL, *tok = strtok_r(tmp, ",", &save);
    for (int i = 0; i < 4; i++, tok = strtok_r(NULL, ",", &save))
        if (!tok || !gck_format_parse(tok, t[i]) || !gck_format_get(*t[i])->is_storage)
            return gck_fail(GCK_EINVAL, msg, len,
                            "types='%s' must be four of f16,bf16,f32,f64 (A,B,C,D)", v);
    if (tok) return gck_fail(GCK_EINVAL, msg, len, "types='%s' has more than four types", v);
    return GCK_OK;
}

/* off=a,b,c,d: four element offsets 0..4096. */
static gck_status parse_offsets(gck_spec *s, const char *v, char *msg, size_t len) {
    char tmp[128];
    if (strlen(v) >= sizeof tmp) return gck_fail(GCK_EINVAL, msg, len, "off='%s' is malformed", v);
    strcpy(tmp, v);
    char *save = NULL, *tok = strtok_r(tmp, ",", &save);
    for (int i = 0; i < 4; i++, tok = strtok_r(NULL, ",", &save))
        if (!tok || !parse_i64(tok, &s->offset[i]) || s->offset[i] < 0 || s->offset[i] > 4096)
            return gck_fail(GCK_EINVAL, msg, len, "off='%s' must be four element offsets 0..4096",
                            v);
    if (tok) return gck_fail(GCK_EINVAL, msg, len, "off='%s' has more than four offsets", v);
    return GCK_OK;
}

/* alpha= and beta=: finite decimal numbers, to the nearest binary64. */
static gck_status parse_scalar(const char *name, const char *v, double *out, char *msg,
                               size_t len) {
    char *end;
    double x = strtod(v, &end);
    if (!*v || *end || !isfinite(x))
        return gck_fail(GCK_EINVAL, msg, len, "%s='%s' is not a finite number", name, v);
    *out = x;
    return GCK_OK;
}

static gck_status parse_seed(const char *v, uint64_t *out, char *msg, size_t len) {
    char *end;
    errno = 0;
    if (!*v || *v == '-')
        return gck_fail(GCK_EINVAL, msg, len, "seed='%s' is not an unsigned integer", v);
    unsigned long long x = strtoull(v, &end, 10);
    if (*end || errno == ERANGE)
        return gck_fail(GCK_EINVAL, msg, len, "seed='%s' is not an unsigned 64-bit integer", v);
    *out = x;
    return GCK_OK;
}

static gck_status parse_value(gck_spec *s, int key, const char *v, char *msg, size_t len) {
    gck_case *c = &s->c;
    int64_t *ints[] = {
        [K_M] = &c->m,         [K_N] = &c->n,         [K_K] = &c->k,         [K_LDA] = &c->lda,
        [K_LDB] = &c->ldb,     [K_LDC] = &c->ldc,     [K_LDD] = &c->ldd,     [K_BATCH] = &c->batch,
        [K_SA] = &c->stride_a, [K_SB] = &c->stride_b, [K_SC] = &c->stride_c, [K_SD] = &c->stride_d};
    const char *name = key_names[key];
    int w;
    switch (key) {
    case K_ORDER:
        if ((w = choose(v, "col", "row")) < 0)
            return gck_fail(GCK_EINVAL, msg, len, "order='%s' must be col or row", v);
        c->order = w ? GCK_ROW_MAJOR : GCK_COL_MAJOR;
        return GCK_OK;
    case K_TA:
    case K_TB:
        if ((w = choose(v, "N", "T")) < 0)
            return gck_fail(GCK_EINVAL, msg, len, "%s='%s' must be N or T", name, v);
        *(key == K_TA ? &c->transa : &c->transb) = w ? GCK_OP_T : GCK_OP_N;
        return GCK_OK;
    case K_TYPES: return parse_types(c, v, msg, len);
    case K_COMPUTE:
    case K_SCALE:
        if (!gck_format_parse(v, key == K_COMPUTE ? &c->compute : &c->scale_type))
            return gck_fail(GCK_EINVAL, msg, len, "%s='%s' is not a format", name, v);
        return GCK_OK;
    case K_ALPHA:
    case K_BETA: return parse_scalar(name, v, key == K_ALPHA ? &c->alpha : &c->beta, msg, len);
    case K_D:
        if ((w = choose(v, "sep", "c")) < 0)
            return gck_fail(GCK_EINVAL, msg, len, "d='%s' must be c (in place) or sep (separate)",
                            v);
        c->d_is_c = w == 1;
        return GCK_OK;
    case K_OFF: return parse_offsets(s, v, msg, len);
    case K_VAB:
    case K_VC:
        if (!gck_dist_parse(v, key == K_VAB ? &s->dist_ab : &s->dist_c))
            return gck_fail(GCK_EINVAL, msg, len,
                            "%s='%s' is not a distribution (int, unif, normal, logu, "
                            "cancel, sub, big)",
                            name, v);
        return GCK_OK;
    case K_SP: {
        int64_t x;
        if (!parse_i64(v, &x) || x < 0 || x > 1000)
            return gck_fail(GCK_EINVAL, msg, len, "sp='%s' must be a per-mille rate 0..1000", v);
        s->special_pm = (int)x;
        return GCK_OK;
    }
    case K_CNAN:
        if ((w = choose(v, "0", "1")) < 0)
            return gck_fail(GCK_EINVAL, msg, len, "cnan='%s' must be 0 or 1", v);
        s->c_nan = w == 1;
        return GCK_OK;
    case K_SEED: return parse_seed(v, &s->seed, msg, len);
    case K_MEM:
        if (!parse_i64(v, &s->mem_budget) || s->mem_budget < 1)
            return gck_fail(GCK_EINVAL, msg, len,
                            "mem='%s' must be a memory budget of at least 1 byte", v);
        return GCK_OK;
    case K_THR: {
        int64_t x;
        if (!parse_i64(v, &x) || x < 0 || x > 100000)
            return gck_fail(GCK_EINVAL, msg, len, "thr='%s' must be a thread limit 0..100000", v);
        s->limit_threads = true;
        s->max_threads = (int)x;
        return GCK_OK;
    }
    default:
        if (!parse_i64(v, ints[key]))
            return gck_fail(GCK_EINVAL, msg, len, "%s='%s' is not an integer", name, v);
        return GCK_OK;
    }
}

static gck_status spec_parse(const char *text, gck_spec *s, char *msg, size_t len) {
    memset(s, 0, sizeof *s);
    size_t n = strlen(text);
    if (n > 4000)
        return gck_fail(GCK_EINVAL, msg, len, "reproducer string is longer than 4000 characters");
    char buf[4096];
    memcpy(buf, text, n + 1);
    char *save = NULL, *tok = strtok_r(buf, " \t\n", &save);
    if (!tok || strcmp(tok, "gck1") != 0)
        return gck_fail(GCK_EINVAL, msg, len,
                        "reproducer string must start with 'gck1' (got '%.20s')", tok ? tok : "");
    bool seen[K_COUNT] = {false};
    while ((tok = strtok_r(NULL, " \t\n", &save))) {
        char *eq = strchr(tok, '=');
        if (!eq) return gck_fail(GCK_EINVAL, msg, len, "'%.40s' is not key=value", tok);
        *eq = '\0';
        int key = -1;
        for (int k = 0; k < K_COUNT; k++)
            if (strcmp(tok, key_names[k]) == 0) key = k;
        if (key < 0) return gck_fail(GCK_EINVAL, msg, len, "unknown key '%.40s'", tok);
        if (seen[key]) return gck_fail(GCK_EINVAL, msg, len, "key '%s' given twice", tok);
        seen[key] = true;
        gck_status st = parse_value(s, key, eq + 1, msg, len);
        if (st != GCK_OK) return st;
    }
    /* every missing key at once: a partial string is completed in one go */
    char missing[512] = "";
    int nmissing = 0;
    for (int k = 0; k < K_REQUIRED; k++)
        if (!seen[k]) {
            size_t used = strlen(missing);
            snprintf(missing + used, sizeof missing - used, "%s%s", nmissing ? ", " : "",
                     key_names[k]);
            nmissing++;
        }
    if (nmissing)
        return gck_fail(GCK_EINVAL, msg, len, "missing key%s %s", nmissing > 1 ? "s" : "", missing);
    return gck_case_validate(&s->c, msg, len);
}

/* ---- the public functions, in gemmcheck's floating-point environment (fpenv.h) ------------ */

GCK_GUARDED(double, gck_spec_value, spec_value,
            (const gck_spec *s, gck_operand x, int64_t b, int64_t row, int64_t col),
            (s, x, b, row, col))
GCK_GUARDED_VOID(gck_spec_fill, spec_fill, (const gck_spec *s, gck_operand x, void *base),
                 (s, x, base))
GCK_GUARDED_VOID(gck_spec_format, spec_format, (const gck_spec *s, char *buf, size_t len),
                 (s, buf, len))
GCK_GUARDED(gck_status, gck_spec_parse, spec_parse,
            (const char *text, gck_spec *s, char *msg, size_t len), (text, s, msg, len))
