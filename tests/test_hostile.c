/* Hostile backends (tests/faulty_backends.c, docs/ISOLATION.md): whatever a backend does inside
 * or after its call, the supervisor survives, reports the right kind, writes valid reports,
 * leaves no process behind, and exits as documented. Each process a test starts carries an
 * environment marker, so that every descendant is found afterwards, re-parented or not. */
#define _DEFAULT_SOURCE 1
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gemmcheck/gemmcheck.h"
#include "testutil.h"
#include "wire.h"

static char dir[256];
static char tag[64];

static void setup(void) {
    snprintf(dir, sizeof dir, "/tmp/gck_hostile_XXXXXX");
    cr_assert(mkdtemp(dir));
    snprintf(tag, sizeof tag, "GCK_HOSTILE_TAG=%ld_%d", (long)getpid(), rand());
}

static void teardown(void) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", dir);
}

/* Processes (other than zombies) whose environment holds this test's marker. */
static int marked_processes(void) {
    DIR *d = opendir("/proc");
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
        char path[300], env[1 << 15];
        snprintf(path, sizeof path, "/proc/%s/environ", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        size_t len = fread(env, 1, sizeof env, f);
        fclose(f);
        for (size_t i = 0; i < len; i += strlen(env + i) + 1)
            if (!strncmp(env + i, tag, strlen(tag)) && env[i + strlen(tag)] == '\0') n++;
    }
    closedir(d);
    return n;
}

/* Marked processes left after up to 3 s (killed ones take a moment to go). */
static int strays(void) {
    int n = 0;
    for (int i = 0; i < 30 && (n = marked_processes()) > 0; i++) usleep(100000);
    return n;
}

/* Run gemmcheck with the marker; its exit status (-1: killed by a signal). */
static int run(const char *args, char *out, size_t len) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "env %s timeout -s KILL 300 '%s' %s 2>&1", tag, GCK_BINARY, args);
    return run_shell(cmd, out, len);
}

/* The JUnit file parses as XML (xmllint is a strict parser) and holds to docs/junit.xsd. */
static bool xml_clean(const char *path) {
    char cmd[2048], out[4096];
    snprintf(cmd, sizeof cmd, "xmllint --noout --schema '%s' '%s' 2>&1", GCK_JUNIT_XSD, path);
    int rc = run_shell(cmd, out, sizeof out);
    if (rc != 0) fprintf(stderr, "%s", out);
    return rc == 0;
}

/* Every line of a JSON Lines file parses; the number of lines. */
static int jsonl_lines(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[1 << 16];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        json_error_t err;
        json_t *j = json_loads(line, 0, &err);
        cr_expect(j != NULL, "%s: line %d does not parse: %s", path, n + 1, err.text);
        cr_expect(j && json_is_string(json_object_get(j, "details")), "%s: line %d has no details",
                  path, n + 1);
        json_decref(j);
        n++;
    }
    fclose(f);
    return n;
}

/* A small valid case. */
#define SMALL_CASE                                                                                 \
    "gck1 m=5 n=4 k=3 order=col ta=N tb=N types=f32,f32,f32,f32 compute=f32 scale=f32 alpha=1 "    \
    "beta=0 lda=5 ldb=3 ldc=5 ldd=5 d=sep batch=1 sa=0 sb=0 sc=0 sd=0 off=0,0,0,0 vab=unif "       \
    "vc=unif sp=0 cnan=1 seed=3"

typedef struct mode {
    const char *name;
    int exit;         /* the campaign's exit status */
    const char *kind; /* the kind every finding has (NULL: none) */
    const char *extra;
    int cases;        /* 0: 8 */
    const char *rule; /* the rule of every cause: the mechanism (NULL: not checked) */
} mode;

