/* The gemmcheck command as a user runs it: a mixed-type oracle run whose output equals the
 * library oracle, and bad input giving one line on stderr and exit code 2. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gemmcheck/kernels.h"
#include "npy.h"
#include "testutil.h"

static char dir[] = "/tmp/gck_cli_XXXXXX";

static void setup(void) { cr_assert_not_null(mkdtemp(dir)); }
static void teardown(void) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

static const char *path(const char *name) {
    static char buf[8][256];
    static int slot;
    char *p = buf[slot++ % 8];
    snprintf(p, 256, "%s/%s", dir, name);
    return p;
}

/* Run gemmcheck with `args`; returns the exit code and stderr (stdout discarded). */
static int run(const char *args, char *err, size_t len) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1 >/dev/null", GCK_BINARY, args);
    return run_shell(cmd, err, len);
}

static void write_matrix(const char *name, gck_npy_dtype t, int64_t r, int64_t c,
                         const void *data) {
    char msg[256];
    int64_t shape[2] = {r, c};
    cr_assert_eq(gck_npy_write(path(name), t, 2, shape, data, msg, sizeof msg), GCK_OK, "%s", msg);
}

/* A: 5x7 bf16, B: 7x4 f16, C: 5x4 f32, all with random values. */
static void make_inputs(uint16_t *A, uint16_t *B, float *C) {
    test_rng r = {test_seed("cli", 77)};
    for (int e = 0; e < 35; e++) A[e] = gck_bf16_from_double(random_value(&r, GCK_BF16, 1));
    for (int e = 0; e < 28; e++) B[e] = gck_f16_from_double(random_value(&r, GCK_F16, 2));
    for (int e = 0; e < 20; e++) C[e] = (float)random_value(&r, GCK_F32, 1);
    write_matrix("a.npy", GCK_NPY_U2, 5, 7, A);
    write_matrix("b.npy", GCK_NPY_F2, 7, 4, B);
    write_matrix("c.npy", GCK_NPY_F4, 5, 4, C);
}

Test(cli, mixed_bf16_f16_f32_to_f16_equals_the_library_oracle, .init = setup, .fini = teardown) {
    uint16_t A[35], B[28];
    float C[20];
    make_inputs(A, B, C);
    char args[1024], err[4096];
    snprintf(args, sizeof args,
             "oracle --a %s --a-type bf16 --b %s --c %s --alpha 1.5 "
             "--beta=-0.25 --out-type f16 --out %s",
             path("a.npy"), path("b.npy"), path("c.npy"), path("d.npy"));
    cr_assert_eq(run(args, err, sizeof err), 0, "%s", err);
    gck_npy d;
    char msg[256];
    cr_assert_eq(gck_npy_read(path("d.npy"), &d, msg, sizeof msg), GCK_OK, "%s", msg);
    cr_assert_eq(d.dtype, GCK_NPY_F2);
    cr_assert_eq(d.shape[0], 5);
    cr_assert_eq(d.shape[1], 4);
    gck_case c;
    gck_case_init(&c, 5, 4, 7);
    c.order = GCK_ROW_MAJOR;
    c.lda = 7;
    c.ldb = c.ldc = c.ldd = 4;
    c.type_a = GCK_BF16;
    c.type_b = GCK_F16;
    c.type_c = GCK_F32;
    c.type_d = GCK_F16;
    c.d_is_c = false;
    c.alpha = 1.5;
    c.beta = -0.25;
    uint16_t want[20];
    cr_assert_eq(gck_oracle_mpfr(&c, A, B, C, want, 1, msg, sizeof msg), GCK_OK, "%s", msg);
    cr_expect_eq(memcmp(d.data, want, sizeof want), 0);
    gck_npy_free(&d);

    /* transposes: op(A) = A^T with A stored 7x5 gives the same product shape rules */
    snprintf(args, sizeof args,
             "oracle --a %s --a-type bf16 --transa T --b %s --out-type f32 "
             "--out %s",
             path("a.npy"), path("b.npy"), path("d.npy"));
    cr_expect_eq(run(args, err, sizeof err), 2);
    cr_expect(strstr(err, "op(A) is 7x5") != NULL && strstr(err, "(5, 7)") != NULL &&
                  strstr(err, "(7, 4)") != NULL,
              "%s", err);
}

