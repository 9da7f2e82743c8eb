/* libFuzzer harness: the strict .npy reader must refuse or accept any byte string without
 * crashing, leaking or reading out of bounds, and what it accepts must be consistent. */
#include <stdint.h>
#include <stdlib.h>

#include "npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gck_npy a;
    char msg[256];
    if (gck_npy_parse(data, size, &a, msg, sizeof msg) == GCK_OK) {
        /* an accepted file holds exactly count elements of its dtype */
        size_t bytes = (size_t)a.count * (size_t)gck_npy_itemsize(a.dtype);
        if (bytes > size || a.ndim < 0 || a.ndim > GCK_NPY_MAX_DIMS) abort();
        volatile unsigned char sink = 0;
        for (size_t i = 0; i < bytes; i++) sink ^= ((const unsigned char *)a.data)[i];
        (void)sink;
    }
    gck_npy_free(&a);
    return 0;
}