static const mode modes[] = {
    {"pipe13", 1, "crash", "", 0, "wrote into gemmcheck's message pipe"},
    {"pipejunk", 1, "crash", "", 0, "wrote into gemmcheck's message pipe"},
    {"fpround", 1, "fpenv_modified", "", 0,
     "rounding toward zero, exception traps off, FTZ off, DAZ off"},
    {"fpftz", 1, "fpenv_modified", "", 0,
     "rounding to nearest, exception traps off, FTZ on, DAZ on"},
    {"fptrap", 1, "fpenv_modified", "", 0,
     "rounding to nearest, exception traps enabled, FTZ off, DAZ off"},
    {"closefds", 1, "crash", "", 0, "closed gemmcheck's message pipe"},
    {"forkcrash", 1, "crash", "", 0, "signal 11"},
    {"forksleep", 0, NULL, "", 0, NULL},
    {"killgroup", 1, "crash", "", 0, "signal 15"},
    {"after", 1, "crash", "", 40, NULL},
    {"badtext", 1, "error", "", 0, NULL},
    {"stdout", 0, NULL, "", 0, NULL},
    {"exit", 1, "crash", "", 0, "exit status 7"},
    {"abort", 1, "crash", "", 0, "signal 6"},
    {"sigkill", 1, "crash", "", 0, "signal 9"},
    {"far", 1, "crash", "", 0, "signal 11"},
    {"ownsegv", 1, "crash", "", 0, "exit status 0"},
    {"spin", 1, "hang", "--timeout-floor 1", 0, "first call"},
    {"segv", 1, "crash", "", 0, "signal 11"},
    {"input", 1, "input_modified", "", 0, "A, valid element"},
    {"oob", 1, "out_of_bounds_write", "", 0, "C, guard zone"},
    {"error", 1, "error", "", 0, "CUBLAS_STATUS_EXECUTION_FAILED (simulated)"},
};

static void campaign(const mode *m) {
    char args[4096], out[1 << 16], report[512], junit[512], jsonl[512];
    snprintf(report, sizeof report, "%s/%s.json", dir, m->name);
    snprintf(junit, sizeof junit, "%s/%s.xml", dir, m->name);
    snprintf(jsonl, sizeof jsonl, "%s/%s.jsonl", dir, m->name);
    snprintf(args, sizeof args,
             "fuzz --backend plugin:%s:%s --seed 7 --jobs 1 --rerun-share 0.5 "
             "--report %s --junit %s --findings %s --no-progress --cases %d %s",
             GCK_FAULTY_PLUGIN, m->name, report, junit, jsonl, m->cases ? m->cases : 8, m->extra);
    int code = run(args, out, sizeof out);
    cr_expect_eq(code, m->exit, "%s: exit %d, expected %d\n%s", m->name, code, m->exit, out);
    json_error_t err;
    json_t *j = json_load_file(report, 0, &err);
    cr_assert(j, "%s: the report does not parse: %s\n%s", m->name, err.text, out);
    json_t *sum = json_object_get(j, "summary");
    cr_expect_eq(json_integer_value(json_object_get(sum, "internal_errors")), 0,
                 "%s: internal errors\n%s", m->name, out);
    size_t i, nf = json_array_size(json_object_get(j, "findings"));
    json_t *f;
    json_array_foreach(json_object_get(j, "findings"), i, f) {
        const char *kind = json_string_value(json_object_get(f, "kind"));
        cr_expect(m->kind && !strcmp(kind, m->kind), "%s: a %s finding: %s", m->name, kind,
                  json_string_value(json_object_get(f, "details")));
        cr_expect(json_is_string(json_object_get(f, "details")), "%s: no details", m->name);
    }
    cr_expect_eq(nf > 0, m->kind != NULL, "%s: %zu findings\n%s", m->name, nf, out);
    /* one cause per mechanism, named by it (exit statuses, pipe abuse, hangs, messages: they
     * were one cause "crash|" with an empty rule) */
    json_array_foreach(json_object_get(j, "causes"), i, f) {
        const char *rule = json_string_value(json_object_get(f, "rule"));
        cr_expect(!m->rule || !strcmp(rule, m->rule), "%s: cause rule '%s', expected '%s'", m->name,
                  rule, m->rule);
    }
    if (m->rule) cr_expect_eq(json_array_size(json_object_get(j, "causes")), 1, "%s", m->name);
    int streamed = jsonl_lines(jsonl);
    cr_expect(nf == 0 ? streamed == 0 : streamed >= (int)nf,
              "%s: %d streamed finding records for %zu findings", m->name, streamed, nf);
    cr_expect(xml_clean(junit), "%s: the JUnit file is not clean XML", m->name);
    cr_expect_eq(strays(), 0, "%s: processes left behind", m->name);
    fprintf(stderr, "[hostile %s] exit %d, %zu finding(s)%s%s\n", m->name, code, nf, nf ? ": " : "",
            nf ? json_string_value(
                     json_object_get(json_array_get(json_object_get(j, "findings"), 0), "details"))
               : "");
    json_decref(j);
}

