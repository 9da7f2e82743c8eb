/* The caller's floating-point environment and locale do not reach gemmcheck: every public
 * function that computes gives, under flush-to-zero, denormals-are-zero, each directed rounding,
 * unmasked traps and a decimal-comma locale, the bytes it gives in the default environment,
 * raises no signal, and returns with the caller's controls and locale as they were
 * (src/util/fpenv.h). Without the guards, the
 * kernels and the reference GEMM flushed subnormal results under FTZ and rounded upward under
 * FE_UPWARD, and gck_round_to(x, f32) flushed and rounded likewise; in de_DE.UTF-8,
 * gck_spec_parse refused "alpha=0.5" and gck_spec_format wrote "alpha=0,5". */
#define _GNU_SOURCE 1
#include <criterion/criterion.h>
#include <fenv.h>
#include <immintrin.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemmcheck/gemmcheck.h"
#include "testutil.h"

/* ---- the caller's environments ---------------------------------------------------------- */

typedef struct caller_env {
    const char *name;
    unsigned mxcsr;     /* MXCSR controls (0: leave 0x1f80) */
    int round;          /* C rounding mode */
    int traps;          /* feenableexcept */
    bool decimal_comma; /* the thread in de_DE.UTF-8 (uselocale), whose decimal point is ',' */
} caller_env;

static const caller_env ENVS[] = {
    {"default", 0x1f80u, FE_TONEAREST, 0, false},
    {"FTZ", 0x9f80u, FE_TONEAREST, 0, false},
    {"DAZ", 0x1fc0u, FE_TONEAREST, 0, false},
    {"FTZ and DAZ (-Ofast, torch.set_flush_denormal)", 0x9fc0u, FE_TONEAREST, 0, false},
    {"rounding upward", 0, FE_UPWARD, 0, false},
    {"rounding downward", 0, FE_DOWNWARD, 0, false},
    {"rounding toward zero", 0, FE_TOWARDZERO, 0, false},
    {"traps on invalid, division by zero and overflow", 0, FE_TONEAREST,
     FE_INVALID | FE_DIVBYZERO | FE_OVERFLOW, false},
    {"a decimal-comma locale (de_DE.UTF-8)", 0, FE_TONEAREST, 0, true},
};
#define NENVS (sizeof ENVS / sizeof ENVS[0])

static void enter(const caller_env *e) {
    if (e->decimal_comma) {
        locale_t comma = test_comma_locale();
        cr_assert(comma, "no de_DE.UTF-8 locale (install Debian's locales package)");
        uselocale(comma);
    }
    fesetround(e->round);
    if (e->mxcsr) _mm_setcsr(e->mxcsr | (_mm_getcsr() & 0x3fu));
    if (e->traps) feenableexcept(e->traps);
}

/* Back to the default; returns the controls found (MXCSR's without its flags, the x87 control
 * word, the rounding mode and the enabled traps), which must be those `enter` set. */
typedef struct controls {
    unsigned mxcsr;
    unsigned short cw;
    int round, traps;
    locale_t locale;
} controls;

static controls leave(void) {
    controls k;
    __asm__ volatile("fnstcw %0" : "=m"(k.cw));
    k.mxcsr = _mm_getcsr() & 0xffc0u;
    k.round = fegetround();
    k.traps = fegetexcept();
    k.locale = uselocale((locale_t)0);
    uselocale(LC_GLOBAL_LOCALE);
    fedisableexcept(FE_ALL_EXCEPT);
    fesetround(FE_TONEAREST);
    _mm_setcsr(0x1f80u);
    return k;
}

/* ---- a transcript of every public computation ------------------------------------------ */

typedef struct transcript {
    unsigned char *bytes;
    size_t len, cap;
    const caller_env *env;
    controls want; /* the caller's controls, as `enter` leaves them */
    int calls;
    size_t *mark;      /* where each call's results start */
    const char **name; /* and the function called */
} transcript;

static void put(transcript *t, const void *p, size_t n) {
    if (t->len + n > t->cap) {
        t->cap = (t->len + n) * 2;
        t->bytes = realloc(t->bytes, t->cap);
        cr_assert(t->bytes);
    }
    memcpy(t->bytes + t->len, p, n);
    t->len += n;
}

