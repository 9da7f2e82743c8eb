/* A CUDA runtime without a device, for the host tests of the CUDA backends' resource handling
 * (tests/python/test_cuda_budget.py): one "device" whose memory is a block of host memory
 * mapped when the library is loaded (so that, like a GPU's, it is not address space taken in a
 * call), with first-fit allocation, cudaMemGetInfo over it, and a sticky error that the fake
 * cuBLAS can raise. Like a real device under unified virtual addressing, every allocation also
 * takes its size of the process's address space (a PROT_NONE reservation, freed with it), so
 * that an address-space limit refuses device memory too: a real H200's cudaMalloc under
 * RLIMIT_AS does (docs/RESOURCES.md). Thread-safe, as the runtime is. Only the entry points
 * gemmcheck uses (src/backends/cuda/cuda_api.h).
 *
 * GCK_FAKE_CUDA_MEMORY: the device's memory in bytes (default 256 MiB).
 * GCK_FAKE_CUDA_SHARED: a file that holds the device (its allocation table and memory), so that
 * the processes that name it share one device, as the workers of a campaign share a GPU: what
 * one allocates, the others cannot (the file is created, zero-filled, by the first). As a real
 * device's, the memory of a process that ends without freeing it comes back, but only
 * GCK_FAKE_CUDA_REAP_MS milliseconds (default 300) after an allocation or cudaMemGetInfo of
 * another process first finds its owner gone, as a driver tears a dead process's context down
 * after the process has ended; a process that dies inside an allocation leaves the table
 * locked. */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "fake_cuda.h"

enum { MAX_ALLOCS = 4096, ALIGN = 256 };
/* The device's allocations (by address) and their total: in this process's memory, or in the
 * shared file, where all-zero bytes are an empty, unlocked table. */
typedef struct table {
    _Atomic int busy; /* a spin lock: it may be shared between processes */
    size_t used;
    int nalloc;
    struct {
        size_t at, size;
        int pid;           /* the process that made it */
        long long gone_ms; /* when its owner was first found gone (0: not yet) */
    } alloc[MAX_ALLOCS];
} table;
static table *tab;
static char *device;
static size_t capacity;
/* this process's address-space reservations, one per allocation it made */
static struct {
    size_t at;
    void *va;
} mine[MAX_ALLOCS];
static int nmine;
static _Thread_local cudaError_t last = cudaSuccess; /* per thread, as the runtime's */
static _Atomic cudaError_t sticky = cudaSuccess;

static void lock(void) {
    int free_ = 0;
    while (!__atomic_compare_exchange_n(&tab->busy, &free_, 1, false, __ATOMIC_ACQUIRE,
                                        __ATOMIC_RELAXED)) {
        free_ = 0;
        sched_yield();
    }
}
static void unlock(void) { __atomic_store_n(&tab->busy, 0, __ATOMIC_RELEASE); }

__attribute__((constructor)) static void map_device(void) {
    const char *e = getenv("GCK_FAKE_CUDA_MEMORY");
    capacity = e ? strtoull(e, NULL, 0) : (size_t)256 << 20;
    size_t head = (sizeof(table) + 4095) / 4096 * 4096;
    const char *shared = getenv("GCK_FAKE_CUDA_SHARED");
    void *p = MAP_FAILED;
    if (shared && *shared) {
        int fd = open(shared, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (fd >= 0) {
            off_t size = lseek(fd, 0, SEEK_END); /* grown (zero-filled) by the first */
            if (size >= 0 &&
                ((size_t)size >= head + capacity || ftruncate(fd, (off_t)(head + capacity)) == 0))
                p = mmap(NULL, head + capacity, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            close(fd);
        }
    } else {
        p = mmap(NULL, head + capacity, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    }
    if (p == MAP_FAILED) {
        static table none;
        tab = &none;
        device = NULL;
        capacity = 0;
        return;
    }
    tab = p;
    device = (char *)p + head;
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
static long long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Under the table's lock: the allocations of processes that have ended, given back
 * GCK_FAKE_CUDA_REAP_MS after their owner was first found gone. (A zombie still counts as
 * alive: the campaign's supervisor reaps its workers at once.) */
static void reap(void) {
    const char *e = getenv("GCK_FAKE_CUDA_REAP_MS");
    long long delay = e ? atoll(e) : 300, now = now_ms();
    for (int i = 0; i < tab->nalloc;) {
        int pid = tab->alloc[i].pid;
        bool gone = pid > 0 && pid != getpid() && kill(pid, 0) != 0 && errno == ESRCH;
        if (gone && !tab->alloc[i].gone_ms) tab->alloc[i].gone_ms = now ? now : 1;
        if (!gone || now - tab->alloc[i].gone_ms < delay) {
            i++;
            continue;
        }
        tab->used -= tab->alloc[i].size;
        memmove(&tab->alloc[i], &tab->alloc[i + 1],
                (size_t)(tab->nalloc - i - 1) * sizeof tab->alloc[0]);
        tab->nalloc--;
    }
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total) {
    if (sticky != cudaSuccess) return fail(sticky);
    lock();
    reap();
    *free_bytes = capacity - tab->used;
    unlock();
    *total = capacity;
    return cudaSuccess;
}

/* First fit between the allocations, which are kept in address order. */
cudaError_t cudaMalloc(void **p, size_t size) {
    if (sticky != cudaSuccess) return fail(sticky);
    size_t need = (size + ALIGN - 1) / ALIGN * ALIGN, at = 0;
    if (need == 0) need = ALIGN;
    lock();
    reap();
    int i = 0;
    for (; i < tab->nalloc; i++) {
        if (tab->alloc[i].at - at >= need) break;
        at = tab->alloc[i].at + tab->alloc[i].size;
    }
    void *va = MAP_FAILED;
    if (tab->nalloc < MAX_ALLOCS && nmine < MAX_ALLOCS && need <= capacity && at <= capacity - need)
        va = mmap(NULL, need, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (va == MAP_FAILED) {
        unlock();
        return fail(cudaErrorMemoryAllocation);
    }
    memmove(&tab->alloc[i + 1], &tab->alloc[i], (size_t)(tab->nalloc - i) * sizeof tab->alloc[0]);
    tab->alloc[i].at = at;
    tab->alloc[i].size = need;
    tab->alloc[i].pid = (int)getpid();
    tab->alloc[i].gone_ms = 0;
    tab->nalloc++;
    tab->used += need;
    mine[nmine].at = at;
    mine[nmine].va = va;
    nmine++;
    *p = device + at;
    unlock();
    return cudaSuccess;
}
cudaError_t cudaFree(void *p) {
    if (!p) return cudaSuccess;
    lock();
    int i = 0;
    while (i < tab->nalloc && device + tab->alloc[i].at != p) i++;
    bool found = i < tab->nalloc;
    if (found) {
        size_t at = tab->alloc[i].at, size = tab->alloc[i].size;
        tab->used -= size;
        memmove(&tab->alloc[i], &tab->alloc[i + 1],
                (size_t)(tab->nalloc - i - 1) * sizeof tab->alloc[0]);
        tab->nalloc--;
        for (int j = 0; j < nmine; j++)
            if (mine[j].at == at) {
                munmap(mine[j].va, size);
                mine[j] = mine[--nmine];
                break;
            }
    }
    unlock();
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
