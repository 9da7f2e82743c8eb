/* The result model of a campaign: distinct findings, the
 * support matrix, backends, shards and environments, and the verdict's words — what a report
 * holds, apart from the writers that render it (report.h, junit.c, html.h) and the campaign
 * that fills it (campaign.h) (internal: for fuzz/ and src/cli/). */
#ifndef GEMMCHECK_FUZZ_RESULT_H
#define GEMMCHECK_FUZZ_RESULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gemmcheck/checker.h"
#include "gemmcheck/runner.h"

#define GCK_MAX_BACKENDS 8
/** `repro --repeat` in the reproducer of a nondeterministic finding: repro stops at the first
 *  run that shows it (races in real libraries took up to a few thousand runs). */
#define GCK_NONDET_REPEAT 10000

/** The size of the command line a report records (`command`), its terminating NUL included. */
#define GCK_COMMAND_LINE_MAX 4096

/** One distinct finding (deduplicated by signature). */
typedef struct gck_fuzz_finding {
    gck_kind kind;
    char signature[256];
    char backend[512];
    char repro[2048]; /**< the smallest reproducer seen */
    /** repro options that make the same calls again (" --concurrency 4 --repeat 10000"), or "" */
    char flags[64];
    double cost; /**< m*n*k*batch of that reproducer */
    char detail[512];
    bool has_element;
    gck_element_report element;
    int64_t count; /**< cases that showed it */
    double time_s; /**< seconds since the campaign started when first seen */
    /** the reference of the known-findings entry that covers it (fuzz/known.h), or "": a
     *  known finding is reported apart and does not fail the run */
    char known[200];
} gck_fuzz_finding;

/** The command that re-runs a finding: gemmcheck repro --backend B[ flags] 'CASE'. */
void gck_fuzz_finding_command(const gck_fuzz_finding *f, char *buf, size_t len);

/** Support-matrix entry: one backend and type tuple. */
typedef struct gck_matrix_entry {
    char backend[512];
    char types[64]; /**< "f16,f16,f32,f32" */
    char compute[8];
    int64_t pass, fail, unsupported;
    double max_stat; /**< the largest error / statistical allowance (0: the tier never applied) */
    int64_t stat_elements; /**< elements the statistical tier applied to */
    int64_t improbable;    /**< of which outside its allowance (whether or not --tier hard) */
    /** the sign test's counts over the tuple's cases (checker.h: one element per operand
     *  line): above, below the exact value; nearer to, farther from zero, counted, not tested
     *  (the report's error_signs) */
    int64_t error_signs[4];
    int64_t refused; /**< cases whose first call was refused under the case's memory budget or
                          thread limit, the next call right (docs/RESOURCES.md) */
    double sign_ss;  /**< the sign test's sums of squared unit sums over the cases (checker.h) */
    int64_t ratio_bins[GCK_RATIO_BINS]; /**< checked elements by error/bound (checker.h's bins) */
    double seconds; /**< from handing its cases to a worker to their results, summed */
    bool fuzzed;    /**< cases of it were generated (false: declared, left out by --types) */
} gck_matrix_entry;

/** The tuple's sign test (gck_sign_test of its errors above and below the exact value over
 *  its cases, with sign_ss): at most 1e-12 says its errors lean one way, which round to
 *  nearest on sign-symmetric data does not do. */
double gck_matrix_sign_test_p(const gck_matrix_entry *e);

typedef struct gck_backend_info {
    char spec[512];
    char version[512];
    char oracle[16];       /**< the oracle its workers confirmed: "exact", "mpfr" or "both" */
    bool ran;              /**< it ran (report status "ran"); else it was skipped */
    char skipped_why[480]; /**< why it was skipped (report status "skipped: <why>") */
    int64_t cases;
    double seconds;
} gck_backend_info;

/** A backend's status as reports give it: "ran" or "skipped: <why>". */
void gck_backend_status(const gck_backend_info *b, char *buf, size_t len);
/** The reverse (false for any other text). */
bool gck_backend_status_parse(const char *text, gck_backend_info *b);

/** The most shards a campaign can be split into (--shard I/N, N at most this). */
#define GCK_MAX_SHARDS 1000000