/* After each call made in the caller's environment: its controls must be back as they were. */
static void returned(transcript *t, const char *what) {
    controls k = leave();
    t->mark = realloc(t->mark, sizeof *t->mark * (size_t)(t->calls + 1));
    t->name = realloc(t->name, sizeof *t->name * (size_t)(t->calls + 1));
    cr_assert(t->mark && t->name);
    t->mark[t->calls] = t->len;
    t->name[t->calls] = what;
    t->calls++;
    cr_assert(k.locale == t->want.locale, "%s under %s returned in another locale", what,
              t->env->name);
    cr_assert(k.mxcsr == t->want.mxcsr && k.cw == t->want.cw && k.round == t->want.round &&
                  k.traps == t->want.traps,
              "%s under %s returned with MXCSR 0x%04x, x87 0x%04x, rounding 0x%x, traps 0x%x "
              "(the caller's: 0x%04x, 0x%04x, 0x%x, 0x%x)",
              what, t->env->name, k.mxcsr, k.cw, k.round, k.traps, t->want.mxcsr, t->want.cw,
              t->want.round, t->want.traps);
}

#define IN_CALLER_ENV(t, what, stmt)                                                               \
    do {                                                                                           \
        enter((t)->env);                                                                           \
        stmt;                                                                                      \
        returned((t), (what));                                                                     \
    } while (0)

static void *zalloc(const gck_case *c, gck_operand x) {
    size_t n = (size_t)gck_case_extent(c, x) + 1;
    return calloc(n, (size_t)gck_format_get(gck_case_type(c, x))->storage_bytes);
}

static size_t bytes_of(const gck_case *c, gck_operand x) {
    return (size_t)gck_case_extent(c, x) *
           (size_t)gck_format_get(gck_case_type(c, x))->storage_bytes;
}

/* Values where an environment would show: subnormals of every format, halfway and inexact
 * cases, the top of the ranges, zeros, infinities and NaN. */
static const double VALUES[] = {
    0.0,           -0.0,           0x1p-1074, -0x1p-1060, 0x1.8p-140, -0x1p-149,
    0x1.3p-130,    0x1p-126,       0x1p-24,   -0x1.8p-25, 0x1p-133,   0x1.00001p-14,
    1.0 + 0x1p-30, -1.0 - 0x1p-12, 0.1,       1.0 / 3.0,  65520.0,    0x1.ffffffp127,
    3.5e38,        1e308,          INFINITY,  -INFINITY,  NAN};
#define NVALUES (sizeof VALUES / sizeof VALUES[0])

static void value_functions(transcript *t) {
    for (size_t v = 0; v < NVALUES; v++) {
        /* the arguments are made here, in the default environment, and only loaded (volatile)
         * inside the caller's: the compiler may move arithmetic across an environment change */
        volatile double lo = VALUES[v] * 0x1p-40, err = fabs(VALUES[v]),
                        bound = fabs(VALUES[v]) * 0x1p-20;
        volatile float xf = (float)VALUES[v];
        double x = VALUES[v], r;
        for (int f = 0; f < GCK_FORMAT_COUNT; f++) {
            gck_format fmt = (gck_format)f;
            IN_CALLER_ENV(t, "gck_round_to", r = gck_round_to(x, fmt));
            put(t, &r, sizeof r);
            IN_CALLER_ENV(t, "gck_round2_to", r = gck_round2_to(x, lo, fmt));
            put(t, &r, sizeof r);
            gck_class k;
            IN_CALLER_ENV(t, "gck_classify", k = gck_classify(x, fmt));
            put(t, &k, sizeof k);
            IN_CALLER_ENV(t, "gck_ulp", r = gck_ulp(x, fmt));
            put(t, &r, sizeof r);
            IN_CALLER_ENV(t, "gck_next_up", r = gck_next_up(x, fmt));
            put(t, &r, sizeof r);
            IN_CALLER_ENV(t, "gck_next_down", r = gck_next_down(x, fmt));
            put(t, &r, sizeof r);
            if (!gck_format_get(fmt)->is_storage) continue;
            unsigned char cell[8] = {0};
            IN_CALLER_ENV(t, "gck_store", gck_store(cell, fmt, 0, x));
            put(t, cell, sizeof cell);
            IN_CALLER_ENV(t, "gck_load", r = gck_load(cell, fmt, 0));
            put(t, &r, sizeof r);
        }
        uint16_t h[4];
        IN_CALLER_ENV(t, "gck_f16_from_double", h[0] = gck_f16_from_double(x));
        IN_CALLER_ENV(t, "gck_f16_from_float", h[1] = gck_f16_from_float(xf));
        IN_CALLER_ENV(t, "gck_bf16_from_double", h[2] = gck_bf16_from_double(x));
        IN_CALLER_ENV(t, "gck_bf16_from_float", h[3] = gck_bf16_from_float(xf));
        put(t, h, sizeof h);
        double back[3];
        float backf;
        IN_CALLER_ENV(t, "gck_f16_to_double", back[0] = gck_f16_to_double(h[0]));
        IN_CALLER_ENV(t, "gck_bf16_to_double", back[1] = gck_bf16_to_double(h[2]));
        IN_CALLER_ENV(t, "gck_f16_to_float", backf = gck_f16_to_float(h[0]));
        back[2] = backf;
        put(t, back, sizeof back);
        int bin;
        IN_CALLER_ENV(t, "gck_ratio_bin", bin = gck_ratio_bin(err, bound));
        put(t, &bin, sizeof bin);
    }
}

