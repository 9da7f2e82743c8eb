/* Reproducer strings: format -> parse -> format is the identity on every grid spec, values are
 * a pure function of the string, a fill writes exactly those values, and malformed strings are
 * refused with the reason. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemmcheck/backend.h"
#include "grid.h"
#include "testutil.h"

Test(spec, format_parse_format_round_trips_on_thousands_of_specs) {
    gck_backend be;
    char msg[1024];
    cr_assert_eq(gck_backend_open(&be, "ref", msg, sizeof msg), GCK_OK, "%s", msg);
    const gck_support_row *rows;
    size_t nrows = be.ops->table(be.state, &rows);
    for (uint64_t i = 0; i < 5000; i++) {
        gck_spec s, back;
        grid_spec(i, rows, nrows, &s);
        char a[2048], b[2048];
        gck_spec_format(&s, a, sizeof a);
        cr_assert_eq(gck_spec_parse(a, &back, msg, sizeof msg), GCK_OK, "%s: %s", a, msg);
        gck_spec_format(&back, b, sizeof b);
        cr_assert_str_eq(a, b);
        cr_assert(strchr(a, '\'') == NULL && strchr(a, '\n') == NULL);
        cr_assert_eq(memcmp(&s.c, &back.c, sizeof s.c), 0, "%s", a);
        cr_assert_eq(s.seed, back.seed);
        /* values are a function of the string: same value at a few positions */
        for (int64_t q = 0; q < 3; q++)
            cr_assert(same_value(gck_spec_value(&s, GCK_A, 0, q, q),
                                 gck_spec_value(&back, GCK_A, 0, q, q)));
    }
    gck_backend_close(&be);
}

Test(spec, alpha_and_beta_survive_as_exact_binary64) {
    gck_case c;
    gck_case_init(&c, 2, 2, 2);
    c.alpha = 0.1; /* not a short binary fraction: needs 17 digits */
    c.beta = -0x1.fffffffffffffp-3;
    gck_spec s, back;
    gck_spec_init(&s, &c);
    char a[2048], msg[256];
    gck_spec_format(&s, a, sizeof a);
    cr_assert_eq(gck_spec_parse(a, &back, msg, sizeof msg), GCK_OK, "%s", msg);
    cr_expect_eq(back.c.alpha, 0.1);
    cr_expect_eq(back.c.beta, -0x1.fffffffffffffp-3);
}

Test(spec, malformed_strings_are_refused_with_the_reason) {
    gck_case c;
    gck_case_init(&c, 3, 4, 5);
    gck_spec s;
    gck_spec_init(&s, &c);
    char good[2048];
    gck_spec_format(&s, good, sizeof good);
    static const struct {
        const char *from, *to, *why;
    } edits[] = {
        {"gck1", "gck2", "must start with 'gck1'"},
        {" m=3", " m=x", "m='x' is not an integer"},
        {" m=3", "", "missing key m"},
        {" n=4", " n=4 n=4", "key 'n' given twice"},
        {" k=5", " k=5 zz=1", "unknown key 'zz'"},
        {"order=col", "order=diag", "order='diag' must be col or row"},
        {"ta=N", "ta=C", "ta='C' must be N or T"},
        {"types=f64,f64,f64,f64", "types=f64,f64,f8,f64", "types="},
        {"types=f64,f64,f64,f64", "types=f64,f64,f64", "types="},
        {"alpha=1", "alpha=nan", "alpha='nan' is not a finite number"},
        {"lda=3", "lda=2", "lda (2) < M (3)"},
        {"vab=unif", "vab=gauss", "vab='gauss' is not a distribution"},
        {"sp=0", "sp=1001", "sp='1001' must be a per-mille rate"},
        {"seed=1", "seed=-1", "seed='-1' is not an unsigned integer"},
        {"off=0,0,0,0", "off=0,0,0", "off='0,0,0' must be four"},
        {"d=c", "d=maybe", "d='maybe' must be c"},
        {" batch=1", " batch=1 stray", "'stray' is not key=value"},
        {"seed=1", "seed=1 mem=0", "mem='0' must be a memory budget of at least 1 byte"},
        {"seed=1", "seed=1 mem=1k", "mem='1k' must be a memory budget"},
        {"seed=1", "seed=1 thr=-1", "thr='-1' must be a thread limit 0..100000"},
        {"seed=1", "seed=1 thr=1 thr=2", "key 'thr' given twice"},
    };
    for (size_t e = 0; e < sizeof edits / sizeof edits[0]; e++) {
        char bad[2100];
        const char *at = strstr(good, edits[e].from);
        cr_assert_not_null(at, "%s not in %s", edits[e].from, good);
        snprintf(bad, sizeof bad, "%.*s%s%s", (int)(at - good), good, edits[e].to,
                 at + strlen(edits[e].from));
        gck_spec out;
        char msg[512] = "";
        cr_expect_eq(gck_spec_parse(bad, &out, msg, sizeof msg), GCK_EINVAL, "accepted: %s", bad);
        cr_expect(strstr(msg, edits[e].why) != NULL, "'%s' lacks '%s'", msg, edits[e].why);
    }
}

