/* Resource limits for one backend call (call_limits.h). */
#define _GNU_SOURCE
#include "call_limits.h"

#include "call_budget.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* Threads a limited call may still start (-1: no limit in force), and how many it was refused. */
static _Atomic int room = -1;
static _Atomic int refused;

bool gck_limits_thread_admit(void) {
    int left = atomic_load(&room);
    while (left >= 0) {
        if (left == 0) {
            atomic_fetch_add(&refused, 1);
            return false;
        }
        if (atomic_compare_exchange_weak(&room, &left, left - 1)) break;
    }
    return true;
}

/* Whether the pthread_create that libraries bind to is in the object this code is in: the
 * gemmcheck executable, whose pthread_create asks gck_limits_thread_admit (src/cli/thread_gate.c).
 * In libgemmcheck.so, or a program that does not define one, it is the C library's. */
static bool ours_comes_first(void) {
    Dl_info first, self;
    void *f = dlsym(RTLD_DEFAULT, "pthread_create");
    return f && dladdr(f, &first) && dladdr((void *)ours_comes_first, &self) &&
           first.dli_fbase == self.dli_fbase;
}

/* Whether this build runs under AddressSanitizer, whose allocator reserves and maps its own
 * address space: under an address-space limit it fails, dumps the process's mappings and can
 * hang, whatever the library does. */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

bool gck_limits_enforceable(int64_t memory, int threads, char *why, size_t len) {
    if (memory < 0) {
        snprintf(why, len, "a memory budget of %lld bytes is negative", (long long)memory);
        return false;
    }
    if (memory > 0 && UNDER_ASAN) {
        snprintf(why, len,
                 "a memory budget cannot be enforced in a build with AddressSanitizer (its "
                 "allocator needs address space of its own)");
        return false;
    }
    if (threads >= 0 && !ours_comes_first()) {
        snprintf(why, len,
                 "a thread limit cannot be enforced in this process: the pthread_create that "
                 "libraries bind to is not gemmcheck's (only the gemmcheck executable defines "
                 "one, and a preloaded library may come first)");
        return false;
    }
    return true;
}

void gck_limits_begin(int64_t memory, int threads, gck_limits_saved *sv) {
    memset(sv, 0, sizeof *sv);
    if (memory > 0) {
        gck_call_budget_begin(memory);
        sv->memory = true;
    }
    if (threads >= 0) {
        atomic_store(&refused, 0);
        atomic_store(&room, threads);
        sv->threads = true;
    }
}

int gck_limits_end(gck_limits_saved *sv) {
    if (sv->memory) gck_call_budget_end();
    if (!sv->threads) return 0;
    atomic_store(&room, -1);
    return atomic_exchange(&refused, 0);
}

void gck_limits_text(int64_t mem_budget, bool limit_threads, int max_threads, char *buf,
                     size_t len) {
    char mem[64] = "", thr[64] = "";
    if (mem_budget > 0)
        snprintf(mem, sizeof mem, "a memory budget of %lld bytes", (long long)mem_budget);
    if (limit_threads)
        snprintf(thr, sizeof thr, "a limit of %d thread%s", max_threads,
                 max_threads == 1 ? "" : "s");
    snprintf(buf, len, "%s%s%s%s", mem[0] || thr[0] ? " under " : "", mem,
             mem[0] && thr[0] ? " and " : "", thr);
}
