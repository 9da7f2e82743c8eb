/* The portable micro-kernels: plain C, one fused multiply-add per element and step (fmaf/fma are
 * correctly rounded, so this path is the declared model itself). The strided kernels read the
 * operands where they are stored; the packed ones are the same kernels on packed slivers. */
#include <math.h>

#include "kernels_internal.h"

enum { MR = 4, NR = 4 };

static void skernel_f32(int64_t kc, const float *a, int64_t as, int64_t pf, const float *b,
                        int64_t bs, int64_t bj, float *w, int64_t ldw, bool first) {
    (void)pf; /* no prefetch in C */
    float acc[NR][MR];
    for (int j = 0; j < NR; j++)
        for (int i = 0; i < MR; i++) acc[j][i] = first ? 0.0f : w[i + j * ldw];
    for (int64_t k = 0; k < kc; k++, a += as, b += bs)
        for (int j = 0; j < NR; j++)
            for (int i = 0; i < MR; i++) acc[j][i] = fmaf(a[i], b[j * bj], acc[j][i]);
    for (int j = 0; j < NR; j++)
        for (int i = 0; i < MR; i++) w[i + j * ldw] = acc[j][i];
}

static void skernel_f64(int64_t kc, const double *a, int64_t as, int64_t pf, const double *b,
                        int64_t bs, int64_t bj, double *w, int64_t ldw, bool first) {
    (void)pf;
    double acc[NR][MR];
    for (int j = 0; j < NR; j++)
        for (int i = 0; i < MR; i++) acc[j][i] = first ? 0.0 : w[i + j * ldw];
    for (int64_t k = 0; k < kc; k++, a += as, b += bs)
        for (int j = 0; j < NR; j++)
            for (int i = 0; i < MR; i++) acc[j][i] = fma(a[i], b[j * bj], acc[j][i]);
    for (int j = 0; j < NR; j++)
        for (int i = 0; i < MR; i++) w[i + j * ldw] = acc[j][i];
}

static void ukernel_f32(int64_t kc, const float *a, const float *b, float *w, int64_t ldw,
                        bool first) {
    skernel_f32(kc, a, MR, 0, b, NR, 1, w, ldw, first);
}

static void ukernel_f64(int64_t kc, const double *a, const double *b, double *w, int64_t ldw,
                        bool first) {
    skernel_f64(kc, a, MR, 0, b, NR, 1, w, ldw, first);
}

// clang-format off
const gck_kpath_ops gck_kpath_portable_ops = {
    .mr32 = MR, .nr32 = NR, .mr64 = MR, .nr64 = NR, .f32 = ukernel_f32, .f64 = ukernel_f64,
    .s32 = {{MR, NR, skernel_f32}}, .s64 = {{MR, NR, skernel_f64}}};
// clang-format on
