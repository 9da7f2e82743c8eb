/* A row's memory appetite (appetite.h). */
#include "appetite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fingerprint.h"
#include "gemmcheck/runner.h"

/* One probe: true when the call under `bytes` succeeded and was right; else what it did. */
static bool probe(const char *spec, const gck_spec *base, int64_t bytes, double timeout,
                  gck_isolated_result *res, gck_appetite *a, char *what, size_t len) {
    gck_spec s = *base;
    s.mem_budget = bytes;
    gck_run_options o = {.check = {.oracle = GCK_ORACLE_EXACT, .threads = 1}};
    a->probes++;
    gck_run_isolated(spec, &s, &o, timeout, res);
    const gck_run_result *r = &res->run;
    switch (res->status) {
    case GCK_ISOLATED_RAN:
        if (r->outcome == GCK_OUTCOME_PASS && !r->refused) return true;
        if (r->outcome == GCK_OUTCOME_PASS)
            snprintf(what, len, "refused (%.120s)", r->refusal);
        else if (r->outcome == GCK_OUTCOME_UNSUPPORTED)
            snprintf(what, len, "unsupported");
        else
            snprintf(what, len, "%s", gck_kind_name(r->findings[0].kind));
        return false;
    case GCK_ISOLATED_HANG: snprintf(what, len, "hang"); return false;
    case GCK_ISOLATED_CRASH: snprintf(what, len, "crash (%.120s)", res->message); return false;
    default: snprintf(what, len, "not run (%.120s)", res->message); return false;
    }
}

/* A budget the row failed at: the highest so far is what `below` reports. */
static void failed_at(gck_appetite *a, int64_t bytes, const char *what) {
    a->below = bytes;
    snprintf(a->below_what, sizeof a->below_what, "%s", what);
}

void gck_appetite_measure(const char *spec, const gck_support_row *row, double timeout,
                          gck_appetite *out) {
    memset(out, 0, sizeof *out);
    out->bytes = -1;
    bool f64 = row->a == GCK_F64 || row->b == GCK_F64;
    gck_spec s;
    gck_case c = gck_fp_row_case(row, 256, 256, f64 ? 64 : 256);
    gck_spec_init(&s, &c);
    gck_spec_format(&s, out->case_text, sizeof out->case_text);
    gck_isolated_result *res = malloc(sizeof *res);
    if (!res) {
        snprintf(out->below_what, sizeof out->below_what, "not run (out of memory)");
        return;
    }
    char what[160];
    int64_t lo = GCK_APPETITE_LOW, hi = GCK_APPETITE_HIGH;
    if (!probe(spec, &s, hi, timeout, res, out, what, sizeof what)) {
        failed_at(out, hi, what);
        free(res);
        return;
    }
    if (probe(spec, &s, lo, timeout, res, out, what, sizeof what)) {
        out->bytes = lo;
        free(res);
        return;
    }
    failed_at(out, lo, what);
    /* the power of two: 2^e_lo fails, 2^e_hi succeeds */
    int e_lo = 12, e_hi = 34;
    while (e_hi - e_lo > 1) {
        int e = (e_lo + e_hi) / 2;
        if (probe(spec, &s, (int64_t)1 << e, timeout, res, out, what, sizeof what)) {
            e_hi = e;
        } else {
            e_lo = e;
            failed_at(out, (int64_t)1 << e, what);
        }
    }
    /* then an eighth of that octave */
    lo = (int64_t)1 << e_lo, hi = (int64_t)1 << e_hi;
    while (hi - lo > lo / 8) {
        int64_t mid = lo + (hi - lo) / 2;
        if (probe(spec, &s, mid, timeout, res, out, what, sizeof what)) {
            hi = mid;
        } else {
            lo = mid;
            failed_at(out, mid, what);
        }
    }
    out->bytes = hi;
    free(res);
}
