/* gemmcheck merge: one report from the reports of shards (fuzz/merge.c checks each input). */
#include <stdio.h>
#include <string.h>

#include "campaign.h"
#include "cli.h"

static const char merge_help[] =
    "usage: gemmcheck merge --report OUT.json [--junit OUT.xml] [--allow-mixed]\n"
    "                       [--allow-overlap] SHARD.json...\n"
    "\n"
    "Merges the JSON reports of shards (gemmcheck fuzz --shard I/N) into one: counts add up,\n"
    "findings are deduplicated by signature keeping the smallest reproducer. Every input is\n"
    "checked against the report's schema and invariants first. Any number of inputs.\n"
    "\n"
    "  --allow-mixed     merge shards of different seeds or gemmcheck versions (refused:\n"
    "                    they are not parts of one campaign)\n"
    "  --allow-overlap   merge the same shard twice, or shards of one seed whose case\n"
    "                    streams share cases (refused: their cases would count twice)\n"
    "\n"
    "Shards of a seed missing from the inputs are noted on stderr.\n"
    "Exit status: 0 no findings, 1 findings, 2 bad input.\n";

int gck_cmd_merge(int argc, char **argv) {
    const char *cmd = "merge", *report = NULL, *junit = NULL;
    gck_opt_scan sc = {cmd, argc, argv, 1, false};
    gck_merge m;
    memset(&m, 0, sizeof m);
    int nin = 0;
    for (; sc.i < argc; sc.i++) {
        const char *a = argv[sc.i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(merge_help, stdout);
            return GCK_EXIT_OK;
        }
        if (gck_opt_value(&sc, "--report", &report) || gck_opt_value(&sc, "--junit", &junit)) {
            if (sc.error) return GCK_EXIT_USAGE;
        } else if (!strcmp(a, "--allow-mixed")) {
            m.allow_mixed = true;
        } else if (!strcmp(a, "--allow-overlap")) {
            m.allow_overlap = true;
        } else if (a[0] == '-' && a[1] == '-' && a[2]) {
            return gck_cli_usage_error(cmd, "unknown option '%s'", a);
        } else {
            nin++;
        }
    }
    if (!report) return gck_cli_usage_error(cmd, "missing --report OUT.json");
    if (nin == 0) return gck_cli_usage_error(cmd, "no shard reports given");
    char msg[1200];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--report") || !strcmp(a, "--junit")) {
            i++;
            continue;
        }
        if (!strncmp(a, "--", 2) && a[2]) continue;
        if (!gck_merge_add(&m, a, msg, sizeof msg)) {
            gck_merge_free(&m);
            return gck_cli_usage_error(cmd, "%s", msg);
        }
    }
    gck_merge_print_missing(&m, stderr);
    gck_campaign_result *r = &m.total;
    if (!gck_report_write_json(r, report, "gemmcheck merge", msg, sizeof msg) ||
        (junit && !gck_report_write_junit(r, junit, msg, sizeof msg))) {
        gck_merge_free(&m);
        return gck_cli_usage_error(cmd, "%s", msg);
    }
    gck_report_print_summary(r, stdout);
    int rc = r->nfindings ? GCK_EXIT_FINDINGS : GCK_EXIT_OK;
    gck_merge_free(&m);
    return rc;
}
