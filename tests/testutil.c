#include "testutil.h"

#include "mix.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <mpfr.h>

uint64_t rng_next(test_rng *r) {
    uint64_t z = r->s;
    r->s += GCK_GOLDEN_GAMMA;
    return gck_splitmix64(z);
}

double rng_unit(test_rng *r) { return (double)(rng_next(r) >> 11) * 0x1p-53; }

int64_t rng_range(test_rng *r, int64_t lo, int64_t hi) {
    return lo + (int64_t)(rng_next(r) % (uint64_t)(hi - lo + 1));
}

uint64_t test_seed(const char *test, uint64_t fallback) {
    const char *env = getenv("GEMMCHECK_TEST_SEED");
    uint64_t seed = env ? strtoull(env, NULL, 0) : fallback;
    fprintf(stderr, "[%s] seed %llu (replay: GEMMCHECK_TEST_SEED=%llu)\n", test,
            (unsigned long long)seed, (unsigned long long)seed);
    return seed;
}

double mpfr_round_exact(mpfr_srcptr x, gck_format fmt, mpfr_rnd_t rnd) {
    if (!mpfr_number_p(x) || mpfr_zero_p(x)) return mpfr_get_d(x, MPFR_RNDN);
    const gck_format_info *f = gck_format_get(fmt);
    /* x as z * 2^e, taken before the range changes: MPFR variables outside the current
     * exponent range must not be passed to MPFR functions. */
    mpz_t z;
    mpz_init(z);
    mpfr_exp_t e = mpfr_get_z_2exp(z, x);
    mpfr_exp_t old_emin = mpfr_get_emin(), old_emax = mpfr_get_emax();
    mpfr_t r;
    mpfr_init2(r, f->precision);
    mpfr_set_emin(f->emin - f->precision + 2);
    mpfr_set_emax(f->emax + 1);
    int inex = mpfr_set_z_2exp(r, z, e, rnd);
    inex = mpfr_check_range(r, inex, rnd);
    mpfr_subnormalize(r, inex, rnd);
    double d = mpfr_get_d(r, MPFR_RNDN);
    mpfr_clear(r);
    mpfr_set_emin(old_emin);
    mpfr_set_emax(old_emax);
    mpz_clear(z);
    return d;
}

double mpfr_round_format(double x, gck_format fmt) {
    mpfr_t e;
    mpfr_init2(e, 53);
    mpfr_set_d(e, x, MPFR_RNDN);
    double d = mpfr_round_exact(e, fmt, MPFR_RNDN);
    mpfr_clear(e);
    return d;
}

double mpq_round_format(const mpq_t q, gck_format fmt) {
    const gck_format_info *f = gck_format_get(fmt);
    int sign = mpq_sgn(q);
    if (sign == 0) return 0.0;
    mpq_t a, t;
    mpq_inits(a, t, NULL);
    mpq_abs(a, q);
    /* e with 2^e <= a < 2^(e+1): start from the bit lengths, then correct. */
    long e = (long)mpz_sizeinbase(mpq_numref(a), 2) - (long)mpz_sizeinbase(mpq_denref(a), 2);
    for (;;) {
        mpq_set_ui(t, 1, 1);
        if (e >= 0)
            mpq_mul_2exp(t, t, (mp_bitcnt_t)e);
        else
            mpq_div_2exp(t, t, (mp_bitcnt_t)(-e));
        if (mpq_cmp(a, t) < 0) {
            e--;
            continue;
        }
        mpq_mul_2exp(t, t, 1);
        if (mpq_cmp(a, t) >= 0) {
            e++;
            continue;
        }
        break;
    }
    long q0 = (e < f->emin ? f->emin : e) - f->precision + 1; /* quantum exponent */
    /* scaled = a / 2^q0; n = floor(scaled); compare the remainder with 1/2 */
    mpq_set(t, a);
    if (q0 >= 0)
        mpq_div_2exp(t, t, (mp_bitcnt_t)q0);
    else
        mpq_mul_2exp(t, t, (mp_bitcnt_t)(-q0));
    mpz_t n, rem2;
    mpz_inits(n, rem2, NULL);
    mpz_fdiv_qr(n, rem2, mpq_numref(t), mpq_denref(t));
    mpz_mul_2exp(rem2, rem2, 1); /* 2*remainder vs denominator */
    int cmp = mpz_cmp(rem2, mpq_denref(t));
    if (cmp > 0 || (cmp == 0 && mpz_odd_p(n))) mpz_add_ui(n, n, 1);
    double v = ldexp(mpz_get_d(n), (int)q0); /* n <= 2^p: exact */
    mpz_clears(n, rem2, NULL);
    mpq_clears(a, t, NULL);
    if (v > f->max) v = INFINITY;
    return sign < 0 ? -v : v;
}

