/* A user's test: check "my_sgemm", a plain float GEMM, against gemmcheck's exact oracle and its
 * f32 reference GEMM. Exits 0 when my_sgemm is within the classic gamma(K+3) error bound of the
 * exact result and bit-identical to the reference model it claims to follow. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <gemmcheck/gemmcheck.h>

enum { M = 7, N = 5, K = 33 };

/* The kernel under test: column-major, C = alpha*A*B + beta*C in float, k ascending. */
static void my_sgemm(float alpha, const float *A, const float *B, float beta, float *C) {
    for (int j = 0; j < N; j++)
        for (int i = 0; i < M; i++) {
            float acc = 0.0f;
            for (int k = 0; k < K; k++) acc += A[i + k * M] * B[k + j * K];
            C[i + j * M] = alpha * acc + beta * C[i + j * M];
        }
}

int main(void) {
    float A[M * K], B[K * N], C[M * N], mine[M * N], ref[M * N], exact[M * N];
    unsigned s = 12345;
    for (int x = 0; x < M * K; x++)
        A[x] = (float)((s = s * 1103515245u + 12345u) >> 8) * 0x1p-23f - 1.0f;
    for (int x = 0; x < K * N; x++)
        B[x] = (float)((s = s * 1103515245u + 12345u) >> 8) * 0x1p-23f - 1.0f;
    for (int x = 0; x < M * N; x++) C[x] = mine[x] = ref[x] = (float)x * 0.25f;

    gck_case c;
    gck_case_init(&c, M, N, K);
    c.type_a = c.type_b = c.type_c = c.type_d = c.compute = GCK_F32;
    c.scale_type = GCK_F32;
    c.alpha = 1.5;
    c.beta = -0.5;
    c.d_is_c = false; /* the oracle writes its own D */
    char msg[256];
    if (gck_oracle_mpfr(&c, A, B, C, exact, 0, msg, sizeof msg) != GCK_OK) {
        fprintf(stderr, "oracle: %s\n", msg);
        return 2;
    }
    c.d_is_c = true;
    gck_ref_model model = gck_ref_model_default(GCK_F32);
    if (gck_ref_gemm(&c, &model, A, B, ref, ref, msg, sizeof msg) != GCK_OK) {
        fprintf(stderr, "refgemm: %s\n", msg);
        return 2;
    }
    my_sgemm(1.5f, A, B, -0.5f, mine);

    int bad = 0;
    double worst = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            int x = i + j * M;
            double T = 0; /* sum of |a_ik * b_kj| */
            for (int k = 0; k < K; k++) T += fabs((double)A[i + k * M] * B[k + j * K]);
            /* K+3 roundings of at most 2^-24 relative each (the classic gamma bound) */
            double bound = (K + 3) * 0x1p-24 * 1.01 * (1.5 * T + 0.5 * fabs(C[x])) +
                           gck_ulp(exact[x], GCK_F32);
            double err = fabs((double)mine[x] - (double)exact[x]);
            if (err / bound > worst) worst = err / bound;
            if (err > bound) bad++;
            if (mine[x] != ref[x]) bad++;
        }
    printf("consumer: gemmcheck %s, %d elements, worst error/bound %.3f against the exact result, "
           "%s the f32 reference model\n",
           GEMMCHECK_VERSION, M * N, worst, bad ? "DIFFERS FROM" : "bit-identical to");
    return bad ? 1 : 0;
}
