/* The portable micro-kernels: plain C, one fused multiply-add per element and step (fmaf/fma are
 * correctly rounded, so this path is the declared model itself). */
#include <math.h>

#include "kernels_internal.h"

enum { MR = 4, NR = 4 };

static void ukernel_f32(int64_t kc, const float *a, const float *b, float *w, int64_t ldw,
                        bool first) {
    float acc[NR][MR];
    for (int j = 0; j < NR; j++)
        for (int i = 0; i < MR; i++) acc[j][i] = first ? 0.0f : w[i + j * ldw];
    for (int64_t k = 0; k < kc; k++, a += MR, b += NR)
        for (int j = 0; j < NR; j++)
            for (int i = 0; i < MR; i++) acc[j][i] = fmaf(a[i], b[j], acc[j][i]);
    for (int j = 0; j < NR; j++)
        for (int i = 0; i < MR; i++) w[i + j * ldw] = acc[j][i];
}

static void ukernel_f64(int64_t kc, const double *a, const double *b, double *w, int64_t ldw,
                        bool first) {
    double acc[NR][MR];
    for (int j = 0; j < NR; j++)
        for (int i = 0; i < MR; i++) acc[j][i] = first ? 0.0 : w[i + j * ldw];
    for (int64_t k = 0; k < kc; k++, a += MR, b += NR)
        for (int j = 0; j < NR; j++)
            for (int i = 0; i < MR; i++) acc[j][i] = fma(a[i], b[j], acc[j][i]);
    for (int j = 0; j < NR; j++)
        for (int i = 0; i < MR; i++) w[i + j * ldw] = acc[j][i];
}

const gck_kpath_ops gck_kpath_portable_ops = {MR, NR,          MR,          NR,   0,
                                              0,  ukernel_f32, ukernel_f64, NULL, false};
