/* Purpose-built faulty backends, one per finding kind, loaded as a plugin
 * (plugin:/path/libgck_faulty.so:NAME). Each runs the reference GEMM and then breaks one
 * promise in a way a real library has been seen to:
 *   tolerance  one element off by 25% (a wrong reduction)
 *   nan        a NaN written where the result is finite (an uninitialised accumulator)
 *   betanan    C read when beta = 0, so NaN in C reaches D (OpenBLAS issue class)
 *   oob        one element written just before D (an edge-tile store off by one)
 *   input      A overwritten (an in-place packing bug)
 *   segv       a write through a null pointer
 *   hang       never returns
 *   nondet     every second call differs in the last bit of one element (racy reduction)
 *   racy       correct alone, but keeps its result in one static buffer shared by all
 *              threads (calls from several threads at once overwrite each other's D)
 *   crowd      correct alone, but crashes when another call is in flight (a library whose
 *              global state is not thread-safe)
 *   stall      correct, but its first call in the run stalls for 5 s (a machine so busy that
 *              a call misses its deadline once); "the run" is marked by creating the file
 *              named by GCK_FAULTY_STALL_FILE, so a fresh worker does not stall again
 *   late       correct for the first 10 calls a process makes, then as racy (a race that needs
 *              state built up by earlier calls, as in OpenBLAS's serial build)
 *   unimpl     refuses f64, which its table declares
 *   error      returns an error status for every call */
#define _DEFAULT_SOURCE 1
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gemmcheck/backend.h"

typedef struct faulty_state {
    gck_backend ref;
    int calls;
} faulty_state;

static const char *fault_name;

static gck_status f_init(void **state, const char *arg, char *msg, size_t len) {
    (void)arg;
    faulty_state *s = calloc(1, sizeof *s);
    if (!s) return GCK_ENOMEM;
    gck_status st = gck_backend_open(&s->ref, "ref", msg, len);
    if (st != GCK_OK) {
        free(s);
        return st;
    }
    *state = s;
    return GCK_OK;
}

static void f_teardown(void *state) {
    faulty_state *s = state;
    gck_backend_close(&s->ref);
    free(s);
}

static bool f_available(void *state, char *why, size_t len) {
    (void)state;
    snprintf(why, len, "test backend '%s'", fault_name);
    return true;
}

static void f_version(void *state, char *buf, size_t len) {
    (void)state;
    snprintf(buf, len, "faulty test backend '%s' over the reference GEMMs", fault_name);
}

static size_t f_table(void *state, const gck_support_row **rows) {
    faulty_state *s = state;
    return s->ref.ops->table(s->ref.state, rows);
}

/* A real SIGSEGV, also in sanitizer builds (UBSan would stop at the null store first). */
__attribute__((no_sanitize("undefined"))) static void write_to_null_page(void) {
    volatile int *volatile null_page = NULL; /* volatile: the compiler cannot see it is NULL */
    *null_page = 1;
}

static int64_t d_offset(const gck_case *c, int64_t i, int64_t j) {
    int64_t rs, cs;
    gck_case_op_strides(c, GCK_D, &rs, &cs);
    return i * rs + j * cs;
}

/* The thread-unsafe backend: the reference result goes through one static scratch buffer,
 * as kernels with a global workspace do (the class of OpenBLAS issue #1755). */
static gck_call_status racy_call(faulty_state *s, const gck_case *c, const gck_support_row *row,
                                 const gck_operands *ops, char *msg, size_t len) {
    static double scratch[1 << 16];
    gck_call_status st = s->ref.ops->call(s->ref.state, c, row, ops, msg, len);
    if (st != GCK_CALL_OK || c->m * c->n * c->batch > (int64_t)(sizeof scratch / sizeof scratch[0]))
        return st;
    gck_format td = gck_case_type(c, GCK_D);
    int64_t rs, cs, sd = gck_case_stride(c, GCK_D);
    gck_case_op_strides(c, GCK_D, &rs, &cs);
    int64_t e = 0;
    for (int64_t b = 0; b < c->batch; b++)
        for (int64_t j = 0; j < c->n; j++)
            for (int64_t i = 0; i < c->m; i++)
                scratch[e++] = gck_load(ops->d, td, b * sd + i * rs + j * cs);
    usleep(2000); /* the window in which another thread's call overwrites the scratch */
    e = 0;
    for (int64_t b = 0; b < c->batch; b++)
        for (int64_t j = 0; j < c->n; j++)
            for (int64_t i = 0; i < c->m; i++)
                gck_store(ops->d, td, b * sd + i * rs + j * cs, scratch[e++]);
    return GCK_CALL_OK;
}

