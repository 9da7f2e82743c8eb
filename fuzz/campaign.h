/* Fuzz campaigns: the supervisor, its results, reports (JSON, JUnit, JSON Lines), merging. */
#ifndef GEMMCHECK_FUZZ_CAMPAIGN_H
#define GEMMCHECK_FUZZ_CAMPAIGN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "gemmcheck/checker.h"
#include "gemmcheck/runner.h"

#define GCK_MAX_BACKENDS 8
/** `repro --repeat` in the reproducer of a nondeterministic finding: repro stops at the first
 *  run that shows it (races in real libraries took up to a few thousand runs). */
#define GCK_NONDET_REPEAT 10000

/** The size of the command line a report records (`command`), its terminating NUL included. */
#define GCK_COMMAND_LINE_MAX 4096

typedef struct gck_campaign_options {
    const char *backends[GCK_MAX_BACKENDS];
    int nbackends;
    bool backends_explicit; /**< named by the user: unavailable is an error, not a skip */
    double time_limit;      /**< seconds for the whole campaign (split over backends) */
    int64_t max_cases;      /**< per backend; <= 0: no limit */
    uint64_t seed;
    int shard_index, shard_count; /**< 1-based I of N */
    int jobs;
    double rerun_share; /**< fraction of cases run twice on fresh buffers */
    double concurrency_share;
    int concurrency; /**< threads of the concurrency mode */
    double max_flops, max_bytes;
    double timeout_floor; /**< smallest per-call deadline, seconds */
    bool strict_ieee;
    bool tier_hard;         /**< --tier hard: improbable_error is counted, not a finding */
    gck_oracle_kind oracle; /**< default GCK_ORACLE_EXACT */
    const char *types;      /**< --types, or NULL */
    const char *report_path, *junit_path, *jsonl_path, *corpus_dir, *html_path;
    const char *matrix_csv_path, *backends_csv_path; /**< --matrix-csv, --backends-csv */
    bool skip_unavailable;   /**< named backends that cannot run here are skipped, not errors */
    bool progress;           /**< the one-line display on a terminal (\r, escape codes) */
    double log_every;        /**< a plain progress line every so many seconds (0: none) */
    bool stop_on_finding;    /**< end the campaign at the first distinct finding */
    struct gck_known *known; /**< --known / --baseline entries (fuzz/known.h), or NULL */
    /** --memory-budget LO:HI and --thread-limit LO:HI (docs/RESOURCES.md): each case's first
     *  call gets a budget drawn log-uniformly from [mem_lo, mem_hi] bytes (mem_hi 0: none) and,
     *  when limit_threads, a thread limit drawn uniformly from [thr_lo, thr_hi] */
    int64_t mem_lo, mem_hi;
    bool limit_threads;
    int thr_lo, thr_hi;
    const char *command_line;
} gck_campaign_options;

/** gemmcheck fuzz's defaults, as its --help states them: 60 s, a rerun on fresh buffers for 10%
 *  of the cases, a four-thread concurrency check for 5%, at most 1e6 multiply-adds and 64 MB per
 *  case, 3 s per-call deadlines, a worker per core; the rest zero. */
void gck_campaign_defaults(gck_campaign_options *o);

/** The checks a campaign adds to case number case_no of its stream: a rerun on fresh buffers
 *  (*determinism) and the concurrency check's thread count (*concurrency; 0: none), drawn from
 *  the seed with the options' shares. */
void gck_campaign_case_checks(const gck_campaign_options *o, uint64_t case_no, bool *determinism,
                              int *concurrency);

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
} gck_campaign_result;

/** The version of the JSON report's schema (docs/report.schema.json), written as
 *  "schema_version"; merge refuses reports of any other. */
#define GCK_REPORT_SCHEMA_VERSION 3

/** Run a campaign; returns the exit code (0 no findings, 1 findings, 2 set-up, 3 internal). */
int gck_campaign_run(const gck_campaign_options *o);

/** Record a finding into the result (dedup by signature, keep the smallest reproducer);
 *  returns true when it is new or its reproducer got smaller. */
