/* CUDA availability when gemmcheck was built without the CUDA toolkit. */
#include "cuda_probe.h"

#include <stdio.h>

bool gck_cuda_probe(char *what, size_t len) {
    snprintf(what, len,
             "unavailable: gemmcheck was built without CUDA (GEMMCHECK_CUDA=OFF or "
             "no toolkit found at configure time)");
    return false;
}
