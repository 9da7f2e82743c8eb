/* The GEMM case model: layout arithmetic and validation. */
#include "gemmcheck/case.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "format_internal.h"
#include "fpenv.h"
#include "text.h"

void gck_case_init(gck_case *c, int64_t m, int64_t n, int64_t k) {
    *c = (gck_case){
        .m = m,
        .n = n,
        .k = k,
        .alpha = 1.0,
        .beta = 0.0,
        .scale_type = GCK_F64,
        .order = GCK_COL_MAJOR,
        .transa = GCK_OP_N,
        .transb = GCK_OP_N,
        .lda = m > 1 ? m : 1,
        .ldb = k > 1 ? k : 1,
        .ldc = m > 1 ? m : 1,
        .ldd = m > 1 ? m : 1,
        .d_is_c = true,
        .batch = 1,
        .type_a = GCK_F64,
        .type_b = GCK_F64,
        .type_c = GCK_F64,
        .type_d = GCK_F64,
        .compute = GCK_F64,
    };
}

static const char *operand_name(gck_operand x) { return (const char *[]){"A", "B", "C", "D"}[x]; }

void gck_case_stored_shape(const gck_case *c, gck_operand x, int64_t *rows, int64_t *cols) {
    switch (x) {
    case GCK_A:
        *rows = c->transa == GCK_OP_N ? c->m : c->k;
        *cols = c->transa == GCK_OP_N ? c->k : c->m;
        break;
    case GCK_B:
        *rows = c->transb == GCK_OP_N ? c->k : c->n;
        *cols = c->transb == GCK_OP_N ? c->n : c->k;
        break;
    default:
        *rows = c->m;
        *cols = c->n;
        break;
    }
}

int64_t gck_case_ld(const gck_case *c, gck_operand x) {
    switch (x) {
    case GCK_A: return c->lda;
    case GCK_B: return c->ldb;
    case GCK_C: return c->ldc;
    default: return c->d_is_c ? c->ldc : c->ldd;
    }
}

int64_t gck_case_stride(const gck_case *c, gck_operand x) {
    switch (x) {
    case GCK_A: return c->stride_a;
    case GCK_B: return c->stride_b;
    case GCK_C: return c->stride_c;
    default: return c->d_is_c ? c->stride_c : c->stride_d;
    }
}

gck_format gck_case_type(const gck_case *c, gck_operand x) {
    switch (x) {
    case GCK_A: return c->type_a;
    case GCK_B: return c->type_b;
    case GCK_C: return c->type_c;
    default: return c->d_is_c ? c->type_c : c->type_d;
    }
}

void gck_case_op_strides(const gck_case *c, gck_operand x, int64_t *rs, int64_t *cs) {
    bool trans = (x == GCK_A && c->transa == GCK_OP_T) || (x == GCK_B && c->transb == GCK_OP_T);
    int64_t ld = gck_case_ld(c, x);
    /* Column-major stores (r, s) at r + s*ld; row-major at r*ld + s; a transpose swaps. */
    if ((c->order == GCK_COL_MAJOR) != trans) {
        *rs = 1;
        *cs = ld;
    } else {
        *rs = ld;
        *cs = 1;
    }
}

int64_t gck_case_footprint(const gck_case *c, gck_operand x) {
    int64_t rows, cols;
    gck_case_stored_shape(c, x, &rows, &cols);
    if (rows == 0 || cols == 0) return 0;
    int64_t ld = gck_case_ld(c, x);
    return c->order == GCK_COL_MAJOR ? (cols - 1) * ld + rows : (rows - 1) * ld + cols;
}

int64_t gck_case_extent(const gck_case *c, gck_operand x) {
    int64_t fp = gck_case_footprint(c, x);
    if (fp == 0) return 0;
    return (c->batch - 1) * gck_case_stride(c, x) + fp;
}

static bool reads_ab(const gck_case *c) { return c->alpha != 0.0 && c->k > 0; }
static bool reads_c(const gck_case *c) { return c->beta != 0.0; }

static bool valid_format(gck_format f) { return (unsigned)f < GCK_FORMAT_COUNT; }

/* Largest element count we accept for one operand: keeps every byte offset inside int64. */
#define GCK_MAX_ELEMENTS (INT64_C(1) << 56)

int64_t gck_case_min_ld(const gck_case *c, gck_operand x) {
    int64_t rows, cols;
    gck_case_stored_shape(c, x, &rows, &cols);
    int64_t need = c->order == GCK_COL_MAJOR ? rows : cols;
    return need > 1 ? need : 1;
}

