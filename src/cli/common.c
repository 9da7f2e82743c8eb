/* Helpers shared by the subcommands. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gck_cli_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "gemmcheck %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return GCK_EXIT_USAGE;
}

bool gck_opt_value(gck_opt_scan *s, const char *name, const char **value) {
    const char *arg = s->argv[s->i];
    size_t n = strlen(name);
    if (strncmp(arg, name, n) != 0 || (arg[n] != '\0' && arg[n] != '=')) return false;
    if (*value) {
        gck_cli_usage_error(s->cmd, "%s given twice", name);
        s->error = true;
        return true;
    }
    if (arg[n] == '=') {
        *value = arg + n + 1;
    } else if (s->i + 1 < s->argc) {
        *value = s->argv[++s->i];
    } else {
        gck_cli_usage_error(s->cmd, "%s needs a value", name);
        s->error = true;
    }
    return true;
}

bool gck_parse_double(const char *text, double *out) {
    if (!text || !*text) return false;
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (*end != '\0' || !isfinite(v)) return false;
    /* strtod rounds to nearest; a decimal beyond the range becomes ±Inf (rejected above). */
    *out = v;
    return true;
}

bool gck_parse_count(const char *text, long long *out) {
    if (!text || *text < '0' || *text > '9') return false;
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (*end != '\0' || errno == ERANGE) return false;
    *out = v;
    return true;
}

bool gck_parse_real_opt(const char *cmd, const char *opt, const char *v, double lo, double *out) {
    if (!gck_parse_double(v, out) || *out < lo) {
        gck_cli_usage_error(cmd, "%s '%s' must be a number >= %g", opt, v, lo);
        return false;
    }
    return true;
}
