/* Worker processes, the supervisor's side: spawning a worker (exec of the gemmcheck binary, a
 * Python interpreter, or fork alone), reading its frames, killing it; the worker's side is
 * serve.c, and what its frames mean for a case is watch.c. */
#define _GNU_SOURCE 1
#include "worker.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backends.h"
#include "exitcode.h"
#include "fpenv.h"
#include "gemmcheck/kernels.h"
#include "gemmcheck/runner.h"
#include "text.h"

static char worker_exe[4096];

void gck_worker_set_exe(const char *path) {
    snprintf(worker_exe, sizeof worker_exe, "%s", path ? path : "");
}

/* ---- the supervisor's side --------------------------------------------------------------------
 */

static void close_fd(int *fd) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

/* In the child, between fork and exec (or serve): a process group of its own, death with the
 * supervisor, the descriptors of the protocol and nothing else, default signal dispositions. */
enum { CHILD_CANNOT_START = 127 }; /* the shell's "command cannot run" */

static void child_setup(pid_t parent, int req, int out, int output) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (getppid() != parent)
        _exit(CHILD_CANNOT_START); /* the supervisor died before the line above */
    int r = fcntl(req, F_DUPFD, 10), o = fcntl(out, F_DUPFD, 10), c = fcntl(output, F_DUPFD, 10);
    int devnull = open("/dev/null", O_RDONLY);
    if (r < 0 || o < 0 || c < 0 || devnull < 0) _exit(CHILD_CANNOT_START);
    dup2(devnull, STDIN_FILENO);
    dup2(c, STDOUT_FILENO);
    dup2(c, STDERR_FILENO);
    dup2(r, GCK_WORKER_IN_FD);
    dup2(o, GCK_WORKER_OUT_FD);
    for (int fd = GCK_WORKER_OUT_FD + 1; fd < 1024; fd++) close(fd);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    static const int reset[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGCHLD};
    for (size_t i = 0; i < sizeof reset / sizeof reset[0]; i++) signal(reset[i], SIG_DFL);
    signal(SIGINT, SIG_IGN); /* the supervisor decides when a campaign ends */
}

/* fork+exec of the worker with posix_spawn (`gemmcheck __worker`, or a Python interpreter for a
 * `python:` backend, looked up on PATH): its own process group, the protocol's descriptors at 3
 * and 4, stdout and stderr to the capture, stdin from /dev/null, default signal dispositions
 * (SIGINT ignored: the supervisor decides when a campaign ends). */
static int spawn_exec(pid_t *pid, char *const argv[], char *const envp[], int req, int out,
                      int output) {
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    /* move everything above 4 first, so that dup2 onto 3 and 4 cannot clobber a source */
    int r = fcntl(req, F_DUPFD_CLOEXEC, 10), o = fcntl(out, F_DUPFD_CLOEXEC, 10),
        c = fcntl(output, F_DUPFD_CLOEXEC, 10);
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, c, STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, c, STDERR_FILENO);
    posix_spawn_file_actions_adddup2(&fa, r, GCK_WORKER_IN_FD);
    posix_spawn_file_actions_adddup2(&fa, o, GCK_WORKER_OUT_FD);
    posix_spawn_file_actions_addclosefrom_np(&fa, GCK_WORKER_OUT_FD + 1);
    sigset_t none, dfl;
    sigemptyset(&none);
    sigfillset(&dfl);
    sigdelset(&dfl, SIGINT);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &dfl);
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF);
    /* SIGINT ignored in the child: set here, inherited through exec, restored below */
    struct sigaction ign = {.sa_handler = SIG_IGN}, old;
    sigaction(SIGINT, &ign, &old);
    int err = posix_spawnp(pid, argv[0], &fa, &at, argv, envp);
    sigaction(SIGINT, &old, NULL);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(r);
    close(o);
    close(c);
    return err;
}

/* ---- the worker of a `python:` backend ------------------------------------------------------
 * `$GEMMCHECK_PYTHON -m gemmcheck.worker` (default: the interpreter the tool was built for) with
 * the worker's arguments; the module and the library it loads are found through PYTHONPATH and
 * GEMMCHECK_LIBRARY, which the tool fills in from its own place when the environment leaves
 * them unset. */
static char python_exe[4096] = "python3", python_module_dir[4096], python_library[4096];

