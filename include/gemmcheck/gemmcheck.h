/* gemmcheck — public interface: number formats, the GEMM case model, the MPFR oracle, the
 * reference GEMMs, backends, the checker, specs and the runner. Include this one header; link
 * gemmcheck::gemmcheck (CMake) or `pkg-config --libs gemmcheck`.
 *
 * Every function that computes with floating point does so in the default environment (round to
 * nearest, no flush-to-zero or denormals-are-zero, exceptions masked), and reads and writes
 * numbers as text in the "C" locale, whatever the calling thread's; it returns with the caller's
 * controls and locale unchanged (docs/SEMANTICS.md). */
#ifndef GEMMCHECK_GEMMCHECK_H
#define GEMMCHECK_GEMMCHECK_H

#include "gemmcheck/backend.h"
#include "gemmcheck/case.h"
#include "gemmcheck/checker.h"
#include "gemmcheck/ffi.h"
#include "gemmcheck/format.h"
#include "gemmcheck/kernels.h"
#include "gemmcheck/model.h"
#include "gemmcheck/oracle.h"
#include "gemmcheck/refgemm.h"
#include "gemmcheck/runner.h"
#include "gemmcheck/spec.h"
#include "gemmcheck/version.h"

#endif
