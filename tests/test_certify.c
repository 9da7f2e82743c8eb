/* Certificates: the summation-order matcher on trees built by hand, the fingerprint probes on
 * backends whose arithmetic is known by construction (the order zoo and the reference GEMMs,
 * computed by refimpl/, code the probes do not share), and certify/compare from the command
 * line. */
#include <criterion/criterion.h>
#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fingerprint.h"
#include "gemmcheck/backend.h"
#include "gemmcheck/kernels.h"
#include "testutil.h"

/* ---- the matcher -------------------------------------------------------------------------- */

/* All pairs of K terms (when all is set) or (0, q), (q-1, q) and every 7th pair. */
static int64_t pairs(int64_t k, bool all, int64_t *ii, int64_t *jj) {
    int64_t n = 0;
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = i + 1; j < k; j++)
            if (all || i == 0 || j == i + 1 || (i * 31 + j) % 7 == 0) ii[n] = i, jj[n++] = j;
    return n;
}

static void recovers(const gck_fp_tree *truth, int64_t k, bool all, const char *want) {
    int64_t cap = k * (k - 1) / 2, *ii = malloc((size_t)cap * 8), *jj = malloc((size_t)cap * 8),
            *lca = malloc((size_t)cap * 8);
    int64_t n = pairs(k, all, ii, jj);
    for (int64_t p = 0; p < n; p++) lca[p] = gck_fp_tree_lca(truth, ii[p], jj[p]);
    gck_fp_tree got;
    cr_assert(gck_fp_tree_match(k, ii, jj, lca, n, &got), "K=%lld: no tree matched", (long long)k);
    char desc[256];
    gck_fp_tree_describe(&got, desc, sizeof desc);
    cr_expect_str_eq(desc, want, "K=%lld", (long long)k);
    /* the same tree: every pair, not only the probed ones */
    int64_t differ = 0;
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = i + 1; j < k; j++)
            differ += gck_fp_tree_lca(&got, i, j) != gck_fp_tree_lca(truth, i, j);
    cr_expect_eq(differ, 0, "K=%lld %s: %lld pairs differ", (long long)k, want, (long long)differ);
    free(ii);
    free(jj);
    free(lca);
}

Test(certify, the_matcher_recovers_the_trees_libraries_use) {
    gck_fp_tree t;
    gck_fp_tree_uniform(&t, 64, 64, 1, GCK_FP_IN_ORDER);
    recovers(&t, 64, true, "sequential, k ascending");
    gck_fp_tree_uniform(&t, 1000, 448, 1, GCK_FP_IN_ORDER);
    recovers(&t, 1000, false,
             "blocks of 448 terms, each sequential, k ascending; the block sums added in order");
    /* OpenBLAS's split of the last two blocks: 320, 320, 184, 176 */
    gck_fp_tree_uniform(&t, 1000, 320, 2, GCK_FP_IN_ORDER);
    t.ends[2] = 824, t.ends[3] = 1000, t.nblocks = 4;
    recovers(&t, 1000, false,
             "blocks of 320, 320, 184, 176 terms, each 2 interleaved accumulators (k mod 2), each "
             "sequential, combined in order; the block sums added in order");
    gck_fp_tree_uniform(&t, 64, 64, 16, GCK_FP_FOLDING);
    recovers(&t, 64, true,
             "16 interleaved accumulators (k mod 16), each sequential, combined by folding (r + "
             "r+w/2 first)");
    gck_fp_tree_uniform(&t, 64, 64, 8, GCK_FP_HALVES);
    recovers(&t, 64, true,
             "8 interleaved accumulators (k mod 8), each sequential, combined by halves");
    gck_fp_tree_uniform(&t, 63, 63, 1, GCK_FP_IN_ORDER); /* VDPBF16PS, K odd */
    t.odd_first = true;
    recovers(&t, 63, true, "sequential by pairs, the odd term of each pair first");
    gck_fp_tree_uniform(&t, 64, 64, 0, GCK_FP_IN_ORDER);
    t.leaf = 4;
    recovers(&t, 64, true,
             "pairwise (recursive halves down to sequential runs of at most 4 terms)");
}

Test(certify, the_matcher_refuses_what_is_no_candidate) {
    /* sequential with k descending: a tree, but none of the candidates */
    int64_t ii[2016], jj[2016], lca[2016];
    int64_t n = pairs(64, true, ii, jj);
    for (int64_t p = 0; p < n; p++) lca[p] = 64 - ii[p];
    gck_fp_tree t;
    cr_expect_not(gck_fp_tree_match(64, ii, jj, lca, n, &t));
}

/* ---- probes on backends of known arithmetic -------------------------------------------------- */

/* The fingerprint of the backend's row with inputs t, D d and compute k. */
/* The fingerprint of the backend's row with inputs a and b, D d and compute k. */
static void fingerprint_of(const char *spec, gck_format a, gck_format b, gck_format d, gck_format k,
                           gck_fingerprint *fp) {
    gck_backend be;
    char msg[512];
    cr_assert_eq(gck_backend_open(&be, spec, msg, sizeof msg), GCK_OK, "%s", msg);
    const gck_support_row *rows;
    size_t n = be.ops->table(be.state, &rows), r = 0;
    while (r < n && !(rows[r].a == a && rows[r].b == b && rows[r].d == d && rows[r].compute == k))
        r++;
    cr_assert_lt(r, n, "%s has no %s x %s row", spec, gck_format_get(a)->name,
                 gck_format_get(b)->name);
    gck_fingerprint_row(&be, &rows[r], fp);
    gck_backend_close(&be);
}

