/* Self-contained HTML reports (html.h): one file, an inline style sheet, inline SVG, no script,
 * no external reference; XHTML syntax, so that a strict XML parser reads it. */
#include "html.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "gemmcheck/checker.h"
#include "output.h"
#include "result.h"
#include "text.h"

static const char style[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#1b1b1b;max-width:110em}"
    "h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ccc}"
    "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 6px;"
    "text-align:left;vertical-align:top}th{background:#f0f0f0}"
    "td.num{text-align:right;font-variant-numeric:tabular-nums}"
    ".ok{background:#d9f2d9}.bad{background:#f8d0d0}.unsup{background:#e4e4e4}"
    ".known{background:#fbeec4}.banner{font-size:1.3em;font-weight:bold;padding:.4em .7em}"
    ".none{background:#fafafa;color:#888}.warn{background:#fbeac2}.info{background:#e3ecfa}"
    "pre.repro{background:#f6f6f6;border:1px solid #ddd;padding:4px;white-space:pre-wrap;"
    "word-break:break-all;user-select:all;font-size:12px}"
    "code,pre{font-family:ui-monospace,monospace}.small{font-size:12px;color:#555}"
    "details{margin:.3em 0}summary{cursor:pointer}";

void gck_html_text(FILE *f, const char *s) {
    if (s) gck_text_xml(f, s);
}

void gck_html_printf(FILE *f, const char *fmt, ...) {
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    gck_html_text(f, buf);
}

void gck_html_json(FILE *f, const json_t *v) {
    if (!v || json_is_null(v)) {
        fputs("-", f);
        return;
    }
    if (json_is_string(v)) {
        gck_html_text(f, json_string_value(v));
        return;
    }
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(6));
    gck_html_text(f, s);
    free(s);
}

void gck_html_begin(FILE *f, const char *title) {
    fputs("<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>"
          "<meta charset=\"utf-8\"/><title>",
          f);
    gck_html_text(f, title);
    fprintf(f, "</title><style>%s</style></head>\n<body>\n<h1>", style);
    gck_html_text(f, title);
    fputs("</h1>\n", f);
}

void gck_html_end(FILE *f) { fputs("</body>\n</html>\n", f); }

void gck_html_repro(FILE *f, const char *command) {
    fputs("<pre class=\"repro\" title=\"one click selects it\">", f);
    gck_html_text(f, command);
    fputs("</pre>\n", f);
}

const char *const gck_html_ratio_labels[GCK_RATIO_BINS] = {"0",    "1e-6", "1e-5", "1e-4", "1e-3",
                                                           "1e-2", "0.1",  "1",    ">1"};

/* A count in at most 5 characters: 7, 812, 4.1k, 53k, 1.4M. */
static void compact(int64_t n, char *buf, size_t len) {
    static const char unit[] = {'\0', 'k', 'M', 'G', 'T'};
    double v = (double)n;
    int u = 0;
    while (v >= 1000 && u < 4) v /= 1000, u++;
    if (!u)
        snprintf(buf, len, "%lld", (long long)n);
    else
        snprintf(buf, len, v < 10 ? "%.1f%c" : "%.0f%c", v, unit[u]);
}

void gck_html_histogram(FILE *f, const int64_t *counts, int n, const char *const *labels, int w,
                        int h, int bad_from) {
    int64_t top = 0, total = 0;
    for (int i = 0; i < n; i++) top = counts[i] > top ? counts[i] : top, total += counts[i];
    int label_h = labels ? 12 : 0, bar_w = w / n;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\">", w, h);
    fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#fafafa\"/>", w,
            h - label_h);
    for (int i = 0; i < n; i++) {
        /* a log scale, so that a single element beyond the bound still shows */
        double frac = top ? log1p((double)counts[i]) / log1p((double)top) : 0;
        int bh = (int)lround(frac * (h - label_h - 2));
        fprintf(f,
                "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"><title>%s: "
                "%lld</title></rect>",
                i * bar_w + 1, h - label_h - bh, bar_w - 2, bh,
                i >= bad_from ? "#c0392b" : "#4a7ab5", labels ? labels[i] : "",
                (long long)counts[i]);
        if (labels)
            fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"9\" text-anchor=\"middle\">%s</text>",
                    i * bar_w + bar_w / 2, h - 2, labels[i][0] == '>' ? "&gt;1" : labels[i]);
        if (counts[i]) { /* the count, inside the bar's top or above a short one */
            char num[16];
            compact(counts[i], num, sizeof num);
            int y = h - label_h - bh + (bh > 12 ? 9 : -1);
            fprintf(f,
                    "<text x=\"%d\" y=\"%d\" font-size=\"8\" text-anchor=\"middle\" "
                    "fill=\"%s\">%s</text>",
                    i * bar_w + bar_w / 2, y < 8 ? 8 : y, bh > 12 ? "#fff" : "#000", num);
        }
    }
    fprintf(f, "<title>%lld in all</title></svg>", (long long)total);
}

