/* The pinned cases of a certificate: a fixed list of generated cases per row (the same for
 * every run of a given certificate version), each with a digest of D's bits and its largest
 * error/bound, so that two certificates can be compared case by case. */
#include "pinned.h"
#include "format_internal.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fpenv.h"
#include "gemmcheck/checker.h"
#include "gemmcheck/oracle.h"
#include "gemmcheck/spec.h"
#include "generator.h"

/* Changing the corpus (seed, budget, count) is a new certificate version. */
#define PINNED_SEED 0x9e11c4ec7ull

int gck_pinned_per_row(size_t nrows) {
    int n = nrows ? (int)(2000 / nrows) : 0;
    return n < 8 ? 8 : n > 1000 ? 1000 : n;
}

/* FNV-1a over the bytes of D's extent. */
static uint64_t digest(const unsigned char *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

typedef struct operands {
    unsigned char *buf[4];
    void *at[4]; /* the operand's first element (after its offset) */
    size_t bytes[4];
    size_t alloc[4]; /* buf's size */
} operands;

static bool make(const gck_spec *s, operands *o) {
    memset(o, 0, sizeof *o);
    const gck_case *c = &s->c;
    for (int x = GCK_A; x <= GCK_D; x++) {
        if (x == GCK_D && c->d_is_c) break;
        size_t es = (size_t)gck_format_get(gck_case_type(c, (gck_operand)x))->storage_bytes;
        o->bytes[x] = (size_t)gck_case_extent(c, (gck_operand)x) * es;
        o->alloc[x] = o->bytes[x] + (size_t)s->offset[x] * es + 1;
        o->buf[x] = calloc(1, o->alloc[x]);
        if (!o->buf[x]) return false;
        o->at[x] = o->buf[x] + (size_t)s->offset[x] * es;
        if (x != GCK_D) gck_spec_fill(s, (gck_operand)x, o->at[x]);
    }
    if (c->d_is_c) o->at[GCK_D] = o->at[GCK_C], o->bytes[GCK_D] = o->bytes[GCK_C];
    return true;
}

/* A copy of o, byte for byte (cheaper than filling again: the fill hashes every element). */
static bool copy(const operands *o, operands *to) {
    memset(to, 0, sizeof *to);
    for (int x = 0; x < 4; x++) {
        if (!o->buf[x]) continue;
        if (!(to->buf[x] = malloc(o->alloc[x]))) return false;
        memcpy(to->buf[x], o->buf[x], o->alloc[x]);
        to->alloc[x] = o->alloc[x], to->bytes[x] = o->bytes[x];
        to->at[x] = to->buf[x] + ((unsigned char *)o->at[x] - o->buf[x]);
    }
    if (!o->buf[GCK_D]) to->at[GCK_D] = to->at[GCK_C], to->bytes[GCK_D] = to->bytes[GCK_C];
    return true;
}

static void release(operands *o) {
    for (int x = 0; x < 4; x++) free(o->buf[x]);
}

/* The largest distance of D from the exact result in ulps of D's type (at the exact value;
 * elements where either is not finite are left out), or -1 when the oracle cannot run. */
static double ulps(const gck_case *in_place, const operands *before, const void *d) {
    gck_case sep = *in_place,
             *c = &sep; /* the exact D into a buffer of its own, as D is laid out */
    if (sep.d_is_c) sep.d_is_c = false, sep.ldd = sep.ldc, sep.stride_d = sep.stride_c;
    gck_format f = gck_case_type(c, GCK_D);
    size_t bytes = (size_t)gck_case_extent(c, GCK_D) * (size_t)gck_format_get(f)->storage_bytes;
    void *x = malloc(bytes ? bytes : 1);
    char msg[128];
    if (!x || gck_oracle_exact(c, before->at[GCK_A], before->at[GCK_B], before->at[GCK_C], x, 1,
                               msg, sizeof msg) != GCK_OK) {
        free(x);
        return -1;
    }
    double worst = gck_pinned_distance(c, x, d);
    free(x);
    return worst;
}

double gck_pinned_distance(const gck_case *c, const void *ref, const void *other) {
    gck_format f = gck_case_type(c, GCK_D);
    int64_t rs, cs, st = gck_case_stride(c, GCK_D);
    gck_case_op_strides(c, GCK_D, &rs, &cs);
    double worst = 0;
    for (int64_t b = 0; b < c->batch; b++)
        for (int64_t j = 0; j < c->n; j++)
            for (int64_t i = 0; i < c->m; i++) {
                int64_t e = b * st + i * rs + j * cs;
                double want = gck_fmt_load(ref, f, e), got = gck_fmt_load(other, f, e);
                /* in long double, whose range holds any f64 difference over any f64 ulp; a
                 * distance beyond the largest double is kept as that */
                long double u = isfinite(got) && isfinite(want)
                                    ? fabsl((long double)got - want) / gck_fmt_ulp(want, f)
                                    : 0;
                double du = u > DBL_MAX ? DBL_MAX : (double)u;
                worst = du > worst ? du : worst;
            }
    return worst;
}

/* One case: its digest, largest error/bound and ulps, or why it has none. */
static void one(gck_backend *be, const gck_support_row *row, const gck_spec *s,
                gck_pinned_case *out) {
    const gck_case *c = &s->c;
    operands o = {0}, before = {0};
    char msg[256] = "";
    gck_spec_format(s, out->spec, sizeof out->spec);
    if (!make(s, &o) || !copy(&o, &before)) { /* `before`: A, B, C as the check reads them */
        snprintf(out->outcome, sizeof out->outcome, "out of memory");
    } else {
        gck_operands ops = {o.at[GCK_A],
                            o.at[GCK_B],
                            o.at[GCK_C],
                            o.at[GCK_D],
                            {o.at[GCK_A], o.at[GCK_B], o.at[GCK_C], o.at[GCK_D]},
                            {o.bytes[GCK_A], o.bytes[GCK_B], o.bytes[GCK_C], o.bytes[GCK_D]}};
        gck_fpenv env;
        gck_fpenv_save(&env);
        gck_call_status st = be->ops->call(be->state, c, row, &ops, msg, sizeof msg);
        gck_fpenv_restore(&env, NULL, 0);
        gck_check_options opt = {0};
        opt.threads = 1;
        gck_check_result cr;
        const char *why =
            st == GCK_CALL_NOT_SUPPORTED ? "unsupported"
            : st != GCK_CALL_OK          ? "error"
            : gck_check_values(c, row, &opt, before.at[GCK_A], before.at[GCK_B], before.at[GCK_C],
                               o.at[GCK_D], &cr, msg, sizeof msg) != GCK_OK
                ? "check failed"
                : "ok";
        snprintf(out->outcome, sizeof out->outcome, "%s", why);
        if (!strcmp(why, "ok")) {
            out->digest = digest(o.at[GCK_D], o.bytes[GCK_D]);
            out->ratio = cr.max_ratio.ratio == cr.max_ratio.ratio ? cr.max_ratio.ratio : 0.0;
            out->ulps = ulps(c, &before, o.at[GCK_D]);
            if (o.bytes[GCK_D] <= sizeof out->d) /* small: D itself, for element shifts */
                memcpy(out->d, o.at[GCK_D], out->d_bytes = o.bytes[GCK_D]);
        }
    }
    release(&o);
    release(&before);
}

int gck_pinned_row(gck_backend *be, const gck_support_row *row, int count, gck_pinned_case *out) {
    gck_fuzz_target t;
    if (gck_fuzz_targets_from_rows(row, 1, &t, 1) != 1) return 0;
    gck_fuzz_config cfg = {PINNED_SEED, 2e5, 4e6, &t, 1, false};
    for (int i = 0; i < count; i++) {
        gck_spec s;
        gck_fuzz_generate(&cfg, (uint64_t)i, &s);
        memset(&out[i], 0, sizeof out[i]);
        one(be, row, &s, &out[i]);
    }
    return count;
}
