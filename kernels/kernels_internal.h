/* Internals of gemmcheck's GEMM (kernels/): blocking, packing and micro-kernels. */
#ifndef GEMMCHECK_KERNELS_INTERNAL_H
#define GEMMCHECK_KERNELS_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "gemmcheck/kernels.h"

/** A micro-kernel: the MR x NR tile W (column-major, leading dimension ldw, compute type) takes
 *  the products of kc steps of the packed slivers a (MR values per step) and b (NR values per
 *  step), one fused multiply-add per element and step, k ascending; with `first` the tile starts
 *  at +0 instead of its stored values. */
typedef void (*gck_ukernel_f32)(int64_t kc, const float *a, const float *b, float *w, int64_t ldw,
                                bool first);
typedef void (*gck_ukernel_f64)(int64_t kc, const double *a, const double *b, double *w,
                                int64_t ldw, bool first);

/** A path's micro-kernels and their register tile. */
typedef struct gck_kpath_ops {
    int mr32, nr32, mr64, nr64;
    gck_ukernel_f32 f32;
    gck_ukernel_f64 f64;
} gck_kpath_ops;

/** The operations of a supported path (GCK_KPATH_AUTO not allowed). */
const gck_kpath_ops *gck_kpath_ops_of(gck_kpath p);

/** The portable micro-kernels (C, fmaf/fma), and the x86-64 ones (ukernel_x86.c). */
extern const gck_kpath_ops gck_kpath_portable_ops;
extern const gck_kpath_ops gck_kpath_avx2_ops;
extern const gck_kpath_ops gck_kpath_avx512_ops;

/** Whether the CPU (and the OS) can run a SIMD path; if not, *missing names what it lacks. */
bool gck_kpath_cpu_has(gck_kpath p, const char **missing);

/** Cache blocking: rows of A per packed block (MC), steps of k per block (KC), columns of B per
 *  packed panel (NC), from the cache sizes the machine reports. */
typedef struct gck_blocking {
    int64_t mc, kc, nc;
} gck_blocking;

gck_blocking gck_kernels_blocking(int elem_bytes, int mr, int nr);

#endif
