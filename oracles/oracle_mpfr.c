/* The MPFR oracle (docs/SEMANTICS.md).
 *
 * Finite elements: every term alpha*a*b and beta*c is formed exactly (precision 3*53 and 2*53
 * bits), and the sum is rounded once, with mpfr_sum, straight to the output format. To honour
 * the output's exponent range without double rounding and without touching MPFR's global
 * exponent range, the exact sum is first rounded toward zero at the output precision, which
 * fixes its binade 2^e <= |x| < 2^(e+1) exactly; the precision that puts the output grid's
 * quantum 2^(max(e, emin) - p + 1) at the last bit is then p' = min(p, e - emin + p), and a
 * second mpfr_sum rounds the exact sum to p' bits (nearest even): the single correct rounding
 * to a normal or subnormal value. Values beyond max + ulp(max)/2 round to 2^(emax+1) or above
 * and become ±Inf. Non-finite inputs and exact zeros follow the IEEE rules spelled out in
 * docs/SEMANTICS.md, decided before any arithmetic. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <mpfr.h>

#include "format_internal.h"
#include "fpenv.h"
#include "gemmcheck/oracle.h"
#include "oracle_common.h"
#include "oracle_internal.h"
#include "parallel.h"

/* Exact products need 2*53 bits, scaled products 3*53. */
#define PREC_TERM 159

struct gck_oracle_ws {
    mpfr_t *terms; /* K + 2 slots: the products, beta*c, and -got for the error */
    mpfr_ptr *ptrs;
    size_t cap;
    size_t nterms;      /* terms of the last element */
    bool special_input; /* the last element was decided by a NaN or Inf among its inputs */
    mpfr_t alpha, beta, a, b, z, r, err;
};
typedef struct gck_oracle_ws oracle_ws;

static bool ws_init(oracle_ws *w, int64_t k) {
    w->cap = (size_t)k + 2;
    w->terms = malloc(w->cap * sizeof *w->terms);
    w->ptrs = malloc(w->cap * sizeof *w->ptrs);
    if (!w->terms || !w->ptrs) {
        free(w->terms);
        free(w->ptrs);
        return false;
    }
    for (size_t t = 0; t < w->cap; t++) {
        mpfr_init2(w->terms[t], PREC_TERM);
        w->ptrs[t] = w->terms[t];
    }
    mpfr_inits2(53, w->alpha, w->beta, w->a, w->b, (mpfr_ptr)0);
    mpfr_inits2(53, w->z, w->r, (mpfr_ptr)0);
    mpfr_init2(w->err, 64);
    w->nterms = 0;
    w->special_input = false;
    return true;
}

static void ws_free(oracle_ws *w) {
    for (size_t t = 0; t < w->cap; t++) mpfr_clear(w->terms[t]);
    free(w->terms);
    free(w->ptrs);
    mpfr_clears(w->alpha, w->beta, w->a, w->b, w->z, w->r, w->err, (mpfr_ptr)0);
}

/* Round the exact sum of the n terms once to `out` and return it as a double. */
static double round_sum(oracle_ws *w, size_t n, gck_format out) {
    const gck_format_info *f = gck_format_get(out);
    mpfr_set_prec(w->z, f->precision);
    int inex = mpfr_sum(w->z, w->ptrs, n, MPFR_RNDZ);
    if (mpfr_zero_p(w->z)) return 0.0;   /* exact zero; the caller decides the sign */
    int e = (int)mpfr_get_exp(w->z) - 1; /* 2^e <= |x| < 2^(e+1) */
    int p = f->precision;
    long pp = e - f->emin + p < p ? (long)e - f->emin + p : p;
    int neg = mpfr_signbit(w->z);
    if (pp <= 0) {
        /* |x| < 2^(q) with q the quantum of the subnormals: 0 or the smallest subnormal.
         * pp == 0 means 2^(q-1) <= |x| < 2^q; exactly 2^(q-1) is the tie, which goes to 0. */
        long q = (long)f->emin - p + 1; /* min_subnormal = 2^q */
        bool tie = pp == 0 && inex == 0 && mpfr_cmp_si_2exp(w->z, neg ? -1 : 1, q - 1) == 0;
        double mag = (pp == 0 && !tie) ? f->min_subnormal : 0.0;
        return neg ? -mag : mag;
    }
    mpfr_set_prec(w->r, (mpfr_prec_t)pp);
    mpfr_sum(w->r, w->ptrs, n, MPFR_RNDN);
    double d = mpfr_get_d(w->r, MPFR_RNDN); /* exact: r is on the output grid or >= 2^1024 */
    if (fabs(d) > f->max) return neg ? -INFINITY : INFINITY;
    return d;
}