static void fingerprint(const char *spec, gck_format t, gck_format d, gck_format k,
                        gck_fingerprint *fp) {
    fingerprint_of(spec, t, t, d, k, fp);
}

static const char *value(const gck_fingerprint *fp, const char *name) {
    for (int p = 0; p < fp->count; p++)
        if (strcmp(fp->props[p].name, name) == 0) return fp->props[p].value;
    return "(absent)";
}

#define BLOCKS(b)                                                                                  \
    "blocks of " b " terms, each sequential, k ascending; the block sums added in order"

Test(certify, zoo_orders_are_recovered_exactly, .timeout = 600) {
    static const struct {
        const char *kind, *products, *k64, *k1000, *inf0;
    } zoo[] = {
        /* netlib skips the terms whose op(B) element is zero (its column loop's test) */
        {"netlib", "rounded to f32 before the addition (no FMA)", "sequential, k ascending",
         "sequential, k ascending", "0 (term dropped)"},
        {"blocked", "rounded to f32 before the addition (no FMA)", BLOCKS("16"), BLOCKS("16"),
         "NaN (IEEE)"},
        {"pairwise", "rounded to f32 before the addition (no FMA)",
         "pairwise (recursive halves down to sequential runs of at most 4 terms)",
         "pairwise (recursive halves down to sequential runs of at most 4 terms)", "NaN (IEEE)"},
        {"split-k", "fused multiply-add into the running sum (the first product rounded alone)",
         BLOCKS("22"), BLOCKS("334"), "NaN (IEEE)"},
        /* alpha times each rounded product, the sum in blocks of 8 */
        {"alpha-each", "rounded to f32 before the addition (no FMA)", BLOCKS("8"), BLOCKS("8"),
         "NaN (IEEE)"},
    };
    for (size_t z = 0; z < sizeof zoo / sizeof zoo[0]; z++) {
        char spec[512];
        snprintf(spec, sizeof spec, "plugin:%s:%s", GCK_ZOO_PLUGIN, zoo[z].kind);
        gck_fingerprint fp;
        fingerprint(spec, GCK_F32, GCK_F32, GCK_F32, &fp);
        cr_expect_str_eq(value(&fp, "products"), zoo[z].products, "%s", zoo[z].kind);
        cr_expect_str_eq(value(&fp, "order K=64 (M=4)"), zoo[z].k64, "%s", zoo[z].kind);
        cr_expect_str_eq(value(&fp, "order K=1000 (M=2)"), zoo[z].k1000, "%s", zoo[z].kind);
        cr_expect_str_eq(value(&fp, "run to run"), "identical bits", "%s", zoo[z].kind);
        cr_expect_str_eq(value(&fp, "Inf*0"), zoo[z].inf0, "%s", zoo[z].kind);
    }
}

/* The reference GEMMs declare k ascending, no FMA, IEEE subnormals and BLAS zero rules: their
 * fingerprint says the same, in f32 and f64. */
Test(certify, the_reference_fingerprint_matches_its_declared_model, .timeout = 600) {
    for (int f = 0; f < 2; f++) {
        gck_format t = f ? GCK_F64 : GCK_F32;
        gck_fingerprint fp;
        fingerprint("ref", t, t, t, &fp);
        const char *name = gck_format_get(t)->name;
        char rounded[96];
        snprintf(rounded, sizeof rounded, "rounded to %s before the addition (no FMA)", name);
        cr_expect_str_eq(value(&fp, "products"), rounded);
        int orders = 0;
        for (int p = 0; p < fp.count; p++) {
            if (strncmp(fp.props[p].name, "order", 5) != 0) continue;
            orders++;
            /* a single sequential sum has no block edges to probe around */
            bool edge = strstr(fp.props[p].name, "block") != NULL;
            cr_expect_str_eq(fp.props[p].value,
                             edge ? "undecided: no block structure was found at K = 2048"
                                  : "sequential, k ascending",
                             "%s %s: %s", name, fp.props[p].name, fp.props[p].probe);
        }
        /* K = 16 .. 2048, M = 1, row-major, A^T, padded lda, padded ldb and ldc, N = 2, batch,
         * three block edges */
        cr_expect_eq(orders, 16, "%s: %d order properties", name, orders);
        cr_expect_str_eq(value(&fp, "subnormal A"), "honoured", "%s", name);
        cr_expect_str_eq(value(&fp, "subnormal B"), "honoured", "%s", name);
        cr_expect_str_eq(value(&fp, "subnormal results"), "kept", "%s", name);
        cr_expect_str_eq(value(&fp, "alpha=0 reads A"), "no (D = 1)", "%s", name);
        cr_expect_str_eq(value(&fp, "beta=0 reads C"), "no (D = 1)", "%s", name);
    }
}

/* Mixed rows of the reference GEMMs, whose inputs are converted to a compute format narrower
 * than one of them: the subnormal probes stay within the compute format's range and say
 * undecided where it cannot hold the subnormal, instead of reading an overflow as "wrong" or a
 * conversion as DAZ. */
