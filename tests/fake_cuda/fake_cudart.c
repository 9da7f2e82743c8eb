/* A CUDA runtime without a device, for the host tests of the CUDA backends' resource handling
 * (tests/python/test_cuda_budget.py): one "device" whose memory is a block of host memory
 * mapped when the library is loaded (so that, like a GPU's, it is not address space taken in a
 * call), with first-fit allocation, cudaMemGetInfo over it, and a sticky error that the fake
 * cuBLAS can raise. Thread-safe, as the runtime is. Only the entry points gemmcheck uses
 * (src/backends/cuda/cuda_api.h).
 *
 * GCK_FAKE_CUDA_MEMORY: the device's memory in bytes (default 256 MiB). */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "fake_cuda.h"

enum { MAX_ALLOCS = 4096, ALIGN = 256 };
static char *device;
static size_t capacity, used;
static struct { size_t at, size; } alloc[MAX_ALLOCS]; /* by address */
static int nalloc;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* the allocations */
static _Thread_local cudaError_t last = cudaSuccess;     /* per thread, as the runtime's */
static _Atomic cudaError_t sticky = cudaSuccess;

__attribute__((constructor)) static void map_device(void) {
    const char *e = getenv("GCK_FAKE_CUDA_MEMORY");
    capacity = e ? strtoull(e, NULL, 0) : (size_t)256 << 20;
    void *p = mmap(NULL, capacity, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    device = p == MAP_FAILED ? NULL : p;
    if (!device) capacity = 0;
}

static cudaError_t fail(cudaError_t e) {
    last = e;
    return e;
}

void gck_fake_cuda_fault(void) { sticky = cudaErrorIllegalAddress; }

cudaError_t cudaRuntimeGetVersion(int *v) {
    *v = CUDART_VERSION;
    return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int *v) {
    *v = CUDART_VERSION;
    return cudaSuccess;
}
cudaError_t cudaGetDeviceCount(int *n) {
    *n = device ? 1 : 0;
    return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int dev) {
    if (dev != 0) return fail(cudaErrorInvalidDevice);
    memset(p, 0, sizeof *p);
    strcpy(p->name, "gemmcheck's fake device (tests/fake_cuda)");
    p->major = 9;
    p->totalGlobalMem = capacity;
    return cudaSuccess;
}
const char *cudaGetErrorString(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorInvalidValue: return "invalid argument";
    default: return "unknown error";
    }
}
const char *cudaGetErrorName(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    default: return "cudaErrorUnknown";
    }
}
cudaError_t cudaGetLastError(void) {
    cudaError_t e = sticky != cudaSuccess ? sticky : last;
    last = cudaSuccess;
    return e;
}
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total) {
    if (sticky != cudaSuccess) return fail(sticky);
    pthread_mutex_lock(&lock);
    *free_bytes = capacity - used;
    pthread_mutex_unlock(&lock);
    *total = capacity;
    return cudaSuccess;
}

/* First fit between the allocations, which are kept in address order. */
cudaError_t cudaMalloc(void **p, size_t size) {
    if (sticky != cudaSuccess) return fail(sticky);
    size_t need = (size + ALIGN - 1) / ALIGN * ALIGN, at = 0;
    if (need == 0) need = ALIGN;
    pthread_mutex_lock(&lock);
    int i = 0;
    for (; i < nalloc; i++) {
        if (alloc[i].at - at >= need) break;
        at = alloc[i].at + alloc[i].size;
    }
    if (nalloc == MAX_ALLOCS || need > capacity || at > capacity - need) {
        pthread_mutex_unlock(&lock);
        return fail(cudaErrorMemoryAllocation);
    }
    memmove(&alloc[i + 1], &alloc[i], (size_t)(nalloc - i) * sizeof alloc[0]);
    alloc[i].at = at;
    alloc[i].size = need;
    nalloc++;
    used += need;
    *p = device + at;
    pthread_mutex_unlock(&lock);
    return cudaSuccess;
}
cudaError_t cudaFree(void *p) {
    if (!p) return cudaSuccess;
    pthread_mutex_lock(&lock);
    int i = 0;
    while (i < nalloc && device + alloc[i].at != p) i++;
    bool found = i < nalloc;
    if (found) {
        used -= alloc[i].size;
        memmove(&alloc[i], &alloc[i + 1], (size_t)(nalloc - i - 1) * sizeof alloc[0]);
        nalloc--;
    }
    pthread_mutex_unlock(&lock);
    return found ? cudaSuccess : fail(cudaErrorInvalidValue);
}
cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind) {
    (void)kind;
    if (sticky != cudaSuccess) return fail(sticky);
    memcpy(dst, src, n);
    return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void) {
    return sticky != cudaSuccess ? fail(sticky) : cudaSuccess;
}
