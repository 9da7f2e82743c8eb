/* Writing the tool's files (output.h): whole or not at all, and JSON text of any bytes. */
#define _DEFAULT_SOURCE 1
#include "output.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "text.h"

json_t *gck_json_text(const char *s) {
    char *clean = gck_text_cleaned(s);
    if (!clean) return json_string("(out of memory)");
    json_t *j = json_string(clean);
    free(clean);
    return j;
}

/* Reports are written whole or not at all: into "PATH.tmp.PID" beside PATH, renamed over PATH
 * once complete, so that a kill mid-write, a full disk or two campaigns given the same --report
 * never leave a truncated file (the last complete one wins). A PATH that exists and is not a
 * regular file (/dev/stdout, a FIFO) is written directly. */
static bool written_in_place(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && !S_ISREG(st.st_mode);
}

static void temp_name(const char *path, char *buf, size_t len) {
    snprintf(buf, len, "%s.tmp.%ld", path, (long)getpid());
}

static FILE *open_output(const char *path, char *msg, size_t len) {
    char tmp[PATH_MAX];
    temp_name(path, tmp, sizeof tmp);
    const char *name = written_in_place(path) ? path : tmp;
    FILE *f = fopen(name, "w");
    if (!f) snprintf(msg, len, "cannot write %s: %s", name, strerror(errno));
    return f;
}

static bool close_output(FILE *f, const char *path, char *msg, size_t len) {
    bool ok = !ferror(f);
    ok = fclose(f) == 0 && ok;
    if (!ok) snprintf(msg, len, "cannot write %s", path);
    if (!written_in_place(path)) {
        char tmp[PATH_MAX];
        temp_name(path, tmp, sizeof tmp);
        if (ok && rename(tmp, path) != 0) {
            snprintf(msg, len, "cannot write %s: %s", path, strerror(errno));
            ok = false;
        }
        if (!ok) remove(tmp);
    }
    return ok;
}

bool gck_output_write(const char *path, gck_output_render render, const void *ctx, char *msg,
                      size_t len) {
    FILE *f = open_output(path, msg, len);
    if (!f) return false;
    if (render(f, ctx)) return close_output(f, path, msg, len);
    fclose(f); /* not written whole: nothing replaces PATH */
    char tmp[PATH_MAX];
    temp_name(path, tmp, sizeof tmp);
    if (!written_in_place(path)) remove(tmp);
    snprintf(msg, len, "cannot write %s", path);
    return false;
}

typedef struct json_job {
    const json_t *root;
    size_t flags;
} json_job;

static bool render_json(FILE *f, const void *ctx) {
    const json_job *j = ctx;
    return json_dumpf(j->root, f, j->flags) == 0;
}

bool gck_output_json(const json_t *root, const char *path, size_t flags, char *msg, size_t len) {
    json_job j = {root, flags};
    return gck_output_write(path, render_json, &j, msg, len);
}