Test(certify, subnormal_probes_stay_within_the_compute_format, .timeout = 600) {
    static const gck_format rows[][4] = {{GCK_BF16, GCK_F64, GCK_F16, GCK_F32},
                                         {GCK_F16, GCK_F64, GCK_F32, GCK_F32},
                                         {GCK_F32, GCK_F64, GCK_F32, GCK_F32},
                                         {GCK_F64, GCK_F16, GCK_F64, GCK_F32},
                                         {GCK_F16, GCK_F16, GCK_F16, GCK_F16}};
    for (size_t r = 0; r < sizeof rows / sizeof *rows; r++) {
        gck_fingerprint fp;
        fingerprint_of("ref", rows[r][0], rows[r][1], rows[r][2], rows[r][3], &fp);
        for (int side = 0; side < 2; side++) {
            const char *v = value(&fp, side ? "subnormal B" : "subnormal A");
            cr_expect(!strcmp(v, "honoured") || !strncmp(v, "undecided", 9), "row %zu %s: %s", r,
                      side ? "B" : "A", v);
        }
        for (int p = 0; p < fp.count; p++)
            cr_expect(strncmp(fp.props[p].value, "wrong", 5), "row %zu %s: %s (%s)", r,
                      fp.props[p].name, fp.props[p].value, fp.props[p].probe);
    }
}

/* gemmcheck's kernels on the VDPBF16PS path: the probes find the declared pair order, DAZ and
 * FTZ on bf16 x bf16 (docs/KERNELS.md), and FMA in k order on f32. */
/* The fingerprint of row t x t -> d in k of kernels:PATH; the test is skipped, saying why, where
 * the path cannot run. */
static void path_fingerprint(gck_kpath p, gck_format t, gck_format d, gck_format k,
                             gck_fingerprint *fp) {
    char why[256], spec[64];
    if (!gck_kpath_supported(p, why, sizeof why))
        cr_skip_test("path %s cannot run here (%s): its order probes not run", gck_kpath_name(p),
                     why);
    snprintf(spec, sizeof spec, "kernels:%s", gck_kpath_name(p));
    fingerprint(spec, t, d, k, fp);
}

Test(certify, the_pair_dot_path_shows_its_declared_model, .timeout = 600) {
    gck_fingerprint fp;
    path_fingerprint(GCK_KPATH_AVX512BF16, GCK_BF16, GCK_F32, GCK_F32, &fp);
    const char *pairs = "sequential by pairs, the odd term of each pair first";
    cr_expect_str_eq(value(&fp, "order K=16 (M=4)"), pairs);
    cr_expect_str_eq(value(&fp, "order K=64 (M=4)"), pairs);
    cr_expect_str_eq(value(&fp, "order K=1000 (M=2)"), pairs);
    cr_expect_str_eq(value(&fp, "subnormal A"), "treated as zero (DAZ)");
    cr_expect_str_eq(value(&fp, "subnormal B"), "treated as zero (DAZ)");
    cr_expect_str_eq(value(&fp, "subnormal results"), "flushed to zero (FTZ)");
    path_fingerprint(GCK_KPATH_AVX512BF16, GCK_F32, GCK_F32, GCK_F32, &fp);
    cr_expect_str_eq(value(&fp, "order K=64 (M=4)"), "sequential, k ascending");
    cr_expect_str_eq(value(&fp, "products"),
                     "fused multiply-add into the running sum (the first product rounded alone)");
    cr_expect_str_eq(value(&fp, "subnormal A"), "honoured");
}

/* gemmcheck's kernels on the AMX path: the probes find TDPBF16PS's tree on bf16 x bf16 (a step
 * of 32 terms in two chains, even and odd k, their sum added to the accumulator), DAZ and FTZ
 * (docs/KERNELS.md); printed whole, so that a reader sees what the order probe recovers. */
Test(certify, the_tile_dot_path_shows_its_declared_model, .timeout = 600) {
    gck_fingerprint fp;
    path_fingerprint(GCK_KPATH_AMX, GCK_BF16, GCK_F32, GCK_F32, &fp);
    for (int p = 0; p < fp.count; p++)
        printf("[certify] kernels:amx bf16: %s: %s\n", fp.props[p].name, fp.props[p].value);
    const char *chains = "2 interleaved accumulators (k mod 2), each sequential, combined in order",
               *steps = "blocks of 32 terms, each 2 interleaved accumulators (k mod 2), each "
                        "sequential, combined in order; the block sums added in order";
    cr_expect_str_eq(value(&fp, "order K=16 (M=4)"), chains);
    cr_expect_str_eq(value(&fp, "order K=64 (M=4)"), steps);
    cr_expect_str_eq(value(&fp, "order K=1000 (M=2)"), steps);
    char k33[256];
    snprintf(k33, sizeof k33, "K=33: %s", steps);
    cr_expect_str_eq(value(&fp, "order K=first block + 1 (M=2)"), k33);
    cr_expect_str_eq(value(&fp, "accumulator rounding"), "to nearest");
    cr_expect_str_eq(value(&fp, "subnormal A"), "treated as zero (DAZ)");
    cr_expect_str_eq(value(&fp, "subnormal B"), "treated as zero (DAZ)");
    cr_expect_str_eq(value(&fp, "subnormal results"), "flushed to zero (FTZ)");
}

/* The accumulator probes on backends whose arithmetic is known by construction
 * (tests/upgrade_pairs.c, tests/order_zoo.c): bits kept, rounding, input bits, where alpha and
 * beta enter, each recovered exactly. */
