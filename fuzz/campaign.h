/* Fuzz campaigns: the options and the supervisor that runs
 * generated cases in worker processes and fills a result (result.h), then writes its reports
 * (report.h) (internal: for fuzz/ and src/cli/). */
#ifndef GEMMCHECK_FUZZ_CAMPAIGN_H
#define GEMMCHECK_FUZZ_CAMPAIGN_H

#include <stdbool.h>
#include <stdint.h>

#include "result.h"

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

/** Run a campaign; returns the exit code (0 no findings, 1 findings, 2 set-up, 3 internal). */
int gck_campaign_run(const gck_campaign_options *o);

#endif
