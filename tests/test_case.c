/* The case model: layout arithmetic and validation messages that name the offending field. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "testutil.h"

static void expect_invalid(const gck_case *c, const char *needle) {
    char msg[256];
    cr_expect_eq(gck_case_validate(c, msg, sizeof msg), GCK_EINVAL, "accepted, wanted '%s'",
                 needle);
    cr_expect(strstr(msg, needle) != NULL, "message '%s' lacks '%s'", msg, needle);
}

Test(case_model, leading_dimension_errors_name_field_dimension_op_and_order) {
    gck_case c;
    gck_case_init(&c, 20, 9, 17);
    c.ldb = 12;
    expect_invalid(&c, "ldb (12) < K (17) for op(B)=N, column-major");
    gck_case_init(&c, 20, 9, 17);
    c.order = GCK_ROW_MAJOR;
    c.lda = 17;
    c.ldb = 9;
    c.ldc = c.ldd = 9;
    char msg[256];
    cr_expect_eq(gck_case_validate(&c, msg, sizeof msg), GCK_OK, "%s", msg);
    c.transa = GCK_OP_T; /* A stored K x M row-major: lda >= M */
    expect_invalid(&c, "lda (17) < M (20) for op(A)=T, row-major");
    gck_case_init(&c, 20, 9, 17);
    c.ldc = 19;
    c.ldd = 19;
    expect_invalid(&c, "ldc (19) < M (20), column-major");
    gck_case_init(&c, 20, 9, 17);
    c.d_is_c = false;
    c.ldd = 3;
    expect_invalid(&c, "ldd (3) < M (20), column-major");
    gck_case_init(&c, 0, 0, 0);
    c.lda = 0;
    expect_invalid(&c, "lda (0) must be >= 1");
}

Test(case_model, shape_type_scale_and_batch_errors) {
    gck_case c;
    gck_case_init(&c, -1, 2, 2);
    expect_invalid(&c, "M (-1)");
    gck_case_init(&c, 2, 2, -3);
    expect_invalid(&c, "K (-3)");
    gck_case_init(&c, 2, 2, 2);
    c.batch = 0;
    expect_invalid(&c, "batch (0)");
    gck_case_init(&c, 2, 2, 2);
    c.type_b = GCK_TF32;
    expect_invalid(&c, "type_b (tf32) is not an element type");
    gck_case_init(&c, 2, 2, 2);
    c.type_d = GCK_F16;
    expect_invalid(&c, "type_d (f16) != type_c (f64) with D in place of C");
    gck_case_init(&c, 2, 2, 2);
    c.scale_type = GCK_F32;
    c.alpha = 0.1;
    expect_invalid(&c, "alpha (0.10000000000000001) is not a finite f32 value");
    gck_case_init(&c, 2, 2, 2);
    c.beta = INFINITY;
    expect_invalid(&c, "beta (inf)");
    gck_case_init(&c, 2, 2, 2);
    c.scale_type = GCK_F16;
    expect_invalid(&c, "scale_type (f16) must be f32 or f64");
    gck_case_init(&c, 2, 2, 2);
    c.batch = 3;
    c.stride_a = 4;
    c.stride_b = 4;
    c.stride_c = 0;
    c.stride_d = 0;
    expect_invalid(&c, "stride_c is 0 with batch 3");
    c.stride_c = c.stride_d = 3;
    expect_invalid(&c, "stride_c (3) < 4");
    c.stride_c = c.stride_d = 4;
    c.stride_a = 0; /* broadcast of an input is fine */
    char msg[256];
    cr_expect_eq(gck_case_validate(&c, msg, sizeof msg), GCK_OK, "%s", msg);
    c.stride_b = -1;
    expect_invalid(&c, "stride_b (-1) must be >= 0");
    gck_case_init(&c, 2, 2, 2);
    c.lda = INT64_C(1) << 60;
    expect_invalid(&c, "spans more than 2^56 elements");
}

Test(case_model, op_strides_address_the_transposed_view) {
    /* For each order and transpose, element (r, s) of op(A) must be where a hand layout says. */
    for (int order = 0; order < 2; order++)
        for (int t = 0; t < 2; t++) {
            gck_case c;
            gck_case_init(&c, 3, 2, 4);
            c.order = (gck_order)order;
            c.transa = (gck_op)t;
            int64_t rows, cols;
            gck_case_stored_shape(&c, GCK_A, &rows, &cols);
            cr_expect_eq(rows, t ? 4 : 3);
            cr_expect_eq(cols, t ? 3 : 4);
            c.lda = (order == GCK_COL_MAJOR ? rows : cols) + 2;
            int64_t rs, cs;
            gck_case_op_strides(&c, GCK_A, &rs, &cs);
            for (int64_t r = 0; r < 3; r++)
                for (int64_t s = 0; s < 4; s++) {
                    int64_t sr = t ? s : r, sc = t ? r : s; /* stored (row, col) */
                    int64_t want = order == GCK_COL_MAJOR ? sr + sc * c.lda : sr * c.lda + sc;
                    cr_expect_eq(r * rs + s * cs, want, "order %d trans %d (%ld,%ld)", order, t,
                                 (long)r, (long)s);
                }
            int64_t fp = gck_case_footprint(&c, GCK_A);
            cr_expect_eq(fp, order == GCK_COL_MAJOR ? (cols - 1) * c.lda + rows
                                                    : (rows - 1) * c.lda + cols);
        }
    gck_case c;
    gck_case_init(&c, 3, 0, 4);
    cr_expect_eq(gck_case_footprint(&c, GCK_C), 0);
    cr_expect_eq(gck_case_extent(&c, GCK_D), 0);
    gck_case_init(&c, 3, 5, 4);
    c.batch = 4;
    c.stride_c = c.stride_d = 20;
    cr_expect_eq(gck_case_extent(&c, GCK_C), 3 * 20 + 15);
    cr_expect_eq(gck_case_ld(&c, GCK_D), c.ldc);
}

Test(case_model, describe_names_every_dimension_and_type) {
    gck_case c;
    gck_case_init(&c, 3, 4, 5);
    c.type_a = GCK_BF16;
    c.type_b = GCK_F16;
    c.type_c = c.type_d = GCK_F32;
    c.compute = GCK_F32;
    char buf[512];
    gck_case_describe(&c, buf, sizeof buf);
    cr_expect(strstr(buf, "m=3 n=4 k=5") != NULL, "%s", buf);
    cr_expect(strstr(buf, "bf16,f16,f32->f32 compute=f32") != NULL, "%s", buf);
}