Test(hostile, every_mode_gives_its_kind_valid_reports_and_no_strays, .init = setup,
     .fini = teardown, .timeout = 900) {
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) campaign(&modes[i]);
}

Test(hostile, a_backend_that_cannot_be_opened_is_a_set_up_error_everywhere, .init = setup,
     .fini = teardown, .timeout = 300) {
    static const char *const bad[] = {"norows", "badrow", "initsegv", "badpromise"};
    static const char *const says[] = {"no rows", "row 1: its type of A is out of range",
                                       "signal 11", "row 1: its set of promises is out of range"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char args[2048], out[1 << 14];
        snprintf(args, sizeof args, "backends plugin:%s:%s", GCK_FAULTY_PLUGIN, bad[i]);
        cr_expect_eq(run(args, out, sizeof out), 2, "backends %s:\n%s", bad[i], out);
        cr_expect(strstr(out, says[i]), "backends %s:\n%s", bad[i], out);
        snprintf(args, sizeof args,
                 "fuzz --backend plugin:%s:%s --cases 3 --no-progress "
                 "--report %s/r.json",
                 GCK_FAULTY_PLUGIN, bad[i], dir);
        cr_expect_eq(run(args, out, sizeof out), 2, "fuzz %s:\n%s", bad[i], out);
        cr_expect(strstr(out, says[i]), "fuzz %s:\n%s", bad[i], out);
        /* repro too: an init that crashes is no case's crash (it was `crash`, exit 1) */
        snprintf(args, sizeof args, "repro --backend plugin:%s:%s '%s'", GCK_FAULTY_PLUGIN, bad[i],
                 SMALL_CASE);
        cr_expect_eq(run(args, out, sizeof out), 2, "repro %s:\n%s", bad[i], out);
        cr_expect(strstr(out, says[i]), "repro %s:\n%s", bad[i], out);
        cr_expect(strstr(out, "verdict") == NULL, "repro %s:\n%s", bad[i], out);
    }
    /* plugins built for another plugin ABI, or without saying which: refused before any call */
    static const struct {
        const char *lib, *says;
    } abi[] = {
        {GCK_ABI_OTHER_PLUGIN, "was built for gemmcheck's plugin ABI 999, this gemmcheck has ABI"},
        {GCK_ABI_NONE_PLUGIN, "does not say which plugin ABI it was built for"},
    };
    for (size_t i = 0; i < 2; i++) {
        char args[2048], out[1 << 14];
        static const char *const cmds[] = {
            "backends plugin:%s:x", "fuzz --backend plugin:%s:x --cases 1 --no-progress",
            "repro --backend plugin:%s:x 'gck1 m=5 n=4 k=3 order=col ta=N tb=N "
            "types=f32,f32,f32,f32 compute=f32 scale=f32 alpha=1 "
            "beta=0 lda=5 ldb=3 ldc=5 ldd=5 d=sep batch=1 sa=0 "
            "sb=0 sc=0 sd=0 off=0,0,0,0 vab=unif vc=unif sp=0 "
            "cnan=1 seed=3'"};
        for (size_t c = 0; c < 3; c++) {
            snprintf(args, sizeof args, cmds[c], abi[i].lib);
            cr_expect_eq(run(args, out, sizeof out), 2, "%s:\n%s", args, out);
            cr_expect(strstr(out, abi[i].says), "%s:\n%s", args, out);
        }
    }
    static char out2[1 << 18]; /* its 560 rows are listed */
    char args[2048], *out = out2;
    snprintf(args, sizeof args, "backends plugin:%s:badtext", GCK_FAULTY_PLUGIN);
    cr_expect_eq(run(args, out, sizeof out2), 0, "%s", out);
    cr_expect(strstr(out, "version \\xff\\xfe <&\"> \\x1b[31mred"), "%s", out);
    cr_expect_eq(strchr(out, 0x1b), NULL, "a raw escape reached the terminal:\n%s", out);
    cr_expect_eq(strays(), 0);
}

