/* gemmcheck merge: one report from the reports of shards (fuzz/merge.c checks each input). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "known.h"
#include "merge.h"
#include "report.h"
#include "result.h"

static const char merge_help[] =
    "usage: gemmcheck merge --report OUT.json [--junit OUT.xml] [--matrix-csv OUT.csv]\n"
    "                       [--backends-csv OUT.csv] [--html OUT.html] [--allow-mixed]\n"
    "                       [--allow-overlap] [--allow-missing-shards] [--known FILE]...\n"
    "                       [--baseline REPORT.json]...\n"
    "                       SHARD.json...\n"
    "\n"
    "Merges the JSON reports of shards (gemmcheck fuzz --shard I/N) into one: counts add up,\n"
    "findings are deduplicated by signature keeping the smallest reproducer, and each shard's\n"
    "environment (the machine it ran on) is kept. Every input is checked against the report's\n"
    "schema (docs/report.schema.json, schema_version %d) and invariants first. Any number of\n"
    "inputs. --junit, --html, --matrix-csv and --backends-csv as for gemmcheck fuzz.\n"
    "\n"
    "  --allow-mixed     merge shards of different seeds or gemmcheck versions (refused:\n"
    "                    they are not parts of one campaign)\n"
    "  --allow-overlap   merge the same shard twice, or shards of one seed whose case\n"
    "                    streams share cases (refused: their cases would count twice)\n"
    "  --allow-missing-shards\n"
    "                    merge a set from which shards of summary.shards are missing (refused:\n"
    "                    a lost task of a Slurm array would otherwise look like a pass; with\n"
    "                    the option each missing shard is noted on stderr)\n"
    "  --known FILE, --baseline REPORT\n"
    "                    mark the merged findings afresh, as gemmcheck fuzz does (an `overread`\n"
    "                    entry re-runs crashes: the backend must be there); without them a\n"
    "                    finding stays known when every shard that found it marked it known\n"
    "\n"
    "Exit status: 0 no findings (or known ones only), 1 findings, 2 bad input or missing\n"
    "shards, 3 internal errors of gemmcheck in a shard (their texts in the summary).\n";

/* The merged report's files; false with the reason in msg. */
static bool write_outputs(const gck_campaign_result *r, const char *const files[5], char *msg,
                          size_t len) {
    const char *report = files[0], *junit = files[1], *html = files[2], *mcsv = files[3],
               *bcsv = files[4];
    return gck_report_write_json(r, report, "gemmcheck merge", msg, len) &&
           (!junit || gck_report_write_junit(r, junit, msg, len)) &&
           (!html || gck_report_write_html(r, html, "gemmcheck merge", msg, len)) &&
           (!mcsv || gck_report_write_matrix_csv(r, mcsv, msg, len)) &&
           (!bcsv || gck_report_write_backends_csv(r, bcsv, msg, len));
}

/* The merged result: known findings marked, files written, summary printed; the exit status. */
static int finish(gck_merge *m, const char *const files[5], gck_known *known) {
    gck_campaign_result *r = &m->total;
    char msg[1200];
    if (known && !gck_known_apply(known, r)) return gck_cli_usage_error("merge", "out of memory");
    if (!write_outputs(r, files, msg, sizeof msg)) return gck_cli_usage_error("merge", "%s", msg);
    gck_report_print_summary(r, stdout);
    gck_report_print_verdict(r, stdout);
    return r->internal_errors               ? GCK_EXIT_INTERNAL /* as the shards' campaigns */
           : gck_result_unknown_findings(r) ? GCK_EXIT_FINDINGS
                                            : GCK_EXIT_OK;
}

int gck_cmd_merge(int argc, char **argv) {
    const char *cmd = "merge", *files[5] = {0}, *known[GCK_MAX_KNOWN], *base[GCK_MAX_KNOWN];
    int nknown = 0, nbase = 0;
    gck_merge m;
    memset(&m, 0, sizeof m);
    const gck_opt opts[] = {
        {"--allow-mixed", .flag = &m.allow_mixed, .flag_value = true},
        {"--allow-overlap", .flag = &m.allow_overlap, .flag_value = true},
        {"--allow-missing-shards", .flag = &m.allow_missing, .flag_value = true},
        {"--report", .value = &files[0]},
        {"--junit", .value = &files[1]},
        {"--html", .value = &files[2]},
        {"--matrix-csv", .value = &files[3]},
        {"--backends-csv", .value = &files[4]},
        {"--known", .list = known, .count = &nknown, .max = GCK_MAX_KNOWN},
        {"--baseline", .list = base, .count = &nbase, .max = GCK_MAX_KNOWN}};
    const char **inputs = calloc((size_t)(argc > 0 ? argc : 1), sizeof *inputs);
    if (!inputs) return gck_cli_usage_error(cmd, "out of memory");
    gck_opt_spec spec = {cmd, opts, (int)(sizeof opts / sizeof opts[0]), inputs, argc, NULL};
    int nin;
    bool help;
    int rc = gck_opt_parse(&spec, argc, argv, &nin, &help);
    if (rc == GCK_EXIT_OK && help)
        printf(merge_help, GCK_REPORT_SCHEMA_VERSION);
    else if (rc == GCK_EXIT_OK && !files[0])
        rc = gck_cli_usage_error(cmd, "missing --report OUT.json");
    else if (rc == GCK_EXIT_OK && nin == 0)
        rc = gck_cli_usage_error(cmd, "no shard reports given");
    char msg[1200];
    gck_known *k = NULL;
    if (rc == GCK_EXIT_OK && !help) {
        k = gck_known_open(known, nknown, base, nbase, msg, sizeof msg);
        if (!k && msg[0]) rc = gck_cli_usage_error(cmd, "%s", msg);
    }
    for (int i = 0; rc == GCK_EXIT_OK && !help && i < nin; i++)
        if (!gck_merge_add(&m, inputs[i], msg, sizeof msg))
            rc = gck_cli_usage_error(cmd, "%s", msg);
    free(inputs);
    if (rc == GCK_EXIT_OK && !help && gck_merge_missing(&m, stderr, !m.allow_missing) > 0 &&
        !m.allow_missing)
        rc = GCK_EXIT_USAGE; /* no report: the set is incomplete */
    else if (rc == GCK_EXIT_OK && !help)
        rc = finish(&m, files, k);
    gck_known_free(k);
    gck_merge_free(&m);
    return rc;
}
