/* The Ozaki splitting on int8 residues (ozaki_internal.h): a line's int8 digits taken together as
 * one integer, reduced modulo small odd moduli, multiplied by the exact int8 GEMM once per modulus,
 * and the integer sums rebuilt by the Chinese remainder theorem (Ozaki, Uchino and Imamura's
 * scheme II, 2025, on the digits of oracle_ozaki.c's int8 splitting).
 *
 * Moduli. Pairwise coprime odd numbers up to 255, so that a residue in symmetric form lies within
 * ±127 and is an int8 digit of the GEMM; their product P must exceed four times the largest sum,
 * |X| < K·2^(7·(SA + SB)), so that the rebuilt value is picked without doubt (below).
 *
 * Rounding by adding 1.5·2^52 and taking it away again: for |y| < 2^51 the sum's last place is
 * 1, so the result is y rounded to the nearest integer. The quotients rounded this way are x/p
 * for an odd p, which lie at least 1/(2p) >= 2^-9 from a half-integer, while their rounding
 * errors stay below 2^-21 (x below 2^38: a sum of pieces, or of an int32 sum): each remainder
 * x - p·round(x/p) is exact and lies in [-(p-1)/2, (p-1)/2].
 *
 * Rebuilding. With t_u = (X mod p_u)·(P/p_u)^-1 mod p_u in [0, p_u), X ≡ sum_u t_u·(P/p_u)
 * (mod P), and sum_u t_u/p_u = k + X/P for an integer k. When |X| < P/4 the sum of the fractions,
 * computed in doubles with an error below 2^-40, rounds to k; X is then sum_u t_u·(P/p_u) - k·P,
 * which is computed modulo 2^128 (wrapping): it equals X there, and X fits in an __int128. */
#include "ozaki_internal.h"

#include <math.h>

/* The moduli, each coprime to every other: 255 = 3·5·17, 253 = 11·23, 247 = 13·19, 217 = 7·31,
 * the rest primes. */
static const int moduli[OZ_MODULI] = {255, 253, 251, 247, 241, 239, 233, 229, 227, 223,
                                      217, 211, 199, 197, 193, 191, 181, 179, 173, 167};

bool gck_oz_crt_init(gck_oz_crt *c, int bits) {
    double have = 0;
    int n = 0;
    while (n < OZ_MODULI && have < bits) have += log2(moduli[n++]);
    if (have < bits || bits > 127) return false;
    c->count = n;
    c->P = 1;
    for (int u = 0; u < n; u++) c->P *= (unsigned __int128)moduli[u];
    for (int u = 0; u < n; u++) {
        int p = moduli[u], rest = 1; /* P/p mod p */
        unsigned __int128 mu = 1;
        for (int v = 0; v < n; v++)
            if (v != u) rest = rest * moduli[v] % p, mu *= (unsigned __int128)moduli[v];
        int inv = 1;
        while (inv * rest % p != 1) inv++; /* p is at most 255 */
        c->p[u] = p, c->inv[u] = inv, c->mu[u] = mu, c->ip[u] = 1.0 / p;
    }
    return true;
}

/* x less p times x/p rounded by the 1.5·2^52 addition (above): the symmetric remainder of an
 * integer-valued x, |x| < 2^38, modulo the odd p (ip = 1/p). Inlined into every caller, the
 * AVX-512 copies included, so that their loops stay vectorised. */
static inline __attribute__((always_inline)) double sym_mod(double x, double p, double ip) {
    return x - p * (x * ip + 0x1.8p52 - 0x1.8p52);
}

/* ---- the digits' integers, and their residues ------------------------------------------- */

void gck_oz_chunks(const int8_t *d, int S, int64_t plane, int64_t lo, int64_t hi, int32_t *chunks) {
    int nc = (S + 3) / 4;
    for (int c = 0; c < nc; c++) {
        int32_t *out = chunks + c * plane;
        for (int64_t e = lo; e < hi; e++) out[e] = 0;
        /* the digits at positions 4c .. 4c + 3 from the least significant (digit S - 1) */
        for (int pos = 4 * c; pos < 4 * c + 4 && pos < S; pos++) {
            const int8_t *in = d + (S - 1 - pos) * plane;
            int32_t w = INT32_C(1) << (7 * (pos % 4));
            for (int64_t e = lo; e < hi; e++) out[e] += in[e] * w;
        }
    }
}

