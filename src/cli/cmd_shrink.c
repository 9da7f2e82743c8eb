/* gemmcheck shrink: the smallest case that still fails the same way (fuzz/shrink.c). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "shrink.h"
#include "wire.h"

static const char shrink_help[] =
    "usage: gemmcheck shrink --backend SPEC [--kind KIND] [--time S] [--timeout S]\n"
    "                        [--strict-ieee] [--verbose] 'gck1 ...'\n"
    "\n"
    "  --timeout S   deadline of one backend call (default: from the call's multiply-adds and\n"
    "                the bytes it may touch, at least 10 s)\n"
    "\n"
    "Minimises a failing case (dimensions, K, leading dimensions, offsets, batch, values towards\n"
    "simpler distributions) while it keeps failing with the same kind (--kind, default: the\n"
    "first kind it shows), and prints the minimal reproducer. The attempts share one worker\n"
    "(a new one after a crash; a hang's attempts each get a fresh one); the minimal case is one\n"
    "that fails in a fresh worker too, as `repro` runs it (docs/FUZZING.md).\n"
    "Exit status: 1 minimised (the case fails), 0 the case does not fail, 2 usage or set-up.\n";

int gck_cmd_shrink(int argc, char **argv) {
    const char *cmd = "shrink", *backend = NULL, *kind_s = NULL, *time_s = NULL, *timeout = NULL,
               *text = NULL;
    gck_shrink_options o = {.time_limit = 120, .call_timeout = 0};
    bool help;
    int nargs;
    const gck_opt opts[] = {{"--strict-ieee", .flag = &o.strict_ieee, .flag_value = true},
                            {"--verbose", .flag = &o.verbose, .flag_value = true},
                            {"--backend", .value = &backend},
                            {"--kind", .value = &kind_s},
                            {"--time", .value = &time_s},
                            {"--timeout", .value = &timeout}};
    gck_opt_spec spec = {cmd, opts, (int)(sizeof opts / sizeof opts[0]), &text, 1, GCK_ONE_CASE};
    if (gck_opt_parse(&spec, argc, argv, &nargs, &help)) return GCK_EXIT_USAGE;
    if (help) {
        fputs(shrink_help, stdout);
        return GCK_EXIT_OK;
    }
    if (!backend) return gck_cli_usage_error(cmd, "missing --backend");
    if (!text) return gck_cli_usage_error(cmd, "missing the case ('gck1 ...')");
    gck_kind kind = GCK_KIND_COUNT;
    if (kind_s && !gck_kind_parse(kind_s, &kind))
        return gck_cli_usage_error(cmd, "--kind '%s' is not a finding kind", kind_s);
    if (time_s && !gck_parse_real_opt(cmd, "--time", time_s, 0, &o.time_limit))
        return GCK_EXIT_USAGE;
    if (timeout && !gck_parse_real_opt(cmd, "--timeout", timeout, 0.1, &o.call_timeout))
        return GCK_EXIT_USAGE;
    gck_spec start, best;
    char msg[1024];
    if (gck_spec_parse(text, &start, msg, sizeof msg) != GCK_OK)
        return gck_cli_usage_error(cmd, "bad case: %s", msg);
    o.backend = backend;
    int runs = 0;
    gck_shrink_status st = gck_shrink(&o, &start, &kind, &best, &runs, msg, sizeof msg);
    if (st == GCK_SHRINK_SETUP_ERROR) return gck_cli_usage_error(cmd, "%s", msg);
    if (st == GCK_SHRINK_NOT_FAILING) {
        printf("not failing: %s on %s%s%s\n", msg, backend, kind_s ? " with kind " : "",
               kind_s ? kind_s : "");
        return GCK_EXIT_OK;
    }
    char repro[2048];
    gck_spec_format(&best, repro, sizeof repro);
    char line[3000];
    gck_repro_command(line, sizeof line, backend, "", repro);
    printf("kind:     %s\nruns:     %d\nminimal:  %s\nrepro:    %s\n", gck_kind_name(kind), runs,
           repro, line);
    return GCK_EXIT_FINDINGS;
}
