/* CUDA availability through the CUDA runtime API, loaded on demand (cuda_api.h). Built only when
 * the toolkit's headers are found. */
#include "cuda_probe.h"

#include <stdio.h>

#include "cuda_api.h"

bool gck_cuda_probe(char *what, size_t len) {
    char why[800];
    const gck_cuda_api *cu = gck_cuda_api_get(false, why, sizeof why);
    if (!cu) {
        snprintf(what, len, "unavailable: %s", why);
        return false;
    }
    int rt = 0, drv = 0, count = 0;
    cu->cudaRuntimeGetVersion(&rt);
    cudaError_t derr = cu->cudaDriverGetVersion(&drv);
    cudaError_t err = cu->cudaGetDeviceCount(&count);
    char versions[96];
    if (derr == cudaSuccess && drv)
        snprintf(versions, sizeof versions, "CUDA runtime %d.%d, driver %d.%d", rt / 1000,
                 (rt % 1000) / 10, drv / 1000, (drv % 1000) / 10);
    else
        snprintf(versions, sizeof versions, "CUDA runtime %d.%d, no driver", rt / 1000,
                 (rt % 1000) / 10);
    if (err != cudaSuccess) {
        snprintf(what, len, "unavailable: %s (%s; %s)", cu->cudaGetErrorString(err),
                 cu->cudaGetErrorName(err), versions);
        return false;
    }
    if (count == 0) {
        snprintf(what, len, "unavailable: no CUDA device (%s)", versions);
        return false;
    }
    snprintf(what, len, "%d device%s (%s)", count, count == 1 ? "" : "s", versions);
    return true;
}
