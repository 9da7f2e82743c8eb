/* gemmcheck repro: run one reproducer string on one backend in a child process, so that a
 * backend that crashes or hangs is reported as `crash` or `hang` and never takes gemmcheck
 * down. The parent never initialises the backend (a CUDA context does not survive fork); the
 * child does, runs the case and sends its result over a pipe. */
#define _DEFAULT_SOURCE 1
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "gemmcheck/runner.h"

static const char repro_help[] =
    "usage: gemmcheck repro --backend SPEC [--dump DIR] [--strict-ieee] [--no-rerun]\n"
    "                       [--timeout SECONDS] [--threads N] 'gck1 ...'\n"
    "\n"
    "Runs one case (a reproducer string, docs/REPRO.md) on one backend in a child process and\n"
    "prints the verdict: pass, unsupported, or its findings with the worst elements and the\n"
    "bound that decided them. A backend that dies is reported as `crash`, one that does not\n"
    "return before the deadline as `hang`.\n"
    "\n"
    "  --backend SPEC     ref, openblas, blis, cblas:/path/lib.so, cublas, cublaslt,\n"
    "                     plugin:/path/lib.so[:name]\n"
    "  --dump DIR         write A, B, C, D_expected, D_got (.npy) and case.txt into DIR\n"
    "  --strict-ieee      no zero-skipping leniency, whatever the backend declares\n"
    "  --no-rerun         skip the second call on fresh buffers (determinism check)\n"
    "  --timeout SECONDS  deadline of one backend call (default: from the case's cost, >= 10)\n"
    "  --threads N        checker threads (default: one per core)\n"
    "\n"
    "Exit status: 0 pass or unsupported, 1 findings, 2 usage or set-up error (bad string,\n"
    "unknown or unavailable backend), 3 internal error.\n";

static const char *const cmd = "repro";

enum { MSG_SETUP = 1, MSG_UNAVAILABLE, MSG_CALLING, MSG_CALLED, MSG_RESULT, MSG_INTERNAL };

typedef struct wire_msg {
    int tag;
    char text[1024];
} wire_msg;

static int wire_fd = -1;

static void send_msg(int tag, const char *text) {
    wire_msg m = {.tag = tag};
    snprintf(m.text, sizeof m.text, "%s", text ? text : "");
    ssize_t w = write(wire_fd, &m, sizeof m);
    (void)w;
}

static void on_calling(void *ctx) {
    (void)ctx;
    send_msg(MSG_CALLING, NULL);
}

static void on_called(void *ctx) {
    (void)ctx;
    send_msg(MSG_CALLED, NULL);
}