Test(hostile, repro_labels_backend_output_and_refuses_cases_beyond_memory, .init = setup,
     .fini = teardown) {
    const char *c = "gck1 m=5 n=4 k=3 order=col ta=N tb=N types=f32,f32,f32,f32 compute=f32 "
                    "scale=f32 alpha=1 beta=0 lda=5 ldb=3 ldc=5 ldd=5 d=sep batch=1 sa=0 sb=0 "
                    "sc=0 sd=0 off=0,0,0,0 vab=unif vc=unif sp=0 cnan=1 seed=3";
    char args[4096], out[1 << 14];
    snprintf(args, sizeof args, "repro --backend plugin:%s:stdout '%s'", GCK_FAULTY_PLUGIN, c);
    cr_expect_eq(run(args, out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "backend output (worker "), "%s", out);
    cr_expect(strstr(out, "verdict:  pass"), "%s", out);
    cr_expect_eq(strchr(out, 0x1b), NULL, "a raw escape reached the terminal:\n%s", out);
    const char *huge = "gck1 m=1000000000 n=4 k=3 order=col ta=N tb=N types=f64,f64,f64,f64 "
                       "compute=f64 scale=f64 alpha=1 beta=0 lda=1000000000 ldb=3 "
                       "ldc=1000000000 ldd=1000000000 d=sep batch=1 sa=0 sb=0 sc=0 sd=0 "
                       "off=0,0,0,0 vab=unif vc=unif sp=0 cnan=1 seed=3";
    snprintf(args, sizeof args, "repro --backend ref '%s'", huge);
    cr_expect_eq(run(args, out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "more than this machine's"), "%s", out);
    cr_expect_eq(strays(), 0);
}

/* Start gemmcheck with the marker in the background, its stderr into the file `log`; its pid. */
static pid_t start_logged(const char *const *argv, const char *log) {
    pid_t pid = fork();
    if (pid == 0) {
        putenv(tag);
        int null = open("/dev/null", O_WRONLY), err = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(null, 1);
        dup2(err, 2);
        execv(GCK_BINARY, (char *const *)argv);
        _exit(127);
    }
    return pid;
}

/* The same, stderr discarded. */
static pid_t start(const char *const *argv) { return start_logged(argv, "/dev/null"); }

/* Whether the campaign logging into `log` (--log-every) has said within `seconds` that a case of
 * `backend` finished: its line "<backend>: N cases" with N > 0. */
static bool logged_a_case(const char *log, const char *backend, double seconds) {
    char key[128];
    snprintf(key, sizeof key, ": %s: ", backend);
    for (double waited = 0; waited < seconds; waited += 0.1) {
        FILE *f = fopen(log, "r");
        char line[512];
        long n = 0;
        while (f && fgets(line, sizeof line, f))
            if (strstr(line, key)) n = strtol(strstr(line, key) + strlen(key), NULL, 10);
        if (f) fclose(f);
        if (n > 0) return true;
        usleep(100000);
    }
    return false;
}

static int wait_exit(pid_t pid) {
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
}