static const char *ld_name(gck_operand x) {
    return (const char *[]){"lda", "ldb", "ldc", "ldd"}[x];
}

static const char *dim_name(const gck_case *c, gck_operand x, bool rows) {
    if (x == GCK_A) return (c->transa == GCK_OP_N) == rows ? "M" : "K";
    if (x == GCK_B) return (c->transb == GCK_OP_N) == rows ? "K" : "N";
    return rows ? "M" : "N";
}

static gck_status check_layout(const gck_case *c, gck_operand x, char *msg, size_t len) {
    int64_t rows, cols;
    gck_case_stored_shape(c, x, &rows, &cols);
    bool colmaj = c->order == GCK_COL_MAJOR;
    int64_t need = colmaj ? rows : cols;
    int64_t ld = gck_case_ld(c, x);
    const char *opdesc = x == GCK_A   ? (c->transa == GCK_OP_N ? " for op(A)=N" : " for op(A)=T")
                         : x == GCK_B ? (c->transb == GCK_OP_N ? " for op(B)=N" : " for op(B)=T")
                                      : "";
    const char *ord = colmaj ? "column-major" : "row-major";
    if (ld < 1)
        return gck_fail(GCK_EINVAL, msg, len, "%s (%" PRId64 ") must be >= 1", ld_name(x), ld);
    if (ld < gck_case_min_ld(c, x))
        return gck_fail(GCK_EINVAL, msg, len, "%s (%" PRId64 ") < %s (%" PRId64 ")%s, %s",
                        ld_name(x), ld, dim_name(c, x, colmaj), need, opdesc, ord);
    /* Overflow guard: (outer - 1) * ld + inner must stay representable. */
    int64_t outer = colmaj ? cols : rows;
    if (outer > 1 && ld > (GCK_MAX_ELEMENTS - need) / (outer - 1))
        return gck_fail(GCK_EINVAL, msg, len,
                        "%s (%" PRId64 ") x %" PRId64 " %s spans more than 2^56 elements",
                        ld_name(x), ld, outer, colmaj ? "columns" : "rows");
    int64_t fp = gck_case_footprint(c, x);
    int64_t stride = gck_case_stride(c, x);
    const char *sname = (const char *[]){"stride_a", "stride_b", "stride_c", "stride_d"}[x];
    if (stride < 0)
        return gck_fail(GCK_EINVAL, msg, len, "%s (%" PRId64 ") must be >= 0", sname, stride);
    if (c->batch > 1 && fp > 0) {
        bool output = x == GCK_D || (x == GCK_C && c->d_is_c);
        if (stride == 0 && output)
            return gck_fail(GCK_EINVAL, msg, len,
                            "%s is 0 with batch %" PRId64 ": batch members of %s would "
                            "overwrite each other",
                            sname, c->batch, operand_name(x));
        if (stride != 0 && stride < fp)
            return gck_fail(GCK_EINVAL, msg, len,
                            "%s (%" PRId64 ") < %" PRId64 ", the elements one %s matrix "
                            "spans: batch members would overlap",
                            sname, stride, fp, operand_name(x));
        if (stride > (GCK_MAX_ELEMENTS - fp) / (c->batch - 1))
            return gck_fail(GCK_EINVAL, msg, len,
                            "%s (%" PRId64 ") x batch %" PRId64 " spans more than 2^56 "
                            "elements",
                            sname, stride, c->batch);
    }
    return GCK_OK;
}

static bool exact_in(double v, gck_format f) { return isfinite(v) && gck_fmt_round_to(v, f) == v; }

