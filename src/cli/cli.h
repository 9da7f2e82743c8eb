/* Command-line front end: shared conventions of every subcommand. */
#ifndef GEMMCHECK_CLI_H
#define GEMMCHECK_CLI_H

#include <stdbool.h>

/** Exit codes of the gemmcheck command (README.md, "Exit status"). */
typedef enum gck_exit {
    GCK_EXIT_OK = 0,       /**< no findings */
    GCK_EXIT_FINDINGS = 1, /**< findings */
    GCK_EXIT_USAGE = 2,    /**< usage or set-up error: bad arguments, unreadable files, ... */
    GCK_EXIT_INTERNAL = 3  /**< a bug in gemmcheck */
} gck_exit;

/** Print "gemmcheck <cmd>: <message>" on stderr as one line and return GCK_EXIT_USAGE. */
int gck_cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/** Option scanner for "--name value" and "--name=value". On a match stores the value in
 *  *value, advances *i and returns true; a missing value or a repeated option is reported
 *  through *error (a usage message has been printed). */
typedef struct gck_opt_scan {
    const char *cmd;
    int argc;
    char **argv;
    int i;
    bool error;
} gck_opt_scan;

bool gck_opt_value(gck_opt_scan *s, const char *name, const char **value);

/** Parse a decimal number to the nearest binary64 (whole string, finite). */
bool gck_parse_double(const char *text, double *out);
/** Parse the value of option `opt` as a decimal number >= lo; on failure print the usage error
 *  "--opt 'v' must be a number >= lo" and return false. */
bool gck_parse_real_opt(const char *cmd, const char *opt, const char *v, double lo, double *out);
/** Parse a non-negative decimal integer (whole string, fits in long long). */
bool gck_parse_count(const char *text, long long *out);

int gck_cmd_oracle(int argc, char **argv);
int gck_cmd_repro(int argc, char **argv);
int gck_cmd_backends(int argc, char **argv);
int gck_cmd_fuzz(int argc, char **argv);
int gck_cmd_merge(int argc, char **argv);
int gck_cmd_shrink(int argc, char **argv);

#endif
