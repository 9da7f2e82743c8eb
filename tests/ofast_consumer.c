/* A user's test built with -Ofast: GCC links crtfastmath.o, whose start-up code turns on
 * flush-to-zero and denormals-are-zero for the process (MXCSR bits 15 and 6). gemmcheck's
 * results must be those of the default environment all the same (docs/SEMANTICS.md): here a
 * product whose every element is an f32 subnormal, by gck_gemm, the exact oracle and the
 * reference GEMM, and gck_round_to. Values are compared as bits: this program's own arithmetic
 * reads subnormals as zero. Exit 0 when everything matches. */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gemmcheck/gemmcheck.h"

static uint32_t bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

int main(void) {
    unsigned csr = _mm_getcsr();
    if ((csr & 0x8040u) != 0x8040u) {
        printf("ofast: MXCSR is 0x%04x at start: -Ofast did not turn on FTZ and DAZ, so this "
               "test would prove nothing\n",
               csr);
        return 1;
    }
    /* op(A) = 2^-70 everywhere, op(B)(k, j) = 2^-(70+k+j): D(i, j) = 2^-(140+j) (1 + 1/2), whose
     * bits are 0x300 >> j (the f32 subnormal grid is 2^-149) */
    float A[4] = {0x1p-70f, 0x1p-70f, 0x1p-70f, 0x1p-70f};
    float B[4] = {0x1p-70f, 0x1p-71f, 0x1p-71f, 0x1p-72f};
    const uint32_t want[4] = {0x300, 0x300, 0x180, 0x180};
    gck_case c;
    gck_case_init(&c, 2, 2, 2);
    c.type_a = c.type_b = c.type_c = c.type_d = c.compute = c.scale_type = GCK_F32;
    c.beta = 0;
    c.d_is_c = false;
    char msg[256];
    float D[3][4];
    gck_ref_model m = gck_ref_model_default(GCK_F32);
    int failed = gck_gemm(&c, A, B, NULL, D[0], NULL, msg, sizeof msg) != GCK_GEMM_OK;
    failed |= gck_oracle_exact(&c, A, B, NULL, D[1], 1, msg, sizeof msg) != GCK_OK;
    failed |= gck_ref_gemm(&c, &m, A, B, NULL, D[2], msg, sizeof msg) != GCK_OK;
    const char *names[3] = {"gck_gemm", "gck_oracle_exact", "gck_ref_gemm"};
    for (int f = 0; f < 3; f++)
        for (int e = 0; e < 4; e++)
            if (bits(D[f][e]) != want[e]) {
                printf("ofast: %s element %d has bits 0x%08x, not 0x%08x\n", names[f], e,
                       (unsigned)bits(D[f][e]), (unsigned)want[e]);
                failed = 1;
            }
    double r = gck_round_to(0x1.8p-140, GCK_F32);
    uint64_t rb;
    memcpy(&rb, &r, sizeof rb);
    if (rb != UINT64_C(0x3738000000000000)) {
        printf("ofast: gck_round_to(0x1.8p-140, f32) has bits 0x%016llx\n", (unsigned long long)rb);
        failed = 1;
    }
    if ((_mm_getcsr() & 0xffc0u) != (csr & 0xffc0u)) {
        printf("ofast: MXCSR came back as 0x%04x\n", _mm_getcsr());
        failed = 1;
    }
    printf("ofast: MXCSR 0x%04x (FTZ and DAZ on, as -Ofast sets them): 3 GEMMs x 4 subnormal "
           "elements and gck_round_to %s the default environment's bits\n",
           csr, failed ? "DIFFER FROM" : "equal to");
    return failed;
}
