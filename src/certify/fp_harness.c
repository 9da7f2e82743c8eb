/* The probes' harness (fp_internal.h): a property added to a fingerprint, the row's case of a
 * shape, crafted values placed into an operand of any layout, and one call of the backend that
 * reads D back. */
#include "format_internal.h"
#include "fp_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fpenv.h"
#include "gemmcheck/format.h"

void gck_fp_add(gck_fingerprint *fp, const char *name, const char *probe, const char *fmt, ...) {
    if (fp->count >= GCK_FP_MAX_PROPS) return;
    gck_fp_prop *p = &fp->props[fp->count++];
    snprintf(p->name, sizeof p->name, "%s", name);
    snprintf(p->probe, sizeof p->probe, "%s", probe);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->value, sizeof p->value, fmt, ap);
    va_end(ap);
}

/* ---- one call ------------------------------------------------------------------------------ */

gck_case gck_fp_row_case(const gck_support_row *row, int64_t m, int64_t n, int64_t k) {
    gck_case c;
    gck_case_init(&c, m, n, k);
    c.type_a = row->a;
    c.type_b = row->b;
    c.type_c = row->c;
    c.type_d = row->d;
    c.compute = row->compute;
    c.scale_type = (row->promises & GCK_PROMISE_SCALE_F64) ? GCK_F64 : GCK_F32;
    c.d_is_c = !(row->promises & GCK_PROMISE_D_SEPARATE);
    c.lda = m;
    c.ldb = k;
    c.ldc = c.ldd = m;
    c.alpha = 1;
    c.beta = 0;
    return c;
}

/* Element (r, s) of the logical matrix x of c (rows r < nr, columns s < ns; column-major in
 * v, v NULL: zeros) stored into its buffer, or (load) read from it into v. */
bool gck_fp_place(const gck_case *c, gck_operand x, void *buf, double *v, int64_t nr, int64_t ns,
                  bool load) {
    int64_t rs, cs, st = gck_case_stride(c, x);
    gck_case_op_strides(c, x, &rs, &cs);
    gck_format t = gck_case_type(c, x);
    bool same = true; /* every batch member gets the same values; loaded, they must agree */
    for (int64_t b = 0; b < c->batch; b++)
        for (int64_t q = 0; q < ns; q++)
            for (int64_t r = 0; r < nr; r++) {
                int64_t e = b * st + r * rs + q * cs;
                double got = load ? gck_fmt_load(buf, t, e) : 0;
                if (load && b == 0) v[r + q * nr] = got;
                if (load && b > 0) same &= !memcmp(&got, &v[r + q * nr], sizeof got);
                if (!load) gck_fmt_store(buf, t, e, v ? v[r + q * nr] : 0.0);
            }
    return same;
}

/* One call of c as given (fp_internal.h's gck_fp_run without the tile). */
static bool run_once(gck_fp_probe *pr, const gck_case *c, const double *av, const double *bv,
                     const double *cv, double *d) {
    char msg[256];
    if (gck_case_validate(c, msg, sizeof msg) != GCK_OK) {
        snprintf(pr->why, sizeof pr->why, "probe case invalid: %.200s", msg);
        return false;
    }
    int64_t na = gck_case_extent(c, GCK_A), nb = gck_case_extent(c, GCK_B),
            nc = gck_case_extent(c, GCK_C);
    void *a = calloc((size_t)na, 8), *b = calloc((size_t)nb, 8), *cc = calloc((size_t)nc, 8),
         *dd = c->d_is_c ? cc : calloc((size_t)gck_case_extent(c, GCK_D), 8);
    bool ok = a && b && cc && dd;
    if (ok) {
        gck_fp_place(c, GCK_A, a, (double *)av, c->m, c->k, false);
        gck_fp_place(c, GCK_B, b, (double *)bv, c->k, c->n, false);
        gck_fp_place(c, GCK_C, cc, (double *)cv, c->m, c->n, false);
    }
    if (!ok) snprintf(pr->why, sizeof pr->why, "out of memory for a %s probe", "GEMM");
    if (ok) {
        gck_operands ops = {a,
                            b,
                            cc,
                            dd,
                            {a, b, cc, dd},
                            {(size_t)na * 8, (size_t)nb * 8, (size_t)nc * 8,
                             (size_t)gck_case_extent(c, GCK_D) * 8}};
        gck_fpenv env;
        gck_fpenv_save(&env);
        msg[0] = '\0';
        gck_call_status st = pr->be->ops->call(pr->be->state, c, pr->row, &ops, msg, sizeof msg);
        gck_fpenv_restore(&env, NULL, 0);
        if (st != GCK_CALL_OK) {
            snprintf(pr->why, sizeof pr->why, "the call failed (%s): %.150s",
                     st == GCK_CALL_NOT_SUPPORTED ? "not supported" : "error", msg);
            ok = false;
        }
        if (ok && !gck_fp_place(c, GCK_D, dd, d, c->m, c->n, true)) {
            snprintf(pr->why, sizeof pr->why, "the batch members' results differ (same inputs)");
            ok = false;
        }
    }
    free(a);
    free(b);
    if (dd != cc) free(dd);
    free(cc);
    return ok;
}