/* Cases of subnormal, wide, huge and special values, large enough for two threads. */
static const char *const SPECS[] = {
    "gck1 m=67 n=130 k=129 order=col ta=N tb=T types=f32,f32,f32,f32 compute=f32 scale=f32 "
    "alpha=0.5 beta=0.25 lda=67 ldb=130 ldc=67 ldd=67 d=sep batch=1 sa=0 sb=0 sc=0 sd=0 "
    "off=0,0,0,0 vab=sub vc=sub sp=0 cnan=0 seed=3",
    "gck1 m=33 n=70 k=257 order=row ta=T tb=N types=f16,f16,f32,f16 compute=f32 scale=f32 "
    "alpha=1 beta=1 lda=33 ldb=70 ldc=70 ldd=70 d=sep batch=2 sa=8481 sb=17990 sc=2310 sd=2310 "
    "off=1,0,0,0 vab=sub vc=sub sp=0 cnan=0 seed=4",
    "gck1 m=40 n=41 k=300 order=col ta=N tb=N types=bf16,bf16,f32,bf16 compute=f32 scale=f32 "
    "alpha=-1 beta=0.5 lda=40 ldb=300 ldc=40 ldd=40 d=sep batch=1 sa=0 sb=0 sc=0 sd=0 "
    "off=0,0,0,0 vab=sub vc=logu sp=0 cnan=0 seed=5",
    "gck1 m=60 n=61 k=290 order=col ta=T tb=T types=f64,f64,f64,f64 compute=f64 scale=f64 "
    "alpha=0.1 beta=0.7 lda=290 ldb=61 ldc=60 ldd=60 d=sep batch=1 sa=0 sb=0 sc=0 sd=0 "
    "off=0,0,0,0 vab=sub vc=sub sp=0 cnan=0 seed=6",
    "gck1 m=50 n=50 k=200 order=col ta=N tb=N types=f32,f32,f32,f32 compute=f32 scale=f32 "
    "alpha=1 beta=1 lda=50 ldb=200 ldc=50 ldd=50 d=sep batch=1 sa=0 sb=0 sc=0 sd=0 "
    "off=0,0,0,0 vab=big vc=big sp=40 cnan=0 seed=7",
};
#define NSPECS (sizeof SPECS / sizeof SPECS[0])

static void check_result(transcript *t, const gck_check_result *r) {
    put(t, &r->elements, sizeof r->elements);
    put(t, &r->exact_elements, sizeof r->exact_elements);
    put(t, &r->degenerate, sizeof r->degenerate);
    put(t, r->count, sizeof r->count);
    put(t, r->ratio_bins, sizeof r->ratio_bins);
    put(t, &r->max_ratio.ratio, sizeof r->max_ratio.ratio);
    put(t, &r->max_ratio.bound, sizeof r->max_ratio.bound);
    put(t, &r->max_stat, sizeof r->max_stat);
    put(t, &r->bias_p, sizeof r->bias_p);
}