/* The child: set up the backend, run, report. Never returns. */
static void child_main(const char *backend, const gck_spec *s, const gck_run_options *base) {
    char msg[1024];
    gck_backend be;
    gck_status st = gck_backend_open(&be, backend, msg, sizeof msg);
    if (st != GCK_OK) {
        send_msg(MSG_SETUP, msg);
        _exit(0);
    }
    char why[512];
    if (!be.ops->available(be.state, why, sizeof why)) {
        snprintf(msg, sizeof msg, "backend %s is %s%s", backend,
                 strncmp(why, "unavailable", 11) == 0 ? "" : "unavailable: ", why);
        send_msg(MSG_UNAVAILABLE, msg);
        _exit(0);
    }
    gck_run_options o = *base;
    o.before_call = on_calling;
    o.after_call = on_called;
    gck_run_result r;
    st = gck_run_spec(&be, s, &o, &r, msg, sizeof msg);
    if (st == GCK_EINVAL || st == GCK_ENOMEM || st == GCK_EIO) {
        send_msg(MSG_SETUP, msg);
        _exit(0);
    }
    if (st != GCK_OK) {
        send_msg(MSG_INTERNAL, msg);
        _exit(0);
    }
    char version[256];
    be.ops->version(be.state, version, sizeof version);
    send_msg(MSG_RESULT, version);
    ssize_t w = write(wire_fd, &r, sizeof r);
    (void)w;
    _exit(0);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Read exactly n bytes, waiting at most until `deadline` (<= 0: no deadline). Returns 1 on
 * success, 0 on end of file, -1 on timeout. */
static int read_full(int fd, void *buf, size_t n, double deadline) {
    size_t got = 0;
    while (got < n) {
        int wait_ms = -1;
        if (deadline > 0) {
            double left = deadline - now();
            if (left <= 0) return -1;
            wait_ms = (int)(left * 1000) + 1;
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int pr = poll(&p, 1, wait_ms);
        if (pr < 0 && errno == EINTR) continue;
        if (pr == 0) return -1;
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return 0;
        got += (size_t)r;
    }
    return 1;
}

static void print_element(const char *label, const gck_element_report *e) {
    printf("  %s D[%" PRId64 "](%" PRId64 ",%" PRId64 "): got %.17g expected %.17g error %.4g "
           "bound %.4g ratio %.4g%s%s\n", label, e->batch, e->i, e->j, e->got, e->expected,
           e->error, e->bound, e->ratio, e->exact_case ? " (exact case: bitwise)" : "",
           e->degenerate ? " (gamma = Inf: magnitude limit only)" : "");
}

static int report(const char *backend, const char *repro, const char *version,
                  const gck_run_result *r) {
    printf("case:     %s\n", repro);
    printf("backend:  %s (%s)\n", backend, version);
    if (r->outcome == GCK_OUTCOME_UNSUPPORTED) {
        printf("verdict:  unsupported: %s\n", r->note);
        return GCK_EXIT_OK;
    }
    printf("row:      %s\n", r->row);
    if (r->outcome == GCK_OUTCOME_PASS) printf("verdict:  pass\n");
    else {
        printf("verdict:  FINDINGS:");
        for (int f = 0; f < r->nfindings; f++)
            printf("%s %s", f ? "," : "", gck_kind_name(r->findings[f].kind));
        printf("\n");
    }
    for (int f = 0; f < r->nfindings; f++) {
        const gck_finding *fd = &r->findings[f];
        printf("  %s: %s\n", gck_kind_name(fd->kind), fd->detail);
        if (fd->has_element) print_element("worst", &fd->element);
    }
    const gck_check_result *c = &r->check;
    if (c->elements) {
        printf("checked:  %" PRId64 " elements (%" PRId64 " exact-case bitwise, %" PRId64
               " magnitude-only, %" PRId64 " passed by zero-skipping leniency); max tight ratio "
               "%.3g\n", c->elements, c->exact_elements, c->degenerate, c->lenient, c->max_tight);
        print_element("max error/bound", &c->max_ratio);
    }
    printf("call:     %.6f s\n", r->call_seconds);
    if (r->outcome == GCK_OUTCOME_FINDINGS)
        printf("repro:    gemmcheck repro --backend %s '%s'\n", backend, repro);
    return r->outcome == GCK_OUTCOME_FINDINGS ? GCK_EXIT_FINDINGS : GCK_EXIT_OK;
}

static int crash_or_hang(const char *backend, const char *repro, gck_kind kind,
                         const char *detail) {
    printf("case:     %s\n", repro);
    printf("backend:  %s\n", backend);
    printf("verdict:  FINDINGS: %s\n", gck_kind_name(kind));
    printf("  %s: %s\n", gck_kind_name(kind), detail);
    printf("repro:    gemmcheck repro --backend %s '%s'\n", backend, repro);
    return GCK_EXIT_FINDINGS;
}

int gck_cmd_repro(int argc, char **argv) {
    const char *backend = NULL, *dump = NULL, *timeout = NULL, *threads = NULL, *text = NULL;
    bool strict = false, rerun = true;
    gck_opt_scan sc = {cmd, argc, argv, 1, false};
    for (; sc.i < argc; sc.i++) {
        const char *a = argv[sc.i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(repro_help, stdout);
            return GCK_EXIT_OK;
        }
        if (!strcmp(a, "--strict-ieee")) strict = true;
        else if (!strcmp(a, "--no-rerun")) rerun = false;
        else if (gck_opt_value(&sc, "--backend", &backend) || gck_opt_value(&sc, "--dump", &dump) ||
                 gck_opt_value(&sc, "--timeout", &timeout) ||
                 gck_opt_value(&sc, "--threads", &threads)) {
            if (sc.error) return GCK_EXIT_USAGE;
        } else if (a[0] == '-' && a[1] == '-')
            return gck_cli_usage_error(cmd, "unknown option '%s' (see gemmcheck repro --help)", a);
        else if (text)
            return gck_cli_usage_error(cmd, "more than one case given; quote the reproducer "
                                       "string: 'gck1 ...'");
        else text = a;
    }
    if (!backend) return gck_cli_usage_error(cmd, "missing --backend (see gemmcheck repro --help)");
    if (!text) return gck_cli_usage_error(cmd, "missing the case ('gck1 ...')");
    gck_spec spec;
    char msg[1024];
    if (gck_spec_parse(text, &spec, msg, sizeof msg) != GCK_OK)
        return gck_cli_usage_error(cmd, "bad case: %s", msg);
    double limit = 0;
    if (timeout && (!gck_parse_double(timeout, &limit) || limit <= 0))
        return gck_cli_usage_error(cmd, "--timeout '%s' is not a positive number of seconds",
                                   timeout);
    long long nthreads = 0;
    if (threads && (!gck_parse_count(threads, &nthreads) || nthreads > 4096))
        return gck_cli_usage_error(cmd, "--threads '%s' is not a count from 0 to 4096", threads);
    if (!timeout) {
        /* generous: a slow reference BLAS does ~1e8 multiply-adds per second per core */
        double flops = (double)spec.c.m * (double)spec.c.n * (double)spec.c.k * (double)spec.c.batch;
        limit = 10.0 + flops / 1e7;
    }
    char repro[2048];
    gck_spec_format(&spec, repro, sizeof repro);

    gck_run_options o = {.check = {.strict_ieee = strict, .threads = (int)nthreads},
                         .determinism = rerun, .dump_dir = dump};
    int fds[2];
    if (pipe(fds) != 0) {
        fprintf(stderr, "gemmcheck repro: internal error: pipe: %s\n", strerror(errno));
        return GCK_EXIT_INTERNAL;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "gemmcheck repro: internal error: fork: %s\n", strerror(errno));
        return GCK_EXIT_INTERNAL;
    }
    if (pid == 0) {
        close(fds[0]);
        wire_fd = fds[1];
        child_main(backend, &spec, &o);
    }
    close(fds[1]);
    int rc = GCK_EXIT_INTERNAL;
    bool in_call = false, called = false;
    double deadline = now() + limit + 30.0; /* set-up (library load, device init) included */
    wire_msg m;
    for (;;) {
        int got = read_full(fds[0], &m, sizeof m, deadline);
        if (got < 0) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            char d[256];
            snprintf(d, sizeof d, "the call did not return within %.1f s; the worker was killed",
                     limit);
            rc = in_call ? crash_or_hang(backend, repro, GCK_KIND_HANG, d)
                         : (fprintf(stderr, "gemmcheck repro: backend set-up did not finish "
                                            "within %.0f s\n", limit + 30.0),
                            GCK_EXIT_USAGE);
            break;
        }
        if (got == 0) {
            int status = 0;
            waitpid(pid, &status, 0);
            char d[256];
            if (WIFSIGNALED(status))
                snprintf(d, sizeof d, "the worker died by signal %d (%s)%s", WTERMSIG(status),
                         strsignal(WTERMSIG(status)), in_call ? " inside the backend call"
                                                              : " outside the backend call");
            else
                snprintf(d, sizeof d, "the worker exited with status %d %s",
                         WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                         in_call ? "inside the backend call" : "outside the backend call");
            if (in_call || !called) rc = crash_or_hang(backend, repro, GCK_KIND_CRASH, d);
            else {
                fprintf(stderr, "gemmcheck repro: internal error: %s (after the call returned)\n",
                        d);
                rc = GCK_EXIT_INTERNAL;
            }
            break;
        }
        if (m.tag == MSG_CALLING) {
            in_call = true;
            deadline = now() + limit;
        } else if (m.tag == MSG_CALLED) {
            in_call = false;
            called = true;
            deadline = 0;
        } else if (m.tag == MSG_SETUP || m.tag == MSG_UNAVAILABLE) {
            fprintf(stderr, "gemmcheck repro: %s\n", m.text);
            rc = GCK_EXIT_USAGE;
            waitpid(pid, NULL, 0);
            break;
        } else if (m.tag == MSG_INTERNAL) {
            fprintf(stderr, "gemmcheck repro: internal error: %s\n", m.text);
            rc = GCK_EXIT_INTERNAL;
            waitpid(pid, NULL, 0);
            break;
        } else if (m.tag == MSG_RESULT) {
            gck_run_result *r = malloc(sizeof *r);
            if (!r || read_full(fds[0], r, sizeof *r, 0) != 1) {
                fprintf(stderr, "gemmcheck repro: internal error: truncated result\n");
                free(r);
                rc = GCK_EXIT_INTERNAL;
                waitpid(pid, NULL, 0);
                break;
            }
            waitpid(pid, NULL, 0);
            rc = report(backend, repro, m.text, r);
            free(r);
            break;
        }
    }
    close(fds[0]);
    return rc;
}
