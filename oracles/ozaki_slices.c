/* The Ozaki splitting's slicing (ozaki_internal.h): each line's scale and the slices its values
 * need, the tails (the bits below a line's slices) collected, and the slices themselves as f64
 * matrices of integers (see oracle_ozaki.c). */
#include "ozaki_internal.h"

#include "format_internal.h"
#include "freivalds.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "gemmcheck/kernels.h"
#include "oracle_common.h"
#include "parallel.h"
#include "stash.h"

/* Each line's scale E (the exponent just above its largest magnitude; 0 for a line without a
 * non-zero finite value), and the gap w between E and each value's last bit: hw[w] values have
 * gap w (the last bin, OZ_NEED_TAB - 1, those with more), gap[t] the largest of line t, from
 * which the slices of beta bits the values need follow for any beta (gck_oz_needs); *low: the
 * lowest set bit of any value. The lines are cut among the cores, each with its own histogram. */
typedef struct scales_job {
    const lines *v;
    int32_t *E;
    uint8_t *special; /* per line: a NaN or an infinity (NULL: not wanted) */
    uint16_t *gap;    /* per line: the largest gap of a value's last bit below E */
    bool simd;        /* 8 values at a time where the lines are adjacent (gaps_line8) */
    int64_t *hw;      /* per part: OZ_NEED_TAB bins, values by gap */
    int32_t low[OZ_MAX_PARTS];
} scales_job;

#if defined(__x86_64__) && defined(__GNUC__)
#define OZ_GAPS8 1
static int64_t gaps_line8(const char *src, layout lay, int64_t n, int32_t e, int64_t *hw,
                          int64_t *most, int32_t *low);
static unsigned tails8(const char *src, layout lay, int32_t cut);
#endif

/* scales_part for one storage layout. The largest magnitude of a line is the largest of its
 * values' stored bits without the sign among the finite ones (IEEE formats order magnitudes as
 * integers), so the first pass over a line compares integers only. */
static inline __attribute__((always_inline)) void scales_as(scales_job *x, layout lay, int part,
                                                            int64_t lo, int64_t hi) {
    const lines *v = x->v;
    int64_t *hw = x->hw + part * OZ_NEED_TAB;
    int32_t low = INT32_MAX;
    const uint64_t sign = UINT64_C(1) << (lay.fb + lay.eb), inf = (uint64_t)((1 << lay.eb) - 1)
                                                                  << lay.fb;
    for (int64_t t = lo; t < hi; t++) {
        const char *p = (const char *)v->base + t / v->count * v->member_bytes +
                        t % v->count * v->ls * lay.bytes;
        uint64_t big = 0;
        bool special = false;
        for (int64_t k = 0; k < v->k; k++) {
            uint64_t u = raw_at(p, lay.bytes, k * v->ks) & (sign - 1);
            big = u < inf && u > big ? u : big;
            special |= u >= inf;
        }
        if (x->special) x->special[t] = special;
        bool sp;
        dec top = decode_raw(big, lay.fb, lay.eb, &sp);
        int32_t e = x->E[t] = big ? top.e + bits_of(top.m) : 0;
        int64_t most = 0, k = 0;
#ifdef OZ_GAPS8
        if (big && x->simd && lay.bytes < 8 && (v->ks == 1 || v->k == 1))
            k = gaps_line8(p, lay, v->k, e, hw, &most, &low);
#endif
        for (; big && k < v->k; k++) { /* the line is cache-hot */
            dec d = strip(decode_raw(raw_at(p, lay.bytes, k * v->ks), lay.fb, lay.eb, &sp));
            if (!d.m) continue;
            int64_t w = (int64_t)e - d.e; /* at least 1 */
            w = w < OZ_NEED_TAB ? w : OZ_NEED_TAB - 1;
            hw[w]++;
            most = w > most ? w : most;
            low = d.e < low ? d.e : low;
        }
        x->gap[t] = (uint16_t)most;
    }
    x->low[part] = low;
}

