/* The operands of `gemmcheck oracle` and `gemmcheck verify` (inputs.h). */
#include "inputs.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "gemmcheck/gemmcheck.h"

int gck_inputs_type(const char *cmd, const char *path, const gck_npy *a, const char *opt,
                    const char *given, gck_format *out) {
    gck_format from_dtype = gck_npy_format_of(a->dtype);
    if (given) {
        gck_format t;
        if (!gck_format_parse(given, &t) || !gck_format_get(t)->is_storage)
            return gck_cli_usage_error(cmd,
                                       "unknown type '%s' for %s (expected f16, bf16, f32, "
                                       "f64)",
                                       given, opt);
        if (t != from_dtype)
            return gck_cli_usage_error(cmd,
                                       "%s %s contradicts %s's dtype %s (%s is stored as "
                                       "%s)",
                                       opt, given, path, gck_npy_descr(a->dtype), given,
                                       gck_npy_descr(gck_npy_dtype_of(t)));
        *out = t;
        return GCK_EXIT_OK;
    }
    if (a->dtype == GCK_NPY_U2)
        return gck_cli_usage_error(cmd,
                                   "%s has dtype <u2: pass %s bf16 if it holds bfloat16 "
                                   "bits",
                                   path, opt);
    *out = from_dtype;
    return GCK_EXIT_OK;
}

void gck_inputs_shape(const gck_npy *a, char *buf, size_t len) {
    size_t n = (size_t)snprintf(buf, len, "(");
    for (int d = 0; d < a->ndim && n < len; d++)
        n += (size_t)snprintf(buf + n, len - n, "%s%" PRId64, d ? ", " : "", a->shape[d]);
    if (n < len) snprintf(buf + n, len - n, "%s)", a->ndim == 1 ? "," : "");
}

int gck_inputs_read(const char *cmd, const char *what, const char *path, gck_npy *a) {
    char msg[512];
    gck_status s = gck_npy_read(path, a, msg, sizeof msg);
    if (s != GCK_OK) return gck_cli_usage_error(cmd, "%s", msg);
    if (a->ndim != 2 && a->ndim != 3) {
        char shape[160];
        gck_inputs_shape(a, shape, sizeof shape);
        return gck_cli_usage_error(
            cmd, "%s (%s): expected a 2-D array or a 3-D batch, got shape %s", path, what, shape);
    }
    return GCK_EXIT_OK;
}

int gck_inputs_load(gck_inputs *o) {
    int rc;
    if ((rc = gck_inputs_read(o->cmd, "A", o->a, &o->A)) ||
        (rc = gck_inputs_read(o->cmd, "B", o->b, &o->B)) ||
        (o->c && (rc = gck_inputs_read(o->cmd, "C", o->c, &o->C))))
        return rc;
    return GCK_EXIT_OK;
}

/* Rows and columns of the matrices of a (its last two dimensions; common_batch has the batch). */
static void matrix_dims(const gck_npy *a, int64_t *rows, int64_t *cols) {
    *rows = a->shape[a->ndim - 2];
    *cols = a->shape[a->ndim - 1];
}

static int parse_trans(const char *cmd, const char *opt, const char *v, gck_op *out) {
    if (!v || strcmp(v, "N") == 0 || strcmp(v, "n") == 0)
        *out = GCK_OP_N;
    else if (strcmp(v, "T") == 0 || strcmp(v, "t") == 0)
        *out = GCK_OP_T;
    else
        return gck_cli_usage_error(cmd, "%s '%s' must be N or T", opt, v);
    return GCK_EXIT_OK;
}

bool gck_inputs_batched(const gck_inputs *o) {
    return o->A.ndim == 3 || o->B.ndim == 3 || (o->c && o->C.ndim == 3);
}

/* The batch of the files: that of the 3-D ones (equal), 2-D ones shared (stride 0). */
static int common_batch(const gck_inputs *o, int64_t *batch) {
    const gck_npy *x[3] = {&o->A, &o->B, o->c ? &o->C : NULL};
    const char *names[3] = {o->a, o->b, o->c};
    *batch = 1;
    const char *first = NULL;
    for (int i = 0; i < 3; i++) {
        if (!x[i] || x[i]->ndim != 3) continue;
        if (first && x[i]->shape[0] != *batch)
            return gck_cli_usage_error(
                o->cmd, "batch sizes differ: %s holds %" PRId64 " matrices, %s %" PRId64, first,
                *batch, names[i], x[i]->shape[0]);
        first = names[i];
        *batch = x[i]->shape[0];
    }
    return GCK_EXIT_OK;
}