void gck_worker_set_python(const char *exe, const char *module_dir, const char *library) {
    snprintf(python_exe, sizeof python_exe, "%s", exe && *exe ? exe : "python3");
    snprintf(python_module_dir, sizeof python_module_dir, "%s", module_dir ? module_dir : "");
    snprintf(python_library, sizeof python_library, "%s", library ? library : "");
}

/* The interpreter: $GEMMCHECK_PYTHON, else the one the tool was built for. */
static const char *python_interpreter(void) {
    const char *py = getenv("GEMMCHECK_PYTHON");
    return py && *py ? py : python_exe;
}

#define PY_ENV_MAX 4096

/* The environment of a Python worker: ours, PYTHONPATH with the module's folder first and
 * GEMMCHECK_LIBRARY and OMP_NUM_THREADS where unset. `store` holds the changed entries. */
static void python_env(char **envp, char (*store)[8192]) {
    extern char **environ;
    size_t n = 0;
    const char *pp = getenv("PYTHONPATH");
    for (char **e = environ; *e && n < PY_ENV_MAX - 4; e++)
        if (strncmp(*e, "PYTHONPATH=", 11) != 0) envp[n++] = *e;
    if (python_module_dir[0]) {
        snprintf(store[0], sizeof store[0], "PYTHONPATH=%s%s%s", python_module_dir,
                 pp && *pp ? ":" : "", pp ? pp : "");
        envp[n++] = store[0];
    } else if (pp) {
        snprintf(store[0], sizeof store[0], "PYTHONPATH=%s", pp);
        envp[n++] = store[0];
    }
    if (python_library[0] && !getenv("GEMMCHECK_LIBRARY")) {
        snprintf(store[1], sizeof store[1], "GEMMCHECK_LIBRARY=%s", python_library);
        envp[n++] = store[1];
    }
    /* One OpenMP team size for every thread of the worker. Without it PyTorch gives its main
     * thread one thread per physical core (omp_set_num_threads, a per-thread setting) and
     * every other thread the default, one per logical CPU: the concurrency check's calls would
     * split their sums differently from the calls made alone and differ in the last bits, a
     * difference of thread count, not of thread safety. */
    if (!getenv("OMP_NUM_THREADS")) {
        cpu_set_t set;
        int cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
        snprintf(store[2], sizeof store[2], "OMP_NUM_THREADS=%d", cpus > 0 ? cpus : 1);
        envp[n++] = store[2];
    }
    envp[n] = NULL;
}

static int spawn_python(pid_t *pid, const gck_worker_options *o, const char *ppid, int req, int out,
                        int output) {
    char *argv[] = {(char *)python_interpreter(),
                    "-m",
                    "gemmcheck.worker",
                    "--backend",
                    (char *)o->backend,
                    "--oracle",
                    (char *)gck_oracle_kind_name(o->oracle),
                    "--parent",
                    (char *)ppid,
                    o->strict_ieee ? "--strict-ieee" : NULL,
                    NULL};
    char **envp = malloc(PY_ENV_MAX * sizeof *envp);
    char(*store)[8192] = malloc(3 * sizeof *store);
    int err = envp && store ? (python_env(envp, store), 0) : ENOMEM;
    if (!err) err = spawn_exec(pid, argv, envp, req, out, output);
    free(envp);
    free(store);
    return err;
}

/* fork alone (no worker executable: a program that links libgemmcheck); the kernels' probes
 * first, so that every worker inherits their results instead of running them (kernels.h) */
static pid_t fork_worker(const gck_worker_options *o, pid_t parent, int req, int out, int output) {
    gck_kernels_probe_all();
    pid_t pid = fork();
    if (pid == 0) {
        child_setup(parent, req, out, output);
        _exit(o->task ? gck_worker_serve_task(o->backend)
                      : gck_worker_serve(o->backend, o->strict_ieee, o->oracle));
    }
    return pid;
}