static gck_status validate(const gck_case *c, char *msg, size_t len) {
    if (c->m < 0) return gck_fail(GCK_EINVAL, msg, len, "M (%" PRId64 ") must be >= 0", c->m);
    if (c->n < 0) return gck_fail(GCK_EINVAL, msg, len, "N (%" PRId64 ") must be >= 0", c->n);
    if (c->k < 0) return gck_fail(GCK_EINVAL, msg, len, "K (%" PRId64 ") must be >= 0", c->k);
    if (c->batch < 1)
        return gck_fail(GCK_EINVAL, msg, len, "batch (%" PRId64 ") must be >= 1", c->batch);
    if (c->order != GCK_COL_MAJOR && c->order != GCK_ROW_MAJOR)
        return gck_fail(GCK_EINVAL, msg, len, "order (%d) is neither column-major nor row-major",
                        (int)c->order);
    if (c->transa != GCK_OP_N && c->transa != GCK_OP_T)
        return gck_fail(GCK_EINVAL, msg, len, "transa (%d) is neither N nor T", (int)c->transa);
    if (c->transb != GCK_OP_N && c->transb != GCK_OP_T)
        return gck_fail(GCK_EINVAL, msg, len, "transb (%d) is neither N nor T", (int)c->transb);
    const char *tname[] = {"type_a", "type_b", "type_c", "type_d"};
    gck_format types[] = {c->type_a, c->type_b, c->type_c, c->type_d};
    for (int x = 0; x < 4; x++) {
        if (!valid_format(types[x]))
            return gck_fail(GCK_EINVAL, msg, len, "%s (%d) is not a format", tname[x],
                            (int)types[x]);
        if (!gck_format_get(types[x])->is_storage)
            return gck_fail(GCK_EINVAL, msg, len,
                            "%s (%s) is not an element type (use f16, bf16, f32, f64)", tname[x],
                            gck_format_get(types[x])->name);
    }
    if (!valid_format(c->compute))
        return gck_fail(GCK_EINVAL, msg, len, "compute (%d) is not a format", (int)c->compute);
    if (c->scale_type != GCK_F32 && c->scale_type != GCK_F64)
        return gck_fail(GCK_EINVAL, msg, len, "scale_type (%s) must be f32 or f64",
                        valid_format(c->scale_type) ? gck_format_get(c->scale_type)->name : "?");
    if (!exact_in(c->alpha, c->scale_type))
        return gck_fail(GCK_EINVAL, msg, len, "alpha (%.17g) is not a finite %s value", c->alpha,
                        gck_format_get(c->scale_type)->name);
    if (!exact_in(c->beta, c->scale_type))
        return gck_fail(GCK_EINVAL, msg, len, "beta (%.17g) is not a finite %s value", c->beta,
                        gck_format_get(c->scale_type)->name);
    if (c->d_is_c) {
        if (c->type_d != c->type_c)
            return gck_fail(GCK_EINVAL, msg, len, "type_d (%s) != type_c (%s) with D in place of C",
                            gck_format_get(c->type_d)->name, gck_format_get(c->type_c)->name);
        if (c->ldd != c->ldc)
            return gck_fail(GCK_EINVAL, msg, len,
                            "ldd (%" PRId64 ") != ldc (%" PRId64 ") with D in place of C", c->ldd,
                            c->ldc);
        if (c->stride_d != c->stride_c)
            return gck_fail(GCK_EINVAL, msg, len,
                            "stride_d (%" PRId64 ") != stride_c (%" PRId64 ") with D in place of C",
                            c->stride_d, c->stride_c);
    }
    for (int x = GCK_A; x <= GCK_D; x++) {
        gck_status s = check_layout(c, (gck_operand)x, msg, len);
        if (s != GCK_OK) return s;
    }
    if (msg && len > 0) msg[0] = '\0';
    return GCK_OK;
}

static void describe(const gck_case *c, char *buf, size_t len) {
    snprintf(buf, len,
             "m=%" PRId64 " n=%" PRId64 " k=%" PRId64 " %s op(A)=%c op(B)=%c "
             "%s,%s,%s->%s compute=%s alpha=%.17g beta=%.17g (%s) "
             "lda=%" PRId64 " ldb=%" PRId64 " ldc=%" PRId64 " ldd=%" PRId64 " %s batch=%" PRId64,
             c->m, c->n, c->k, c->order == GCK_COL_MAJOR ? "col" : "row",
             c->transa == GCK_OP_N ? 'N' : 'T', c->transb == GCK_OP_N ? 'N' : 'T',
             gck_format_get(c->type_a)->name, gck_format_get(c->type_b)->name,
             gck_format_get(c->type_c)->name, gck_format_get(gck_case_type(c, GCK_D))->name,
             gck_format_get(c->compute)->name, c->alpha, c->beta,
             gck_format_get(c->scale_type)->name, c->lda, c->ldb, c->ldc, gck_case_ld(c, GCK_D),
             c->d_is_c ? "D=C" : "D separate", c->batch);
}

/* ---- the public functions, in gemmcheck's floating-point environment (fpenv.h) ------------ */

GCK_GUARDED(bool, gck_case_reads_ab, reads_ab, (const gck_case *c), (c))
GCK_GUARDED(bool, gck_case_reads_c, reads_c, (const gck_case *c), (c))
GCK_GUARDED(gck_status, gck_case_validate, validate, (const gck_case *c, char *msg, size_t len),
            (c, msg, len))
GCK_GUARDED_VOID(gck_case_describe, describe, (const gck_case *c, char *buf, size_t len),
                 (c, buf, len))