/* The probe c padded to the tile shape (fp_internal.h): op(A) m x k becomes M x K with row r a
 * copy of row r mod m and zeros past k, op(B) k x n becomes K x N with column q a copy of
 * column q mod n, C likewise; D's copies of D(i, j) compared with it. */
static bool run_tiled(gck_fp_probe *pr, const gck_case *c, const double *av, const double *bv,
                      const double *cv, double *d) {
    int64_t m = c->m, n = c->n, k = c->k, t = pr->tile;
    int64_t M = m > t ? m : t, N = n > t ? n : t, K = k > GCK_FP_TILE_K ? k : GCK_FP_TILE_K;
    gck_case p = *c;
    p.m = M, p.n = N, p.k = K, p.lda = M, p.ldb = K, p.ldc = p.ldd = M;
    p.stride_a = p.stride_b = p.stride_c = p.stride_d = 0;
    double *A = calloc((size_t)(M * K), sizeof *A), *B = calloc((size_t)(K * N), sizeof *B),
           *C = cv ? malloc((size_t)(M * N) * sizeof *C) : NULL,
           *D = malloc((size_t)(M * N) * sizeof *D);
    bool ok = A && B && D && (C || !cv);
    if (!ok) snprintf(pr->why, sizeof pr->why, "out of memory for a tile probe");
    for (int64_t q = 0; ok && q < K; q++)
        for (int64_t r = 0; q < k && r < M; r++) A[r + q * M] = av[r % m + q * m];
    for (int64_t q = 0; ok && q < N; q++)
        for (int64_t r = 0; r < k; r++) B[r + q * K] = bv[r + (q % n) * k];
    for (int64_t q = 0; ok && C && q < N; q++)
        for (int64_t r = 0; r < M; r++) C[r + q * M] = cv[r % m + (q % n) * m];
    ok = ok && run_once(pr, &p, A, B, C, D);
    int64_t differ = 0;
    for (int64_t q = 0; ok && q < N; q++)
        for (int64_t r = 0; r < M; r++)
            differ += memcmp(&D[r + q * M], &D[r % m + (q % n) * M], sizeof *D) != 0;
    for (int64_t q = 0; ok && q < n; q++)
        for (int64_t r = 0; r < m; r++) d[r + q * m] = D[r + q * M];
    pr->copies += ok ? M * N - m * n : 0;
    pr->differ += differ;
    free(A);
    free(B);
    free(C);
    free(D);
    return ok;
}

bool gck_fp_run(gck_fp_probe *pr, const gck_case *c, const double *av, const double *bv,
                const double *cv, double *d) {
    bool plain = c->order == GCK_COL_MAJOR && c->transa == GCK_OP_N && c->transb == GCK_OP_N &&
                 c->batch == 1 && c->m > 0 && c->n > 0;
    if (pr->tile > 0 && plain) return run_tiled(pr, c, av, bv, cv, d);
    return run_once(pr, c, av, bv, cv, d);
}

const gck_format_info *gck_fp_fmt(gck_format f) { return gck_format_get(f); }

bool gck_fp_holds(gck_format f, double x) { return isfinite(x) && gck_fmt_round_to(x, f) == x; }
