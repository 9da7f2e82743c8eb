/* The HTML pages of `certify --html` and `compare --html` (one self-contained file each, built
 * with fuzz/html.h's pieces). */
#include <string.h>

#include "certify.h"
#include "gemmcheck/checker.h"
#include "html.h"
#include "output.h"

/* The pinned cases of a row by their largest error/bound (the checker's bins). */
static void pinned_bins(const json_t *pinned, int64_t *bins) {
    memset(bins, 0, sizeof(int64_t) * GCK_RATIO_BINS);
    size_t i;
    json_t *p;
    json_array_foreach(pinned, i, p) {
        const json_t *r = json_object_get(p, "ratio");
        if (json_is_number(r)) /* a case's largest error/bound: 0 only when its errors are */
            bins[gck_ratio_bin(json_number_value(r), json_number_value(r))]++;
    }
}

static const char *support_class(const char *status) {
    return !status                            ? "none"
           : !strcmp(status, "runs")          ? "ok"
           : !strcmp(status, "unimplemented") ? "unsup"
                                              : "bad";
}

/* An undecided property is shown dimmed. */
static const char *property_class(const json_t *p) {
    const char *v = json_string_value(json_object_get(p, "value"));
    return v && !strncmp(v, "undecided", 9) ? "none" : NULL;
}

static void fingerprint_table(FILE *f, const json_t *fp) {
    static const gck_html_column cols[] = {{"property", "property", GCK_HTML_PLAIN},
                                           {"value", "value", GCK_HTML_PLAIN},
                                           {"probe and evidence", "probe", GCK_HTML_SMALL}};
    gck_html_records(f, fp, cols, 3, property_class);
}

