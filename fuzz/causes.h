/* Findings grouped by cause: one backend, kind and rule,
 * whatever the type tuple or shape (internal: private to fuzz/). */
#ifndef GEMMCHECK_FUZZ_CAUSES_H
#define GEMMCHECK_FUZZ_CAUSES_H

#include <stddef.h>
#include <stdint.h>

#include "result.h"

/** One cause: the findings of one backend, kind and rule (gck_cause_rule), whatever the type tuple
 * or shape, with the smallest reproducer among them. */
typedef struct gck_cause {
    size_t first;     /**< index in findings of the smallest reproducer */
    size_t nfindings; /**< distinct findings (signatures) it groups */
    size_t ntuples;   /**< type tuples they hit */
    size_t nshapes;   /**< shape classes they hit */
    int64_t cases;    /**< cases that showed it */
} gck_cause;
/** Group r's findings by cause, most cases first; returns how many (0 on no memory, *out
 *  NULL). Each cause's `first` indexes r->findings. Free *out with free(). */
size_t gck_result_causes(const gck_campaign_result *r, gck_cause **out);
/** What separates causes of one backend and kind: the checker's rule for numeric kinds, the
 *  signal ("signal 11") for crashes, else "". */
void gck_cause_rule(const gck_fuzz_finding *f, char *buf, size_t len);
/** The reference of cause k when every finding of it is known (fuzz/known.h), else NULL. */
const char *gck_cause_known(const gck_campaign_result *r, const gck_cause *c, size_t nc, size_t k);
/** The type tuple ("f32,f32,f32,f32:f32") and the shape class of a finding's signature
 *  "backend|kind|tuple|shape", read from its end (a backend's path may hold '|'); "?" each for
 *  a signature of another form. */
void gck_signature_tuple_and_shape(const char *sig, char *tuple, size_t tl, char *shape, size_t sl);
/** The index of the cause that finding `f` belongs to. */
size_t gck_cause_of(const gck_campaign_result *r, const gck_cause *c, size_t nc, size_t f);

#endif
