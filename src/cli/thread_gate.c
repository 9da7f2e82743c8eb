/* The gemmcheck executable's pthread_create: the C library's, unless a call under a thread limit
 * has used up its room (src/run/call_limits.h). Defined in the executable, and so exported by
 * it, it comes before the C library's for every library the process loads, linked or opened
 * with dlopen: the backends start their threads through it. libgemmcheck.so does not define
 * one, so a program that only links the library gets no thread limits, and says so
 * (gck_limits_enforceable). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

#include "call_limits.h"

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*f)(void *), void *arg) {
    static _Atomic(create_fn) real;
    create_fn fn = atomic_load(&real);
    if (!fn) {
        fn = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
        if (!fn) return ENOSYS;
        atomic_store(&real, fn);
    }
    if (!gck_limits_thread_admit()) return EAGAIN;
    return fn(t, a, f, arg);
}
