/* The caller's floating-point environment around a backend call (internal): rounding mode,
 * exception traps, and on x86 the MXCSR controls (flush-to-zero, denormals-are-zero). A backend
 * call must return with them as it found them; gemmcheck restores them after every call, so
 * that a backend that leaves them changed cannot bend gemmcheck's own arithmetic, and reports
 * the change. The sticky exception flags are not part of it (raising them is every GEMM's
 * right). */
#ifndef GEMMCHECK_FPENV_H
#define GEMMCHECK_FPENV_H

#include <fenv.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct gck_fpenv {
    fenv_t env;
    unsigned controls; /* C's rounding mode and enabled traps */
    unsigned mxcsr;    /* x86: the SSE control and status register (0 elsewhere) */
} gck_fpenv;

/** Save the calling thread's environment. */
void gck_fpenv_save(gck_fpenv *e);
/** Restore it; returns true when the controls had changed since the save, with what changed
 *  ("rounding toward zero, flush-to-zero on", ...) in `what` (may be NULL). */
bool gck_fpenv_restore(const gck_fpenv *e, char *what, size_t len);

#endif
