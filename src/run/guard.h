/* Guarded operand buffers: every operand lives between two PROT_NONE pages, behind a canary
 * zone, at a chosen offset from a 256-byte boundary, with padding and batch gaps poisoned with a
 * signalling-NaN pattern of its element type; after the call every byte is compared with a
 * snapshot taken before it (internal: private to src/run/). */
#ifndef GEMMCHECK_RUN_GUARD_H
#define GEMMCHECK_RUN_GUARD_H

#include <stddef.h>
#include <stdint.h>

#include "gemmcheck/case.h"

typedef struct gck_guarded {
    unsigned char *map; /* the whole mapping, guard pages included */
    size_t map_len;
    unsigned char *region; /* front canary zone + data + back canary zone */
    size_t region_len;
    unsigned char *data;     /* the operand's base pointer */
    size_t data_bytes;       /* bytes spanned by the operand (all batch members) */
    unsigned char *snapshot; /* copy of region taken by gck_guarded_snapshot */
    gck_format fmt;
} gck_guarded;

/** The signalling-NaN byte pattern of one element of `fmt` (written little-endian). */
uint64_t gck_poison_bits(gck_format fmt);

/** Map a guarded buffer for `extent` elements of `fmt` whose base pointer sits `offset`
 *  elements past a 256-byte boundary; the whole region is poisoned. The operand ends less than
 *  256 bytes before the guard page behind it, or `slack` bytes (a multiple of 256) further
 *  away: reads past the end then land in poisoned memory instead of faulting. */
gck_status gck_guarded_alloc(gck_guarded *g, gck_format fmt, int64_t extent, int64_t offset,
                             size_t slack, char *msg, size_t len);
void gck_guarded_free(gck_guarded *g);
/** Copy the region (call after the operand has been filled). */
gck_status gck_guarded_snapshot(gck_guarded *g, char *msg, size_t len);
/** The snapshot's copy of the operand's base pointer (the values before the call). */
const void *gck_guarded_before(const gck_guarded *g);

/** Where a changed byte is. */
typedef enum gck_byte_zone {
    GCK_ZONE_NONE = 0, /* nothing changed */
    GCK_ZONE_GUARD,    /* canary zone before or after the operand */
    GCK_ZONE_PADDING,  /* inside the operand's span but not a valid element (ld or batch gap) */
    GCK_ZONE_ELEMENT,  /* a valid element */
} gck_byte_zone;

typedef struct gck_guard_report {
    gck_byte_zone zone;      /* the first change outside `allowed` (NONE if none) */
    int64_t byte_offset;     /* from the base pointer (negative: before it) */
    int64_t batch, row, col; /* the stored position for PADDING/ELEMENT, else -1 */
    unsigned char before, after;
    size_t changed_bytes; /* changed bytes outside `allowed` */
} gck_guard_report;

/** Compare the region with its snapshot. Changes to valid elements of operand x are allowed
 *  when `elements_may_change` (D, or C computed in place); every other change is reported. */
void gck_guarded_check(const gck_guarded *g, const gck_case *c, gck_operand x,
                       bool elements_may_change, gck_guard_report *r);

/** Whether element offset e (from the base pointer) is a valid element of operand x, and if
 *  so its batch member and stored row and column. */
bool gck_case_element_at(const gck_case *c, gck_operand x, int64_t e, int64_t *batch, int64_t *row,
                         int64_t *col);

#endif
