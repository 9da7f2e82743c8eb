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
 *   nansign    a NaN in the last element, its sign flipping from call to call (which NaN an
 *              operation returns depends on its operands' order; IEEE 754 leaves the sign open)
 *   racy       correct alone, but keeps its result in one static buffer shared by all
 *              threads (calls from several threads at once overwrite each other's D)
 *   crowd      correct alone, but crashes when another call is in flight (a library whose
 *              global state is not thread-safe)
 *   stall      correct, but its first call in the run stalls for 5 s (a machine so busy that
 *              a call misses its deadline once); "the run" is marked by creating the file
 *              named by GCK_FAULTY_STALL_FILE, so a fresh worker does not stall again
 *   late       correct for the first 10 calls a process makes, then as racy (a race that needs
 *              state built up by earlier calls, as in OpenBLAS's serial build)
 *   worn       as tolerance when m >= 8, and on every call after the 20th a process makes (a
 *              cache of earlier calls' state gone stale: in a worker kept from case to case,
 *              any case fails once enough have run, in a fresh one only those with m >= 8)
 *   unimpl     refuses f64, which its table declares
 *
 * Faults that hide under the hard bound of earlier releases, each a real bug class:
 *   trunc      converts the f32 result to a 16-bit D (bf16, f16) by truncation, not to nearest
 *              (early bfloat16 casts dropped the low half of the float)
 *   flush      flushes subnormal results to zero although its rows declare no FTZ (a kernel
 *              run with the MXCSR's FTZ bit set by another library)
 *   ulpup      every result one unit in the last place of D's type too high (a rounding
 *              mode or an epilogue that rounds upward)
 *   e4         the element of largest magnitude off by 1e-4 relative (a slightly wrong
 *              reduction, about 800 f32 ulps: inside the hard bound of a long sum)
 *   error      returns an error status for every call
 *   sticky     a device fault on every case with m = 1, after which every call the process
 *              makes fails with the same error (a sticky CUDA error such as cuBLASLt's
 *              misaligned-address fault: the context is gone until the process ends)
 *
 * Hostile backends, each attacking gemmcheck's process model in one way (docs/ISOLATION.md):
 *   pipe13     writes 13 bytes to the worker's message descriptor (fd 4) during its call
 *   pipejunk   writes 5000 random bytes there
 *   fpround    leaves rounding toward zero set
 *   fpftz      leaves FTZ and DAZ set in MXCSR
 *   fptrap     leaves the invalid, divide-by-zero and overflow traps enabled
 *   closefds   closes descriptors 0-20 and then blocks
 *   norows     declares an empty support table
 *   badrow     declares a row whose type of A is the format 17
 *   badpromise declares a row with a promise bit gemmcheck does not define
 *   initsegv   crashes in its init
 *   inithang   never returns from its init
 *   nodeathsig clears its parent-death signal, ignores SIGTERM, then spins in its call (a
 *              backend that would outlive a killed supervisor)
 *   forkcrash  forks a child that sleeps 30 s (holding every descriptor), then crashes
 *   forksleep  forks a child that sleeps 30 s, then computes D correctly
 *   killgroup  sends SIGTERM to its process group
 *   after      computes D correctly; a thread it started crashes 30 ms later
 *   badtext    returns an error whose message is invalid UTF-8, markup and a terminal escape
 *              without a terminating NUL; its version string is the same kind of bytes
 *   stdout     prints terminal escapes and garbage to stdout and stderr, computes D correctly
 *   exit       calls _exit(7)         abort     calls abort()       sigkill  raises SIGKILL
 *   spin       spins forever          far       writes to a wild address
 *   overread   reads the first byte of the page after B's last element, then computes D
 *              correctly (BLIS 0.9.0's load past B's last column: a fault only where B ends
 *              near a page boundary that is not mapped, docs/DEVIATIONS.md)
 *   overtol    reads as overread does, then computes D with its last element off as tolerance's
 *              (BLIS 0.9.0's over-read on a case whose edge tile also drops NaN·0: with the
 *              room to read, the call shows a numeric deviation of its own)
 *   lineread   reads the byte one whole line of B (ldb elements) past B's last one, then
 *              computes D correctly (BLIS 0.9.0's edge tile reading a line of op(A) past m at
 *              lda = 1054, 4,216 bytes beyond A: what --no-guard-page's slack must cover)
 *   ownsegv    installs its own SIGSEGV handler (which exits 0), then crashes
 *   noalarm    declares ref's first two rows only; each call blocks SIGALRM, SIGTERM and SIGINT
 *              and spins (a hang that an alarm() or a polite signal cannot end)
 *
 * Backends under a memory budget or a thread limit (docs/RESOURCES.md). Each call first
 * allocates a 32 MiB workspace (a BLAS packing buffer) or starts a helper thread, and when
 * that fails:
 *   oomhang    retries the allocation forever (OpenBLAS 0.3.21's blas_memory_alloc, issue 5289)
 *   oomexit    prints OpenBLAS's "Program is Terminated" line and calls exit(1) (issue 539)
 *   oomgarbage carries on without its workspace and returns success with D unwritten (the
 *              unchecked allocations of OpenBLAS issue 295)
 *   oompoison  returns an error, and every later call of the process fails too (a CUDA
 *              context or cuBLAS handle left broken by a failed allocation)
 *   oomclean   returns an error; the next call works (what a correct library does)
 *   oomoob     writes one element before D, then returns an error (a partial store made
 *              before the failure was noticed)
 *   thrcrash   prints OpenBLAS's "pthread_create failed" line and crashes (issue 1668)
 *   thrclean   computes D in the calling thread instead (correct)
 * With GCK_FAULTY_PLAIN=FORMAT in the environment, a backend declares only ref's rows whose four
 * operands are of that format (a short table for certify's tests); GCK_FAULTY_WORK_MIB=N makes
 * the workspace N MiB (an upgrade that needs more memory). */
#define _GNU_SOURCE 1
#include <fcntl.h>
#include <fenv.h>
#include <immintrin.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "gemmcheck/backend.h"

typedef struct faulty_state {
    gck_backend ref;
    int calls;
} faulty_state;

static const char *fault_name;

/* A real SIGSEGV, also in sanitizer builds (UBSan would stop at the null store first). */
__attribute__((no_sanitize("undefined"))) static void write_to_null_page(void) {
    volatile int *volatile null_page = NULL; /* volatile: the compiler cannot see it is NULL */
    *null_page = 1;
}

static gck_status f_init(void **state, const char *arg, char *msg, size_t len) {
    (void)arg;
    if (!strcmp(fault_name, "initsegv")) write_to_null_page();
    if (!strcmp(fault_name, "inithang"))
        for (;;) pause();
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

/* Bytes no report may pass on raw: invalid UTF-8, markup, a terminal escape. */
static const char bad_bytes[] = "\xff\xfe <&\"> \x1b[31mred\x1b[0m \xc0\xaf";

static void f_version(void *state, char *buf, size_t len) {
    (void)state;
    if (!strcmp(fault_name, "badtext"))
        snprintf(buf, len, "version %s", bad_bytes);
    else
        snprintf(buf, len, "faulty test backend '%s' over the reference GEMMs", fault_name);
}

static size_t f_table(void *state, const gck_support_row **rows) {
    faulty_state *s = state;
    size_t n = s->ref.ops->table(s->ref.state, rows);
    if (!strcmp(fault_name, "norows")) return 0;
    if (!strcmp(fault_name, "noalarm")) return n < 2 ? n : 2;
    if (!strcmp(fault_name, "badrow") || !strcmp(fault_name, "badpromise")) {
        static gck_support_row bad[2];
        bad[0] = (*rows)[0];
        bad[1] = (*rows)[1];
        if (!strcmp(fault_name, "badrow"))
            bad[1].a = (gck_format)17;
        else
            bad[1].promises |= 1u << 20;
        *rows = bad;
        return 2;
    }
    const char *only = getenv("GCK_FAULTY_PLAIN"); /* "f32": the rows of four f32 operands */
    gck_format f;
    if (only && gck_format_parse(only, &f)) {
        static gck_support_row kept[64];
        size_t k = 0;
        for (size_t r = 0; r < n && k < 64; r++)
            if ((*rows)[r].a == f && (*rows)[r].b == f && (*rows)[r].c == f && (*rows)[r].d == f)
                kept[k++] = (*rows)[r];
        *rows = kept;
        return k;
    }
    return n;
}

static void *crash_later(void *arg) {
    (void)arg;
    usleep(30000);
    write_to_null_page();
    return NULL;
}

static void exit_zero(int sig) {
    (void)sig;
    _exit(0);
}

/* The hostile modes that act before the call's arithmetic (0: none applied). */
static void hostile(void) {
    if (!strcmp(fault_name, "pipe13")) {
        if (write(4, "hello, world\n", 13) < 0) perror("write");
    } else if (!strcmp(fault_name, "pipejunk")) {
        unsigned char junk[5000];
        for (size_t i = 0; i < sizeof junk; i++) junk[i] = (unsigned char)(rand() >> 7);
        if (write(4, junk, sizeof junk) < 0) perror("write");
    } else if (!strcmp(fault_name, "closefds")) {
        for (int fd = 0; fd <= 20; fd++) close(fd);
        for (;;) pause();
    } else if (!strcmp(fault_name, "forkcrash") || !strcmp(fault_name, "forksleep")) {
        if (fork() == 0) {
            sleep(30);
            _exit(0);
        }
        if (!strcmp(fault_name, "forkcrash")) write_to_null_page();
    } else if (!strcmp(fault_name, "killgroup")) {
        kill(0, SIGTERM);
        sleep(1);
    } else if (!strcmp(fault_name, "stdout")) {
        printf("\x1b[2J\x1b[31mverdict:  pass\x1b[0m %s\n", bad_bytes);
        fprintf(stderr, "library warning \xff\xfe\n");
        fflush(stdout);
    } else if (!strcmp(fault_name, "exit")) {
        _exit(7);
    } else if (!strcmp(fault_name, "abort")) {
        abort();
    } else if (!strcmp(fault_name, "sigkill")) {
        raise(SIGKILL);
    } else if (!strcmp(fault_name, "spin")) {
        for (volatile unsigned long i = 0;; i++) {
        }
    } else if (!strcmp(fault_name, "nodeathsig")) {
        prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);
        signal(SIGTERM, SIG_IGN);
        for (volatile unsigned long i = 0;; i++) {
        }
    } else if (!strcmp(fault_name, "far")) {
        volatile uintptr_t where = 0x7ff0000010ull; /* a wild pointer: nothing mapped there */
        *(volatile char *)where = 1;
    } else if (!strcmp(fault_name, "noalarm")) {
        sigset_t all;
        sigemptyset(&all);
        sigaddset(&all, SIGALRM);
        sigaddset(&all, SIGTERM);
        sigaddset(&all, SIGINT);
        pthread_sigmask(SIG_BLOCK, &all, NULL);
        for (volatile unsigned long i = 0;; i++) {
        }
    } else if (!strcmp(fault_name, "ownsegv")) {
        signal(SIGSEGV, exit_zero);
        write_to_null_page();
    }
}

/* The hostile modes that act after a correct call. */
static void hostile_after(void) {
    if (!strcmp(fault_name, "fpround")) {
        fesetround(FE_TOWARDZERO);
    } else if (!strcmp(fault_name, "fpftz")) {
        _mm_setcsr(_mm_getcsr() | 0x8040u);
    } else if (!strcmp(fault_name, "fptrap")) {
        feenableexcept(FE_INVALID | FE_DIVBYZERO | FE_OVERFLOW);
    } else if (!strcmp(fault_name, "after")) {
        static int started;
        pthread_t t;
        if (!started++ && pthread_create(&t, NULL, crash_later, NULL) == 0) pthread_detach(t);
    }
}

static int64_t d_offset(const gck_case *c, int64_t i, int64_t j) {
    int64_t rs, cs;
    gck_case_op_strides(c, GCK_D, &rs, &cs);
    return i * rs + j * cs;
}

/* x rounded toward zero to the 16-bit format t (the nearest value, stepped back when it lies
 * farther from zero than x). */
static double toward_zero(double x, gck_format t) {
    double r = gck_round_to(x, t);
    if (!isfinite(x) || fabs(r) <= fabs(x)) return r;
    return r > 0 ? gck_next_down(r, t) : gck_next_up(r, t);
}

/* trunc: the reference GEMM into an f32 D, then each element truncated to D's type. */
static gck_call_status truncating_call(faulty_state *s, const gck_case *c,
                                       const gck_support_row *row, const gck_operands *ops,
                                       char *msg, size_t len) {
    gck_case f = *c;
    f.type_d = GCK_F32;
    f.d_is_c = false;
    f.ldd = gck_case_min_ld(&f, GCK_D);
    f.stride_d = c->m * c->n;
    float *y = malloc((size_t)(f.stride_d * c->batch) * sizeof *y + 1);
    if (!y) return GCK_CALL_ERROR;
    gck_operands o = *ops;
    o.d = y;
    gck_call_status st = s->ref.ops->call(s->ref.state, &f, row, &o, msg, len);
    for (int64_t b = 0; st == GCK_CALL_OK && b < c->batch; b++)
        for (int64_t j = 0; j < c->n; j++)
            for (int64_t i = 0; i < c->m; i++) {
                double v = y[b * f.stride_d + d_offset(&f, i, j)];
                gck_store(ops->d, c->type_d, b * c->stride_d + d_offset(c, i, j),
                          toward_zero(v, c->type_d));
            }
    free(y);
    return st;
}

/* flush, ulpup, e4: the reference result changed as their comment says. */
static void numeric_fault(const gck_case *c, const gck_operands *ops) {
    gck_format td = gck_case_type(c, GCK_D);
    double tiny = gck_format_get(td)->min_normal, big = -1;
    int64_t at_big = -1;
    for (int64_t b = 0; b < c->batch; b++)
        for (int64_t j = 0; j < c->n; j++)
            for (int64_t i = 0; i < c->m; i++) {
                int64_t at = b * c->stride_d + d_offset(c, i, j);
                double d = gck_load(ops->d, td, at);
                if (!isfinite(d)) continue;
                if (!strcmp(fault_name, "flush") && fabs(d) < tiny)
                    gck_store(ops->d, td, at, copysign(0.0, d));
                else if (!strcmp(fault_name, "ulpup"))
                    gck_store(ops->d, td, at, gck_next_up(d, td));
                else if (fabs(d) > big)
                    big = fabs(d), at_big = at;
            }
    if (!strcmp(fault_name, "e4") && at_big >= 0) {
        double d = gck_load(ops->d, td, at_big);
        gck_store(ops->d, td, at_big, d * (1 + 1e-4));
    }
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

/* The helper thread of thrcrash and thrclean: the reference call. */
typedef struct helper_job {
    faulty_state *s;
    const gck_case *c;
    const gck_support_row *row;
    const gck_operands *ops;
    char *msg;
    size_t len;
    gck_call_status st;
} helper_job;

static void *helper(void *arg) {
    helper_job *j = arg;
    j->st = j->s->ref.ops->call(j->s->ref.state, j->c, j->row, j->ops, j->msg, j->len);
    return NULL;
}

/* The oom* and thr* faults (above); *done: the call's status is the return value. */
static gck_call_status resource_call(faulty_state *s, const gck_case *c, const gck_support_row *row,
                                     const gck_operands *ops, char *msg, size_t len, bool *done) {
    static atomic_bool poisoned;
    const char *mib = getenv("GCK_FAULTY_WORK_MIB"); /* the workspace's size (32 MiB) */
    size_t WORK = (size_t)(mib && atoi(mib) > 0 ? atoi(mib) : 32) << 20;
    *done = true;
    if (!strncmp(fault_name, "thr", 3)) {
        helper_job j = {s, c, row, ops, msg, len, GCK_CALL_ERROR};
        pthread_t t;
        if (pthread_create(&t, NULL, helper, &j) == 0) {
            pthread_join(t, NULL);
            return j.st;
        }
        if (!strcmp(fault_name, "thrclean"))
            return s->ref.ops->call(s->ref.state, c, row, ops, msg, len);
        fprintf(stderr, "OpenBLAS blas_thread_init: pthread_create failed for thread 1 of 2: "
                        "Resource temporarily unavailable (simulated)\n");
        write_to_null_page();
    }
    if (!strcmp(fault_name, "oompoison") && atomic_load(&poisoned)) {
        snprintf(msg, len, "the workspace pool is broken since an earlier failed allocation");
        return GCK_CALL_ERROR;
    }
    char *w = malloc(WORK);
    if (!w && !strcmp(fault_name, "oomhang"))
        while (!(w = malloc(WORK))) continue;
    if (w) {
        w[0] = w[WORK - 1] = 1; /* used */
        free(w);
        *done = false;
        return GCK_CALL_OK;
    }
    if (!strcmp(fault_name, "oomexit")) {
        fprintf(stderr, "BLAS : Program is Terminated. Because you tried to allocate too many "
                        "memory regions. (simulated)\n");
        exit(1);
    }
    if (!strcmp(fault_name, "oomgarbage")) return GCK_CALL_OK; /* D never written */
    if (!strcmp(fault_name, "oomoob")) gck_store(ops->d, gck_case_type(c, GCK_D), -1, 1.0);
    if (!strcmp(fault_name, "oompoison")) atomic_store(&poisoned, true);
    snprintf(msg, len, "CUBLAS_STATUS_ALLOC_FAILED (simulated: no memory for the workspace)");
    return GCK_CALL_ERROR;
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
    if (!strcmp(fault_name, "sticky")) {
        static atomic_bool broken;
        if (atomic_load(&broken)) {
            snprintf(msg, len, "an earlier call's device error (simulated sticky error)");
            return GCK_CALL_DEVICE_FAULT;
        }
        if (c->m == 1 && c->n > 0) {
            atomic_store(&broken, true);
            snprintf(msg, len, "misaligned address (simulated)");
            return GCK_CALL_DEVICE_FAULT;
        }
    }
    if (!strcmp(fault_name, "badtext")) {
        for (size_t i = 0; i < len; i++) msg[i] = bad_bytes[i % (sizeof bad_bytes - 1)];
        return GCK_CALL_ERROR; /* the message is not terminated */
    }
    bool overread = !strcmp(fault_name, "overread") || !strcmp(fault_name, "overtol"),
         lineread = !strcmp(fault_name, "lineread");
    if ((overread || lineread) && gck_case_extent(c, GCK_B) > 0) {
        uintptr_t es = gck_format_get(gck_case_type(c, GCK_B))->storage_bytes;
        uintptr_t end = (uintptr_t)ops->b + (uintptr_t)gck_case_extent(c, GCK_B) * es;
        /* overread: the next page's first byte; lineread: one line past B's last element */
        uintptr_t at =
            overread ? (end + 4095) & ~(uintptr_t)4095 : end - es + (uintptr_t)c->ldb * es;
        (void)*(volatile const char *)at;
    }
    if (nonempty) hostile();
    if (nonempty && (!strncmp(fault_name, "oom", 3) || !strncmp(fault_name, "thr", 3))) {
        bool done;
        gck_call_status st = resource_call(s, c, row, ops, msg, len, &done);
        if (done) return st;
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
        /* the window in which the other calls arrive: 20 ms, wide enough for threads released
         * together to meet on a loaded machine, left as soon as another call is seen */
        for (int w = 0; w < 20 && n == 1; w++) {
            usleep(1000);
            n = atomic_load(&in_flight);
        }
        if (n > 1) write_to_null_page();
        atomic_fetch_sub(&in_flight, 1);
    }
    if (!strcmp(fault_name, "trunc") && nonempty && (c->type_d == GCK_BF16 || c->type_d == GCK_F16))
        return truncating_call(s, c, row, ops, msg, len);
    gck_call_status st = s->ref.ops->call(s->ref.state, c, row, ops, msg, len);
    if (st == GCK_CALL_OK) hostile_after();
    if (st == GCK_CALL_OK && nonempty) numeric_fault(c, ops);
    if (st != GCK_CALL_OK || !nonempty) {
        free(was_nan);
        return st;
    }
    int64_t last = d_offset(c, c->m - 1, c->n - 1);
    if (!strcmp(fault_name, "tolerance") || !strcmp(fault_name, "overtol") ||
        (!strcmp(fault_name, "worn") && (c->m >= 8 || s->calls > 20))) {
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
    } else if (!strcmp(fault_name, "nansign")) {
        gck_store(ops->d, td, last, copysign(NAN, s->calls % 2 ? 1.0 : -1.0));
    } else if (!strcmp(fault_name, "nondet") && s->calls % 2 == 0) {
        double d = gck_load(ops->d, td, last);
        gck_store(ops->d, td, last, isfinite(d) ? gck_next_up(d, td) : 0.0);
    }
    free(was_nan);
    return GCK_CALL_OK;
}

static const char *const names[] = {
    "tolerance",  "nan",       "betanan",   "oob",       "input",     "segv",     "hang",
    "nondet",     "unimpl",    "error",     "racy",      "crowd",     "late",     "stall",
    "pipe13",     "pipejunk",  "fpround",   "fpftz",     "fptrap",    "closefds", "norows",
    "badrow",     "initsegv",  "forkcrash", "forksleep", "killgroup", "after",    "badtext",
    "stdout",     "exit",      "abort",     "sigkill",   "spin",      "far",      "ownsegv",
    "trunc",      "flush",     "ulpup",     "e4",        "sticky",    "inithang", "nodeathsig",
    "badpromise", "nansign",   "overread",  "lineread",  "noalarm",   "oomhang",  "oomexit",
    "oomgarbage", "oompoison", "oomclean",  "thrcrash",  "thrclean",  "oomoob",   "overtol",
    "worn"};

GCK_PLUGIN_ABI_DECLARE
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