/* a piece count fixed per loop, so that the loop over e is vectorised */
#define RES_LOOP(NC)                                                                               \
    for (int64_t e = lo; e < hi; e++) {                                                            \
        double x = 0;                                                                              \
        for (int c = 0; c < (NC); c++) x += (double)ch[c * plane + e] * w[c];                      \
        out[e] = (int8_t)(int32_t)sym_mod(x, p, ip);                                               \
    }
#define RES_BODY                                                                                   \
    switch (nc) {                                                                                  \
    case 1: RES_LOOP(1) break;                                                                     \
    case 2: RES_LOOP(2) break;                                                                     \
    case 3: RES_LOOP(3) break;                                                                     \
    default: RES_LOOP(4) break;                                                                    \
    }

static void residues_portable(const int32_t *ch, int nc, int64_t plane, int64_t lo, int64_t hi,
                              const double *w, double p, double ip, int8_t *out) {
    RES_BODY
}

__attribute__((target("avx512f,avx512bw,avx512dq"))) static void
residues_avx512(const int32_t *ch, int nc, int64_t plane, int64_t lo, int64_t hi, const double *w,
                double p, double ip, int8_t *out) {
    RES_BODY
}

void gck_oz_residues8(const int32_t *chunks, int nc, int64_t plane, int64_t lo, int64_t hi, int p,
                      bool simd, int8_t *out) {
    double w[4]; /* 2^(28·c) mod p */
    int64_t x = 1;
    for (int c = 0; c < nc; c++) w[c] = (double)x, x = (x << 28) % p;
    /* |x| < 4·2^28·255 < 2^38: exact, and x/p within 2^-20 of its computed value */
    (simd ? residues_avx512 : residues_portable)(chunks, nc, plane, lo, hi, w, p, 1.0 / p, out);
}

/* ---- each int32 sum as t = (sum mod p)·inv mod p, in [0, p) ------------------------------- */

#define REDUCE_BODY                                                                                \
    for (int64_t e = lo; e < hi; e++) {                                                            \
        double x = (double)sums[e];                                                                \
        double r = sym_mod(x, p, ip);                                                              \
        double y = r * inv; /* |y| <= 127·254 */                                                  \
        double t = sym_mod(y, p, ip);                                                              \
        t += t < 0 ? p : 0;                                                                        \
        out[e] = (uint8_t)(int32_t)t;                                                              \
    }

static void reduce_portable(const int32_t *sums, int64_t lo, int64_t hi, double p, double ip,
                            double inv, uint8_t *out) {
    REDUCE_BODY
}

__attribute__((target("avx512f,avx512bw,avx512dq"))) static void
reduce_avx512(const int32_t *sums, int64_t lo, int64_t hi, double p, double ip, double inv,
              uint8_t *out) {
    REDUCE_BODY
}

void gck_oz_reduce_sums(const gck_oz_crt *c, int u, const int32_t *sums, int64_t lo, int64_t hi,
                        bool simd, uint8_t *out) {
    (simd ? reduce_avx512 : reduce_portable)(sums, lo, hi, c->p[u], c->ip[u], c->inv[u], out);
}

/* ---- the sums rebuilt, and kept as the plan's terms ---------------------------------------- */

__int128 gck_oz_crt_value(const gck_oz_crt *c, const uint8_t *t, int64_t stride) {
    unsigned __int128 s = 0;
    double f = 0;
    for (int u = 0; u < c->count; u++) {
        unsigned v = t[u * stride];
        s += (unsigned __int128)v * c->mu[u];
        f += v * c->ip[u];
    }
    unsigned k = (unsigned)(f + 0.5);
    return (__int128)(s - (unsigned __int128)k * c->P);
}

