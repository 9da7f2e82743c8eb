/* gemmcheck merge: one report from the reports of shards (fuzz/merge.c checks each input). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "campaign.h"
#include "cli.h"

static const char merge_help[] =
    "usage: gemmcheck merge --report OUT.json [--junit OUT.xml] [--matrix-csv OUT.csv]\n"
    "                       [--backends-csv OUT.csv] [--html OUT.html] [--allow-mixed]\n"
    "                       [--allow-overlap] [--allow-missing-shards]\n"
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
    "\n"
    "Exit status: 0 no findings, 1 findings, 2 bad input or missing shards.\n";

int gck_cmd_merge(int argc, char **argv) {
    const char *cmd = "merge", *report = NULL, *junit = NULL, *mcsv = NULL, *bcsv = NULL,
               *html = NULL;
    gck_merge m;
    memset(&m, 0, sizeof m);
    const gck_opt opts[] = {
        {"--allow-mixed", .flag = &m.allow_mixed, .flag_value = true},
        {"--allow-overlap", .flag = &m.allow_overlap, .flag_value = true},
        {"--allow-missing-shards", .flag = &m.allow_missing, .flag_value = true},
        {"--report", .value = &report},
        {"--junit", .value = &junit},
        {"--html", .value = &html},
        {"--matrix-csv", .value = &mcsv},
        {"--backends-csv", .value = &bcsv}};
    const char **inputs = calloc((size_t)(argc > 0 ? argc : 1), sizeof *inputs);
    if (!inputs) return gck_cli_usage_error(cmd, "out of memory");
    gck_opt_spec spec = {cmd, opts, (int)(sizeof opts / sizeof opts[0]), inputs, argc, NULL};
    int nin;
    bool help;
    int rc = gck_opt_parse(&spec, argc, argv, &nin, &help);
    if (rc == GCK_EXIT_OK && help)
        printf(merge_help, GCK_REPORT_SCHEMA_VERSION);
    else if (rc == GCK_EXIT_OK && !report)
        rc = gck_cli_usage_error(cmd, "missing --report OUT.json");
    else if (rc == GCK_EXIT_OK && nin == 0)
        rc = gck_cli_usage_error(cmd, "no shard reports given");
    char msg[1200];
    for (int i = 0; rc == GCK_EXIT_OK && !help && i < nin; i++)
        if (!gck_merge_add(&m, inputs[i], msg, sizeof msg))
            rc = gck_cli_usage_error(cmd, "%s", msg);
    free(inputs);
    if (rc != GCK_EXIT_OK || help) {
        gck_merge_free(&m);
        return rc;
    }
    if (gck_merge_missing(&m, stderr, !m.allow_missing) > 0 && !m.allow_missing) {
        gck_merge_free(&m);
        return GCK_EXIT_USAGE; /* no report: the set is incomplete */
    }
    gck_campaign_result *r = &m.total;
    if (!gck_report_write_json(r, report, "gemmcheck merge", msg, sizeof msg) ||
        (junit && !gck_report_write_junit(r, junit, msg, sizeof msg)) ||
        (html && !gck_report_write_html(r, html, "gemmcheck merge", msg, sizeof msg)) ||
        (mcsv && !gck_report_write_matrix_csv(r, mcsv, msg, sizeof msg)) ||
        (bcsv && !gck_report_write_backends_csv(r, bcsv, msg, sizeof msg))) {
        gck_merge_free(&m);
        return gck_cli_usage_error(cmd, "%s", msg);
    }
    gck_report_print_summary(r, stdout);
    rc = r->nfindings ? GCK_EXIT_FINDINGS : GCK_EXIT_OK;
    gck_merge_free(&m);
    return rc;
}