Test(certify, the_accumulator_probes_recover_known_arithmetic, .timeout = 600) {
    static const struct {
        const char *spec, *property, *value;
    } want[] = {
        {"upgrade:base", "accumulator bits", "24 bits, the precision of f32"},
        {"upgrade:base", "accumulator rounding", "to nearest"},
        {"upgrade:base", "inputs A", "used exactly (all 24 bits of f32)"},
        {"upgrade:base", "alpha applied", "to the finished sum"},
        {"upgrade:base", "beta*C added",
         "after the terms are summed (to alpha times their sum, or each block's)"},
        {"upgrade:base", "products",
         "fused multiply-add into the running sum (the first product rounded alone)"},
        {"upgrade:tf32", "inputs A", "rounded to 11 bits (f32 has 24)"},
        {"upgrade:tf32", "inputs B", "rounded to 11 bits (f32 has 24)"},
        {"upgrade:tf32", "products", "exact in f32 (11-bit inputs): fused or not is unobservable"},
        {"upgrade:splitk-bf16", "accumulator bits",
         "8 bits, fewer than f32's 24 (partial sums held in a narrower format)"},
        {"upgrade:splitk-bf16", "order K=1000 (M=2)",
         "undecided: the accumulation keeps 8 bits, too few to count 1000 units"},
        {"upgrade:truncating", "accumulator rounding", "toward zero (truncation)"},
        {"upgrade:truncating", "accumulator bits", "24 bits, the precision of f32"},
        {"upgrade:ftz", "subnormal A", "treated as zero (DAZ)"},
        {"upgrade:ftz", "subnormal B", "treated as zero (DAZ)"},
        {"upgrade:ftz", "subnormal results", "flushed to zero (FTZ)"},
        {"upgrade:base", "subnormal results", "kept"},
        {"upgrade:base", "subnormal A", "honoured"},
        {"upgrade:base", "normalisation", "after every addition"},
        {"upgrade:block-fma8", "normalisation", "once per block of 8 terms (a block FMA)"},
        {"zoo:pairwise", "normalisation", "after every addition"},
        {"zoo:split-k", "normalisation", "after every addition"},
        {"zoo:netlib", "beta*C added", "first: every term is added into beta*C"},
        {"zoo:netlib", "alpha applied",
         "before the sum is complete (to each product, operand or partial sum)"},
        {"zoo:netlib", "products", "rounded to f32 before the addition (no FMA)"},
        {"zoo:blocked", "beta*C added",
         "after the terms are summed (to alpha times their sum, or each block's)"},
        {"zoo:pairwise", "alpha applied", "to the finished sum"},
    };
    for (size_t w = 0; w < sizeof want / sizeof *want; w++) {
        char spec[512];
        bool zoo = !strncmp(want[w].spec, "zoo:", 4);
        snprintf(spec, sizeof spec, "plugin:%s:%s", zoo ? GCK_ZOO_PLUGIN : GCK_UPGRADE_PLUGIN,
                 strchr(want[w].spec, ':') + 1);
        gck_fingerprint fp;
        fingerprint(spec, GCK_F32, GCK_F32, GCK_F32, &fp);
        cr_expect_str_eq(value(&fp, want[w].property), want[w].value, "%s: %s", want[w].spec,
                         want[w].property);
    }
}

/* The fingerprint of the upgrade plugin's KIND (one f32 row, compute k) against name and value
 * pairs. */
static void expect_props(const char *kind, gck_format k, const char *const want[][2], size_t n) {
    char spec[512];
    snprintf(spec, sizeof spec, "plugin:%s:%s", GCK_UPGRADE_PLUGIN, kind);
    gck_fingerprint fp;
    fingerprint(spec, GCK_F32, GCK_F32, k, &fp);
    for (size_t w = 0; w < n; w++)
        cr_expect_str_eq(value(&fp, want[w][0]), want[w][1], "%s: %s", kind, want[w][0]);
}

/* The tile pass: a backend that switches arithmetic at 64 rows and columns, as a GPU library
 * sends wide products to its tensor cores (tests/upgrade_pairs.c, tile-tc), shows its base
 * arithmetic to the skinny probes and the tensor-core one to the tile pass; backends of one
 * arithmetic read the same at both shapes. */