/** One shard of one campaign: --seed and --shard I/N. */
typedef struct gck_shard_ref {
    uint64_t seed;
    int index, count;
} gck_shard_ref;

/** Everything a report holds. */
typedef struct gck_campaign_result {
    int64_t cases, pass, unsupported, with_findings, internal_errors;
    int64_t deadline_retries; /**< calls that missed their deadline once and met it when the
                                   case was run again in a fresh worker (not findings) */
    int64_t kind_cases[GCK_KIND_COUNT]; /**< cases with at least one finding of the kind */
    double seconds;
    uint64_t seed;
    int shard_index, shard_count;
    gck_fuzz_finding *findings;
    size_t nfindings, cap_findings;
    gck_matrix_entry *matrix;
    size_t nmatrix, cap_matrix;
    size_t matrix_next; /**< where gck_result_matrix looks first: after the entry it last gave */
    gck_backend_info backends[GCK_MAX_BACKENDS * 4];
    int nbackends;
    int shards_merged;
    gck_shard_ref *shards; /**< the shards the report covers (written as summary.shards) */
    size_t nshards, cap_shards;
    char interrupted[16]; /**< "SIGINT" or "SIGTERM" when a signal ended the campaign early */
    /** The machines the shards ran on: one JSON object text per shard ({"seed", "shard", and
     *  the environment's fields}), in the order of `shards`. Empty until the campaign ends
     *  (gck_result_capture_environment) or a merge reads them. */
    char **environments;
    size_t nenvironments, cap_environments;
    /** known-findings entries that covered no finding ("FILE:LINE: the entry"), set by
     *  gck_known_apply */
    char **stale;
    size_t nstale;
    /** gemmcheck's own failures ("WHAT on 'REPRO'"), the first GCK_INTERNAL_KEPT of them;
     *  internal_errors counts them all */
    char **internal;
    size_t ninternal;
} gck_campaign_result;

/** How many internal errors a result keeps the text of. */
#define GCK_INTERNAL_KEPT 20

/** Count an internal error and keep its text (up to GCK_INTERNAL_KEPT); false: out of memory. */
bool gck_result_add_internal(gck_campaign_result *r, const char *text);
/** Keep the text of an internal error counted elsewhere (a merged report's); false: out of
 *  memory. */
bool gck_result_keep_internal(gck_campaign_result *r, const char *text);

/** Record a finding into the result (dedup by signature, keep the smallest reproducer);
 *  returns true when it is new or its reproducer got smaller. */
bool gck_result_add_finding(gck_campaign_result *r, const gck_fuzz_finding *f);
gck_matrix_entry *gck_result_matrix(gck_campaign_result *r, const char *backend, const char *types,
                                    const char *compute);
bool gck_result_add_shard(gck_campaign_result *r, uint64_t seed, int index, int count);
void gck_result_free(gck_campaign_result *r);

/** The shards a result covers: those merged into it, or (in *one) the campaign's own; returns
 *  how many, *list pointing at them. */
size_t gck_result_shards(const gck_campaign_result *r, gck_shard_ref *one,
                         const gck_shard_ref **list);
/** `seed` and `shard` as reports state them: a merge of several shards has shard "merged", and
 *  seed "mixed" when they are of several seeds. */
void gck_result_seed_and_shard(const gck_campaign_result *r, char *seed, char *shard, size_t len);

/** One backend's totals over the support matrix. */
typedef struct gck_backend_totals {
    int64_t pass, fail, unsupported; /**< cases */
    int64_t tuples;                  /**< its entries */
    int64_t failing;                 /**< entries with a failing case */
    int64_t unreached;               /**< entries where no case ran (pass + fail = 0) */
    int64_t refused;                 /**< cases refused under limits (gck_matrix_entry) */
} gck_backend_totals;
gck_backend_totals gck_result_backend_totals(const gck_campaign_result *r, const char *spec);
/** The words of that verdict from a result's counts (what the summary and the HTML page's banner
 *  both say), written to buf; returns its class: "ok" (a pass), "known" (known deviations
 *  only) or "bad". interrupted: "SIGINT" etc., or NULL / "" when the run was not. */
const char *gck_verdict_text(int64_t cases, int64_t distinct, int64_t known, int64_t internal,
                             const char *interrupted, char *buf, size_t len);

#endif