bool gck_result_add_finding(gck_campaign_result *r, const gck_fuzz_finding *f);
gck_matrix_entry *gck_result_matrix(gck_campaign_result *r, const char *backend, const char *types,
                                    const char *compute);
bool gck_result_add_shard(gck_campaign_result *r, uint64_t seed, int index, int count);
void gck_result_free(gck_campaign_result *r);

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
/** Append one shard's environment record (a JSON object text; copied). */
bool gck_result_add_environment(gck_campaign_result *r, const char *json_text);
/** Record this machine's environment for the result's own shard (at the end of a campaign:
 *  `started` is its start, seconds since the epoch). */
bool gck_result_capture_environment(gck_campaign_result *r, double started);

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
/** A report file opened for writing (NULL, the reason in msg, when it cannot be), and closed
 *  with any write error named. */
FILE *gck_report_open(const char *path, char *msg, size_t len);
bool gck_report_close(FILE *f, const char *path, char *msg, size_t len);
/** A JSON document written as a report file is (whole or not at all: gck_report_open). */
struct json_t;
bool gck_report_write_json_file(const struct json_t *root, const char *path, size_t flags,
                                char *msg, size_t len);
/** Reports. */
bool gck_report_write_json(const gck_campaign_result *r, const char *path, const char *command,
                           char *msg, size_t len);
bool gck_report_write_junit(const gck_campaign_result *r, const char *path, char *msg, size_t len);
/** A self-contained HTML page of the report (fuzz/html.h). */
bool gck_report_write_html(const gck_campaign_result *r, const char *path, const char *command,
                           char *msg, size_t len);
/** CSV (RFC 4180): the support matrix, one row per backend and type tuple, and the summary,
 *  one row per backend. */
bool gck_report_write_matrix_csv(const gck_campaign_result *r, const char *path, char *msg,
                                 size_t len);
bool gck_report_write_backends_csv(const gck_campaign_result *r, const char *path, char *msg,
                                   size_t len);
/** A JSON string of any bytes: invalid UTF-8 and control characters written as \xNN. */
struct json_t;
struct json_t *gck_json_text(const char *s);
/** One JSON Lines record of a finding (appended and flushed as it happens). */
void gck_report_stream_finding(FILE *f, const gck_fuzz_finding *fd);
/** Merging shard reports (gemmcheck merge). */
typedef struct gck_merge {
    bool allow_mixed;   /**< shards of different seeds or gemmcheck versions may merge */
    bool allow_overlap; /**< the same shard twice, or case streams that overlap, may merge */
    bool allow_missing; /**< a set with shards missing may merge (otherwise: an error) */
    gck_campaign_result total;
    /* internal */
    const char *first_path;
    uint64_t seed;
    char version[64];
    struct gck_merge_group *groups;
    size_t ngroups;
} gck_merge;
/** Read one report, check it against the report schema and its invariants and against the
 *  shards already merged, and add it into m->total. False with a one-line reason in msg. */
bool gck_merge_add(gck_merge *m, const char *path, char *msg, size_t len);
/** Shards of each seed that are not among the inputs, one line each on `out` (an error, or a
 *  note when `as_error` is false); how many are missing in all. */
int gck_merge_missing(const gck_merge *m, FILE *out, bool as_error);
void gck_merge_free(gck_merge *m);
/** The summary table printed at the end of a campaign. */
void gck_report_print_summary(const gck_campaign_result *r, FILE *out);
/** The line that decides, printed last: "PASS: no findings in N cases", "PASS: known
 *  deviations only (N distinct findings)", "FAIL: N distinct findings not known", "ERROR: N
 *  internal error(s) of gemmcheck", "INTERRUPTED by SIGINT ..." or "NOTHING CHECKED ...". */
void gck_report_print_verdict(const gck_campaign_result *r, FILE *out);
/** The words of that verdict from a result's counts (what the summary and the HTML page's banner
 *  both say), written to buf; returns its class: "ok" (a pass), "known" (known deviations
 *  only) or "bad". interrupted: "SIGINT" etc., or NULL / "" when the run was not. */
const char *gck_verdict_text(int64_t cases, int64_t distinct, int64_t known, int64_t internal,
                             const char *interrupted, char *buf, size_t len);

#endif
