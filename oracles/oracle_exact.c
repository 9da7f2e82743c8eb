/* The fast exact oracle: the same result as the MPFR oracle (docs/SEMANTICS.md), computed with
 * integers.
 *
 * A and B are decoded once per GEMM, straight from their bits, into sign, integer significand
 * and exponent (x = m·2^e), laid out densely along k. Each product m_a·m_b is an exact integer
 * (at most 48 bits for f16, bf16 and f32, 106 with f64). How the products of an element are
 * summed is chosen per GEMM from the operands' exponent spread and significand widths:
 *   - fixed point (shortest form, m odd): when every value is an integer multiple of its
 *     operand's smallest unit and the sum fits 63 (or 125) bits, S is one int64 (__int128): a
 *     multiply and an add per product;
 *   - exponent buckets otherwise (stored form): with r = e - emin, a significand is kept
 *     shifted left by r mod 4 and a product is added, without any shift, to the int64
 *     (__int128) bucket r_a/4 + r_b/4. Bucket terms stay below 2^P (P: the two widest
 *     significands plus 6 bits), so a bounded number of them fit; before that the buckets are
 *     folded, by one carry chain, into a fixed-point superaccumulator of 32-bit digits in
 *     int64 limbs. With K >= 256 four copies of the buckets, used in turn, keep consecutive
 *     products from waiting on each other.
 * The sum S is then multiplied by alpha's significand (exact), beta·c and, for the checker, -D̂
 * are added in a frame sized from these terms, and the integer is rounded once to D's format:
 * round to nearest even on the output grid (2^(max(E, emin) - p + 1) for the leading bit 2^E),
 * gradual underflow, overflow to ±Inf. No floating-point operation touches the value on the
 * way. Special values and the sign of exact zeros come from the pass shared with the MPFR
 * oracle. D is evaluated in L2-sized tiles handed out to the threads.
 *
 * The buckets are the "small superaccumulator" idea (R. M. Neal, "Fast exact summation using
 * small and large superaccumulators", arXiv:1505.05571, 2015) applied to exact integer
 * products; the fixed-point path is the classic exact fp16 dot product in a wide integer. */
#include "exact_internal.h"
#include "format_internal.h"
#include "fpenv.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "oracle_common.h"
#include "oracle_ozaki.h"
#include "parallel.h"
#include "tiles.h"

/* ---- the whole GEMM ---------------------------------------------------------------------- */

/* D is cut into tiles of T x T elements (per batch member), handed out to the threads one at a
 * time; T is chosen so that the tile's rows of op(A) and columns of op(B) stay in a core's L2
 * while its elements are evaluated. */
typedef struct ex_tiles {
    const gck_exact_plan *p;
    void *D;
    gck_tiles g;
    atomic_llong next;
} ex_tiles;

typedef struct ex_job {
    ex_tiles *tiles;
    bool ok;
} ex_job;

/* The tiles' side when the plan splits (gck_exact_plan_tile). */
#define OZ_EVAL_TILE 128

int64_t gck_exact_plan_tile(const gck_exact_plan *p) {
    /* a split plan reads each element's terms and tail sum column by column, no lines of K:
     * tall tiles keep those reads long enough for the prefetchers (a tile of 32 rows at 2048^3
     * left a load miss per column that took 15% of the elements' time on a Zen 4) */
    if (p->path == PATH_OZAKI) return OZ_EVAL_TILE;
    const int64_t budget = 1 << 20;                                /* bytes of L2 for one tile */
    int64_t line = p->c->k * (p->path == PATH_BUCKET128 ? 12 : 8); /* one decoded row/column */
    int64_t t = line ? budget / (2 * line) : 64;
    return t < 4 ? 4 : t > 64 ? 64 : t;
}

/* Elements evaluated together, down a column of a tile. */
#define EX_RUN 64

/* The values of ev[0 .. n) into D of format td from element `at` on, drs apart (f32 and f64
 * stored directly: ev's values are in D's format already). */
static void store_run(void *D, gck_format td, int64_t at, int64_t drs, const gck_oracle_eval *ev,
                      int64_t n) {
    if (td == GCK_F32)
        for (int64_t i = 0; i < n; i++) ((float *)D)[at + i * drs] = (float)ev[i].value;
    else if (td == GCK_F64)
        for (int64_t i = 0; i < n; i++) ((double *)D)[at + i * drs] = ev[i].value;
    else
        for (int64_t i = 0; i < n; i++) gck_fmt_store(D, td, at + i * drs, ev[i].value);
}

static void *run_ex(void *arg) {
    ex_job *job = arg;
    ex_tiles *tl = job->tiles;
    const gck_case *c = tl->p->c;
    gck_exact_ws *w = gck_exact_ws_new(tl->p);
    job->ok = w != NULL;
    if (!w) return NULL;
    int64_t drs, dcs;
    gck_case_op_strides(c, GCK_D, &drs, &dcs);
    gck_format td = gck_case_type(c, GCK_D);
    int64_t sd = gck_case_stride(c, GCK_D);
    for (int64_t t; (t = atomic_fetch_add(&tl->next, 1)) < tl->g.count;) {
        int64_t bi, i0, i1, j0, j1;
        gck_tile_range(&tl->g, c, t, &bi, &i0, &i1, &j0, &j1);
        for (int64_t j = j0; j < j1; j++)
            for (int64_t r0 = i0; r0 < i1; r0 += EX_RUN) {
                int64_t r1 = i1 - r0 < EX_RUN ? i1 : r0 + EX_RUN;
                gck_oracle_eval ev[EX_RUN];
                gck_exact_eval_run(tl->p, w, bi, r0, r1, j, NULL, ev);
                store_run(tl->D, td, bi * sd + r0 * drs + j * dcs, drs, ev, r1 - r0);
            }
    }
    gck_exact_ws_free(w);
    return NULL;
}

static gck_status exact_oracle(const gck_case *c, const void *A, const void *B, const void *C,
                               void *D, int threads, char *msg, size_t msg_len) {
    int64_t total;
    gck_status s = gck_oracle_check_args(c, A, B, C, D, &total, msg, msg_len);
    if (s != GCK_OK || total == 0) return s;
    gck_exact_plan *p = gck_exact_plan_new_rated(c, A, B, C);
    if (!p) {
        snprintf(msg, msg_len, "out of memory decoding the operands");
        return GCK_ENOMEM;
    }
    ex_tiles tl = {p, D, gck_tiles_of(c, gck_exact_plan_tile(p)), 0};
    atomic_init(&tl.next, 0);
    threads = gck_thread_count(threads, tl.g.count);
    ex_job *jobs = calloc((size_t)threads, sizeof *jobs);
    bool ok = jobs != NULL;
    for (int t = 0; ok && t < threads; t++) jobs[t] = (ex_job){&tl, false};
    ok = ok && gck_parallel(jobs, (size_t)threads, sizeof *jobs, run_ex);
    for (int t = 0; ok && t < threads; t++) ok = jobs[t].ok;
    free(jobs);
    gck_exact_plan_free(p);
    if (!ok) {
        snprintf(msg, msg_len, "out of memory");
        return GCK_ENOMEM;
    }
    return GCK_OK;
}

/* ---- the public functions, in gemmcheck's floating-point environment (fpenv.h) ------------ */

GCK_GUARDED(gck_status, gck_oracle_exact, exact_oracle,
            (const gck_case *c, const void *A, const void *B, const void *C, void *D, int threads,
             char *msg, size_t msg_len),
            (c, A, B, C, D, threads, msg, msg_len))