/* Each bad invocation: exit 2, exactly one line on stderr, containing `needle`. */
static void expect_usage_error(const char *args, const char *needle) {
    char err[4096];
    int code = run(args, err, sizeof err);
    cr_expect_eq(code, 2, "exit %d for: %s\n%s", code, args, err);
    size_t lines = 0;
    for (const char *p = err; *p; p++) lines += *p == '\n';
    cr_expect_eq(lines, 1, "%zu lines for: %s\n%s", lines, args, err);
    cr_expect(strstr(err, needle) != NULL, "'%s' lacks '%s'", err, needle);
}

Test(cli, bad_input_gives_one_line_and_exit_code_2, .init = setup, .fini = teardown) {
    uint16_t A[35], B[28];
    float C[20];
    make_inputs(A, B, C);
    const char *a = path("a.npy"), *b = path("b.npy"), *c = path("c.npy"), *d = path("d.npy");
    char args[1024];
#define BAD(needle, ...)                                                                           \
    do {                                                                                           \
        snprintf(args, sizeof args, __VA_ARGS__);                                                  \
        expect_usage_error(args, needle);                                                          \
    } while (0)
    BAD("No such file", "oracle --a %s/missing.npy --b %s --out-type f32 --out %s", dir, b, d);
    BAD("dtype <u2: pass --a-type bf16", "oracle --a %s --b %s --out-type f32 --out %s", a, b, d);
    BAD("--b-type bf16 contradicts",
        "oracle --a %s --a-type bf16 --b %s --b-type bf16 "
        "--out-type f32 --out %s",
        a, b, d);
    BAD("shapes do not match",
        "oracle --a %s --a-type bf16 --b %s --transb T --out-type f32 "
        "--out %s",
        a, b, d);
    BAD("has shape (5, 4) but op(A)*op(B) is (7, 4)",
        "oracle --a %s --a-type bf16 --transa T "
        "--b %s --c %s --out-type f32 --out %s",
        a, c, c, d);
    BAD("unknown type 'f8' for --out-type",
        "oracle --a %s --a-type bf16 --b %s --out-type f8 "
        "--out %s",
        a, b, d);
    BAD("--beta 2 needs --c",
        "oracle --a %s --a-type bf16 --b %s --beta 2 --out-type f32 "
        "--out %s",
        a, b, d);
    BAD("--alpha 'x1' is not",
        "oracle --a %s --a-type bf16 --b %s --alpha x1 --out-type f32 "
        "--out %s",
        a, b, d);
    BAD("--alpha 'nan' is not",
        "oracle --a %s --a-type bf16 --b %s --alpha nan --out-type f32 "
        "--out %s",
        a, b, d);
    BAD("--transa 'X' must be N or T", "oracle --a %s --b %s --transa X --out-type f32 --out %s", a,
        b, d);
    BAD("missing --out-type", "oracle --a %s --a-type bf16 --b %s --out %s", a, b, d);
    BAD("missing --b", "oracle --a %s --out-type f32 --out %s", a, d);
    BAD("unknown argument '--bogus'", "oracle --bogus");
    BAD("--a given twice", "oracle --a %s --a %s", a, a);
    BAD("--out needs a value", "oracle --a %s --b %s --out-type f32 --out", a, b);
    BAD("unknown command 'frobnicate'", "frobnicate");
    BAD("cannot create", "oracle --a %s --a-type bf16 --b %s --out-type f32 --out %s/no/dir/d.npy",
        a, b, dir);
    /* a truncated file, a 1-D array, a text file */
    FILE *f = fopen(a, "rb");
    unsigned char img[512];
    size_t n = fread(img, 1, sizeof img, f);
    fclose(f);
    f = fopen(path("trunc.npy"), "wb");
    fwrite(img, 1, n - 3, f);
    fclose(f);
    BAD("truncated", "oracle --a %s --a-type bf16 --b %s --out-type f32 --out %s",
        path("trunc.npy"), b, d);
    int64_t shape1[1] = {6};
    char msg[256];
    cr_assert_eq(gck_npy_write(path("v.npy"), GCK_NPY_F4, 1, shape1, C, msg, sizeof msg), GCK_OK);
    BAD("expected a 2-D array or a 3-D batch, got shape (6,)",
        "oracle --a %s --b %s --out-type f32 --out %s", path("v.npy"), b, d);
    /* batches of 2 and of 3 matrices are not one batch */
    int64_t b2[3] = {2, 1, 3}, b3[3] = {3, 3, 1};
    cr_assert_eq(gck_npy_write(path("b2.npy"), GCK_NPY_F4, 3, b2, C, msg, sizeof msg), GCK_OK);
    cr_assert_eq(gck_npy_write(path("b3.npy"), GCK_NPY_F4, 3, b3, C, msg, sizeof msg), GCK_OK);
    BAD("batch sizes differ", "oracle --a %s --b %s --out-type f32 --out %s", path("b2.npy"),
        path("b3.npy"), d);
    /* shapes whose product is far beyond memory: (100000, 0) x (0, 100000) in f64 is 80 GB */
    int64_t wide[2] = {100000, 0}, tall[2] = {0, 100000};
    cr_assert_eq(gck_npy_write(path("w.npy"), GCK_NPY_F8, 2, wide, C, msg, sizeof msg), GCK_OK);
    cr_assert_eq(gck_npy_write(path("h.npy"), GCK_NPY_F8, 2, tall, C, msg, sizeof msg), GCK_OK);
    BAD("GiB of memory", "oracle --a %s --b %s --out-type f64 --out %s", path("w.npy"),
        path("h.npy"), d);
    f = fopen(path("t.npy"), "w");
    fputs("hello\n", f);
    fclose(f);
    BAD("bad magic", "oracle --a %s --b %s --out-type f32 --out %s", path("t.npy"), b, d);
#undef BAD
}

