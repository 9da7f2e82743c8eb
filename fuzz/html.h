/* Self-contained HTML reports (no network, no external script, style or font): the pieces the
 * campaign, certificate and comparison pages share, and the campaign's page. The markup is
 * well-formed XML (XHTML syntax) so that a strict parser can read it (internal: for fuzz/ and
 * src/cli/). */
#ifndef GEMMCHECK_FUZZ_HTML_H
#define GEMMCHECK_FUZZ_HTML_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/** Start a page: the doctype, the inline style sheet and the title as the first heading. */
void gck_html_begin(FILE *f, const char *title);
/** End the page (closes what gck_html_begin opened). */
void gck_html_end(FILE *f);
/** Text as gck_text_xml writes it (cleaned, markup escaped); NULL writes nothing. */
void gck_html_text(FILE *f, const char *s);
/** printf into escaped text. */
void gck_html_printf(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/** A JSON value as escaped text (strings without quotes, null as "-"). */
void gck_html_json(FILE *f, const json_t *v);
/** A reproducer: a block selected whole by one click, to paste into a shell. */
void gck_html_repro(FILE *f, const char *command);
/** An inline SVG histogram of n counts with their labels (w x h pixels); bars past `bad_from`
 *  are drawn in the failure colour. */
void gck_html_histogram(FILE *f, const int64_t *counts, int n, const char *const *labels, int w,
                        int h, int bad_from);
/** The labels of the checker's error/bound bins (GCK_RATIO_BINS of them). */
extern const char *const gck_html_ratio_labels[];
/** A column of gck_html_records: its heading, the record's key, how the value is shown. */
typedef enum gck_html_style {
    GCK_HTML_PLAIN = 0,
    GCK_HTML_SMALL,
    GCK_HTML_CODE,
    GCK_HTML_REPRO
} gck_html_style;
typedef struct gck_html_column {
    const char *heading, *key;
    gck_html_style style;
} gck_html_column;
/** A table of an array of records, one row each; row_class (may be NULL) names each row's CSS
 *  class (NULL: none). */
void gck_html_records(FILE *f, const json_t *records, const gck_html_column *cols, int ncols,
                      const char *(*row_class)(const json_t *record));
/** A two-column table of an object's keys and values (nested objects flattened as a.b). */
void gck_html_object_table(FILE *f, const json_t *o);

/** A histogram of counts in the checker's error/bound bins. */
void gck_html_ratio_histogram(FILE *f, const int64_t *bins);
/** The support matrix of a campaign summary, coloured by outcome, with histograms. */
void gck_html_matrix(FILE *f, const json_t *summary);
/** Findings grouped by cause (each with its smallest reproducer), then every finding. */
void gck_html_findings(FILE *f, const json_t *causes, const json_t *findings);

/** The campaign report (what `fuzz --report` writes) as a page. */
void gck_html_campaign(FILE *f, const json_t *report);
/** Write `report` as a page to path; false with the reason in err. */
bool gck_html_campaign_file(const json_t *report, const char *path, char *err, size_t len);

#endif