static void rows_table(FILE *f, const json_t *rows) {
    fputs("<h2>Support</h2>\n<p class=\"small\">Each row of the backend's table exercised once "
          "(runs, unimplemented, error, wrong), its pinned cases by largest error/bound (log "
          "scale; red: beyond the bound), and its fingerprint, found by probing.</p>\n"
          "<table><tr><th>types (A B C D | compute)</th><th>declared</th><th>exercise</th>"
          "<th>pinned cases</th><th>fingerprint</th></tr>\n",
          f);
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
        const char *st =
            json_string_value(json_object_get(json_object_get(r, "support"), "status"));
        fprintf(f, "<tr class=\"%s\"><td>", support_class(st));
        gck_html_json(f, json_object_get(r, "tuple"));
        fputs("</td><td class=\"small\">", f);
        gck_html_json(f, json_object_get(r, "declared"));
        fputs("</td><td>", f);
        const char *pf = json_string_value(json_object_get(r, "probe_failure"));
        gck_html_text(f, pf ? "probes failed: " : st ? st : "not exercised");
        if (pf) gck_html_text(f, pf);
        fputs("</td><td>", f);
        int64_t bins[GCK_RATIO_BINS];
        pinned_bins(json_object_get(r, "pinned"), bins);
        gck_html_ratio_histogram(f, bins);
        fputs("</td><td><details><summary>properties</summary>\n", f);
        fingerprint_table(f, json_object_get(r, "fingerprint"));
        fputs("</details></td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

static void files_table(FILE *f, const json_t *files) {
    static const gck_html_column cols[] = {{"loaded as", "path", GCK_HTML_PLAIN},
                                           {"file", "file", GCK_HTML_PLAIN},
                                           {"SHA-256", "sha256", GCK_HTML_CODE}};
    fputs("<h2>Library files</h2>\n", f);
    gck_html_records(f, files, cols, 3, NULL);
}

static void certificate_page(FILE *f, const json_t *cert) {
    char title[600];
    snprintf(title, sizeof title, "gemmcheck certificate: %s",
             json_string_value(json_object_get(cert, "backend")));
    gck_html_begin(f, title);
    const json_t *probed = json_object_get(cert, "probed"),
                 *camp = json_object_get(cert, "campaign");
    gck_html_printf(f, "gemmcheck %s, certificate_version %lld; backend version: ",
                    json_string_value(json_object_get(cert, "gemmcheck")),
                    (long long)json_integer_value(json_object_get(cert, "certificate_version")));
    gck_html_json(f, json_object_get(probed, "version"));
    if (!probed) {
        fputs("<p class=\"bad\">The backend could not be probed: ", f);
        gck_html_json(f, json_object_get(cert, "probe_failure"));
        fputs("</p>\n", f);
    }
    rows_table(f, json_object_get(probed, "rows"));
    files_table(f, json_object_get(probed, "library_files"));
    if (json_is_object(camp)) {
        fputs("<h2>Campaign</h2>\n", f);
        const json_t *o = json_object_get(json_object_get(camp, "summary"), "outcomes");
        gck_html_printf(f, "%s s, seed %s: %lld cases pass, %lld with findings, %lld unsupported",
                        json_string_value(json_object_get(camp, "seconds")),
                        json_string_value(json_object_get(camp, "seed")),
                        (long long)json_integer_value(json_object_get(o, "pass")),
                        (long long)json_integer_value(json_object_get(o, "findings")),
                        (long long)json_integer_value(json_object_get(o, "unsupported")));
        gck_html_findings(f, NULL, json_object_get(camp, "findings"));
        gck_html_matrix(f, json_object_get(camp, "summary"));
    }
    fputs("<h2>Environment</h2>\n", f);
    gck_html_object_table(f, json_object_get(cert, "environment"));
    gck_html_end(f);
}

/* ---- compare -------------------------------------------------------------------------------- */

static const char *difference_class(const char *cls, bool regression) {
    if (regression) return "bad";
    if (!strcmp(cls, "precision change") || !strcmp(cls, "arithmetic-model change") ||
        !strcmp(cls, "bits changed, no probe explains why"))
        return "warn";
    if (!strcmp(cls, "reordered only (same arithmetic model)")) return "info";
    return "none";
}

static const json_t *row_named(const json_t *rows, const char *tuple) {
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
        const char *t = json_string_value(json_object_get(r, "tuple"));
        if (t && tuple && !strcmp(t, tuple)) return r;
    }
    return NULL;
}

/* The fingerprints of one row side by side, changed properties highlighted, and the pinned
 * cases' histograms before and after. */
static void side_by_side(FILE *f, const json_t *a, const json_t *b) {
    const json_t *fa = json_object_get(a, "fingerprint"), *fb = json_object_get(b, "fingerprint");
    int changed = 0;
    size_t i;
    json_t *p;
    json_array_foreach(fa, i, p) changed +=
        !json_equal(json_object_get(p, "value"), json_object_get(json_array_get(fb, i), "value"));
    fprintf(f, "<details%s><summary>", changed ? " open=\"open\"" : "");
    gck_html_json(f, json_object_get(a, "tuple"));
    fprintf(f, ": %d propert%s changed</summary>\n", changed, changed == 1 ? "y" : "ies");
    fputs("<table><tr><th>property</th><th>before</th><th>after</th></tr>\n", f);
    json_array_foreach(fa, i, p) {
        const json_t *q = json_array_get(fb, i), *va = json_object_get(p, "value"),
                     *vb = json_object_get(q, "value");
        fprintf(f, "<tr%s><td>", json_equal(va, vb) ? "" : " class=\"warn\"");
        gck_html_json(f, json_object_get(p, "property"));
        fputs("</td><td>", f);
        gck_html_json(f, va);
        fputs("</td><td>", f);
        gck_html_json(f, vb);
        fputs("</td></tr>\n", f);
    }
    fputs("<tr><td>pinned cases by largest error/bound</td><td>", f);
    int64_t bins[GCK_RATIO_BINS];
    pinned_bins(json_object_get(a, "pinned"), bins);
    gck_html_ratio_histogram(f, bins);
    fputs("</td><td>", f);
    pinned_bins(json_object_get(b, "pinned"), bins);
    gck_html_ratio_histogram(f, bins);
    fputs("</td></tr></table></details>\n", f);
}

static void comparison_page(FILE *f, const json_t *a, const json_t *b, const json_t *notes,
                            const char *verdict, const char *smallest) {
    char title[1200];
    snprintf(title, sizeof title, "gemmcheck compare: %s -> %s",
             json_string_value(json_object_get(a, "backend")),
             json_string_value(json_object_get(b, "backend")));
    gck_html_begin(f, title);
    fprintf(f, "<p class=\"%s\"><b>verdict: ", json_array_size(notes) ? "warn" : "ok");
    gck_html_text(f, verdict);
    fputs("</b></p>\n", f);
    if (smallest && smallest[0]) {
        fputs("<p>The smallest case that reproduces a regression:</p>\n", f);
        gck_html_repro(f, smallest);
    }
    fprintf(f, "<h2>%zu differences</h2>\n<table><tr><th>class</th><th>what changed</th></tr>\n",
            json_array_size(notes));
    size_t i;
    json_t *n;
    json_array_foreach(notes, i, n) {
        const char *cls = json_string_value(json_object_get(n, "class"));
        bool reg = json_is_true(json_object_get(n, "regression"));
        fprintf(f, "<tr class=\"%s\"><td>%s", difference_class(cls ? cls : "", reg),
                reg ? "REGRESSION: " : "");
        gck_html_text(f, cls);
        fputs("</td><td>", f);
        gck_html_json(f, json_object_get(n, "text"));
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n<h2>Fingerprints side by side</h2>\n", f);
    const json_t *ra = json_object_get(json_object_get(a, "probed"), "rows"),
                 *rb = json_object_get(json_object_get(b, "probed"), "rows");
    json_t *r;
    json_array_foreach(ra, i, r) {
        const json_t *o = row_named(rb, json_string_value(json_object_get(r, "tuple")));
        if (o) side_by_side(f, r, o);
    }
    gck_html_end(f);
}

static bool render_certificate(FILE *f, const void *cert) {
    certificate_page(f, cert);
    return true;
}

bool gck_certify_html(const json_t *cert, const char *path, char *err, size_t len) {
    return gck_output_write(path, render_certificate, cert, err, len);
}

typedef struct comparison {
    const json_t *a, *b, *notes;
    const char *verdict, *smallest;
} comparison;

static bool render_comparison(FILE *f, const void *ctx) {
    const comparison *c = ctx;
    comparison_page(f, c->a, c->b, c->notes, c->verdict, c->smallest);
    return true;
}

bool gck_compare_html(const json_t *a, const json_t *b, const json_t *notes, const char *verdict,
                      const char *smallest, const char *path, char *err, size_t len) {
    comparison c = {a, b, notes, verdict, smallest};
    return gck_output_write(path, render_comparison, &c, err, len);
}
