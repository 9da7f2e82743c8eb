/* gemmcheck — public interface: number formats, the GEMM case model, the MPFR oracle and the
 * reference GEMMs. Include this one header; link gemmcheck::gemmcheck (CMake) or
 * `pkg-config --libs gemmcheck`. */
#ifndef GEMMCHECK_GEMMCHECK_H
#define GEMMCHECK_GEMMCHECK_H

#include "gemmcheck/case.h"
#include "gemmcheck/format.h"
#include "gemmcheck/oracle.h"
#include "gemmcheck/refgemm.h"
#include "gemmcheck/version.h"

#endif