Test(certify, the_tile_pass_finds_arithmetic_that_switches_with_the_shape, .timeout = 600) {
    static const char *const tc[][2] = {
        {"accumulator rounding", "to nearest"},
        {"inputs A", "used exactly (all 24 bits of f32)"},
        {"normalisation", "after every addition"},
        {"accumulator bits (tile)", "24 bits, the precision of f32"},
        {"accumulator rounding (tile)", "toward zero (truncation)"},
        {"inputs A (tile)", "rounded to 11 bits (f32 has 24)"},
        {"inputs B (tile)", "rounded to 11 bits (f32 has 24)"},
        {"normalisation (tile)", "once per block of 8 terms (a block FMA)"},
        {"products (tile)", "exact in f32 (11-bit inputs): fused or not is unobservable"},
        /* alpha and beta need rounding to nearest, so they are undecided at the tile: no
         * difference */
        {"tile against skinny",
         "differs: accumulator rounding, inputs A, inputs B, normalisation, products"},
        {"positions (tile)", "every copy reads the same bits"}};
    expect_props("tile-tc", GCK_F32, tc, sizeof tc / sizeof *tc);
    /* other arithmetic from row 100 on: the copies there read other bits */
    char spec[512];
    snprintf(spec, sizeof spec, "plugin:%s:edge-trunc", GCK_UPGRADE_PLUGIN);
    gck_fingerprint fp;
    fingerprint(spec, GCK_F32, GCK_F32, GCK_F32, &fp);
    cr_expect(strstr(value(&fp, "positions (tile)"), " copies read other bits: the arithmetic "
                                                     "depends on the element's place") != NULL,
              "%s", value(&fp, "positions (tile)"));
    static const char *const same[] = {"upgrade:base", "ref", "zoo:netlib"};
    for (size_t b = 0; b < sizeof same / sizeof *same; b++) {
        bool plug = strchr(same[b], ':') != NULL, zoo = plug && !strncmp(same[b], "zoo:", 4);
        snprintf(spec, sizeof spec, plug ? "plugin:%s:%s" : "%.0s%s",
                 zoo ? GCK_ZOO_PLUGIN : GCK_UPGRADE_PLUGIN,
                 plug ? strchr(same[b], ':') + 1 : same[b]);
        fingerprint(spec, GCK_F32, GCK_F32, GCK_F32, &fp);
        cr_expect_str_eq(value(&fp, "tile against skinny"), "the same at both shapes", "%s",
                         same[b]);
        cr_expect_str_eq(value(&fp, "normalisation (tile)"), "after every addition", "%s", same[b]);
        cr_expect_str_eq(value(&fp, "positions (tile)"), "every copy reads the same bits", "%s",
                         same[b]);
    }
}

/* A row whose compute type is named tf32 but sums in f32 (cuBLAS's FAST_TF32 rows): the
 * accumulator probe finds at least 20 bits, and the input probe, taking that bound, goes past
 * tf32's 11 bits and sees the inputs rounded to them (with tf32's own precision as its bound it
 * could only say "at least 11 bits kept"). */
Test(certify, the_input_probe_sees_past_a_narrow_named_compute_type, .timeout = 600) {
    static const char *const fast[][2] = {{"accumulator bits", "at least 20 bits (tf32 has 11)"},
                                          {"inputs A", "rounded to 11 bits (f32 has 24)"},
                                          {"inputs B", "rounded to 11 bits (f32 has 24)"}};
    expect_props("fast-tf32", GCK_TF32, fast, sizeof fast / sizeof *fast);
}

/* ---- the commands ---------------------------------------------------------------------------- */

/* The command's exit status, its stdout and stderr in out. */
static int sh(const char *cmd, char *out, size_t len) {
    char both[4200];
    snprintf(both, sizeof both, "%s 2>&1", cmd);
    return run_shell(both, out, len);
}

/* Row r's fingerprint in a certificate */
static json_t *row_fingerprint(json_t *cert, size_t r) {
    return json_object_get(
        json_array_get(json_object_get(json_object_get(cert, "probed"), "rows"), r), "fingerprint");
}

/* The property of a fingerprint by its name (NULL: none), and its index */
static json_t *property_of(json_t *fp, const char *name, size_t *at) {
    size_t i;
    json_t *p;
    json_array_foreach(fp, i, p) {
        const char *x = json_string_value(json_object_get(p, "property"));
        if (x && !strcmp(x, name)) return *at = i, p;
    }
    return NULL;
}

/* `compare OLD NEW`: its exit status, and each of `says` (NULL-terminated) in what it prints */
static void expect_compare(const char *old, const char *new, int status, const char *const *says) {
    char cmd[1024], out[8192];
    snprintf(cmd, sizeof cmd, "%s compare %s %s", GCK_BINARY, old, new);
    cr_expect_eq(sh(cmd, out, sizeof out), status, "%s", out);
    for (; *says; says++) cr_expect(strstr(out, *says) != NULL, "'%s' not in:\n%s", *says, out);
}