bool gck_worker_spawn(gck_worker *w, const gck_worker_options *o, char *why, size_t wlen) {
    memset(w, 0, sizeof *w);
    w->pid = -1;
    w->pidfd = w->to = w->from = w->output = -1;
    w->dead = true;
    int req[2] = {-1, -1}, out[2] = {-1, -1};
    if (!gck_wire_reader_init(&w->rd) || pipe(req) != 0 || pipe(out) != 0 ||
        (w->output = memfd_create("gemmcheck-worker-output", MFD_CLOEXEC)) < 0) {
        snprintf(why, wlen, "cannot start a worker: %s", strerror(errno));
        close_fd(&req[0]);
        close_fd(&req[1]);
        close_fd(&out[0]);
        close_fd(&out[1]);
        gck_worker_kill(w);
        return false;
    }
    fflush(stdout);
    fflush(stderr);
    w->output_to = o->output_to;
    w->output_limit = o->output_limit;
    pid_t parent = getpid();
    const char *oracle = gck_oracle_kind_name(o->oracle);
    pid_t pid = -1;
    int err = 0;
    char ppid[32];
    snprintf(ppid, sizeof ppid, "%ld", (long)parent);
    if (!o->task && strncmp(o->backend, "python:", 7) == 0) {
        err = spawn_python(&pid, o, ppid, req[0], out[1], w->output);
    } else if (worker_exe[0]) {
        /* posix_spawn (vfork-like: no copy of a large supervisor's page tables); the worker
         * sets its parent-death signal itself (gck_worker_main) */
        char *argv[] = {worker_exe,
                        "__worker",
                        "--backend",
                        (char *)o->backend,
                        "--oracle",
                        (char *)oracle,
                        "--parent",
                        ppid,
                        o->task          ? "--task"
                        : o->strict_ieee ? "--strict-ieee"
                                         : NULL,
                        NULL};
        extern char **environ;
        err = spawn_exec(&pid, argv, environ, req[0], out[1], w->output);
    } else {
        pid = fork_worker(o, parent, req[0], out[1], w->output);
        err = errno;
    }
    close_fd(&req[0]);
    close_fd(&out[1]);
    if (pid < 0) {
        bool py = !o->task && strncmp(o->backend, "python:", 7) == 0;
        snprintf(why, wlen, "cannot start a worker: %s%s: %s",
                 py              ? python_interpreter()
                 : worker_exe[0] ? worker_exe
                                 : "fork",
                 py ? " (GEMMCHECK_PYTHON names the interpreter)" : "", strerror(err));
        close_fd(&req[1]);
        close_fd(&out[0]);
        gck_worker_kill(w);
        return false;
    }
    setpgid(pid, pid); /* also here: no window in which a group kill misses it */
    w->pid = pid;
    w->dead = false;
    w->to = req[1];
    w->from = out[0];
    w->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    fcntl(w->to, F_SETFD, FD_CLOEXEC);
    fcntl(w->from, F_SETFD, FD_CLOEXEC);
    fcntl(w->to, F_SETFL, O_NONBLOCK);
    fcntl(w->from, F_SETFL, O_NONBLOCK);
    return true;
}

/* The worker has ended (or must): kill what is left of its group, reap it. */
static void reap(gck_worker *w, bool kill_first) {
    if (w->dead || w->pid <= 0) return;
    if (kill_first) kill(w->pid, SIGKILL);
    int st = 0;
    while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR) {
    }
    kill(-w->pid, SIGKILL); /* children the backend left in the group, holding the pipe */
    w->status = st;
    w->dead = true;
}

void gck_worker_kill(gck_worker *w) {
    if (w->pid > 0 && !w->dead) kill(-w->pid, SIGKILL);
    reap(w, true);
    gck_worker_show_output(w);
    close_fd(&w->to);
    close_fd(&w->from);
    close_fd(&w->pidfd);
    close_fd(&w->output);
    gck_wire_reader_free(&w->rd);
}

/* Whether the process has ended, waiting up to `seconds`. */
static bool ended_within(gck_worker *w, double seconds) {
    double end = gck_wire_now() + seconds;
    for (;;) {
        if (w->pidfd >= 0) {
            struct pollfd p = {.fd = w->pidfd, .events = POLLIN};
            double left = end - gck_wire_now();
            int pr = poll(&p, 1, left > 0 ? (int)(left * 1000) + 1 : 0);
            if (pr > 0) return true;
            if (pr == 0 || errno != EINTR) return false;
        } else {
            int st;
            pid_t r = waitpid(w->pid, &st, WNOHANG);
            if (r == w->pid) {
                w->status = st;
                w->dead = true;
                kill(-w->pid, SIGKILL);
                return true;
            }
            if (gck_wire_now() > end) return false;
            usleep(10000);
        }
    }
}

static volatile sig_atomic_t *stop_flag;

void gck_worker_stop_flag(volatile sig_atomic_t *flag) { stop_flag = flag; }