Test(spec, limits_are_optional_keys_that_round_trip) {
    gck_case c;
    gck_case_init(&c, 3, 4, 5);
    gck_spec s, back;
    gck_spec_init(&s, &c);
    char a[2048], b[2048], msg[256];
    gck_spec_format(&s, a, sizeof a);
    cr_expect(strstr(a, "mem=") == NULL && strstr(a, "thr=") == NULL, "%s", a);
    s.mem_budget = 123456789;
    s.limit_threads = true;
    s.max_threads = 0;
    gck_spec_format(&s, a, sizeof a);
    cr_expect(strstr(a, " mem=123456789 thr=0") != NULL, "%s", a);
    cr_assert_eq(gck_spec_parse(a, &back, msg, sizeof msg), GCK_OK, "%s", msg);
    cr_expect_eq(back.mem_budget, 123456789);
    cr_expect(back.limit_threads && back.max_threads == 0);
    gck_spec_format(&back, b, sizeof b);
    cr_expect_str_eq(a, b);
}

Test(spec, distributions_stay_finite_and_in_their_type) {
    gck_case c;
    gck_case_init(&c, 16, 16, 16);
    const gck_format types[] = {GCK_F16, GCK_BF16, GCK_F32, GCK_F64};
    for (int t = 0; t < 4; t++)
        for (int d = 0; d < GCK_DIST_COUNT; d++) {
            c.type_a = c.type_b = types[t];
            gck_spec s;
            gck_spec_init(&s, &c);
            s.dist_ab = (gck_dist)d;
            for (int64_t i = 0; i < 16; i++)
                for (int64_t j = 0; j < 16; j++) {
                    double v = gck_spec_value(&s, GCK_A, 0, i, j);
                    cr_assert(isfinite(v), "%s %s", gck_dist_name(s.dist_ab),
                              gck_format_get(types[t])->name);
                    cr_assert_eq(gck_round_to(v, types[t]), v);
                    if (d == GCK_DIST_INT) cr_assert(v == floor(v) && fabs(v) <= 4);
                    if (d == GCK_DIST_UNIFORM) cr_assert(fabs(v) <= 1);
                }
        }
}

/* gck_spec_fill writes each element of an operand as gck_spec_value gives it (it hashes a row's
 * position once, the value its element at a time) and nothing between them: every grid spec,
 * each also with specials and a NaN-filled C forced, all batch members, every element. */
Test(spec, a_fill_holds_exactly_the_values_of_spec_value_and_nothing_else) {
    gck_backend be;
    char msg[1024];
    cr_assert_eq(gck_backend_open(&be, "ref", msg, sizeof msg), GCK_OK, "%s", msg);
    const gck_support_row *rows;
    size_t nrows = be.ops->table(be.state, &rows);
    long elements = 0, specs = 0, specials = 0;
    for (uint64_t i = 0; i < 4000; i++) {
        gck_spec s;
        grid_spec(i / 2, rows, nrows, &s);
        if (i & 1) s.special_pm = 1 + (int)(i % 300), s.c_nan = i % 3 == 0, s.seed ^= i;
        for (int x = 0; x < 3; x++) {
            const gck_case *c = &s.c;
            gck_format f = gck_case_type(c, (gck_operand)x);
            int64_t extent = gck_case_extent(c, (gck_operand)x);
            unsigned char *buf = alloc_elems(f, extent), *seen = calloc((size_t)extent + 1, 1);
            cr_assert(buf && seen);
            gck_spec_fill(&s, (gck_operand)x, buf);
            int64_t nr = x == GCK_A ? c->m : x == GCK_B ? c->k : c->m;
            int64_t nc = x == GCK_A ? c->k : x == GCK_B ? c->n : c->n, rs, cs;
            gck_case_op_strides(c, (gck_operand)x, &rs, &cs);
            int64_t st = gck_case_stride(c, (gck_operand)x), members = st ? c->batch : 1;
            for (int64_t b = 0; b < members; b++)
                for (int64_t j = 0; j < nc; j++)
                    for (int64_t r = 0; r < nr; r++) {
                        int64_t e = b * st + r * rs + j * cs;
                        double want = gck_spec_value(&s, (gck_operand)x, b, r, j);
                        cr_assert(same_value(gck_load(buf, f, e), want),
                                  "element (%ld, %ld, %ld) of operand %d", (long)b, (long)r,
                                  (long)j, x);
                        specials += isnan(want) || isinf(want) || want == 0;
                        seen[e] = 1, elements++;
                    }
            size_t es = (size_t)gck_format_get(f)->storage_bytes;
            for (int64_t e = 0; e < extent; e++) /* the gaps keep alloc_elems' 0xA5 */
                for (size_t q = 0; !seen[e] && q < es; q++)
                    cr_assert_eq(buf[(size_t)e * es + q], 0xA5, "gap element %ld written", (long)e);
            free(buf);
            free(seen);
        }
        specs++;
    }
    fprintf(stderr,
            "[spec] %ld specs filled: %ld elements equal to spec_value, %ld of them "
            "NaN, Inf or zero\n",
            specs, elements, specials);
    cr_expect_gt(specials, elements / 100, "only %ld specials", specials);
    gck_backend_close(&be);
}