/* Element e's terms from its rebuilt X (see gck_oz_crt_terms). */
static inline void terms_of(__int128 x, int nq, int step, int shift, int64_t *qe) {
    if (nq == 1) { /* the whole sum below 2^61 (see the plan's groups) */
        qe[0] = (int64_t)x * (INT64_C(1) << shift);
        return;
    }
    /* X·2^shift cut into nq pieces `step` bits apart, the top one signed */
    unsigned __int128 ux = (unsigned __int128)x;
    qe[nq - 1] = (int64_t)((uint64_t)ux & ((UINT64_C(1) << (step - shift)) - 1)) << shift;
    for (int m = 1; m < nq - 1; m++)
        qe[nq - 1 - m] =
            (int64_t)((uint64_t)(ux >> (m * step - shift)) & ((UINT64_C(1) << step) - 1));
    qe[0] = (int64_t)(x >> ((nq - 1) * step - shift));
}

/* Blocks of CRT_BLOCK elements: sum_u t_u·(P/p_u) in four limbs of 32 bits, each limb's sum in
 * doubles (t_u·limb < 2^40, at most 20 of them: below 2^45, every operation exact), and
 * sum_u t_u/p_u, vectorised across the block; then X per element as gck_oz_crt_value. */
enum { CRT_BLOCK = 64 };
#define CRT_BODY                                                                                   \
    for (int64_t e0 = lo; e0 < hi; e0 += CRT_BLOCK) {                                              \
        int n = hi - e0 < CRT_BLOCK ? (int)(hi - e0) : CRT_BLOCK;                                  \
        double l0[CRT_BLOCK] = {0}, l1[CRT_BLOCK] = {0}, l2[CRT_BLOCK] = {0}, l3[CRT_BLOCK] = {0}, \
               f[CRT_BLOCK] = {0};                                                                 \
        for (int u = 0; u < c->count; u++) {                                                       \
            const uint8_t *tu = t + u * stride + e0;                                               \
            double m0 = (double)(uint32_t)c->mu[u], m1 = (double)(uint32_t)(c->mu[u] >> 32),       \
                   m2 = (double)(uint32_t)(c->mu[u] >> 64),                                        \
                   m3 = (double)(uint32_t)(c->mu[u] >> 96), ip = c->ip[u];                         \
            double v[CRT_BLOCK];                                                                   \
            for (int x = 0; x < n; x++) v[x] = tu[x];                                              \
            for (int x = n; x < CRT_BLOCK; x++) v[x] = 0;                                          \
            for (int x = 0; x < CRT_BLOCK; x++) {                                                  \
                l0[x] += v[x] * m0, l1[x] += v[x] * m1, l2[x] += v[x] * m2;                        \
                l3[x] += v[x] * m3, f[x] += v[x] * ip;                                             \
            }                                                                                      \
        }                                                                                          \
        for (int x = 0; x < n; x++) {                                                              \
            unsigned __int128 s = (unsigned __int128)(uint64_t)l0[x] +                             \
                                  ((unsigned __int128)(uint64_t)l1[x] << 32) +                     \
                                  ((unsigned __int128)(uint64_t)l2[x] << 64) +                     \
                                  ((unsigned __int128)(uint64_t)l3[x] << 96);                      \
            unsigned k = (unsigned)(f[x] + 0.5);                                                   \
            terms_of((__int128)(s - (unsigned __int128)k * c->P), nq, step, shift,                 \
                     q + (e0 + x) * nq);                                                           \
        }                                                                                          \
    }

static void crt_portable(const gck_oz_crt *c, const uint8_t *t, int64_t stride, int64_t lo,
                         int64_t hi, int nq, int step, int shift, int64_t *q) {
    CRT_BODY
}

__attribute__((target("avx512f,avx512bw,avx512dq"))) static void
crt_avx512(const gck_oz_crt *c, const uint8_t *t, int64_t stride, int64_t lo, int64_t hi, int nq,
           int step, int shift, int64_t *q) {
    CRT_BODY
}

void gck_oz_crt_terms(const gck_oz_crt *c, const uint8_t *t, int64_t stride, int64_t lo, int64_t hi,
                      int nq, int step, int shift, bool simd, int64_t *q) {
    (simd ? crt_avx512 : crt_portable)(c, t, stride, lo, hi, nq, step, shift, q);
}