Test(certify, certify_and_compare_from_the_command_line, .timeout = 600) {
    char cmd[2048], out[8192], blocked[96], split[96], segv[96], v9[96];
    /* names of this process's own: test runs side by side (normal and sanitizer builds) */
    snprintf(blocked, sizeof blocked, "/tmp/gck_test_cert_%d_blocked.json", (int)getpid());
    snprintf(split, sizeof split, "/tmp/gck_test_cert_%d_split.json", (int)getpid());
    snprintf(segv, sizeof segv, "/tmp/gck_test_cert_%d_segv.json", (int)getpid());
    snprintf(v9, sizeof v9, "/tmp/gck_test_cert_%d_v9.json", (int)getpid());
    snprintf(cmd, sizeof cmd, "%s certify --backend plugin:%s:blocked --out %s --time 0",
             GCK_BINARY, GCK_ZOO_PLUGIN, blocked);
    cr_assert_eq(sh(cmd, out, sizeof out), 0, "%s", out);
    /* the fingerprint's key facts on stdout, one line per group of rows */
    cr_expect(strstr(out, "fingerprint, key facts:\n  1 row (f32 f32 f32 f32 | f32): products: "
                          "rounded to f32 before the addition (no FMA); normalisation: after "
                          "every addition;") != NULL,
              "%s", out);
    cr_expect(strstr(out, "; tile against skinny: the same at both shapes\n") != NULL, "%s", out);
    /* a certificate against itself: identical, exit 0 */
    snprintf(cmd, sizeof cmd, "%s compare %s %s", GCK_BINARY, blocked, blocked);
    cr_expect_eq(sh(cmd, out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "identical:") != NULL, "%s", out);
    /* the decision comes first */
    cr_expect(!strncmp(out, "NO REGRESSION (exit 0): identical\n", 34), "%s", out);
    /* a property one certificate has not (an older gemmcheck's): a support difference, unless
     * NEW reads it wrong; a pinned case's error/bound just under 1 is not printed as "1" */
    json_t *old = json_load_file(blocked, 0, NULL), *new = json_load_file(blocked, 0, NULL);
    size_t at;
    json_t *fp = row_fingerprint(old, 0);
    cr_assert(property_of(fp, "tile against skinny", &at) != NULL, "no 'tile against skinny'");
    json_array_remove(fp, at);
    cr_assert_eq(json_dump_file(old, v9, JSON_INDENT(1)), 0);
    expect_compare(v9, blocked, 0,
                   (const char *[]){"NO REGRESSION (exit 0): 1 environment, library, support",
                                    "[support] f32 f32 f32 f32 | f32: tile against skinny: not in "
                                    "the old certificate -> the same at both shapes",
                                    NULL});
    /* and the other way: NEW from an older gemmcheck */
    expect_compare(blocked, v9, 0,
                   (const char *[]){"NO REGRESSION (exit 0): 1 environment, library, support",
                                    "[support] f32 f32 f32 f32 | f32: tile against skinny: the "
                                    "same at both shapes -> not in the new certificate",
                                    NULL});
    snprintf(cmd, sizeof cmd, "%s compare %s %s --fail-on-fingerprint", GCK_BINARY, blocked, v9);
    cr_expect_eq(sh(cmd, out, sizeof out), 1, "%s", out);
    json_object_set_new(property_of(row_fingerprint(new, 0), "tile against skinny", &at), "value",
                        json_string("wrong at the tile shape"));
    json_t *pin0 = json_array_get(
        json_object_get(json_array_get(json_object_get(json_object_get(new, "probed"), "rows"), 0),
                        "pinned"),
        0);
    cr_assert(pin0 != NULL, "no pinned case");
    json_object_set_new(pin0, "digest", json_string("0000"));
    json_object_set_new(pin0, "ratio", json_real(0.9999999998));
    cr_assert_eq(json_dump_file(new, split, JSON_INDENT(1)), 0);
    expect_compare(v9, split, 1,
                   (const char *[]){"[REGRESSION: accuracy beyond the bound] f32 f32 f32 f32 | "
                                    "f32: tile against skinny: not in the old certificate -> "
                                    "wrong at the tile shape",
                                    " -> 0.9999999998, largest distance", NULL});
    /* what the table declares: a way of calling the row withdrawn is a missing path, a model
     * declared otherwise an arithmetic-model change, a promise gained support */
    json_t *row0 = json_array_get(json_object_get(json_object_get(old, "probed"), "rows"), 0);
    const char *was = json_string_value(json_object_get(row0, "declared"));
    cr_assert(was && strstr(was, "out=nearest") && strstr(was, " row batch "), "%s",
              was ? was : "");
    char now[512];
    snprintf(now, sizeof now, "%s", was);
    memcpy(strstr(now, " row batch "), " batch     ", 11); /* row-major withdrawn */
    memcpy(strstr(now, "out=nearest"), "out=toward0", 11);
    json_object_set_new(row0, "declared", json_string(now));
    cr_assert_eq(json_dump_file(old, v9, JSON_INDENT(1)), 0);
    expect_compare(blocked, v9, 1,
                   (const char *[]){"[REGRESSION: crash or missing path] f32 f32 f32 f32 | f32: "
                                    "promise 'row' withdrawn (promises: a0 b0 row batch Dsep "
                                    "Dinpl -> a0 b0 batch Dsep Dinpl)",
                                    "[arithmetic-model change] f32 f32 f32 f32 | f32: declared "
                                    "model: in=exact scalar epi=f32 out=nearest order=",
                                    "-> in=exact scalar epi=f32 out=toward0 order=", NULL});
    expect_compare(
        v9, blocked, 0,
        (const char *[]){"[support] f32 f32 f32 f32 | f32: promise 'row' declared", NULL});
    json_decref(old);
    json_decref(new);
    snprintf(cmd, sizeof cmd, "%s certify --backend plugin:%s:split-k --out %s --time 0",
             GCK_BINARY, GCK_ZOO_PLUGIN, split);
    cr_assert_eq(sh(cmd, out, sizeof out), 0, "%s", out);
    /* blocked -> split-k: reordered and FMA, named; no regression unless asked */
    snprintf(cmd, sizeof cmd, "%s compare %s %s", GCK_BINARY, blocked, split);
    cr_expect_eq(sh(cmd, out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "[reordered only (same arithmetic model)] f32 f32 f32 f32 | f32: order "
                          "K=64 (M=4): " BLOCKS("16") " -> " BLOCKS("22")) != NULL,
              "%s", out);
    cr_expect(strstr(out, "[arithmetic-model change] f32 f32 f32 f32 | f32: products: rounded to "
                          "f32 before the addition (no FMA) -> fused multiply-add") != NULL,
              "%s", out);
    cr_expect(strstr(out, "pinned cases changed bits (the fingerprint changed too)") != NULL, "%s",
              out);
    cr_expect(!strncmp(out, "NO REGRESSION (exit 0): ", 24) &&
                  strstr(out, " arithmetic-model change") < strstr(out, " reordered only") &&
                  strchr(out, '\n') > strstr(out, " reordered only"),
              "the decision line does not lead with the counts by class:\n%s", out);
    snprintf(cmd, sizeof cmd, "%s compare %s %s --fail-on-fingerprint", GCK_BINARY, blocked, split);
    cr_expect_eq(sh(cmd, out, sizeof out), 1, "%s", out);
    /* a backend that crashes while probed: the certificate says so, compare calls it a
     * regression */
    snprintf(cmd, sizeof cmd,
             "%s certify --backend plugin:%s:segv --out %s --time 0 && %s compare %s %s",
             GCK_BINARY, GCK_FAULTY_PLUGIN, segv, GCK_BINARY, blocked, segv);
    cr_expect_eq(sh(cmd, out, sizeof out), 1, "%s", out);
    cr_expect(strstr(out, "\nREGRESSION (exit 1): ") != NULL, "%s", out);
    /* each row's probes crashed, in a process of their own: the rows say so, the header
     * (version, files) is there (under ASan the child reports the SEGV and exits instead of
     * dying of the signal) */
    cr_expect(strstr(out, "[REGRESSION: crash or missing path] f32 f32 f32 f32") != NULL &&
                  strstr(out, ": probes ran -> the ") != NULL,
              "%s", out);
    json_t *crashed = json_load_file(segv, 0, NULL);
    json_t *probed = json_object_get(crashed, "probed");
    cr_expect(json_string_value(json_object_get(probed, "version")) != NULL, "no header");
    size_t i;
    json_t *crow;
    json_array_foreach(json_object_get(probed, "rows"), i, crow) {
        cr_expect(json_string_value(json_object_get(crow, "probe_failure")) != NULL &&
                      !json_object_get(crow, "fingerprint"),
                  "row %zu has no probe_failure", i);
    }
    cr_expect_gt(json_array_size(json_object_get(probed, "rows")), 0);
    json_decref(crashed);
    remove(segv);
/* (not under ASan: what this adds is the process model's, not memory safety; the
 * certificates above probe each row in a worker of its own there too. 39 s under ASan.) */
#ifndef GCK_TEST_SANITIZED
    /* a row whose calls leave a sticky device error (f64 here) spoils only itself: each row is
     * probed in a process of its own (on an H100 a cuBLASLt fault in the first row had left
     * every later row "error: misaligned address") */
    snprintf(cmd, sizeof cmd, "%s certify --backend plugin:%s:sticky-f64 --out %s --time 0",
             GCK_BINARY, GCK_ZOO_PLUGIN, segv);
    cr_assert_eq(sh(cmd, out, sizeof out), 0, "%s", out);
    json_t *cert = json_load_file(segv, 0, NULL);
    json_t *rows = json_object_get(json_object_get(cert, "probed"), "rows");
    cr_assert_eq(json_array_size(rows), 4);
    for (size_t r = 0; r < 4; r++) {
        json_t *row = json_array_get(rows, r);
        const char *tuple = json_string_value(json_object_get(row, "tuple"));
        const char *status =
            json_string_value(json_object_get(json_object_get(row, "support"), "status"));
        cr_expect_str_eq(status, strstr(tuple, "f64") ? "error" : "runs", "%s", tuple);
    }
    json_decref(cert);
    remove(segv);
#endif
    /* bad input: one line, exit 2 */
    snprintf(cmd, sizeof cmd, "%s compare %s /nonexistent.json", GCK_BINARY, blocked);
    cr_expect_eq(sh(cmd, out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "cannot read /nonexistent.json") != NULL, "%s", out);
    snprintf(cmd, sizeof cmd,
             "sed 's/\"certificate_version\": 2/\"certificate_version\": 9/' %s > %s && %s "
             "compare %s %s",
             blocked, v9, GCK_BINARY, blocked, v9);
    cr_expect_eq(sh(cmd, out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "certificate_version 2") != NULL, "%s", out);
    snprintf(cmd, sizeof cmd, "%s certify --backend nosuch --out %s --time 0", GCK_BINARY, v9);
    cr_expect_eq(sh(cmd, out, sizeof out), 2, "%s", out);
    remove(blocked);
    remove(split);
    remove(v9);
}

