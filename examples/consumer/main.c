/* A user's test: check "my_sgemm", a plain float GEMM, with gemmcheck's checker (every element
 * against the exact result, within the hard bound of the arithmetic it claims: f32 operations,
 * k ascending, no FMA) and against the f32 reference GEMM of that model, bit for bit. Exits 0
 * when both hold. */
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
    if (gck_oracle_exact(&c, A, B, C, exact, 0, msg, sizeof msg) != GCK_OK) {
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

    /* what my_sgemm claims, as a support-table row: the reference model's arithmetic */
    gck_support_row row = {GCK_F32,
                           GCK_F32,
                           GCK_F32,
                           GCK_F32,
                           GCK_F32,
                           gck_ref_model_declared(&model),
                           GCK_PROMISE_BETA0_NO_READ_C | GCK_PROMISE_D_IN_PLACE |
                               GCK_PROMISE_SCALE_F32,
                           "my_sgemm"};
    gck_check_options opt = {.threads = 1, .oracle = GCK_ORACLE_EXACT};
    gck_check_result r;
    if (gck_check_values(&c, &row, &opt, A, B, C, mine, &r, msg, sizeof msg) != GCK_OK) {
        fprintf(stderr, "check: %s\n", msg);
        return 2;
    }
    int64_t failing = 0, differ = 0;
    for (int k = 0; k < GCK_KIND_COUNT; k++) failing += r.count[k];
    for (int x = 0; x < M * N; x++) differ += mine[x] != ref[x];
    printf("consumer: gemmcheck %s, %lld elements checked, %lld failing, worst error/bound %.3f; "
           "%lld differ from the f32 reference model\n",
           GEMMCHECK_VERSION, (long long)r.elements, (long long)failing, r.max_ratio.ratio,
           (long long)differ);
    for (int k = 0; k < GCK_KIND_COUNT; k++)
        if (r.count[k])
            printf("  %s at (%lld, %lld): got %.9g, exact %.9g, error %.3g, bound %.3g (%s)\n",
                   gck_kind_name((gck_kind)k), (long long)r.worst[k].i, (long long)r.worst[k].j,
                   r.worst[k].got, r.worst[k].expected, r.worst[k].error, r.worst[k].bound,
                   r.worst[k].rule);
    return failing || differ ? 1 : 0;
}