static void object_rows(FILE *f, const json_t *o, const char *prefix) {
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)o, key, v) {
        char name[256];
        snprintf(name, sizeof name, "%s%s%s", prefix, prefix[0] ? "." : "", key);
        if (json_is_object(v)) {
            object_rows(f, v, name);
            continue;
        }
        if (json_is_array(v) && json_array_size(v) > 0 && json_is_object(json_array_get(v, 0)))
            continue; /* lists of records get their own tables */
        fputs("<tr><th>", f);
        gck_html_text(f, name);
        fputs("</th><td>", f);
        gck_html_json(f, v);
        fputs("</td></tr>\n", f);
    }
}

void gck_html_records(FILE *f, const json_t *records, const gck_html_column *cols, int ncols,
                      const char *(*row_class)(const json_t *record)) {
    fputs("<table><tr>", f);
    for (int c = 0; c < ncols; c++) {
        fputs("<th>", f);
        gck_html_text(f, cols[c].heading);
        fputs("</th>", f);
    }
    fputs("</tr>\n", f);
    size_t i;
    json_t *r;
    json_array_foreach(records, i, r) {
        const char *cls = row_class ? row_class(r) : NULL;
        fprintf(f, "<tr%s%s%s>", cls ? " class=\"" : "", cls ? cls : "", cls ? "\"" : "");
        for (int c = 0; c < ncols; c++) {
            const json_t *v = json_object_get(r, cols[c].key);
            fputs(cols[c].style == GCK_HTML_SMALL ? "<td class=\"small\">" : "<td>", f);
            if (cols[c].style == GCK_HTML_REPRO) gck_html_repro(f, json_string_value(v));
            if (cols[c].style == GCK_HTML_CODE) fputs("<code>", f);
            if (cols[c].style != GCK_HTML_REPRO) gck_html_json(f, v);
            fputs(cols[c].style == GCK_HTML_CODE ? "</code></td>" : "</td>", f);
        }
        fputs("</tr>\n", f);
    }
    fputs("</table>\n", f);
}

void gck_html_object_table(FILE *f, const json_t *o) {
    fputs("<table>\n", f);
    object_rows(f, o, "");
    fputs("</table>\n", f);
}

/* ---- the campaign's page ------------------------------------------------------------------- */

static int64_t count(const json_t *o, const char *key) {
    return (int64_t)json_integer_value(json_object_get(o, key));
}

/* The outcome class of a support-matrix entry, and its word. */
static const char *entry_class(const json_t *e, const char **word) {
    int64_t pass = count(e, "pass"), fail = count(e, "fail"), unsup = count(e, "unsupported");
    if (fail) return *word = "findings", "bad";
    if (pass) return *word = "pass", "ok";
    if (unsup) return *word = "unsupported", "unsup";
    return *word = "not run", "none";
}