static gck_call_status f_call(void *state, const gck_case *c, const gck_support_row *row,
                              const gck_operands *ops, char *msg, size_t len) {
    faulty_state *s = state;
    s->calls++;
    gck_format td = gck_case_type(c, GCK_D);
    bool nonempty = c->m > 0 && c->n > 0;
    if (!strcmp(fault_name, "error")) {
        snprintf(msg, len, "CUBLAS_STATUS_EXECUTION_FAILED (simulated)");
        return GCK_CALL_ERROR;
    }
    if (!strcmp(fault_name, "unimpl") && (c->type_a == GCK_F64 || c->type_b == GCK_F64)) {
        snprintf(msg, len, "f64 inputs not implemented");
        return GCK_CALL_NOT_SUPPORTED;
    }
    if (!strcmp(fault_name, "segv") && nonempty) write_to_null_page();
    if (!strcmp(fault_name, "hang") && nonempty)
        for (;;) pause();
    const char *mark = getenv("GCK_FAULTY_STALL_FILE");
    if (!strcmp(fault_name, "stall") && nonempty && mark) {
        FILE *f = fopen(mark, "wx"); /* fails once the file exists */
        if (f) {
            fclose(f);
            sleep(5);
        }
    }
    /* betanan: remember where C is NaN before the reference overwrites it */
    bool *was_nan = NULL;
    if (!strcmp(fault_name, "betanan") && c->beta == 0 && nonempty) {
        was_nan = calloc((size_t)(c->m * c->n), sizeof *was_nan);
        int64_t rs, cs;
        gck_case_op_strides(c, GCK_C, &rs, &cs);
        for (int64_t j = 0; j < c->n; j++)
            for (int64_t i = 0; i < c->m; i++)
                was_nan[i + j * c->m] = isnan(gck_load(ops->c, c->type_c, i * rs + j * cs));
    }
    if (!strcmp(fault_name, "racy") && nonempty) return racy_call(s, c, row, ops, msg, len);
    if (!strcmp(fault_name, "late") && nonempty && s->calls > 10)
        return racy_call(s, c, row, ops, msg, len);
    if (!strcmp(fault_name, "crowd") && nonempty) {
        static atomic_int in_flight;
        int n = atomic_fetch_add(&in_flight, 1) + 1;
        usleep(2000); /* the window in which the other calls arrive */
        if (n > 1 || atomic_load(&in_flight) > 1) write_to_null_page();
        atomic_fetch_sub(&in_flight, 1);
    }
    gck_call_status st = s->ref.ops->call(s->ref.state, c, row, ops, msg, len);
    if (st != GCK_CALL_OK || !nonempty) {
        free(was_nan);
        return st;
    }
    int64_t last = d_offset(c, c->m - 1, c->n - 1);
    if (!strcmp(fault_name, "tolerance")) {
        double d = gck_load(ops->d, td, last);
        gck_store(ops->d, td, last, fabs(d) >= 1 ? d * 1.25 : d + 0.5);
    } else if (!strcmp(fault_name, "nan")) {
        gck_store(ops->d, td, last, NAN);
    } else if (was_nan) {
        for (int64_t j = 0; j < c->n; j++)
            for (int64_t i = 0; i < c->m; i++)
                if (was_nan[i + j * c->m]) gck_store(ops->d, td, d_offset(c, i, j), NAN);
    } else if (!strcmp(fault_name, "oob")) {
        gck_store(ops->d, td, -1, 1.0); /* one element before D: an edge store off by one */
    } else if (!strcmp(fault_name, "input") && c->alpha != 0 && c->k > 0) {
        gck_store((void *)ops->a, c->type_a, 0, 42.0);
    } else if (!strcmp(fault_name, "nondet") && s->calls % 2 == 0) {
        double d = gck_load(ops->d, td, last);
        gck_store(ops->d, td, last, isfinite(d) ? gck_next_up(d, td) : 0.0);
    }
    free(was_nan);
    return GCK_CALL_OK;
}

static const char *const names[] = {"tolerance", "nan",   "betanan", "oob",    "input",
                                    "segv",      "hang",  "nondet",  "unimpl", "error",
                                    "racy",      "crowd", "late",    "stall"};

const gck_backend_ops *gemmcheck_backend_plugin(const char *name);
const gck_backend_ops *gemmcheck_backend_plugin(const char *name) {
    static const gck_backend_ops ops = {"faulty",  f_init,  f_teardown, f_available,
                                        f_version, f_table, f_call};
    for (size_t i = 0; name && i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(name, names[i])) {
            fault_name = names[i];
            return &ops;
        }
    return NULL;
}
