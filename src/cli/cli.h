/* Command-line front end: shared conventions of every subcommand (internal: private to
 * src/cli/). */
#ifndef GEMMCHECK_CLI_CLI_H
#define GEMMCHECK_CLI_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "exitcode.h"

/** Print "gemmcheck <cmd>: <message>" on stderr as one line and return GCK_EXIT_USAGE. */
int gck_cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/** One option of a command: a flag (`flag` set: stores flag_value), a value given once
 *  (`value`: --name V or --name=V), or a value that may repeat (`list`, `count`, at most `max`). */
typedef struct gck_opt {
    const char *name;
    bool *flag;
    bool flag_value;
    const char **value;
    const char **list;
    int *count;
    int max;
} gck_opt;

/** What a command accepts: its options, and at most max_args plain arguments, stored in args. */
typedef struct gck_opt_spec {
    const char *cmd;
    const gck_opt *opts;
    int nopts;
    const char **args;
    int max_args;
    const char *too_many; /**< the error when more plain arguments are given */
} gck_opt_spec;

/** The error for a second plain argument where one case is expected. */
#define GCK_ONE_CASE "more than one case given; quote the reproducer string: 'gck1 ...'"

/** The one option parser of every command. Reads argv[1..]; an argument starting with "--" is an
 *  option, any other a plain argument. Returns GCK_EXIT_OK, or GCK_EXIT_USAGE after a one-line
 *  error (an unknown option, a missing value, a value given twice, too many arguments). On
 *  --help or -h sets *help and stops. *nargs receives the count of plain arguments. */
int gck_opt_parse(const gck_opt_spec *spec, int argc, char **argv, int *nargs, bool *help);

/** Parse a decimal number to the nearest binary64 (whole string, finite). */
bool gck_parse_double(const char *text, double *out);
/** Parse the value of option `opt` as a decimal number >= lo; on failure print the usage error
 *  "--opt 'v' must be a number >= lo" and return false. */
bool gck_parse_real_opt(const char *cmd, const char *opt, const char *v, double lo, double *out);
/** Parse a non-negative decimal integer (whole string, fits in long long). */
bool gck_parse_count(const char *text, long long *out);
/** --memory-budget and --thread-limit (docs/RESOURCES.md): "LO" or "LO:HI", a number of bytes
 *  with an optional K, M or G (powers of 1024) of at least 1, or a thread count from 0 to
 *  100000; *hi = *lo for one value. false after a one-line usage error. */
bool gck_parse_budget(const char *cmd, const char *v, int64_t *lo, int64_t *hi);
bool gck_parse_thread_limit(const char *cmd, const char *v, int *lo, int *hi);
/** --tier: "stat" (the default: improbable_error is a finding) or "hard" (*hard set: it is
 *  counted and reported, not a finding); NULL keeps the default. A usage error otherwise. */
int gck_cli_tier(const char *cmd, const char *text, bool *hard);

int gck_cmd_oracle(int argc, char **argv);
int gck_cmd_verify(int argc, char **argv);
int gck_cmd_repro(int argc, char **argv);
int gck_cmd_backends(int argc, char **argv);
int gck_cmd_fuzz(int argc, char **argv);
int gck_cmd_merge(int argc, char **argv);
int gck_cmd_shrink(int argc, char **argv);

#endif
