/* Candidate evaluation trees of a K-term sum and their lowest-common-ancestor sizes L(i, j),
 * against which the summation-order probe's measurements are matched. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fingerprint.h"

void gck_fp_tree_uniform(gck_fp_tree *t, int64_t k, int64_t b, int ways, gck_fp_comb comb) {
    memset(t, 0, sizeof *t);
    if (b <= 0 || b > k) b = k;
    if ((k + b - 1) / b > GCK_FP_MAX_BLOCKS) b = (k + GCK_FP_MAX_BLOCKS - 1) / GCK_FP_MAX_BLOCKS;
    for (int64_t e = b; t->nblocks < GCK_FP_MAX_BLOCKS; e += b) {
        t->ends[t->nblocks++] = e < k ? e : k;
        if (e >= k) break;
    }
    t->ways = ways;
    t->comb = comb;
    t->leaf = 1;
}

/* The smallest part holding both x < y when [lo, lo+n) is halved recursively (the left part of
 * n terms has n/2, rounded down) down to parts of at most `leaf`: its start and size. */
static void halves(int64_t *lo, int64_t *n, int64_t x, int64_t y, int64_t leaf) {
    for (;;) {
        int64_t left = *n / 2;
        if (left == 0 || *n <= leaf) return;
        if (y < *lo + left)
            *n = left;
        else if (x >= *lo + left) {
            *lo += left;
            *n -= left;
        } else
            return;
    }
}

/* Accumulators x != y of w (cnt[r] terms each) meet under how many terms. */
static int64_t accumulators_lca(const gck_fp_tree *t, const int64_t *cnt, int64_t x, int64_t y) {
    int w = t->ways;
    int64_t sum = 0, hi = x > y ? x : y, lo = x < y ? x : y;
    if (t->comb == GCK_FP_IN_ORDER) {
        for (int r = 0; r <= hi; r++) sum += cnt[r];
    } else if (t->comb == GCK_FP_HALVES) {
        int64_t start = 0, n = w;
        halves(&start, &n, lo, hi, 1);
        for (int64_t r = start; r < start + n; r++) sum += cnt[r];
    } else { /* folding: meet at the first stride s = w/2^t with x = y mod s */
        int64_t s = w;
        while (s > 1 && x % s != y % s) s /= 2;
        for (int r = 0; r < w; r++)
            if (r % s == x % s) sum += cnt[r];
    }
    return sum;
}

int64_t gck_fp_tree_lca(const gck_fp_tree *t, int64_t i, int64_t j) {
    if (i > j) {
        int64_t s = i;
        i = j;
        j = s;
    }
    int bi = 0, bj = 0;
    while (bi < t->nblocks - 1 && i >= t->ends[bi]) bi++;
    while (bj < t->nblocks - 1 && j >= t->ends[bj]) bj++;
    if (bi != bj) return t->ends[bj];
    int64_t s = bj ? t->ends[bj - 1] : 0, len = t->ends[bj] - s, x = i - s, y = j - s;
    if (t->ways == 0) {
        int64_t lo = 0, n = len;
        halves(&lo, &n, x, y, t->leaf);
        return n <= t->leaf ? y - lo + 1 : n; /* a leaf is summed sequentially */
    }
    int w = t->ways;
    if (w == 1 && t->odd_first) { /* visited 1, 0, 3, 2, ...; an unpaired last term last */
        int64_t px = (x ^ 1) < len ? x ^ 1 : x, py = (y ^ 1) < len ? y ^ 1 : y;
        return (px > py ? px : py) + 1;
    }
    if (x % w == y % w) return y / w + 1;
    int64_t cnt[64];
    for (int r = 0; r < w; r++) cnt[r] = len > r ? (len - r + w - 1) / w : 0;
    return accumulators_lca(t, cnt, x % w, y % w);
}

void gck_fp_tree_describe(const gck_fp_tree *t, char *buf, size_t len) {
    static const char *const comb[] = {"in order", "by halves", "by folding (r + r+w/2 first)"};
    char inner[160], sizes[200] = "";
    if (t->ways == 0 && t->leaf <= 1)
        snprintf(inner, sizeof inner, "pairwise (recursive halves)");
    else if (t->ways == 0)
        snprintf(inner, sizeof inner,
                 "pairwise (recursive halves down to sequential runs of at "
                 "most %d terms)",
                 t->leaf);
    else if (t->ways == 1 && t->odd_first)
        snprintf(inner, sizeof inner, "sequential by pairs, the odd term of each pair first");
    else if (t->ways == 1)
        snprintf(inner, sizeof inner, "sequential, k ascending");
    else
        snprintf(inner, sizeof inner,
                 "%d interleaved accumulators (k mod %d), each sequential, "
                 "combined %s",
                 t->ways, t->ways, comb[t->comb]);
    if (t->nblocks <= 1) {
        snprintf(buf, len, "%s", inner);
        return;
    }
    /* uniform blocks (the last may be shorter) by their size; others listed */
    int64_t b = t->ends[0];
    bool uniform = true;
    for (int i = 1; i < t->nblocks - 1; i++) uniform &= t->ends[i] - t->ends[i - 1] == b;
    uniform &= t->ends[t->nblocks - 1] - t->ends[t->nblocks - 2] <= b;
    if (uniform)
        snprintf(sizes, sizeof sizes, "blocks of %lld terms", (long long)b);
    else {
        size_t at = (size_t)snprintf(sizes, sizeof sizes, "blocks of");
        for (int i = 0; i < t->nblocks && at < sizeof sizes - 24; i++)
            at += (size_t)snprintf(sizes + at, sizeof sizes - at, "%s %lld", i ? "," : "",
                                   (long long)(t->ends[i] - (i ? t->ends[i - 1] : 0)));
        snprintf(sizes + at, sizeof sizes - at, " terms");
    }
    snprintf(buf, len, "%s, each %s; the block sums added in order", sizes, inner);
}

