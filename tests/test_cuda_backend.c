/* The cuBLAS/cuBLASLt backends on the host: the support table is the cuBLAS documentation's
 * cublasGemmEx table, the type mappings are right, the argument mapping (including row-major
 * through C^T = op(B)^T op(A)^T and strided batches) computes the same GEMM, and without a
 * device the backends say why and never crash. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "backend_cuda.h"
#include "gemmcheck/refgemm.h"
#include "gemmcheck/runner.h"
#include "testutil.h"

Test(cuda_backend, table_is_the_documented_gemmex_table) {
    static const struct {
        gck_format ab, c, compute;
        cublasComputeType_t ct;
    } doc[] = {
        {GCK_F16, GCK_F16, GCK_F16, CUBLAS_COMPUTE_16F},
        {GCK_BF16, GCK_BF16, GCK_F32, CUBLAS_COMPUTE_32F},
        {GCK_F16, GCK_F16, GCK_F32, CUBLAS_COMPUTE_32F},
        {GCK_BF16, GCK_F32, GCK_F32, CUBLAS_COMPUTE_32F},
        {GCK_F16, GCK_F32, GCK_F32, CUBLAS_COMPUTE_32F},
        {GCK_F32, GCK_F32, GCK_F32, CUBLAS_COMPUTE_32F},
        {GCK_F32, GCK_F32, GCK_F16, CUBLAS_COMPUTE_32F_FAST_16F},
        {GCK_F32, GCK_F32, GCK_BF16, CUBLAS_COMPUTE_32F_FAST_16BF},
        {GCK_F32, GCK_F32, GCK_TF32, CUBLAS_COMPUTE_32F_FAST_TF32},
        {GCK_F64, GCK_F64, GCK_F64, CUBLAS_COMPUTE_64F},
    };
    for (int lt = 0; lt < 2; lt++) {
        const gck_support_row *rows;
        const cublasComputeType_t *cts;
        size_t n = gck_cuda_rows(lt, &rows, &cts);
        cr_assert_eq(n, sizeof doc / sizeof doc[0]);
        for (size_t r = 0; r < n; r++) {
            cr_expect(rows[r].a == doc[r].ab && rows[r].b == doc[r].ab && rows[r].c == doc[r].c &&
                          rows[r].d == doc[r].c && rows[r].compute == doc[r].compute,
                      "row %zu", r);
            cr_expect_eq(cts[r], doc[r].ct, "row %zu", r);
            /* accumulation: f32 for every 32F compute type, inputs rounded to the FAST type */
            if (doc[r].ct == CUBLAS_COMPUTE_32F_FAST_TF32)
                cr_expect(rows[r].model.compute == GCK_F32 &&
                          rows[r].model.input_format == GCK_TF32);
            if (doc[r].ct == CUBLAS_COMPUTE_16F) cr_expect_eq(rows[r].model.compute, GCK_F16);
            /* 32F with a narrower output: reduced-precision reductions are cuBLAS's default,
             * so partial sums and the epilogue may be in the output format */
            if (doc[r].ct == CUBLAS_COMPUTE_32F && (doc[r].c == GCK_F16 || doc[r].c == GCK_BF16))
                cr_expect(rows[r].model.compute == doc[r].c && rows[r].model.epilogue == doc[r].c,
                          "row %zu", r);
            if (doc[r].ct == CUBLAS_COMPUTE_32F && doc[r].c == GCK_F32)
                cr_expect_eq(rows[r].model.compute, GCK_F32, "row %zu", r);
            cr_expect_eq((rows[r].promises & GCK_PROMISE_D_SEPARATE) != 0, lt == 1,
                         "only cuBLASLt takes a separate D");
            cr_expect(rows[r].promises & GCK_PROMISE_BETA0_NO_READ_C);
        }
    }
    cr_expect_eq(gck_cuda_datatype(GCK_F16), CUDA_R_16F);
    cr_expect_eq(gck_cuda_datatype(GCK_BF16), CUDA_R_16BF);
    cr_expect_eq(gck_cuda_datatype(GCK_F32), CUDA_R_32F);
    cr_expect_eq(gck_cuda_datatype(GCK_F64), CUDA_R_64F);
    cr_expect_eq(gck_cuda_scale_type(CUBLAS_COMPUTE_16F), CUDA_R_16F);
    cr_expect_eq(gck_cuda_scale_type(CUBLAS_COMPUTE_32F_FAST_TF32), CUDA_R_32F);
    cr_expect_eq(gck_cuda_scale_type(CUBLAS_COMPUTE_64F), CUDA_R_64F);
}