static void scales_part(void *arg, int part, int64_t lo, int64_t hi) {
    scales_job *x = arg;
#define SCALES(lay) scales_as(x, lay, part, lo, hi)
    FOR_EACH_LAYOUT(x->v->type, SCALES)
#undef SCALES
}

/* Parts for a pass over `count` lines of v, at most OZ_MAX_PARTS (the per-part results). */
static int line_parts(const lines *v, int64_t count) {
    int parts = gck_parallel_parts(count, v->k);
    return parts < OZ_MAX_PARTS ? parts : OZ_MAX_PARTS;
}

bool gck_oz_line_scales(const lines *v, int32_t *E, uint8_t *special, uint16_t *gap,
                        int64_t *hist_gap, int32_t *low, bool simd) {
    int parts = line_parts(v, v->members * v->count);
    scales_job *x = calloc(1, sizeof *x);
    int64_t *hw = calloc((size_t)parts * OZ_NEED_TAB, sizeof *hw);
    if (!x || !hw) {
        free(x), free(hw);
        return false;
    }
    x->v = v, x->E = E, x->special = special, x->gap = gap, x->hw = hw, x->simd = simd;
    gck_parallel_for(parts, v->members * v->count, x, scales_part);
    for (int p = 0; p < parts; p++) {
        for (int w = 0; w < OZ_NEED_TAB; w++) hist_gap[w] += hw[p * OZ_NEED_TAB + w];
        if (x->low[p] < *low) *low = x->low[p];
    }
    free(hw);
    free(x);
    return true;
}

void gck_oz_needs(int beta, const uint16_t *gap, int64_t count, const int64_t *hist_gap,
                  uint8_t *need, int64_t *hist) {
    uint8_t tab[OZ_NEED_TAB];
    for (int w = 0; w < OZ_NEED_TAB; w++) { /* ceil(w / beta), the last bin for the rest */
        int n = (w + beta - 1) / beta;
        tab[w] = (uint8_t)(n < OZ_NEED_BINS ? n : OZ_NEED_BINS - 1);
    }
    for (int64_t t = 0; t < count; t++) need[t] = tab[gap[t]];
    memset(hist, 0, OZ_NEED_BINS * sizeof *hist);
    for (int w = 1; w < OZ_NEED_TAB; w++) hist[tab[w]] += hist_gap[w];
}

/* The most slices any value needs (0: no non-zero finite value). */
int gck_oz_most_needed(const int64_t *hist) {
    int n = OZ_NEED_BINS - 1;
    while (n > 0 && !hist[n]) n--;
    return n;
}

/* Values that need more than S slices (those with a tail). */
int64_t gck_oz_tails_beyond(const int64_t *hist, int S) {
    int64_t n = 0;
    for (int x = S + 1; x < OZ_NEED_BINS; x++) n += hist[x];
    return n;
}

/* The tails of the values that need more than S slices, line by line in order of k (CSR: line
 * t's at out[start[t] .. start[t+1]]), and each line's span; *tmin: the lowest bit of any tail.
 * Two passes over the lines, cut among the cores: each line's count, then (from their prefix
 * sums) its tails. */
typedef struct tails_job {
    const lines *v;
    const int32_t *E;
    const uint8_t *need; /* the most slices a value of each line needs: lines within S have none */
    int beta, S;
    int64_t *start; /* first pass: start[t + 1] = line t's count */
    tailv *out;     /* NULL in the first pass */
    tail_span *span;
    bool simd; /* 8 values at a time where the lines are adjacent (tails8) */
    int32_t tmin[OZ_MAX_PARTS];
} tails_job;

/* The smallest c with n <= 2^c (n >= 1). */
static int32_t ceil_log2(int64_t n) { return n <= 1 ? 0 : 64 - __builtin_clzll((uint64_t)n - 1); }

/* Value k of line t when it has bits below `cut`: counted into *n and, in the second pass,
 * written out at out[*n] with *low and *top moved. */
