/* dlopen of the CUDA runtime, cuBLASLt and cuBLAS (see cuda_api.h for the search). */
#define _GNU_SOURCE 1 /* dlinfo: the path a library was found at */
#include "cuda_api.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef GCK_CUDA_LIBDIR
#define GCK_CUDA_LIBDIR "" /* no toolkit directory known: the system's search only */
#endif

#define GCK_STR2(x) #x
#define GCK_STR(x)  GCK_STR2(x) /* the macro-expanded name: "cublasCreate_v2" */

enum { LIB_CUDART, LIB_CUBLASLT, LIB_CUBLAS, NLIBS };
static const char *const lib_what[NLIBS] = {"CUDA runtime", "cuBLASLt", "cuBLAS"};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static gck_cuda_api api;
static bool tried[NLIBS], loaded[NLIBS];
static char failure[NLIBS][1024];

/* The entry of a colon-separated list that starts at p: its length in *n; the next entry, or
 * NULL after the last. */
static const char *list_entry(const char *p, size_t *n) {
    const char *end = strchr(p, ':');
    *n = end ? (size_t)(end - p) : strlen(p);
    return end ? end + 1 : NULL;
}

bool gck_cuda_path_valid(const char *list, char *why, size_t len) {
    int entry = 1;
    for (const char *p = list, *next; p; p = next, entry++) {
        size_t n;
        next = list_entry(p, &n);
        if (n == 0 || p[0] != '/') {
            snprintf(why, len,
                     "GEMMCHECK_CUDA_LIBRARY_PATH entry %d ('%.*s') is %s: only absolute "
                     "directories are searched (an empty or relative entry would mean the "
                     "current directory)",
                     entry, (int)(n > 200 ? 200 : n), p, n == 0 ? "empty" : "relative");
            return false;
        }
    }
    return true;
}

static const char *soname(int lib, char *buf, size_t len) {
    static const char *const base[NLIBS] = {"libcudart", "libcublasLt", "libcublas"};
    snprintf(buf, len, "%s.so.%d", base[lib],
             lib == LIB_CUDART ? CUDART_VERSION / 1000 : CUBLAS_VER_MAJOR);
    return buf;
}

/* dlopen `file`, appending what failed to `errs`. */
static void *try_open(const char *file, char *errs, size_t len) {
    void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        size_t used = strlen(errs);
        snprintf(errs + used, len - used, "%s%.300s", used ? "; " : "", e ? e : file);
    }
    return h;
}

/* Open one library along the search of cuda_api.h; NULL with failure[lib] set. */
static void *open_lib(int lib) {
    char name[64], file[4200], errs[640] = "";
    soname(lib, name, sizeof name);
    const char *env = getenv("GEMMCHECK_CUDA_LIBRARY_PATH");
    void *h = NULL;
    if (env) {
        char why[400];
        if (!gck_cuda_path_valid(env, why, sizeof why)) {
            snprintf(failure[lib], sizeof failure[lib], "%s not found: %s", lib_what[lib], why);
            return NULL;
        }
        for (const char *p = env, *next; p && !h; p = next) {
            size_t n;
            next = list_entry(p, &n);
            snprintf(file, sizeof file, "%.*s/%s", (int)(n > 4000 ? 4000 : n), p, name);
            h = try_open(file, errs, sizeof errs);
        }
        if (!h)
            snprintf(failure[lib], sizeof failure[lib],
                     "%s not found: %s in GEMMCHECK_CUDA_LIBRARY_PATH=%.200s (%s)", lib_what[lib],
                     name, env, errs);
        return h;
    }
    if (GCK_CUDA_LIBDIR[0]) {
        snprintf(file, sizeof file, "%s/%s", GCK_CUDA_LIBDIR, name);
        h = try_open(file, errs, sizeof errs);
    }
    if (!h) h = try_open(name, errs, sizeof errs);
    if (!h)
        snprintf(failure[lib], sizeof failure[lib],
                 "%s not found: %s (set GEMMCHECK_CUDA_LIBRARY_PATH to its directory; %s)",
                 lib_what[lib], name, errs);
    return h;
}

/* Look up every symbol of one library; false with failure[lib] naming the first missing. */
static bool bind(int lib, void *h) {
    struct link_map *map = NULL;
    if (dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name)
        snprintf(api.paths[lib], sizeof api.paths[lib], "%s", map->l_name);
    const char *missing = NULL;
#define GCK_BIND(f)                                                                                \
    if (!missing) {                                                                                \
        void *sym = dlsym(h, GCK_STR(f));                                                          \
        if (sym)                                                                                   \
            memcpy(&api.f, &sym, sizeof sym);                                                      \
        else                                                                                       \
            missing = GCK_STR(f);                                                                  \
    }
    switch (lib) {
    case LIB_CUDART: GCK_CUDART_FUNCS(GCK_BIND) break;
    case LIB_CUBLASLT: GCK_CUBLASLT_FUNCS(GCK_BIND) break;
    default: GCK_CUBLAS_FUNCS(GCK_BIND) break;
    }
#undef GCK_BIND
    if (missing)
        snprintf(failure[lib], sizeof failure[lib], "%s unusable: %s has no %s", lib_what[lib],
                 api.paths[lib], missing);
    return missing == NULL;
}

const gck_cuda_api *gck_cuda_api_get(bool blas, char *why, size_t len) {
    int need = blas ? NLIBS : 1; /* cuBLASLt before cuBLAS, which needs it */
    const gck_cuda_api *out = &api;
    pthread_mutex_lock(&lock);
    for (int lib = 0; lib < need && out; lib++) {
        if (!tried[lib]) {
            tried[lib] = true;
            void *h = open_lib(lib);
            loaded[lib] = h && bind(lib, h);
            /* a library without the entry points is unusable; it stays open (dlclose of a
             * CUDA library is not reliably safe) */
        }
        if (!loaded[lib]) {
            snprintf(why, len, "%s", failure[lib]);
            out = NULL;
        }
    }
    pthread_mutex_unlock(&lock);
    return out;
}