Test(cuda_backend, the_heuristic_is_told_each_pointers_alignment) {
    static _Alignas(512) char buf[1024];
    for (uintptr_t off = 0; off < 512; off++) {
        uint32_t al = gck_cuda_pointer_alignment(buf + off), want = 256;
        while (want > 1 && off % want != 0) want /= 2;
        cr_assert_eq(al, want, "offset %zu", (size_t)off);
    }
    cr_expect_eq(gck_cuda_pointer_alignment(buf + 6), 2);
    cr_expect_eq(gck_cuda_pointer_alignment(buf + 16), 16);
    cr_expect_eq(gck_cuda_pointer_alignment(buf + 256), 256);
}

/* Run the mapped column-major call with the reference GEMM on the same buffers; it must give
 * the original case's result bit for bit. */
Test(cuda_backend, argument_mapping_computes_the_same_gemm) {
    test_rng r = {test_seed("cuda.map", 17)};
    long checked = 0;
    for (int t = 0; t < 400; t++) {
        gck_case c;
        gck_case_init(&c, rng_range(&r, 1, 9), rng_range(&r, 1, 9), rng_range(&r, 0, 9));
        c.type_a = c.type_b = c.type_c = c.type_d = GCK_F32;
        c.compute = GCK_F32;
        c.order = (t & 1) ? GCK_ROW_MAJOR : GCK_COL_MAJOR;
        c.transa = (t & 2) ? GCK_OP_T : GCK_OP_N;
        c.transb = (t & 4) ? GCK_OP_T : GCK_OP_N;
        c.beta = 0.5;
        int64_t *lds[] = {&c.lda, &c.ldb, &c.ldc};
        for (int x = 0; x < 3; x++) {
            int64_t rows_, cols_;
            gck_case_stored_shape(&c, (gck_operand)x, &rows_, &cols_);
            int64_t need = c.order == GCK_COL_MAJOR ? rows_ : cols_;
            *lds[x] = (need > 1 ? need : 1) + rng_range(&r, 0, 2);
        }
        c.ldd = c.ldc;
        c.batch = (t & 8) ? 2 : 1;
        if (c.batch > 1) {
            c.stride_a = gck_case_footprint(&c, GCK_A) + 1;
            c.stride_b = (t & 16) ? 0 : gck_case_footprint(&c, GCK_B) + 2;
            c.stride_c = c.stride_d = gck_case_footprint(&c, GCK_C) + 3;
        }
        char msg[256];
        cr_assert_eq(gck_case_validate(&c, msg, sizeof msg), GCK_OK, "%s", msg);
        int64_t na = gck_case_extent(&c, GCK_A), nb = gck_case_extent(&c, GCK_B),
                nc = gck_case_extent(&c, GCK_C);
        float *A = alloc_elems(GCK_F32, na), *B = alloc_elems(GCK_F32, nb);
        float *C1 = alloc_elems(GCK_F32, nc), *C2 = alloc_elems(GCK_F32, nc);
        for (int64_t e = 0; e < na; e++) A[e] = (float)random_value(&r, GCK_F32, 1);
        for (int64_t e = 0; e < nb; e++) B[e] = (float)random_value(&r, GCK_F32, 1);
        for (int64_t e = 0; e < nc; e++) C1[e] = C2[e] = (float)random_value(&r, GCK_F32, 1);
        gck_ref_model m = gck_ref_model_default(GCK_F32);
        cr_assert_eq(gck_ref_gemm(&c, &m, A, B, C1, C1, msg, sizeof msg), GCK_OK, "%s", msg);
        gck_cublas_args a = gck_cublas_map(&c);
        gck_case cm;
        gck_case_init(&cm, a.m, a.n, a.k);
        cm.type_a = cm.type_b = cm.type_c = cm.type_d = GCK_F32;
        cm.transa = a.opx == CUBLAS_OP_N ? GCK_OP_N : GCK_OP_T;
        cm.transb = a.opy == CUBLAS_OP_N ? GCK_OP_N : GCK_OP_T;
        cm.lda = a.ldx;
        cm.ldb = a.ldy;
        cm.ldc = cm.ldd = a.ldc;
        cm.beta = c.beta;
        cm.batch = a.batch;
        cm.stride_a = a.stride_x;
        cm.stride_b = a.stride_y;
        cm.stride_c = cm.stride_d = a.stride_c;
        const float *X = a.x == GCK_A ? A : B, *Y = a.y == GCK_A ? A : B;
        cr_assert_eq(gck_ref_gemm(&cm, &m, X, Y, C2, C2, msg, sizeof msg), GCK_OK,
                     "mapped case invalid: %s", msg);
        cr_assert_eq(memcmp(C1, C2, sizeof(float) * (size_t)nc), 0, "case %d differs", t);
        checked++;
        free(A);
        free(B);
        free(C1);
        free(C2);
    }
    fprintf(stderr, "[cuda map] %ld cases: mapped column-major calls equal the original\n",
            checked);
}