/* A synthetic upgrade (tests/upgrade_pairs.c): both sides certified without a campaign, then
 * compared; the verdict, the exit status, a line naming what changed and, for a regression,
 * the smallest reproducer. */
static const char *compare_flags = ""; /* extra options of the comparison */

/* text with every run of white space one space */
static void squeeze(char *text) {
    char *w = text;
    for (const char *r = text; *r; r++)
        if (!isspace((unsigned char)*r) || (w > text && w[-1] != ' '))
            *w++ = isspace(*r) ? ' ' : *r;
    *w = '\0';
}

/* Every class a comparison printed ("[CLASS] ..." or "[REGRESSION: CLASS] ..." at the start of
 * a line) is one `compare --help` names. */
static void classes_are_in_help(const char *out) {
    static char help[8192];
    if (!help[0]) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "%s compare --help", GCK_BINARY);
        cr_assert_eq(sh(cmd, help, sizeof help), 0, "%s", help);
        squeeze(help);
    }
    for (const char *p = out; (p = strchr(p, '[')) != NULL; p++) {
        const char *q = p;
        while (q > out && q[-1] == ' ') q--;
        if (q > out && q[-1] != '\n') continue;
        const char *cls = p + 1, *end = strchr(cls, ']');
        if (!end) break;
        if (!strncmp(cls, "REGRESSION: ", 12)) cls += 12;
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(end - cls), cls);
        squeeze(name);
        cr_expect(strstr(help, name) != NULL, "class '%s' printed, not in compare --help", name);
    }
}