static void backends_table(FILE *f, const json_t *report) {
    const json_t *bes = json_object_get(json_object_get(report, "environment"), "backends"),
                 *mat = json_object_get(json_object_get(report, "summary"), "support_matrix");
    fputs("<h2>Backends</h2>\n<table><tr><th>backend</th><th>status</th><th>version</th>"
          "<th>cases</th><th>pass</th><th>with findings</th><th>unsupported</th></tr>\n",
          f);
    size_t i, j;
    json_t *b, *e;
    json_array_foreach(bes, i, b) {
        const char *name = json_string_value(json_object_get(b, "backend")),
                   *status = json_string_value(json_object_get(b, "status"));
        int64_t pass = 0, fail = 0, unsup = 0;
        json_array_foreach(mat, j, e) {
            if (!name || !json_equal(json_object_get(b, "backend"), json_object_get(e, "backend")))
                continue;
            pass += count(e, "pass"), fail += count(e, "fail"), unsup += count(e, "unsupported");
        }
        const char *cls = status && strcmp(status, "ran") ? "unsup" : fail ? "bad" : "ok";
        fprintf(f, "<tr class=\"%s\"><td>", cls);
        gck_html_text(f, name);
        fputs("</td><td>", f);
        gck_html_text(f, status);
        fputs("</td><td class=\"small\">", f);
        gck_html_json(f, json_object_get(b, "version"));
        fprintf(f,
                "</td><td class=\"num\">%lld</td><td class=\"num\">%lld</td><td "
                "class=\"num\">%lld</td><td class=\"num\">%lld</td></tr>\n",
                (long long)(pass + fail + unsup), (long long)pass, (long long)fail,
                (long long)unsup);
    }
    fputs("</table>\n", f);
}

void gck_html_ratio_histogram(FILE *f, const int64_t *bins) {
    gck_html_histogram(f, bins, GCK_RATIO_BINS, gck_html_ratio_labels, 270, 40, GCK_RATIO_BINS - 1);
}