/* The oracle's value of one element; with `skip_zero`, terms with an exactly-zero factor are
 * left out (the value a zero-skipping BLAS computes). Leaves the exact terms in w. */
static double element(oracle_ws *w, const gck_case *c, const void *A, const void *B, const void *C,
                      int64_t bi, int64_t i, int64_t j, bool skip_zero) {
    w->nterms = 0;
    gck_format out = gck_case_type(c, GCK_D);
    gck_oracle_pre p;
    gck_oracle_pass1(c, A, B, C, bi, i, j, skip_zero, &p);
    w->special_input = p.special;
    if (p.special) return p.value;
    bool rab = p.rab, rc = p.rc, any_nonzero = p.any_nonzero;
    double cv = p.cv;
    const void *Ab = p.Ab, *Bb = p.Bb;
    int64_t ars = p.ars, acs = p.acs, brs = p.brs, bcs = p.bcs;

    /* Pass 2: exact terms, one rounding. */
    size_t n = 0;
    if (rab && any_nonzero) {
        mpfr_set_d(w->alpha, c->alpha, MPFR_RNDN);
        /* alpha = +-2^e (1, 0.5, -2, ...): a shift of the exponent instead of a product */
        int e;
        double m = frexp(c->alpha, &e);
        bool pow2 = fabs(m) == 0.5;
        for (int64_t k = 0; k < c->k; k++) {
            double a = gck_fmt_load(Ab, c->type_a, i * ars + k * acs);
            double b = gck_fmt_load(Bb, c->type_b, k * brs + j * bcs);
            if (a == 0.0 || b == 0.0) continue;
            mpfr_ptr t = w->terms[n++];
            mpfr_set_d(w->a, a, MPFR_RNDN);
            mpfr_set_d(w->b, b, MPFR_RNDN);
            mpfr_mul(t, w->a, w->b, MPFR_RNDN); /* exact: 106 of its 159 bits */
            if (!pow2) {
                mpfr_mul(t, t, w->alpha, MPFR_RNDN); /* exact: 159 bits */
            } else {
                if (e != 1) mpfr_mul_2si(t, t, e - 1, MPFR_RNDN); /* exact */
                if (m < 0) mpfr_neg(t, t, MPFR_RNDN);
            }
        }
    }
    if (rc && cv != 0.0) {
        mpfr_set_d(w->beta, c->beta, MPFR_RNDN);
        mpfr_set_d(w->a, cv, MPFR_RNDN);
        mpfr_mul(w->terms[n++], w->a, w->beta, MPFR_RNDN); /* exact */
    }
    w->nterms = n;
    double d = n ? round_sum(w, n, out) : 0.0;
    if (d != 0.0) return d;
    if (n && !mpfr_zero_p(w->z)) return d; /* a non-zero value that underflowed keeps its sign */
    return gck_oracle_exact_zero(c, &p);
}

/* |got - exact| of the last element, rounded up; got must be finite and the last element
 * free of special inputs. */
static double element_error(oracle_ws *w, double got, int *sign) {
    size_t n = w->nterms;
    mpfr_set_d(w->terms[n], -got, MPFR_RNDN);
    mpfr_sum(w->err, w->ptrs, n + 1, MPFR_RNDA);
    *sign = -mpfr_sgn(w->err); /* err = exact - got */
    *sign = *sign > 0 ? 1 : *sign < 0 ? -1 : 0;
    mpfr_abs(w->err, w->err, MPFR_RNDN);
    return mpfr_get_d(w->err, MPFR_RNDU);
}

gck_oracle_ws *gck_oracle_ws_new(int64_t k) {
    oracle_ws *w = malloc(sizeof *w);
    if (w && !ws_init(w, k)) {
        free(w);
        w = NULL;
    }
    return w;
}

void gck_oracle_ws_free(gck_oracle_ws *w) {
    if (!w) return;
    ws_free(w);
    free(w);
    mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE);
}