static inline __attribute__((always_inline)) void tail_at(tails_job *x, layout lay, int64_t t,
                                                          int64_t k, int32_t cut, int64_t *n,
                                                          int32_t *low, int32_t *top) {
    const lines *v = x->v;
    dec d = value_as(v, lay, t / v->count, t % v->count, k);
    if (!d.m || d.e >= cut) return;
    if (x->out) {
        int w = cut - d.e; /* the tail's bits: below the cut (d.e is set: never 0) */
        uint64_t m = w >= 64 ? d.m : d.m & ((UINT64_C(1) << w) - 1);
        double tv = ldexp((double)m, d.e);
        x->out[*n] = (tailv){k, m, d.e, d.neg, d.neg ? -tv : tv};
        if (d.e < *low) *low = d.e;
        if (d.e + bits_of(m) > *top) *top = d.e + bits_of(m);
    }
    (*n)++;
}

static inline __attribute__((always_inline)) void tails_as(tails_job *x, layout lay, int part,
                                                           int64_t lo, int64_t hi) {
    const lines *v = x->v;
    int32_t tmin = INT32_MAX;
    for (int64_t t = lo; t < hi; t++) {
        if (x->need[t] <= x->S) { /* no tail */
            if (!x->out) x->start[t + 1] = 0;
            continue;
        }
        int32_t cut = x->E[t] - x->beta * x->S; /* the slices keep the bits from cut up */
        int64_t n = x->out ? x->start[t] : 0, k = 0;
        int32_t low = INT32_MAX, top = INT32_MIN;
#ifdef OZ_GAPS8
        if (x->simd && lay.bytes < 8 && (v->ks == 1 || v->k == 1)) {
            const char *p = (const char *)v->base + t / v->count * v->member_bytes +
                            t % v->count * v->ls * lay.bytes;
            for (; k + 8 <= v->k; k += 8) /* most groups of 8 have no tail */
                for (unsigned b = tails8(p + k * lay.bytes, lay, cut); b; b &= b - 1)
                    tail_at(x, lay, t, k + __builtin_ctz(b), cut, &n, &low, &top);
        }
#endif
        for (; k < v->k; k++) tail_at(x, lay, t, k, cut, &n, &low, &top);
        if (!x->out)
            x->start[t + 1] = n;
        else if (low != INT32_MAX) /* the line's n tails add up to less than n·2^top */
            x->span[t] = (tail_span){low, top + ceil_log2(n - x->start[t])};
        if (low < tmin) tmin = low;
    }
    x->tmin[part] = tmin;
}

static void tails_part(void *arg, int part, int64_t lo, int64_t hi) {
    tails_job *x = arg;
#define TAILS(lay) tails_as(x, lay, part, lo, hi)
    FOR_EACH_LAYOUT(x->v->type, TAILS)
#undef TAILS
}

bool gck_oz_collect_tails(const lines *v, const int32_t *E, const uint8_t *need, int beta, int S,
                          int64_t count, int64_t **start, tailv **out, tail_span **span,
                          int32_t *tmin, bool simd) {
    int64_t nl = v->members * v->count;
    *start = malloc((size_t)(nl + 1) * sizeof **start);
    *out = malloc((size_t)(count > 0 ? count : 1) * sizeof **out);
    *span = calloc((size_t)nl, sizeof **span);
    tails_job *x = calloc(1, sizeof *x);
    bool ok = *start && *out && *span && x;
    if (ok) {
        *x = (tails_job){.v = v,
                         .E = E,
                         .need = need,
                         .beta = beta,
                         .S = S,
                         .start = *start,
                         .span = *span,
                         .simd = simd};
        int parts = line_parts(v, nl);
        gck_parallel_for(parts, nl, x, tails_part);
        (*start)[0] = 0;
        for (int64_t t = 0; t < nl; t++) (*start)[t + 1] += (*start)[t];
        ok = (*start)[nl] == count;
        x->out = *out;
        if (ok) gck_parallel_for(parts, nl, x, tails_part);
        for (int p = 0; ok && p < parts; p++)
            if (x->tmin[p] < *tmin) *tmin = x->tmin[p];
    }
    free(x);
    return ok;
}