/* A splitting mode or a kernels path the library would read as unset is refused before any
 * command runs: a campaign meant for one path must not quietly run another. */
Test(cli, unknown_environment_values_are_refused) {
    char err[4096];
    cr_assert_eq(setenv("GEMMCHECK_OZAKI", "f64", 1), 0);
    expect_usage_error("backends", "GEMMCHECK_OZAKI=f64 is not a splitting mode (auto, always");
    const char *modes[] = {"auto", "always", "never", "int8", "residues"};
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        cr_assert_eq(setenv("GEMMCHECK_OZAKI", modes[m], 1), 0);
        cr_expect_eq(run("backends", err, sizeof err), 0, "%s: %s", modes[m], err);
    }
    cr_assert_eq(unsetenv("GEMMCHECK_OZAKI"), 0);
    cr_assert_eq(setenv("GEMMCHECK_KERNELS_PATH", "avx3", 1), 0);
    expect_usage_error("backends", "GEMMCHECK_KERNELS_PATH=avx3 names no path (auto, portable");
    /* every path by name: accepted exactly where this CPU runs it */
    for (int p = 0; p < GCK_KPATH_COUNT; p++) {
        const char *name = gck_kpath_name((gck_kpath)p);
        cr_assert_eq(setenv("GEMMCHECK_KERNELS_PATH", name, 1), 0);
        if (p == GCK_KPATH_AUTO || gck_kpath_supported((gck_kpath)p, NULL, 0))
            cr_expect_eq(run("backends", err, sizeof err), 0, "%s: %s", name, err);
        else
            expect_usage_error("backends", "cannot run here");
    }
    cr_assert_eq(unsetenv("GEMMCHECK_KERNELS_PATH"), 0);
}

Test(cli, help_and_version_exit_zero) {
    char err[4096];
    cr_expect_eq(run("--help", err, sizeof err), 0);
    cr_expect_eq(run("oracle --help", err, sizeof err), 0);
    cr_expect_eq(run("--version", err, sizeof err), 0);
    char out[4096];
    cr_expect_eq(run_gemmcheck("--version", out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "gemmcheck " GEMMCHECK_VERSION " (commit ") == out, "%s", out);
    cr_expect(strstr(out, "MPFR ") != NULL && strstr(out, "CUDA: ") != NULL, "%s", out);
    /* the BLAS libraries: their own version strings, or why they are not available */
    cr_expect(strstr(out, "\nopenblas: ") != NULL && strstr(out, "\nblis: ") != NULL, "%s", out);
}