double random_value(test_rng *r, gck_format fmt, int dist) {
    const gck_format_info *f = gck_format_get(fmt);
    double sign = (rng_next(r) & 1) ? -1.0 : 1.0;
    double v;
    switch (dist) {
    case 0: v = (double)rng_range(r, 0, 8); break;
    case 1: v = rng_unit(r); break;
    case 2: {
        int span = f->emax < 40 ? f->emax : 40;
        v = ldexp(1.0 + rng_unit(r), (int)rng_range(r, -span, span));
        break;
    }
    case 3: v = ldexp(1.0 + rng_unit(r), (int)rng_range(r, f->emax - 3, f->emax)); break;
    case 4:
        v = ldexp(rng_unit(r) * 2.0, (int)rng_range(r, f->emin - f->precision + 1, f->emin));
        break;
    default: {
        uint64_t bits = rng_next(r);
        if (fmt == GCK_F64)
            memcpy(&v, &bits, sizeof v);
        else if (fmt == GCK_F32) {
            uint32_t b32 = (uint32_t)bits;
            float fl;
            memcpy(&fl, &b32, sizeof fl);
            v = fl;
        } else if (fmt == GCK_F16)
            v = gck_f16_to_double((uint16_t)bits);
        else
            v = gck_bf16_to_double((uint16_t)bits);
        if (!isfinite(v)) v = 1.0;
        break;
    }
    }
    v = gck_round_to(sign * v, fmt);
    return isinf(v) ? sign * f->max : v; /* rounding 1.99..*2^emax up overflows: keep finite */
}

void *alloc_elems(gck_format fmt, int64_t count) {
    size_t bytes = (size_t)(count > 0 ? count : 1) * (size_t)gck_format_get(fmt)->storage_bytes;
    void *p = malloc(bytes);
    memset(p, 0xA5, bytes);
    return p;
}

int same_value(double a, double b) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    return a == b && signbit(a) == signbit(b);
}

int run_shell(const char *cmd, char *out, size_t len) {
    FILE *p = popen(cmd, "r");
    if (!p) {
        snprintf(out, len, "popen failed");
        return -1;
    }
    size_t n = 0, got;
    while (n + 1 < len && (got = fread(out + n, 1, len - 1 - n, p)) > 0) n += got;
    out[n] = '\0';
    char sink[4096]; /* the rest, so the command never blocks on a full pipe */
    while (fread(sink, 1, sizeof sink, p) > 0) {
    }
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#ifdef GCK_BINARY
int run_gemmcheck(const char *args, char *out, size_t len) {
    size_t n = strlen(GCK_BINARY) + strlen(args) + 16;
    char *cmd = malloc(n);
    if (!cmd) return -1;
    snprintf(cmd, n, "'%s' %s 2>&1", GCK_BINARY, args);
    int rc = run_shell(cmd, out, len);
    free(cmd);
    return rc;
}
#endif

locale_t test_comma_locale(void) {
    static locale_t loc;
    if (loc) return loc;
    char dir[] = "/tmp/gck-locale-XXXXXX", cmd[256];
    if (!mkdtemp(dir)) return NULL;
    snprintf(cmd, sizeof cmd, "localedef -i de_DE -f UTF-8 %s/de_DE.UTF-8 > /dev/null 2>&1", dir);
    if (system(cmd) == -1) return NULL;
    setenv("LOCPATH", dir, 1);
    return loc = newlocale(LC_ALL_MASK, "de_DE.UTF-8", (locale_t)0);
}