Test(hostile, killing_or_stopping_the_supervisor_leaves_nothing_behind, .init = setup,
     .fini = teardown, .timeout = 120) {
    char backend[1024], report[512];
    /* SIGKILL while the backend spins: the worker dies with its supervisor */
    snprintf(backend, sizeof backend, "plugin:%s:spin", GCK_FAULTY_PLUGIN);
    const char *spin[] = {GCK_BINARY, "fuzz", "--backend",       backend, "--jobs",        "2",
                          "--time",   "60",   "--timeout-floor", "50",    "--no-progress", NULL};
    pid_t pid = start(spin);
    sleep(3);
    cr_expect_gt(marked_processes(), 1, "no workers started");
    kill(pid, SIGKILL);
    wait_exit(pid);
    cr_expect_eq(strays(), 0, "workers outlived a killed supervisor");
    /* SIGTERM before any case finished: the report says so and the exit status is not 0 */
    snprintf(report, sizeof report, "%s/term.json", dir);
    const char *hang[] = {
        GCK_BINARY,        "fuzz", "--backend",     backend,    "--jobs", "1", "--time", "60",
        "--timeout-floor", "50",   "--no-progress", "--report", report,   NULL};
    pid = start(hang);
    sleep(3);
    kill(pid, SIGTERM);
    cr_expect_eq(wait_exit(pid), 128 + SIGTERM);
    json_error_t err;
    json_t *j = json_load_file(report, 0, &err);
    cr_assert(j, "%s", err.text);
    json_t *sum = json_object_get(j, "summary");
    cr_expect_str_eq(json_string_value(json_object_get(sum, "interrupted")), "SIGTERM");
    cr_expect_eq(json_integer_value(json_object_get(sum, "cases")), 0);
    json_decref(j);
    cr_expect_eq(strays(), 0);
    /* a backend that clears its parent-death signal and ignores SIGTERM, spinning: the
     * worker's lifeline thread ends it once its supervisor is gone */
    snprintf(backend, sizeof backend, "plugin:%s:nodeathsig", GCK_FAULTY_PLUGIN);
    const char *nodeath[] = {GCK_BINARY, "fuzz", "--backend",       backend, "--jobs",        "2",
                             "--time",   "60",   "--timeout-floor", "50",    "--no-progress", NULL};
    pid = start(nodeath);
    sleep(3);
    cr_expect_gt(marked_processes(), 1, "no workers started");
    kill(pid, SIGKILL);
    wait_exit(pid);
    cr_expect_eq(strays(), 0,
                 "a worker whose backend cleared its parent-death signal outlived "
                 "its killed supervisor");
    /* an interrupted campaign that found nothing is not a pass: 128 + the signal; interrupted
     * once its log shows a finished case (a fixed 3 s was too short for a sanitizer build on a
     * slow host: no case had finished) */
    char log[512];
    snprintf(report, sizeof report, "%s/int.json", dir);
    snprintf(log, sizeof log, "%s/int.log", dir);
    const char *clean[] = {GCK_BINARY, "fuzz",   "--backend", "ref",         "--jobs",
                           "1",        "--time", "120",       "--log-every", "0.2",
                           "--report", report,   NULL};
    pid = start_logged(clean, log);
    cr_expect(logged_a_case(log, "ref", 60), "no case finished within 60 s");
    kill(pid, SIGINT);
    cr_expect_eq(wait_exit(pid), 128 + SIGINT);
    j = json_load_file(report, 0, &err);
    cr_assert(j, "%s", err.text);
    sum = json_object_get(j, "summary");
    cr_expect_str_eq(json_string_value(json_object_get(sum, "interrupted")), "SIGINT");
    cr_expect_gt(json_integer_value(json_object_get(sum, "cases")), 0);
    cr_expect_eq(json_array_size(json_object_get(j, "findings")), 0);
    json_decref(j);
    cr_expect_eq(strays(), 0);
}

/* Seconds since `t0` (a CLOCK_MONOTONIC reading). */
static double since(const struct timespec *t0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) * 1e-9;
}