/* First contact: a mistyped command gets a suggestion; a bad --types is one usage error before any
 * backend is probed; a usage error leaves no findings file behind; backend names are never cut. */
Test(cli, usage_errors_suggest_and_leave_nothing_behind, .init = setup, .fini = teardown) {
    expect_usage_error("fuz", "did you mean 'fuzz'?");
    expect_usage_error("backend", "did you mean 'backends'?");
    expect_usage_error("orcale", "did you mean 'oracle'?");
    expect_usage_error("zzzzzz", "unknown command 'zzzzzz' (see gemmcheck --help)");
    char args[1024];
    snprintf(args, sizeof args, "fuzz --types f32,f32,f32 --time 1 --findings %s", path("f.jsonl"));
    expect_usage_error(args, "--types 'f32,f32,f32'");
    snprintf(args, sizeof args,
             "fuzz --backend cblas:/nonexistent/libnone.so --time 1 --findings %s",
             path("f.jsonl"));
    char err[4096];
    cr_expect_eq(run(args, err, sizeof err), 2, "%s", err);
    cr_expect_eq(access(path("f.jsonl"), F_OK), -1, "a usage error created %s", path("f.jsonl"));
    /* a backend spec longer than any fixed column appears whole in the summary */
    char lib[200], cmd[2048], out[8192];
    snprintf(lib, sizeof lib, "%s",
             path("a-cblas-library-with-a-name-much-longer-than-48-chars.so"));
    snprintf(cmd, sizeof cmd, "ln -s /usr/lib/x86_64-linux-gnu/blas/libblas.so.3 '%s'", lib);
    cr_assert_eq(system(cmd), 0);
    snprintf(args, sizeof args, "fuzz --backend cblas:%s --cases 3 --jobs 1 --seed 1 --findings %s",
             lib, path("g.jsonl"));
    cr_expect_eq(run_gemmcheck(args, out, sizeof out), 0, "%s", out);
    char want[256];
    snprintf(want, sizeof want, "cblas:%s ", lib);
    cr_expect(strstr(out, want) != NULL, "summary lacks the whole name '%s':\n%s", want, out);
}

/* repro takes the case as a string, from a file (a corpus file, a findings line), @FILE, or
 * standard input; a file without a reproducer is one usage error. */
Test(cli, repro_reads_the_case_from_a_file_or_stdin, .init = setup, .fini = teardown) {
    static const char text[] =
        "gck1 m=5 n=4 k=7 order=col ta=N tb=T types=f32,f32,f32,f32 compute=f32 scale=f32 "
        "alpha=1.5 beta=-0.5 lda=6 ldb=5 ldc=7 ldd=7 d=c batch=1 sa=0 sb=0 sc=0 sd=0 "
        "off=1,2,3,0 vab=unif vc=unif sp=0 cnan=0 seed=7";
    FILE *f = fopen(path("corpus.txt"), "w");
    cr_assert_not_null(f);
    fprintf(f, "%s\n", text);
    fclose(f);
    f = fopen(path("finding.jsonl"), "w");
    cr_assert_not_null(f);
    fprintf(f, "{\"kind\": \"crash\", \"repro\": \"%s\", \"backend\": \"ref\"}\n", text);
    fclose(f);
    f = fopen(path("empty.txt"), "w");
    cr_assert_not_null(f);
    fprintf(f, "no case here\n");
    fclose(f);
    char args[1024], out[8192];
    const char *forms[] = {"'%s'", "'@%s'", "- < '%s'"};
    const char *files[] = {"corpus.txt", "finding.jsonl"};
    for (int x = 0; x < 2; x++)
        for (int y = 0; y < 3; y++) {
            char arg[512];
            snprintf(arg, sizeof arg, forms[y], path(files[x]));
            snprintf(args, sizeof args, "repro --backend ref %s", arg);
            cr_expect_eq(run_gemmcheck(args, out, sizeof out), 0, "%s\n%s", args, out);
            cr_expect(strstr(out, "seed=7") && strstr(out, "pass"), "%s\n%s", args, out);
        }
    snprintf(args, sizeof args, "repro --backend ref '%s'", path("empty.txt"));
    expect_usage_error(args, "holds no reproducer");
    expect_usage_error("repro --backend ref /nonexistent/case.txt", "nor a readable file");
}