void gck_oracle_eval_element(gck_oracle_ws *w, const gck_case *c, const void *A, const void *B,
                             const void *C, int64_t b, int64_t i, int64_t j, bool skip_zero,
                             const double *got, gck_oracle_eval *out) {
    out->value = element(w, c, A, B, C, b, i, j, skip_zero);
    out->special_input = w->special_input;
    out->abs_error = NAN;
    out->err_sign = 0;
    if (got && isfinite(*got) && !w->special_input)
        out->abs_error = element_error(w, *got, &out->err_sign);
}

void gck_oracle_eval_again(gck_oracle_ws *w, const double *got, gck_oracle_eval *out) {
    out->abs_error = NAN;
    out->err_sign = 0;
    if (got && isfinite(*got) && !w->special_input)
        out->abs_error = element_error(w, *got, &out->err_sign);
}

static double mpfr_element(const gck_case *c, const void *A, const void *B, const void *C,
                           int64_t b, int64_t i, int64_t j) {
    oracle_ws w;
    if (!ws_init(&w, c->k)) return NAN;
    double d = element(&w, c, A, B, C, b, i, j, false);
    ws_free(&w);
    mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE);
    return d;
}

typedef struct oracle_job {
    const gck_case *c;
    const void *A, *B, *C;
    void *D;
    int64_t first, last; /* flat element range [first, last) over batch x n x m */
    bool ok;
} oracle_job;

static void *run_job(void *arg) {
    oracle_job *job = arg;
    const gck_case *c = job->c;
    oracle_ws w;
    job->ok = ws_init(&w, c->k);
    if (!job->ok) return NULL;
    int64_t drs, dcs;
    gck_case_op_strides(c, GCK_D, &drs, &dcs);
    gck_format out = gck_case_type(c, GCK_D);
    int64_t sd = gck_case_stride(c, GCK_D);
    for (int64_t t = job->first; t < job->last; t++) {
        int64_t i = t % c->m, j = (t / c->m) % c->n, bi = t / (c->m * c->n);
        double d = element(&w, c, job->A, job->B, job->C, bi, i, j, false);
        gck_fmt_store(job->D, out, bi * sd + i * drs + j * dcs, d);
    }
    ws_free(&w);
    mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE);
    return NULL;
}

static gck_status mpfr_oracle(const gck_case *c, const void *A, const void *B, const void *C,
                              void *D, int threads, char *msg, size_t msg_len) {
    int64_t total;
    gck_status s = gck_oracle_check_args(c, A, B, C, D, &total, msg, msg_len);
    if (s != GCK_OK || total == 0) return s;
    /* MPFR's caches are per thread only when it is built with thread-local storage */
    threads = mpfr_buildopt_tls_p() ? gck_thread_count(threads, total) : 1;
    /* With D in place, element (i,j) reads only c_ij and writes only d_ij, so threads that
     * own disjoint element ranges never race. */
    oracle_job *jobs = calloc((size_t)threads, sizeof *jobs);
    if (!jobs) {
        snprintf(msg, msg_len, "out of memory");
        return GCK_ENOMEM;
    }
    for (int t = 0; t < threads; t++)
        jobs[t] =
            (oracle_job){c, A, B, C, D, total * t / threads, total * (t + 1) / threads, false};
    bool ok = gck_parallel(jobs, (size_t)threads, sizeof *jobs, run_job);
    for (int t = 0; t < threads; t++) ok = ok && jobs[t].ok;
    free(jobs);
    if (!ok) {
        snprintf(msg, msg_len, "out of memory (K = %lld terms per element)", (long long)c->k);
        return GCK_ENOMEM;
    }
    return GCK_OK;
}

/* ---- the public functions, in gemmcheck's floating-point environment (fpenv.h) ------------ */

GCK_GUARDED(double, gck_oracle_mpfr_element, mpfr_element,
            (const gck_case *c, const void *A, const void *B, const void *C, int64_t b, int64_t i,
             int64_t j),
            (c, A, B, C, b, i, j))
GCK_GUARDED(gck_status, gck_oracle_mpfr, mpfr_oracle,
            (const gck_case *c, const void *A, const void *B, const void *C, void *D, int threads,
             char *msg, size_t msg_len),
            (c, A, B, C, D, threads, msg, msg_len))