Test(hostile, a_hanging_init_honours_time_timeout_and_signals, .init = setup, .fini = teardown,
     .timeout = 200) {
    char backend[1024], args[2048], out[1 << 14], report[512];
    snprintf(backend, sizeof backend, "plugin:%s:inithang", GCK_FAULTY_PLUGIN);
    struct timespec t0;
    /* fuzz --time 4: the wait for the backend to open ends with the campaign (was 120 s) */
    clock_gettime(CLOCK_MONOTONIC, &t0);
    snprintf(args, sizeof args, "fuzz --backend %s --time 4 --jobs 1 --no-progress", backend);
    cr_expect_eq(run(args, out, sizeof out), 2, "%s", out);
    cr_expect_lt(since(&t0), 20.0, "%s", out);
    cr_expect(strstr(out, "did not finish opening the backend") && strstr(out, "waited 7 s"), "%s",
              out);
    /* repro --timeout 3: the same deadline bounds the opening; a set-up error, not a crash */
    clock_gettime(CLOCK_MONOTONIC, &t0);
    snprintf(args, sizeof args, "repro --backend %s --timeout 3 '%s'", backend, SMALL_CASE);
    cr_expect_eq(run(args, out, sizeof out), 2, "%s", out);
    cr_expect_lt(since(&t0), 15.0, "%s", out);
    cr_expect(strstr(out, "waited 3 s") != NULL, "%s", out);
    /* SIGINT while the init hangs: the campaign ends at once, interrupted, its report written */
    snprintf(report, sizeof report, "%s/inithang.json", dir);
    const char *argv[] = {GCK_BINARY, "fuzz",          "--backend", backend, "--time",
                          "100",      "--no-progress", "--report",  report,  NULL};
    pid_t pid = start(argv);
    sleep(2);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    kill(pid, SIGINT);
    cr_expect_eq(wait_exit(pid), 128 + SIGINT);
    cr_expect_lt(since(&t0), 5.0);
    json_error_t err;
    json_t *j = json_load_file(report, 0, &err);
    cr_assert(j, "%s", err.text);
    cr_expect_str_eq(
        json_string_value(json_object_get(json_object_get(j, "summary"), "interrupted")), "SIGINT");
    json_decref(j);
    cr_expect_eq(strays(), 0);
}

/* Reports are written whole or not at all: a campaign killed while writing its report (here by
 * SIGXFSZ, a file-size limit below the report's size) leaves the previous report intact. */
Test(hostile, a_report_is_never_left_half_written, .init = setup, .fini = teardown,
     .timeout = 120) {
    char cmd[4096], out[1 << 14], report[512];
    snprintf(report, sizeof report, "%s/r.json", dir);
    snprintf(cmd, sizeof cmd, "'%s' fuzz --backend ref --cases 20 --no-progress --report %s",
             GCK_BINARY, report);
    cr_assert_eq(run_shell(cmd, out, sizeof out), 0, "%s", out);
    json_error_t err;
    json_t *before = json_load_file(report, 0, &err);
    cr_assert(before, "%s", err.text);
    /* 8 KiB at most per file: the report (tens of KiB) cannot be written */
    snprintf(cmd, sizeof cmd,
             "ulimit -f 16; exec '%s' fuzz --backend ref --cases 30 --seed 9 --no-progress "
             "--report %s",
             GCK_BINARY, report);
    cr_expect_neq(run_shell(cmd, out, sizeof out), 0, "%s", out);
    json_t *after = json_load_file(report, 0, &err);
    cr_expect(after != NULL, "the report was left half written: %s", err.text);
    cr_expect(after && json_equal(before, after), "the report changed");
    json_decref(before);
    json_decref(after);
}

/* cblas:NAME without a slash: the loader finds NAME by its own rules; the version line and the
 * report name the file it opened, never one of that name in the current directory. */
Test(hostile, cblas_names_the_file_the_loader_opened, .init = setup, .fini = teardown) {
    char cmd[2048], out[1 << 14];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && : > libblas.so.3 && env %s '%s' backends cblas:libblas.so.3 2>&1", dir,
             tag, GCK_BINARY);
    cr_assert_eq(run_shell(cmd, out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "(/usr/lib/") != NULL, "%s", out);
    cr_expect(strstr(out, dir) == NULL, "the planted file was named:\n%s", out);
}