static void gemm_functions(transcript *t, const char *text) {
    char msg[256], buf[1024];
    gck_spec s;
    gck_status st;
    IN_CALLER_ENV(t, "gck_spec_parse", st = gck_spec_parse(text, &s, msg, sizeof msg));
    cr_assert_eq(st, GCK_OK, "%s", msg);
    put(t, &s.c.alpha, sizeof s.c.alpha);
    put(t, &s.c.beta, sizeof s.c.beta);
    IN_CALLER_ENV(t, "gck_spec_format", gck_spec_format(&s, buf, sizeof buf));
    put(t, buf, strlen(buf));
    IN_CALLER_ENV(t, "gck_case_describe", gck_case_describe(&s.c, buf, sizeof buf));
    put(t, buf, strlen(buf));
    gck_case bad = s.c; /* a message that prints a double */
    bad.alpha = 0.1;
    bad.scale_type = GCK_F32;
    IN_CALLER_ENV(t, "gck_case_validate", st = gck_case_validate(&bad, msg, sizeof msg));
    cr_assert_neq(st, GCK_OK);
    put(t, msg, strlen(msg));
    const gck_case *c = &s.c;
    void *A = zalloc(c, GCK_A), *B = zalloc(c, GCK_B), *C = zalloc(c, GCK_C), *D = zalloc(c, GCK_D);
    IN_CALLER_ENV(t, "gck_spec_fill", gck_spec_fill(&s, GCK_A, A); gck_spec_fill(&s, GCK_B, B);
                  gck_spec_fill(&s, GCK_C, C));
    put(t, A, bytes_of(c, GCK_A));
    put(t, B, bytes_of(c, GCK_B));
    put(t, C, bytes_of(c, GCK_C));
    double v;
    IN_CALLER_ENV(t, "gck_spec_value", v = gck_spec_value(&s, GCK_A, 0, 1, 2));
    put(t, &v, sizeof v);

    for (int p = 0; p < GCK_KPATH_COUNT; p++) {
        if (p != GCK_KPATH_AUTO && !gck_kpath_supported((gck_kpath)p, NULL, 0)) continue;
        gck_gemm_config cfg = {.threads = 2, .path = (gck_kpath)p};
        gck_gemm_arg ga;
        IN_CALLER_ENV(t, "gck_gemm", ga = gck_gemm(c, A, B, C, D, &cfg, msg, sizeof msg));
        cr_assert_eq(ga, GCK_GEMM_OK, "%s", msg);
        put(t, D, bytes_of(c, GCK_D));
    }
    gck_ref_model models[2] = {gck_ref_model_default(c->compute),
                               gck_ref_model_default(c->compute)};
    models[1].fma = true;
    for (int m = 0; m < 2; m++) {
        IN_CALLER_ENV(t, "gck_ref_gemm",
                      st = gck_ref_gemm(c, &models[m], A, B, C, D, msg, sizeof msg));
        cr_assert_eq(st, GCK_OK, "%s", msg);
        put(t, D, bytes_of(c, GCK_D));
    }
    IN_CALLER_ENV(t, "gck_oracle_mpfr", st = gck_oracle_mpfr(c, A, B, C, D, 2, msg, sizeof msg));
    cr_assert_eq(st, GCK_OK, "%s", msg);
    put(t, D, bytes_of(c, GCK_D));
    IN_CALLER_ENV(t, "gck_oracle_mpfr_element",
                  v = gck_oracle_mpfr_element(c, A, B, C, 0, c->m - 1, c->n - 1));
    put(t, &v, sizeof v);
    IN_CALLER_ENV(t, "gck_oracle_exact", st = gck_oracle_exact(c, A, B, C, D, 2, msg, sizeof msg));
    cr_assert_eq(st, GCK_OK, "%s", msg);
    put(t, D, bytes_of(c, GCK_D));

    /* the checker on the kernels' D (passes), and on it with every subnormal of D flushed
     * (fails, except where a model declares flushing) */
    gck_backend be;
    cr_assert_eq(gck_backend_open(&be, "kernels", msg, sizeof msg), GCK_OK, "%s", msg);
    const gck_support_row *row = gck_backend_find_row(&be, c, msg, sizeof msg);
    cr_assert(row, "%s", msg);
    gck_gemm_config cfg = {.threads = 2};
    cr_assert_eq(gck_gemm(c, A, B, C, D, &cfg, msg, sizeof msg), GCK_GEMM_OK, "%s", msg);
    gck_check_options o = {.threads = 2};
    for (int flushed = 0; flushed < 2; flushed++) {
        if (flushed) {
            gck_format td = gck_case_type(c, GCK_D);
            for (int64_t e = 0; e < gck_case_extent(c, GCK_D); e++)
                if (gck_classify(gck_load(D, td, e), td) == GCK_CLASS_SUBNORMAL)
                    gck_store(D, td, e, 0.0);
        }
        gck_check_result r;
        IN_CALLER_ENV(t, "gck_check_values",
                      st = gck_check_values(c, row, &o, A, B, C, D, &r, msg, sizeof msg));
        cr_assert_eq(st, GCK_OK, "%s", msg);
        check_result(t, &r);
        if (t->env == &ENVS[0]) { /* NULL options are the defaults */
            gck_check_result n;
            cr_assert_eq(gck_check_values(c, row, NULL, A, B, C, D, &n, msg, sizeof msg), GCK_OK);
            cr_expect(n.elements == r.elements &&
                      !memcmp(n.ratio_bins, r.ratio_bins, sizeof r.ratio_bins) &&
                      !memcmp(n.count, r.count, sizeof r.count));
        }
    }
    gck_bound_terms terms = {
        .abs_d = 0x1p-140, .T = 0x1p-130, .sum_ab = 0x1p-60, .abs_c = 0x1p-149, .k = c->k};
    bool degenerate;
    IN_CALLER_ENV(t, "gck_bound", v = gck_bound(c, &row->model, &terms, &degenerate));
    put(t, &v, sizeof v);
    gck_backend_close(&be);
    free(A);
    free(B);
    free(C);
    free(D);
}