/* Digit s (of S slices of beta bits) of the value d of a line of scale E. */
static inline double digit(dec d, int32_t E, int beta, int S, int s) {
    if (!d.m) return 0.0;          /* zeros, and NaN or Inf (decided by the IEEE rules instead) */
    int sh = d.e - (E - beta * S); /* below 0: the value has a tail, which is dropped here */
    if (sh <= -64) return 0.0;
    unsigned __int128 x = sh >= 0 ? (unsigned __int128)d.m << sh : (unsigned __int128)(d.m >> -sh);
    uint64_t g = (uint64_t)(x >> (beta * (S - 1 - s))) & ((UINT64_C(1) << beta) - 1);
    return d.neg ? -(double)g : (double)g;
}

/* Slice s of the lines of member b, line by line (element (line, k) at line·K + k: op(B)'s
 * slice is the K x count column-major matrix, op(A)'s the transpose of its count x K one); the
 * lines cut among the cores. */
typedef struct slice_job {
    const lines *v;
    const int32_t *E;
    int64_t b;
    int beta, S, s;
    double *out;
    int8_t *out8; /* instead of out: the digits as bytes (int8 slices, each within ±127) */
    bool simd;    /* 8 values at a time (slice_line8) */
} slice_job;

/* digit() when the slices span at most 63 bits (beta·S <= 63), in 64-bit integers without
 * branches: the value's significand as stored (its trailing zeros too) shifted to the slices'
 * frame, whose lowest bit lies at `cut` (a shift right of 63 leaves nothing of a significand
 * below 2^53), then the slice `up` bits above the frame's lowest. */
static inline __attribute__((always_inline)) double digit64(dec d, int32_t cut, int up,
                                                            uint64_t mask) {
    int32_t sh = d.e - cut;
    uint64_t x = sh >= 0 ? d.m << (sh & 63) : d.m >> (-sh < 63 ? -sh : 63);
    double g = (double)((x >> up) & mask);
    return d.neg ? -g : g;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define OZ_SIMD   1
#define OZ_AVX512 __attribute__((target("avx512f,avx512dq,f16c")))

/* 8 adjacent values of one storage layout (2 bytes with 10 fraction bits: f16, with 7: bf16;
 * 4: f32; 8: f64) as doubles, exactly (the conversions are exact, in the default environment
 * that gemmcheck's functions run in: no denormals flushed). */
static inline __attribute__((always_inline)) OZ_AVX512 __m512d load8_as(const char *p, layout lay) {
    if (lay.bytes == 8) return _mm512_loadu_pd(p);
    if (lay.bytes == 4) return _mm512_cvtps_pd(_mm256_loadu_ps((const float *)(const void *)p));
    __m128i h = _mm_loadu_si128((const __m128i *)(const void *)p);
    if (lay.fb == 10) return _mm512_cvtps_pd(_mm256_cvtph_ps(h));
    __m256i w = _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16); /* bf16: the top half of f32 */
    return _mm512_cvtps_pd(_mm256_castsi256_ps(w));
}

/* The digits of values [0, n - n % 8) of one line as digit64 gives them (a narrow plan:
 * beta·S <= 63), 8 at a time: |v|·2^-cut is exact (a power-of-two scaling of a value below
 * 2^E, so below 2^(beta·S), or below 1 where it underflows), its integer part is the value's bits
 * above the cut, shifted down by `up` and masked; the value's sign is put back (a negative value
 * with a zero digit gives -0.0, as digit64); NaN and Inf give 0 with their sign, as digit64. The
 * digits go to out (doubles) or out8 (bytes); returns how many values were done. */