static bool fits(const gck_fp_tree *t, const int64_t *ii, const int64_t *jj, const int64_t *lca,
                 int64_t n) {
    for (int64_t p = 0; p < n; p++)
        if (gck_fp_tree_lca(t, ii[p], jj[p]) != lca[p]) return false;
    return true;
}

static int cmp64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

enum { MAX_FIRST = 24 };

/* The distinct values of L(0, q), ascending (at most k); returns their count. */
static int64_t profile_values(const int64_t *ii, const int64_t *lca, int64_t n, int64_t *v) {
    int64_t m = 0;
    for (int64_t p = 0; p < n; p++)
        if (ii[p] == 0) v[m++] = lca[p];
    qsort(v, (size_t)m, sizeof *v, cmp64);
    int64_t d = 0;
    for (int64_t p = 0; p < m; p++)
        if (d == 0 || v[p] != v[d - 1]) v[d++] = v[p];
    return d;
}

/* Blocks whose first ends at b0 and whose later ends are the profile's values above b0. */
static bool blocks_from(gck_fp_tree *t, int64_t k, int64_t b0, const int64_t *v, int64_t nv) {
    memset(t, 0, sizeof *t);
    t->ends[t->nblocks++] = b0;
    for (int64_t p = 0; p < nv; p++)
        if (v[p] > b0) {
            if (t->nblocks == GCK_FP_MAX_BLOCKS) return false;
            t->ends[t->nblocks++] = v[p];
        }
    return t->ends[t->nblocks - 1] == k;
}

static bool try_inner(gck_fp_tree *t, const int64_t *ii, const int64_t *jj, const int64_t *lca,
                      int64_t n) {
    static const int ways[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 0};
    for (size_t w = 0; w < sizeof ways / sizeof ways[0]; w++)
        for (int c = 0; c < (ways[w] > 2 ? 3 : 1); c++) {
            if (c == GCK_FP_FOLDING && (ways[w] & (ways[w] - 1))) continue;
            t->ways = ways[w];
            t->comb = (gck_fp_comb)c;
            t->leaf = 1;
            if (fits(t, ii, jj, lca, n)) return true;
        }
    for (t->leaf = 2; t->leaf <= 64; t->leaf *= 2) /* pairwise over sequential leaves */
        if (fits(t, ii, jj, lca, n)) return true;
    t->leaf = 1;
    t->ways = 1;
    t->odd_first = true;
    if (fits(t, ii, jj, lca, n)) return true;
    t->odd_first = false;
    return false;
}

/* Sequential blocks of one term after a sequential block only continue it: the same tree,
 * described with the longer block. */
static void canonical(gck_fp_tree *t) {
    if (t->ways != 1 || t->odd_first) return;
    int n = 0;
    for (int b = 0; b < t->nblocks; b++) {
        int64_t start = b ? t->ends[b - 1] : 0;
        if (n > 0 && t->ends[b] - start == 1)
            t->ends[n - 1] = t->ends[b];
        else
            t->ends[n++] = t->ends[b];
    }
    t->nblocks = n;
}

bool gck_fp_tree_match(int64_t k, const int64_t *ii, const int64_t *jj, const int64_t *lca,
                       int64_t npairs, gck_fp_tree *out) {
    gck_fp_tree_uniform(out, k, k, 1, GCK_FP_IN_ORDER);
    if (try_inner(out, ii, jj, lca, npairs)) return true;
    int64_t *v = malloc((size_t)(npairs + 1) * sizeof *v);
    if (!v) return false;
    int64_t nv = profile_values(ii, lca, npairs, v);
    /* the first block ends where a run of consecutive profile values ends or one starts */
    bool found = false;
    int tried = 0;
    for (int64_t p = 0; p < nv && !found && tried < MAX_FIRST; p++) {
        bool run_end = p + 1 == nv || v[p + 1] != v[p] + 1,
             run_start = p == 0 || v[p - 1] != v[p] - 1;
        if (!(run_end || run_start) || v[p] >= k || v[p] < 2) continue;
        tried++;
        found = blocks_from(out, k, v[p], v, nv) && try_inner(out, ii, jj, lca, npairs);
    }
    free(v);
    if (found) canonical(out);
    return found;
}