static void record(transcript *t, const caller_env *e) {
    *t = (transcript){.env = e};
    enter(e);
    t->want = leave();
    value_functions(t);
    for (size_t s = 0; s < NSPECS; s++) gemm_functions(t, SPECS[s]);
}

Test(fpenv, public_functions_ignore_the_callers_environment_and_restore_it) {
    transcript base;
    record(&base, &ENVS[0]);
    for (size_t e = 1; e < NENVS; e++) {
        transcript t;
        record(&t, &ENVS[e]);
        size_t first = 0, n = t.len < base.len ? t.len : base.len;
        while (first < n && t.bytes[first] == base.bytes[first]) first++;
        if (t.len != base.len && first == n) first = n - 1; /* a string's length differs */
        int call = 0;
        while (call + 1 < t.calls && t.mark[call + 1] <= first) call++;
        cr_expect(first == t.len && t.len == base.len,
                  "under %s: call %d of %d (%s) gave other bytes", ENVS[e].name, call + 1, t.calls,
                  t.name[call]);
        if (first == t.len && t.len == base.len)
            printf("[fpenv] %s: %d calls, %zu bytes of results identical to the default "
                   "environment's, controls restored after each\n",
                   ENVS[e].name, t.calls, t.len);
        free(t.bytes);
        free(t.mark);
        free(t.name);
    }
    free(base.bytes);
    free(base.mark);
    free(base.name);
}

/* The flags raised inside a call stay raised for the caller, as any arithmetic leaves them, but
 * never trap there: the caller's traps are on for inexact, and rounding 0.1 to f32 is inexact. */
Test(fpenv, flags_raised_inside_stay_raised_without_trapping) {
    double x;
    feclearexcept(FE_ALL_EXCEPT);
    feenableexcept(FE_INVALID | FE_INEXACT);
    x = gck_round_to(0.1, GCK_F32); /* inexact, under the caller's inexact trap */
    int flags = fetestexcept(FE_ALL_EXCEPT);
    controls k = leave();
    cr_expect(k.traps == (FE_INVALID | FE_INEXACT));
    cr_expect(flags & FE_INEXACT, "the inexact flag of rounding 0.1 to f32 is raised");
    cr_expect_eq(x, (double)0.1f);
}