/* The matrix's table, of every entry or of those with findings only. */
static void matrix_table(FILE *f, const json_t *mat, bool failing_only) {
    fputs("<table><tr><th>backend</th><th>types</th><th>compute</th><th>outcome</th><th>pass</th>"
          "<th>findings</th><th>unsupported</th><th>max statistical ratio</th>"
          "<th>checked elements by error/bound (count above each bar)</th></tr>\n",
          f);
    size_t i;
    json_t *e;
    json_array_foreach(mat, i, e) {
        if (failing_only && !count(e, "fail")) continue;
        const char *word, *cls = entry_class(e, &word);
        fprintf(f, "<tr class=\"%s\"><td>", cls);
        gck_html_json(f, json_object_get(e, "backend"));
        fputs("</td><td>", f);
        gck_html_json(f, json_object_get(e, "types"));
        fputs("</td><td>", f);
        gck_html_json(f, json_object_get(e, "compute"));
        fprintf(f,
                "</td><td>%s</td><td class=\"num\">%lld</td><td class=\"num\">%lld</td><td "
                "class=\"num\">%lld</td><td class=\"num\">",
                word, (long long)count(e, "pass"), (long long)count(e, "fail"),
                (long long)count(e, "unsupported"));
        if (count(e, "pass") + count(e, "fail"))
            gck_html_json(f, json_object_get(e, "max_stat_ratio"));
        fputs("</td><td>", f);
        const json_t *bins = json_object_get(e, "ratio_bins");
        int64_t c[GCK_RATIO_BINS] = {0}, total = 0;
        for (int b = 0; b < GCK_RATIO_BINS; b++)
            total += c[b] = (int64_t)json_integer_value(json_array_get(bins, (size_t)b));
        if (total) gck_html_ratio_histogram(f, c);
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

void gck_html_matrix(FILE *f, const json_t *summary) {
    const json_t *mat = json_object_get(summary, "support_matrix");
    size_t i, failing = 0;
    json_t *e;
    json_array_foreach(mat, i, e) failing += count(e, "fail") > 0;
    fputs("<h2>Support matrix</h2>\n<p class=\"small\">One row per backend and type tuple (A, B, "
          "C, D element types and the compute type), coloured by outcome: pass, findings, "
          "unsupported (refused as the backend declares), not run. The statistical ratio is the "
          "largest error over the statistical tier's allowance: above 1 happens with "
          "probability below 1e-12 per element for correct round-to-nearest arithmetic on "
          "random data. The histogram counts the checked elements by error/bound, the bins' "
          "lower edges under the bars (log scale; red: beyond the bound).</p>\n",
          f);
    fprintf(f, "<h3>Tuples with findings: %zu of %zu</h3>\n", failing, json_array_size(mat));
    if (failing) matrix_table(f, mat, true);
    fprintf(f, "<details><summary>Every tuple (%zu)</summary>\n", json_array_size(mat));
    matrix_table(f, mat, false);
    fputs("</details>\n", f);
}

void gck_html_findings(FILE *f, const json_t *causes, const json_t *findings) {
    fprintf(f, "<h2>Findings: %zu distinct, from %zu cause%s</h2>\n", json_array_size(findings),
            json_array_size(causes), json_array_size(causes) == 1 ? "" : "s");
    size_t i;
    json_t *c;
    json_array_foreach(causes, i, c) {
        const char *known = json_string_value(json_object_get(c, "known"));
        fprintf(f, "<details open=\"open\"><summary class=\"%s\">", known ? "known" : "bad");
        if (known) gck_html_printf(f, "known, does not fail the run (%s): ", known);
        gck_html_printf(f, "%s in %s: %s (%lld finding%s, %lld case%s, %lld tuple%s, %lld shape%s)",
                        json_string_value(json_object_get(c, "kind")),
                        json_string_value(json_object_get(c, "backend")),
                        json_string_value(json_object_get(c, "rule")),
                        (long long)count(c, "findings"), count(c, "findings") == 1 ? "" : "s",
                        (long long)count(c, "cases"), count(c, "cases") == 1 ? "" : "s",
                        (long long)count(c, "tuples"), count(c, "tuples") == 1 ? "" : "s",
                        (long long)count(c, "shapes"), count(c, "shapes") == 1 ? "" : "s");
        fputs("</summary>\n<p>Its smallest reproducer:</p>\n", f);
        gck_html_repro(f, json_string_value(json_object_get(c, "reproduce")));
        fputs("</details>\n", f);
    }
    if (!json_array_size(findings)) return;
    static const gck_html_column cols[] = {{"kind", "kind", GCK_HTML_PLAIN},
                                           {"backend", "backend", GCK_HTML_PLAIN},
                                           {"details", "details", GCK_HTML_SMALL},
                                           {"reproducer", "reproduce", GCK_HTML_REPRO}};
    fputs("<details><summary>Every finding</summary>\n", f);
    gck_html_records(f, findings, cols, 4, NULL);
    fputs("</details>\n", f);
}

/* The page's verdict first: PASS, PASS with known deviations only, or FAIL. */
static void banner(FILE *f, const json_t *sum) {
    char text[300];
    const char *cls =
        gck_verdict_text(count(sum, "cases"), count(sum, "distinct_findings"),
                         count(sum, "known_findings"), count(sum, "internal_errors"),
                         json_string_value(json_object_get(sum, "interrupted")), text, sizeof text);
    fprintf(f, "<p class=\"banner %s\">", cls);
    gck_html_text(f, text);
    fputs("</p>\n", f);
    const json_t *internal = json_object_get(sum, "internal_error_texts");
    size_t k;
    const json_t *v;
    json_array_foreach(internal, k, v) { /* gemmcheck's own failures, with their cases */
        fputs("<p class=\"bad\">internal error: ", f);
        gck_html_text(f, json_string_value(v));
        fputs("</p>\n", f);
    }
}

void gck_html_campaign(FILE *f, const json_t *report) {
    const json_t *sum = json_object_get(report, "summary");
    gck_html_begin(f, "gemmcheck campaign");
    banner(f, sum);
    gck_html_printf(f, "%lld cases in %.1f s, %lld with findings; seed ",
                    (long long)count(sum, "cases"),
                    json_number_value(json_object_get(sum, "seconds")),
                    (long long)count(json_object_get(sum, "outcomes"), "findings"));
    gck_html_json(f, json_object_get(sum, "seed"));
    fputs(", shard ", f);
    gck_html_json(f, json_object_get(sum, "shard"));
    backends_table(f, report);
    gck_html_findings(f, json_object_get(report, "causes"), json_object_get(report, "findings"));
    gck_html_matrix(f, sum);
    fputs("<h2>Environment</h2>\n", f);
    gck_html_object_table(f, json_object_get(report, "environment"));
    gck_html_end(f);
}

static bool render_campaign(FILE *f, const void *report) {
    gck_html_campaign(f, report);
    return true;
}

bool gck_html_campaign_file(const json_t *report, const char *path, char *err, size_t len) {
    return gck_output_write(path, render_campaign, report, err, len);
}
