/* Whether a CUDA device can be used, and if not, why (the CUDA runtime's own words) (internal: for
 * src/backends/ and fuzz/, src/cli/). */
#ifndef GEMMCHECK_BACKENDS_CUDA_PROBE_H
#define GEMMCHECK_BACKENDS_CUDA_PROBE_H

#include <stdbool.h>
#include <stddef.h>

/** True when at least one CUDA device is usable. Always writes a one-line description into
 *  `what`: runtime and driver versions and the device count, or the reason none is usable. */
bool gck_cuda_probe(char *what, size_t len);

#endif