Test(hostile, a_findings_file_in_use_is_refused, .init = setup, .fini = teardown, .timeout = 120) {
    char findings[512], out[1 << 14], args[2048];
    snprintf(findings, sizeof findings, "%s/shared.jsonl", dir);
    const char *first[] = {GCK_BINARY, "fuzz",          "--backend",  "ref",    "--time",
                           "6",        "--no-progress", "--findings", findings, NULL};
    pid_t pid = start(first);
    sleep(2);
    snprintf(args, sizeof args, "fuzz --backend ref --time 2 --no-progress --findings %s",
             findings);
    cr_expect_eq(run(args, out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "being written by another campaign"), "%s", out);
    cr_expect_eq(wait_exit(pid), 0);
    cr_expect_eq(strays(), 0);
}

/* What crosses the pipe is checked: the forged records of a hostile worker are refused. */
Test(hostile, forged_and_corrupted_messages_are_refused) {
    gck_run_result *r = calloc(1, sizeof *r);
    char why[256];
    r->outcome = GCK_OUTCOME_FINDINGS;
    r->nfindings = 0x41414141;
    cr_expect_not(gck_wire_check_result(r, why, sizeof why));
    cr_expect(strstr(why, "1094795585 findings"), "%s", why);
    r->nfindings = 1;
    r->findings[0].kind = (gck_kind)0x41414141;
    cr_expect_not(gck_wire_check_result(r, why, sizeof why));
    r->findings[0].kind = GCK_KIND_CRASH;
    memset(r->findings[0].detail, 0xff, sizeof r->findings[0].detail); /* no NUL, not UTF-8 */
    memset(r->row, '<', sizeof r->row);
    cr_expect(gck_wire_check_result(r, why, sizeof why));
    cr_expect(!strncmp(r->findings[0].detail, "\\xff\\xff", 8));
    cr_expect_lt(strlen(r->row), sizeof r->row);
    r->outcome = GCK_OUTCOME_PASS; /* a pass with findings */
    cr_expect_not(gck_wire_check_result(r, why, sizeof why));

    gck_wire_reader rd;
    cr_assert(gck_wire_reader_init(&rd));
    unsigned char frame[256];
    size_t n = gck_wire_encode(frame, sizeof frame, 0, GCK_WIRE_CALLING, "0 1 0", 6);
    gck_wire_frame f;
    /* a good frame, then the same frame again (its sequence number is stale) */
    memcpy(rd.buf, frame, n);
    memcpy(rd.buf + n, frame, n);
    rd.have = 2 * n;
    cr_expect_eq(gck_wire_reader_next(&rd, &f, why, sizeof why), 1);
    cr_expect_eq(gck_wire_reader_next(&rd, &f, why, sizeof why), -1);
    cr_expect(strstr(why, "message 0 where 1 was due"), "%s", why);
    /* a flipped payload byte */
    rd.have = 0;
    rd.seq = 0;
    memcpy(rd.buf, frame, n);
    rd.buf[n - 2] ^= 1;
    rd.have = n;
    cr_expect_eq(gck_wire_reader_next(&rd, &f, why, sizeof why), -1);
    cr_expect(strstr(why, "checksum"), "%s", why);
    /* 13 stray bytes */
    memcpy(rd.buf, "hello, world\n", 13);
    rd.have = 13;
    cr_expect_eq(gck_wire_reader_next(&rd, &f, why, sizeof why), -1);
    /* a length no message has */
    n = gck_wire_encode(frame, sizeof frame, 0, GCK_WIRE_RESULT, "x", 2);
    memcpy(rd.buf, frame, n);
    rd.have = n;
    cr_expect_eq(gck_wire_reader_next(&rd, &f, why, sizeof why), -1);
    gck_wire_reader_free(&rd);
    free(r);
}