/* op(A) is m x ka, op(B) kb x n, C (if any) m x n: a usage error names a mismatch. */
static int check_shapes(const gck_inputs *o, int64_t m, int64_t ka, int64_t kb, int64_t n) {
    char sa[160], sb[160], sc[160];
    gck_inputs_shape(&o->A, sa, sizeof sa);
    gck_inputs_shape(&o->B, sb, sizeof sb);
    if (ka != kb)
        return gck_cli_usage_error(o->cmd,
                                   "shapes do not match: op(A) is %" PRId64 "x%" PRId64
                                   " (%s has shape %s, --transa %c) but op(B) is %" PRId64
                                   "x%" PRId64 " (%s has shape %s, --transb %c)",
                                   m, ka, o->a, sa, o->ta == GCK_OP_N ? 'N' : 'T', kb, n, o->b, sb,
                                   o->tb == GCK_OP_N ? 'N' : 'T');
    int64_t rc = 0, cc = 0;
    if (o->c) matrix_dims(&o->C, &rc, &cc);
    if (o->c && (rc != m || cc != n)) {
        gck_inputs_shape(&o->C, sc, sizeof sc);
        return gck_cli_usage_error(
            o->cmd,
            "shapes do not match: %s has shape %s but op(A)*op(B) is (%" PRId64 ", %" PRId64 ")",
            o->c, sc, m, n);
    }
    return GCK_EXIT_OK;
}

int gck_inputs_case(const gck_inputs *o, gck_format type_d, gck_case *gc) {
    gck_format tA = type_d, tB = type_d, tC = type_d; /* set by gck_inputs_type on success */
    int rc;
    if ((rc = gck_inputs_type(o->cmd, o->a, &o->A, "--a-type", o->a_type, &tA)) ||
        (rc = gck_inputs_type(o->cmd, o->b, &o->B, "--b-type", o->b_type, &tB)) ||
        (o->c && (rc = gck_inputs_type(o->cmd, o->c, &o->C, "--c-type", o->c_type, &tC))))
        return rc;
    int64_t ra, ca, rb, cb, batch;
    matrix_dims(&o->A, &ra, &ca);
    matrix_dims(&o->B, &rb, &cb);
    if ((rc = common_batch(o, &batch))) return rc;
    int64_t m = o->ta == GCK_OP_N ? ra : ca, ka = o->ta == GCK_OP_N ? ca : ra;
    int64_t kb = o->tb == GCK_OP_N ? rb : cb, n = o->tb == GCK_OP_N ? cb : rb;
    if ((rc = check_shapes(o, m, ka, kb, n))) return rc;
    gck_case_init(gc, m, n, ka);
    gc->order = GCK_ROW_MAJOR;
    gc->transa = o->ta;
    gc->transb = o->tb;
    gc->lda = gck_case_min_ld(gc, GCK_A);
    gc->ldb = gck_case_min_ld(gc, GCK_B);
    gc->ldc = gc->ldd = gck_case_min_ld(gc, GCK_C);
    gc->d_is_c = false;
    gc->alpha = o->alpha;
    gc->beta = o->beta;
    gc->scale_type = GCK_F64;
    gc->type_a = tA;
    gc->type_b = tB;
    gc->type_c = tC;
    gc->type_d = type_d;
    gc->compute = GCK_F64;
    gc->batch = batch;
    gc->stride_a = o->A.ndim == 3 ? ra * ca : 0;
    gc->stride_b = o->B.ndim == 3 ? rb * cb : 0;
    gc->stride_c = o->c && o->C.ndim == 3 ? m * n : 0;
    gc->stride_d = m * n;
    char msg[512];
    if (gck_case_validate(gc, msg, sizeof msg) != GCK_OK)
        return gck_cli_usage_error(o->cmd, "%s", msg);
    return GCK_EXIT_OK;
}

void gck_inputs_free(gck_inputs *o) {
    gck_npy_free(&o->A);
    gck_npy_free(&o->B);
    gck_npy_free(&o->C);
}

int gck_inputs_parse(const char *cmd, const gck_inputs_options *g, gck_inputs *in,
                     long long *threads, gck_oracle_kind *oracle) {
    if (!g->a || !g->b)
        return gck_cli_usage_error(cmd, "missing --%s (see gemmcheck %s --help)", g->a ? "b" : "a",
                                   cmd);
    *in = (gck_inputs){.cmd = cmd,
                       .a = g->a,
                       .b = g->b,
                       .c = g->c,
                       .a_type = g->a_type,
                       .b_type = g->b_type,
                       .c_type = g->c_type,
                       .alpha = 1.0,
                       .beta = 0.0};
    if (g->alpha && !gck_parse_double(g->alpha, &in->alpha))
        return gck_cli_usage_error(cmd, "--alpha '%s' is not a finite decimal number", g->alpha);
    if (g->beta && !gck_parse_double(g->beta, &in->beta))
        return gck_cli_usage_error(cmd, "--beta '%s' is not a finite decimal number", g->beta);
    if (in->beta != 0.0 && !g->c) return gck_cli_usage_error(cmd, "--beta %s needs --c", g->beta);
    if (g->c_type && !g->c) return gck_cli_usage_error(cmd, "--c-type given without --c");
    *threads = 0;
    *oracle = GCK_ORACLE_EXACT;
    if (g->oracle && !gck_oracle_kind_parse(g->oracle, oracle))
        return gck_cli_usage_error(cmd, "--oracle '%s' must be exact, mpfr or both", g->oracle);
    if (g->threads && (!gck_parse_count(g->threads, threads) || *threads > 4096))
        return gck_cli_usage_error(cmd, "--threads '%s' is not a count from 0 to 4096", g->threads);
    int rc;
    if ((rc = parse_trans(cmd, "--transa", g->transa, &in->ta)) ||
        (rc = parse_trans(cmd, "--transb", g->transb, &in->tb)))
        return rc;
    return GCK_EXIT_OK;
}
