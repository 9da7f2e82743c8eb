/* Guarded buffers: alignment offsets, the guard page behind the operand, poisoned padding, and
 * the classification of every changed byte. */
#define _DEFAULT_SOURCE 1
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "guard.h"
#include "testutil.h"

Test(guard, base_pointer_offset_and_poison) {
    const gck_format types[] = {GCK_F16, GCK_BF16, GCK_F32, GCK_F64};
    for (int t = 0; t < 4; t++) {
        int es = gck_format_get(types[t])->storage_bytes;
        for (int64_t off = 0; off < 64 / es; off++) {
            gck_guarded g;
            char msg[256];
            cr_assert_eq(gck_guarded_alloc(&g, types[t], 37, off, 0, msg, sizeof msg), GCK_OK);
            cr_expect_eq((uintptr_t)g.data % 256, (uintptr_t)(off * es % 256));
            /* the end is within one 256-byte block of the guard page */
            size_t back = (size_t)(g.region + g.region_len - (g.data + g.data_bytes));
            cr_expect_lt(back, 256u);
            /* every slot holds the type's signalling NaN */
            for (int64_t e = -4; e < 37 + (int64_t)(back / (size_t)es); e++)
                cr_expect(isnan(gck_load(g.data, types[t], e)), "%s element %lld",
                          gck_format_get(types[t])->name, (long long)e);
            gck_guarded_free(&g);
        }
    }
}

Test(guard, the_byte_after_the_region_faults, .signal = SIGSEGV) {
    gck_guarded g;
    char msg[256];
    cr_assert_eq(gck_guarded_alloc(&g, GCK_F32, 64, 0, 0, msg, sizeof msg), GCK_OK);
    volatile unsigned char *past = g.region + g.region_len;
    *past = 1; /* the guard page: must fault */
}

Test(guard, changes_are_classified_by_zone) {
    gck_case c;
    gck_case_init(&c, 3, 2, 1);
    c.ldc = c.ldd = 5; /* rows 3 and 4 of each column are padding */
    gck_guarded g;
    char msg[256];
    cr_assert_eq(gck_guarded_alloc(&g, GCK_F64, gck_case_extent(&c, GCK_C), 1, 0, msg, sizeof msg),
                 GCK_OK);
    cr_assert_eq(gck_guarded_snapshot(&g, msg, sizeof msg), GCK_OK);
    gck_guard_report r;
    gck_guarded_check(&g, &c, GCK_C, false, &r);
    cr_expect_eq(r.zone, GCK_ZONE_NONE);
    ((double *)g.data)[5 + 2] = 1.0; /* column 1, row 2: a valid element */
    gck_guarded_check(&g, &c, GCK_C, true, &r);
    cr_expect_eq(r.zone, GCK_ZONE_NONE, "a valid element of an output may change");
    gck_guarded_check(&g, &c, GCK_C, false, &r);
    cr_expect_eq(r.zone, GCK_ZONE_ELEMENT);
    cr_expect(r.row == 2 && r.col == 1, "row %lld col %lld", (long long)r.row, (long long)r.col);
    memcpy(g.region, g.snapshot, g.region_len);
    ((double *)g.data)[3] = 1.0; /* column 0, row 3: padding */
    gck_guarded_check(&g, &c, GCK_C, true, &r);
    cr_expect_eq(r.zone, GCK_ZONE_PADDING);
    cr_expect_eq(r.byte_offset, 24);
    memcpy(g.region, g.snapshot, g.region_len);
    g.data[-1] ^= 0xff; /* the byte before the operand */
    gck_guarded_check(&g, &c, GCK_C, true, &r);
    cr_expect_eq(r.zone, GCK_ZONE_GUARD);
    cr_expect_eq(r.byte_offset, -1);
    cr_expect_eq(r.changed_bytes, 1u);
    gck_guarded_free(&g);
}

Test(guard, element_positions_in_batches_and_row_major) {
    gck_case c;
    gck_case_init(&c, 2, 3, 1);
    c.order = GCK_ROW_MAJOR;
    c.ldc = c.ldd = 4;
    c.batch = 2;
    c.stride_c = c.stride_d = 10; /* footprint 7, gap of 3 */
    int64_t b, i, j;
    cr_expect(gck_case_element_at(&c, GCK_C, 5, &b, &i, &j) && b == 0 && i == 1 && j == 1);
    cr_expect_not(gck_case_element_at(&c, GCK_C, 3, &b, &i, &j), "row padding");
    cr_expect_not(gck_case_element_at(&c, GCK_C, 8, &b, &i, &j), "batch gap");
    cr_expect(gck_case_element_at(&c, GCK_C, 16, &b, &i, &j) && b == 1 && i == 1 && j == 2);
}