Test(cuda_backend, without_a_device_it_says_why_and_never_crashes) {
    const char *names[] = {"cublas", "cublaslt"};
    for (int i = 0; i < 2; i++) {
        gck_backend be;
        char msg[512], why[512];
        cr_assert_eq(gck_backend_open(&be, names[i], msg, sizeof msg), GCK_OK, "%s", msg);
        bool ok = be.ops->available(be.state, why, sizeof why);
        if (ok) {
            gck_backend_close(&be);
            cr_skip_test("a CUDA device is present: %s", why);
        }
        cr_expect(strncmp(why, "unavailable: ", 13) == 0 && strlen(why) > 20, "%s", why);
        cr_expect(strstr(why, "CUDA runtime") != NULL, "%s", why);
        /* a call anyway: an error status with the reason, not a crash */
        gck_case c;
        gck_case_init(&c, 2, 2, 2);
        c.type_a = c.type_b = c.type_c = c.type_d = c.compute = GCK_F32;
        c.scale_type = GCK_F32;
        float A[4] = {1, 2, 3, 4}, B[4] = {1, 0, 0, 1}, C[4] = {0};
        gck_operands ops = {A, B, C, C, {A, B, C, C}, {16, 16, 16, 16}};
        const gck_support_row *row = gck_backend_find_row(&be, &c, msg, sizeof msg);
        cr_assert_not_null(row, "%s", msg);
        cr_expect_eq(be.ops->call(be.state, &c, row, &ops, msg, sizeof msg), GCK_CALL_ERROR);
        cr_expect(strstr(msg, "unavailable") != NULL, "%s", msg);
        gck_backend_close(&be);
    }
    char cmd[4096], out[4096];
    snprintf(
        cmd, sizeof cmd,
        "'%s' repro --backend cublas 'gck1 m=2 n=2 k=2 order=col ta=N tb=N "
        "types=f32,f32,f32,f32 compute=f32 scale=f32 alpha=1 beta=0 lda=2 ldb=2 ldc=2 ldd=2 "
        "d=c batch=1 sa=0 sb=0 sc=0 sd=0 off=0,0,0,0 vab=unif vc=unif sp=0 cnan=0 seed=1' 2>&1",
        GCK_BINARY);
    int st = run_shell(cmd, out, sizeof out);
    cr_expect_eq(st, 2, "exit %d: %s", st, out);
    cr_expect(strstr(out, "unavailable: ") != NULL, "%s", out);
}
