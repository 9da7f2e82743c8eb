/* A campaign's reports: the JSON report, JUnit, CSV, the HTML
 * page, the JSON Lines stream, the summary and the verdict line, each rendered from the result
 * model (result.h) and written through output.h (internal: for fuzz/ and src/cli/). */
#ifndef GEMMCHECK_FUZZ_REPORT_H
#define GEMMCHECK_FUZZ_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "result.h"

/** The version of the JSON report's schema (docs/report.schema.json), written as
 *  "schema_version"; merge refuses reports of any other. */
#define GCK_REPORT_SCHEMA_VERSION 4

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
/** One JSON Lines record of a finding (appended and flushed as it happens). */
void gck_report_stream_finding(FILE *f, const gck_fuzz_finding *fd);
/** The summary table printed at the end of a campaign. */
void gck_report_print_summary(const gck_campaign_result *r, FILE *out);
/** The line that decides, printed last: "PASS: no findings in N cases", "PASS: known
 *  deviations only (N distinct findings)", "FAIL: N distinct findings not known", "ERROR: N
 *  internal error(s) of gemmcheck", "INTERRUPTED by SIGINT ..." or "NOTHING CHECKED ...". */
void gck_report_print_verdict(const gck_campaign_result *r, FILE *out);

#endif