static void upgrade(const char *before, const char *after, const char *env, int status,
                    const char *verdict, const char *line, const char *line2) {
    char cmd[4096], out[32768], a[128], b[128];
    snprintf(a, sizeof a, "/tmp/gck_test_up_%d_a.json", (int)getpid());
    snprintf(b, sizeof b, "/tmp/gck_test_up_%d_b.json", (int)getpid());
    /* env: the "after" side's environment; the "before" side then runs with one thread */
    snprintf(
        cmd, sizeof cmd,
        "%s %s certify --backend plugin:%s:%s --out %s --time 0 >/dev/null && "
        "%s %s certify --backend plugin:%s:%s --out %s --time 0 >/dev/null && %s compare %s %s %s",
        env ? "OMP_NUM_THREADS=1" : "", GCK_BINARY, GCK_UPGRADE_PLUGIN, before, a, env ? env : "",
        GCK_BINARY, GCK_UPGRADE_PLUGIN, after, b, GCK_BINARY, compare_flags, a, b);
    cr_expect_eq(sh(cmd, out, sizeof out), status, "%s -> %s: %s", before, after, out);
    classes_are_in_help(out);
    char v[256];
    snprintf(v, sizeof v, "verdict: %s", verdict);
    cr_expect(strstr(out, v) != NULL, "%s -> %s: no '%s' in\n%s", before, after, v, out);
    cr_expect(strstr(out, line) != NULL, "%s -> %s: no '%s' in\n%s", before, after, line, out);
    if (line2)
        cr_expect(strstr(out, line2) != NULL, "%s -> %s: no '%s' in\n%s", before, after, line2,
                  out);
    if (status == 1 && !compare_flags[0])
        cr_expect(strstr(out, "smallest reproducer of a regression: gemmcheck repro --backend ") !=
                      NULL,
                  "%s", out);
    remove(a);
    remove(b);
}

Test(certify, upgrade_tf32_inputs_is_a_precision_change, .timeout = 600) {
    upgrade("base", "tf32", NULL, 0, "precision change",
            "[precision change] f32 f32 f32 f32 | f32: inputs A: used exactly (all 24 bits of "
            "f32) -> rounded to 11 bits (f32 has 24)",
            NULL);
}

Test(certify, upgrade_transpose_wrong_is_beyond_the_bound, .timeout = 600) {
    /* the probe of op(A) = A^T sees it as well: its reads are no count of units */
    upgrade("base", "transpose-wrong", NULL, 1, "accuracy beyond the bound",
            "pinned cases changed bits (the fingerprint changed too)",
            "order K=64 (M=4, A^T): sequential, k ascending -> undecided; probe: a pair column "
            "read -62 units");
}

#ifndef GCK_TEST_SANITIZED /* the other pairs: the same code paths, not repeated under ASan */
Test(certify, upgrade_bf16_partial_sums_are_a_precision_change_beyond_the_bound, .timeout = 600) {
    upgrade("base", "splitk-bf16", NULL, 1, "accuracy beyond the bound",
            "[precision change] f32 f32 f32 f32 | f32: accumulator bits: 24 bits, the precision "
            "of f32 -> 8 bits, fewer than f32's 24",
            NULL);
}

Test(certify, upgrade_kc_is_reordered_only, .timeout = 600) {
    /* the pinned cases: a fixed corpus and deterministic blocks, so the same ones change on
     * every run; those small enough to keep D move by up to 824 ulps element by element (43 of
     * them before the reference GEMM wrote every NaN as the one quiet NaN: 10 had changed only
     * NaN bits, as the blocks passed on one NaN or another) */
    upgrade("kc256", "kc384", NULL, 0, "reordered only (same arithmetic model)",
            "order K=2048 (M=2): blocks of 256 terms, each sequential, k ascending; the block "
            "sums added in order -> blocks of 384 terms",
            "element by element, in the 33 changed cases small enough to keep D, results up to "
            "824 ulps apart");
}

Test(certify, upgrade_thread_count_is_its_own_class, .timeout = 900) {
    /* thread dependence is its own class: no regression, unless asked */
    upgrade("threads", "threads", "OMP_NUM_THREADS=2", 0, "bits depend on the thread count",
            "[bits depend on the thread count] f32 f32 f32 f32 | f32: threads: the same bits with "
            "one thread -> the bits depend on the thread count",
            "order K=2048 (M=2)");
    compare_flags = "--fail-on-nondeterminism";
    upgrade("threads", "threads", "OMP_NUM_THREADS=2", 1, "bits depend on the thread count",
            "[REGRESSION: bits depend on the thread count] f32 f32 f32 f32 | f32: threads:", NULL);
    compare_flags = "";
}

Test(certify, upgrade_beta_reading_c_as_bf16_is_beyond_the_bound, .timeout = 600) {
    upgrade("base", "beta-c-bf16", NULL, 1, "accuracy beyond the bound",
            "some now outside the bound", NULL);
}

Test(certify, upgrade_size_specific_wrong_result_is_beyond_the_bound, .timeout = 600) {
    upgrade("base", "size-wrong", NULL, 1, "accuracy beyond the bound", "'gck1 m=17 ",
            NULL); /* the smallest reproducer has the size that fails */
}
#endif
