/* The exact oracle's one-by-one rate, measured, and the plans that weigh splitting against it
 * (oracle_exact.h). Apart from exact_plan.c, whose plans it builds and times, so that the plan's
 * own file never calls back into it. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "gemmcheck/spec.h"
#include "oracle_exact.h"
#include "ozaki_internal.h"

static double rates[GCK_FORMAT_COUNT][GCK_FORMAT_COUNT]; /* G products per second; 0: unknown */
static pthread_mutex_t rates_lock = PTHREAD_MUTEX_INITIALIZER;

static double seconds_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* 32 x 32 x 512 of inputs ta x tb, standard normal values, every element summed one by one on
 * this thread: the best of three after a warm-up; 0 when out of memory. */
static double measure(gck_format ta, gck_format tb) {
    enum { M = 32, N = 32, K = 512 };
    gck_case c;
    gck_case_init(&c, M, N, K);
    c.type_a = ta, c.type_b = tb;
    c.type_c = c.type_d = c.compute = c.scale_type = GCK_F64;
    c.beta = 0, c.d_is_c = false;
    gck_spec s;
    gck_spec_init(&s, &c);
    s.dist_ab = GCK_DIST_NORMAL;
    void *A = malloc((size_t)(M * K) * 8), *B = malloc((size_t)(K * N) * 8);
    gck_ozaki_options never = gck_ozaki_defaults();
    never.mode = GCK_OZAKI_NEVER;
    gck_exact_plan *p = NULL;
    gck_exact_ws *w = NULL;
    double best = 0;
    if (A && B) {
        gck_spec_fill(&s, GCK_A, A);
        gck_spec_fill(&s, GCK_B, B);
        p = gck_exact_plan_new_with(&c, A, B, NULL, &never);
    }
    if (p) w = gck_exact_ws_new(p);
    for (int r = 0; w && r < 4; r++) {
        double t = seconds_now();
        for (int64_t j = 0; j < N; j++)
            for (int64_t i = 0; i < M; i++) {
                gck_oracle_eval ev;
                gck_exact_eval(p, w, 0, i, j, false, NULL, &ev);
            }
        t = seconds_now() - t;
        double rate = (double)M * N * K / t / 1e9;
        if (r > 0 && t > 0 && rate > best) best = rate; /* round 0: the warm-up */
    }
    gck_exact_ws_free(w);
    gck_exact_plan_free(p);
    free(A), free(B);
    return best;
}

double gck_exact_one_by_one_rate(gck_format ta, gck_format tb) {
    if ((unsigned)ta >= GCK_FORMAT_COUNT || (unsigned)tb >= GCK_FORMAT_COUNT) return 0;
    pthread_mutex_lock(&rates_lock); /* measured once per pair, by the first caller */
    if (!(rates[ta][tb] > 0)) rates[ta][tb] = measure(ta, tb);
    double r = rates[ta][tb];
    pthread_mutex_unlock(&rates_lock);
    return r;
}

gck_exact_plan *gck_exact_plan_new_rated(const gck_case *c, const void *A, const void *B,
                                         const void *C) {
    gck_ozaki_options o = gck_ozaki_defaults();
    if (o.mode == GCK_OZAKI_AUTO && gck_case_reads_ab(c) &&
        (c->stride_a || c->stride_b ? c->batch : 1) * c->m * c->n * c->k >= OZ_RATED_PRODUCTS)
        o.rate_one_by_one = gck_exact_one_by_one_rate(c->type_a, c->type_b);
    return gck_exact_plan_new_with(c, A, B, C, &o);
}