static OZ_AVX512 int64_t slice_line8(const char *src, layout lay, int64_t n, int32_t cut, int up,
                                     uint64_t mask, double *out, int8_t *out8) {
    const __m512d scale = _mm512_set1_pd(-(double)cut), sign = _mm512_set1_pd(-0.0);
    const __m512i mk = _mm512_set1_epi64((long long)mask);
    const __m128i sh = _mm_cvtsi32_si128(up);
    int64_t k = 0;
    for (; k + 8 <= n; k += 8) {
        __m512d v = load8_as(src + k * lay.bytes, lay);
        __mmask8 special = _mm512_fpclass_pd_mask(v, 0x99); /* QNaN, SNaN, +Inf, -Inf */
        __m512d a = _mm512_maskz_mov_pd((__mmask8)~special, _mm512_abs_pd(v));
        __m512i t = _mm512_cvttpd_epu64(_mm512_scalef_pd(a, scale));
        __m512i g = _mm512_and_si512(_mm512_srl_epi64(t, sh), mk);
        if (out8) {
            __mmask8 neg = _mm512_movepi64_mask(_mm512_castpd_si512(v));
            g = _mm512_mask_sub_epi64(g, neg, _mm512_setzero_si512(), g);
            _mm_storel_epi64((__m128i *)(void *)(out8 + k), _mm512_cvtepi64_epi8(g));
        } else {
            __m512d d = _mm512_or_pd(_mm512_cvtepu64_pd(g), _mm512_and_pd(v, sign));
            _mm512_storeu_pd(out + k, d);
        }
    }
    return k;
}

/* 8 adjacent values (f16, bf16, f32: as doubles, exact and normal): which are non-zero and finite
 * (*ok), and the exponent of each one's last bit plus 1075 + 1023: its double's biased exponent
 * plus that of its lowest set bit isolated (m & -m, a power of two, exact as a double), the
 * latter 1023 plus the trailing zeros of its significand. */
static inline __attribute__((always_inline)) OZ_AVX512 __m512i lastbit8(const char *src, layout lay,
                                                                        __mmask8 *ok) {
    const __m512i fraction = _mm512_set1_epi64((INT64_C(1) << 52) - 1),
                  implicit = _mm512_set1_epi64(INT64_C(1) << 52), e11 = _mm512_set1_epi64(0x7ff);
    __m512d v = load8_as(src, lay);
    *ok = (__mmask8)~_mm512_fpclass_pd_mask(v, 0x9f); /* not NaN, Inf or zero */
    __m512i bits = _mm512_castpd_si512(v), ex = _mm512_and_si512(_mm512_srli_epi64(bits, 52), e11),
            m = _mm512_or_si512(_mm512_and_si512(bits, fraction), implicit),
            lb = _mm512_and_si512(m, _mm512_sub_epi64(_mm512_setzero_si512(), m));
    return _mm512_add_epi64(ex, _mm512_srli_epi64(_mm512_castpd_si512(_mm512_cvtepi64_pd(lb)), 52));
}

/* scales_as's second pass over values [0, n - n % 8) of one line (f16, bf16, f32), 8 at a time
 * (lastbit8): each non-zero finite value's gap below the line's scale e (at least 1, at most
 * OZ_NEED_TAB - 1) counted in hw (zeros, NaN and Inf in bin 0), the largest into *most, the
 * lowest last bit into *low; returns how many values were done. */
