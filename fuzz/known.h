/* Known findings: the documented deviations of a library, or the causes of an earlier report,
 * that a campaign reports apart and that do not fail it (fuzz/merge --known FILE, --baseline
 * REPORT). docs/KNOWN.md states the file's format and what a match guarantees (internal: for fuzz/
 * and src/cli/). */
#ifndef GEMMCHECK_FUZZ_KNOWN_H
#define GEMMCHECK_FUZZ_KNOWN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "result.h"

typedef struct gck_known gck_known;

/** The most --known files, and the most --baseline reports, a command takes. */
#define GCK_MAX_KNOWN 8

/** An empty set of known findings (NULL when out of memory). */
gck_known *gck_known_new(void);
void gck_known_free(gck_known *k);

/** Add the entries of a known-findings file. False with "FILE:LINE: reason" in msg for a file
 *  that cannot be read or holds a line that is not an entry (the whole file is refused). */
bool gck_known_load(gck_known *k, const char *path, char *msg, size_t len);

/** Add one entry per cause of an earlier JSON report (its backend, kind and rule, exactly):
 *  a campaign with this baseline fails only on causes the earlier one did not have. False with
 *  the reason in msg for a file that is not a gemmcheck report. */
bool gck_known_baseline(gck_known *k, const char *report, char *msg, size_t len);

/** The set of the files' entries and the reports' causes (the CLI's --known and --baseline),
 *  NULL when none is given or one is refused (msg then says why). */
gck_known *gck_known_open(const char *const *files, int nfiles, const char *const *reports,
                          int nreports, char *msg, size_t len);

/** Mark each finding of r that an entry covers (its `known` field: the entry's reference), in
 *  place; an `overread` entry covers a crash only after the finding's reproducer, run again in a
 *  fresh process, crashes with the guard pages and passes with the operands ending 4 KiB (or 64
 *  leading dimensions) before them. Entries that covered nothing, although their backend ran,
 *  are listed in r->stale. False only when out of memory. */
bool gck_known_apply(gck_known *k, gck_campaign_result *r);

/** How many of r's distinct findings are not known (what fails a run). */
size_t gck_result_unknown_findings(const gck_campaign_result *r);

#endif
