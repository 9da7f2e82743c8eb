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

/* Whether arg is option `name` ("--name" or "--name=value"); *inline_value points after '='. */
static bool is_option(const char *arg, const char *name, const char **inline_value) {
    size_t n = strlen(name);
    if (strncmp(arg, name, n) != 0 || (arg[n] != '\0' && arg[n] != '=')) return false;
    *inline_value = arg[n] == '=' ? arg + n + 1 : NULL;
    return true;
}

/* The value of option o at argv[*i] (inline or the next argument) into its target. */
static int take_value(const gck_opt_spec *spec, const gck_opt *o, int argc, char **argv, int *i,
                      const char *inline_value) {
    const char *v = inline_value;
    if (!v) {
        if (*i + 1 >= argc) return gck_cli_usage_error(spec->cmd, "%s needs a value", o->name);
        v = argv[++*i];
    }
    if (o->list) {
        if (*o->count >= o->max)
            return gck_cli_usage_error(spec->cmd, "at most %d %s options", o->max, o->name);
        o->list[(*o->count)++] = v;
        return GCK_EXIT_OK;
    }
    if (*o->value) return gck_cli_usage_error(spec->cmd, "%s given twice", o->name);
    *o->value = v;
    return GCK_EXIT_OK;
}

int gck_opt_parse(const gck_opt_spec *spec, int argc, char **argv, int *nargs, bool *help) {
    *nargs = 0;
    *help = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            *help = true;
            return GCK_EXIT_OK;
        }
        if (strncmp(a, "--", 2) != 0) {
            if (*nargs >= spec->max_args)
                return spec->max_args ? gck_cli_usage_error(spec->cmd, "%s", spec->too_many)
                                      : gck_cli_usage_error(spec->cmd,
                                                            "unknown argument '%s' (see gemmcheck "
                                                            "%s --help)",
                                                            a, spec->cmd);
            spec->args[(*nargs)++] = a;
            continue;
        }
        const gck_opt *o = NULL;
        const char *inline_value = NULL;
        for (int k = 0; k < spec->nopts && !o; k++)
            if (is_option(a, spec->opts[k].name, &inline_value)) o = &spec->opts[k];
        if (!o)
            return gck_cli_usage_error(spec->cmd, "unknown argument '%s' (see gemmcheck %s --help)",
                                       a, spec->cmd);
        if (o->flag) {
            if (inline_value) return gck_cli_usage_error(spec->cmd, "%s takes no value", o->name);
            *o->flag = o->flag_value;
        } else if (take_value(spec, o, argc, argv, &i, inline_value) != GCK_EXIT_OK) {
            return GCK_EXIT_USAGE;
        }
    }
    return GCK_EXIT_OK;
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

/* One amount: digits and an optional K, M or G suffix (powers of 1024), up to `max`. */
static bool parse_amount(const char *t, size_t n, bool suffix, long long max, long long *out) {
    char buf[32];
    if (n == 0 || n >= sizeof buf) return false;
    memcpy(buf, t, n);
    buf[n] = '\0';
    long long scale = 1;
    char last = buf[n - 1];
    if (suffix && (last == 'K' || last == 'M' || last == 'G')) {
        scale = last == 'K' ? 1LL << 10 : last == 'M' ? 1LL << 20 : 1LL << 30;
        buf[n - 1] = '\0';
    }
    long long v;
    if (!gck_parse_count(buf, &v) || v > max / scale) return false;
    *out = v * scale;
    return true;
}

/* "LO" or "LO:HI" of amounts in [min, max]. */
static bool parse_range(const char *v, bool suffix, long long min, long long max, long long *lo,
                        long long *hi) {
    if (!v) return false;
    const char *colon = strchr(v, ':');
    size_t n = colon ? (size_t)(colon - v) : strlen(v);
    if (!parse_amount(v, n, suffix, max, lo)) return false;
    *hi = *lo;
    if (colon && !parse_amount(colon + 1, strlen(colon + 1), suffix, max, hi)) return false;
    return *lo >= min && *hi >= *lo;
}

bool gck_parse_budget(const char *cmd, const char *v, int64_t *lo, int64_t *hi) {
    long long a, b;
    if (!parse_range(v, true, 1, 1LL << 50, &a, &b)) {
        gck_cli_usage_error(cmd,
                            "--memory-budget '%s' must be bytes (K, M, G: powers of 1024) of at "
                            "least 1, or LO:HI with LO <= HI",
                            v ? v : "");
        return false;
    }
    *lo = a;
    *hi = b;
    return true;
}

bool gck_parse_thread_limit(const char *cmd, const char *v, int *lo, int *hi) {
    long long a, b;
    if (!parse_range(v, false, 0, 100000, &a, &b)) {
        gck_cli_usage_error(cmd,
                            "--thread-limit '%s' must be a thread count from 0 to 100000, or "
                            "LO:HI with LO <= HI",
                            v ? v : "");
        return false;
    }
    *lo = (int)a;
    *hi = (int)b;
    return true;
}

bool gck_parse_real_opt(const char *cmd, const char *opt, const char *v, double lo, double *out) {
    if (!gck_parse_double(v, out) || *out < lo) {
        gck_cli_usage_error(cmd, "%s '%s' must be a number >= %g", opt, v, lo);
        return false;
    }
    return true;
}

int gck_cli_tier(const char *cmd, const char *text, bool *hard) {
    *hard = false;
    if (!text || !strcmp(text, "stat")) return GCK_EXIT_OK;
    if (!strcmp(text, "hard")) {
        *hard = true;
        return GCK_EXIT_OK;
    }
    return gck_cli_usage_error(cmd, "--tier '%s' must be stat or hard", text);
}