static OZ_AVX512 int64_t gaps_line8(const char *src, layout lay, int64_t n, int32_t e, int64_t *hw,
                                    int64_t *most, int32_t *low) {
    const __m512i bias = _mm512_set1_epi64(1075 + 1023),
                  top = _mm512_set1_epi64((int64_t)e + 1075 + 1023),
                  cap = _mm512_set1_epi64(OZ_NEED_TAB - 1);
    __m512i wmax = _mm512_setzero_si512(), lmin = _mm512_set1_epi64(INT32_MAX);
    int64_t k = 0, ws[8];
    for (; k + 8 <= n; k += 8) {
        __mmask8 ok;
        __m512i lx = lastbit8(src + k * lay.bytes, lay, &ok),
                w = _mm512_maskz_mov_epi64(ok, _mm512_min_epi64(_mm512_sub_epi64(top, lx), cap));
        wmax = _mm512_max_epi64(wmax, w);
        lmin = _mm512_mask_min_epi64(lmin, ok, lmin, _mm512_sub_epi64(lx, bias));
        _mm512_storeu_si512(ws, w);
        for (int l = 0; l < 8; l++) hw[ws[l]]++;
    }
    int64_t wm = _mm512_reduce_max_epi64(wmax), lm = _mm512_reduce_min_epi64(lmin);
    *most = wm > *most ? wm : *most;
    *low = lm < *low ? (int32_t)lm : *low;
    return k;
}

/* Which of 8 adjacent values (f16, bf16, f32) are non-zero, finite and have their last bit
 * below `cut` (lastbit8): those with a tail. */
static OZ_AVX512 unsigned tails8(const char *src, layout lay, int32_t cut) {
    __mmask8 ok;
    __m512i lx = lastbit8(src, lay, &ok);
    return _mm512_mask_cmplt_epi64_mask(ok, lx, _mm512_set1_epi64((int64_t)cut + 1075 + 1023));
}

#endif

bool gck_ozaki_simd_slices(void) {
#ifdef OZ_SIMD
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("f16c");
#else
    return false;
#endif
}

/* slice_part for one storage layout. */
static inline __attribute__((always_inline)) void slice_as(const slice_job *x, layout lay,
                                                           int64_t lo, int64_t hi) {
    const lines *v = x->v;
    const int32_t *E = x->E + x->b * v->count;
    const char *base = (const char *)v->base + x->b * v->member_bytes;
    bool narrow = x->beta * x->S <= 63;
    int up = x->beta * (x->S - 1 - x->s);
    uint64_t mask = (UINT64_C(1) << x->beta) - 1;
    for (int64_t l = lo; l < hi; l++) {
        int32_t cut = E[l] - x->beta * x->S;
        double *out = x->out ? x->out + l * v->k : NULL;
        int8_t *out8 = x->out8 ? x->out8 + l * v->k : NULL;
        int64_t k = 0;
#ifdef OZ_SIMD
        if (narrow && (v->ks == 1 || v->k == 1) && x->simd)
            k = slice_line8(base + l * v->ls * lay.bytes, lay, v->k, cut, up, mask, out, out8);
#endif
        for (; k < v->k; k++) {
            bool sp;
            dec d = decode_raw(raw_at(base, lay.bytes, l * v->ls + k * v->ks), lay.fb, lay.eb, &sp);
            double g =
                narrow ? digit64(d, cut, up, mask) : digit(strip(d), E[l], x->beta, x->S, x->s);
            if (out8)
                out8[k] = (int8_t)g;
            else
                out[k] = g;
        }
    }
}

static void slice_part(void *arg, int part, int64_t lo, int64_t hi) {
    (void)part;
    const slice_job *x = arg;
#define SLICE(lay) slice_as(x, lay, lo, hi)
    FOR_EACH_LAYOUT(x->v->type, SLICE)
#undef SLICE
}

void gck_oz_slice(const lines *v, const int32_t *E, int64_t b, int beta, int S, int s, bool simd,
                  double *out) {
    slice_job x = {v, E, b, beta, S, s, out, NULL, simd};
    gck_parallel_for(line_parts(v, v->count), v->count, &x, slice_part);
}

void gck_oz_slice8(const lines *v, const int32_t *E, int64_t b, int S, int s, bool simd,
                   int8_t *out) {
    slice_job x = {v, E, b, 7, S, s, NULL, out, simd};
    gck_parallel_for(line_parts(v, v->count), v->count, &x, slice_part);
}