gck_worker_event gck_worker_next(gck_worker *w, double deadline, gck_wire_frame *f, char *why,
                                 size_t wlen) {
    bool eof = w->from < 0;
    for (;;) {
        int r = gck_wire_reader_next(&w->rd, f, why, wlen);
        if (r > 0) return GCK_WORKER_FRAME;
        if (r < 0) return GCK_WORKER_MALFORMED;
        if (w->dead) return GCK_WORKER_DIED; /* bytes left over: a death mid-message */
        if (stop_flag && *stop_flag) return GCK_WORKER_NOTHING; /* a stop request: no waiting */
        struct pollfd p[2];
        nfds_t np = 0;
        if (!eof) p[np++] = (struct pollfd){.fd = w->from, .events = POLLIN};
        if (w->pidfd >= 0) p[np++] = (struct pollfd){.fd = w->pidfd, .events = POLLIN};
        double left = deadline - gck_wire_now();
        int ms = left > 0 ? (int)(left * 1000) + 1 : 0;
        if (w->pidfd < 0 && (ms > 100 || ms < 0)) ms = 100; /* no pidfd: look now and then */
        int pr = poll(p, np, ms);
        if (pr < 0 && errno != EINTR) return GCK_WORKER_NOTHING;
        if (pr <= 0) {
            if (w->pidfd < 0 && ended_within(w, 0)) continue;
            if (gck_wire_now() >= deadline) return GCK_WORKER_NOTHING;
            continue;
        }
        bool readable = !eof && (p[0].revents & (POLLIN | POLLHUP | POLLERR));
        bool ended = w->pidfd >= 0 && (p[np - 1].revents & (POLLIN | POLLHUP));
        if (readable) {
            long n = gck_wire_reader_fill(&w->rd, w->from);
            if (n > 0) continue;
            if (n == 0) eof = true;
        }
        if (ended) {
            while (!eof && gck_wire_reader_fill(&w->rd, w->from) > 0) {
            } /* what it sent before it died comes first */
            reap(w, false);
            continue;
        }
        if (eof) {
            /* the pipe closed: a dying process closes it just before it ends; a live one
             * closed it itself (the backend closed descriptors it does not own) */
            close_fd(&w->from);
            if (!ended_within(w, 2.0)) w->pipe_closed = true;
            reap(w, w->pipe_closed);
        }
    }
}

bool gck_worker_send(gck_worker *w, int tag, const void *payload, size_t len, double deadline) {
    if (w->dead || w->to < 0) return false;
    unsigned char buf[sizeof(gck_wire_request) + 64];
    size_t n = gck_wire_encode(buf, sizeof buf, w->seq, tag, payload, len);
    if (n == 0 || !gck_wire_write(w->to, buf, n, deadline)) return false;
    w->seq++;
    return true;
}

bool gck_worker_request(gck_worker *w, const gck_wire_request *req, double deadline) {
    return gck_worker_send(w, GCK_WIRE_REQUEST, req, sizeof *req, deadline);
}

void gck_worker_show_output(gck_worker *w) {
    if (w->output < 0 || !w->output_to) return;
    FILE *to = w->output_to;
    int limit = w->output_limit;
    char label[64];
    snprintf(label, sizeof label, "backend output (worker %ld)", (long)w->pid);
    char buf[4096];
    ssize_t n;
    char line[1024];
    size_t ll = 0;
    while ((n = pread(w->output, buf, sizeof buf, (off_t)w->output_seen)) > 0) {
        w->output_seen += n;
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] != '\n' && ll < sizeof line - 1) {
                line[ll++] = buf[i];
                continue;
            }
            if (buf[i] != '\n') continue; /* the rest of an over-long line */
            line[ll] = '\0';
            ll = 0;
            if (w->output_shown < limit) {
                char clean[1100];
                gck_text_clean(clean, sizeof clean, line, sizeof line);
                fprintf(to, "%s: %s\n", label, clean);
            } else if (w->output_shown == limit) {
                fprintf(to, "%s: (more output not shown)\n", label);
            }
            w->output_shown++;
        }
        if (w->output_seen > (1 << 24)) break; /* a flood: 16 MiB read is enough */
    }
    if (ll > 0 && w->output_shown < limit) {
        line[ll] = '\0';
        char clean[1100];
        gck_text_clean(clean, sizeof clean, line, sizeof line);
        fprintf(to, "%s: %s\n", label, clean);
        w->output_shown++;
    }
}
