/* Writing the tool's files: every report,
 * page and certificate is written whole or not at all — into "PATH.tmp.PID" beside PATH and
 * renamed over it once complete, so that a kill mid-write, a full disk or two runs given the
 * same file never leave a truncated one (a PATH that is not a regular file, such as
 * /dev/stdout, is written directly) — and JSON strings are made of any bytes (internal: for fuzz/
 * and src/certify/, src/cli/). */
#ifndef GEMMCHECK_FUZZ_OUTPUT_H
#define GEMMCHECK_FUZZ_OUTPUT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/** Renders a file's content into f; false when it could not (then nothing replaces PATH). */
typedef bool (*gck_output_render)(FILE *f, const void *ctx);

/** Open PATH, render, close: true when PATH now holds the whole content; else false, and the
 *  reason in msg. */
bool gck_output_write(const char *path, gck_output_render render, const void *ctx, char *msg,
                      size_t len);
/** A JSON document as a file (json_dumpf's flags), through gck_output_write. */
bool gck_output_json(const json_t *root, const char *path, size_t flags, char *msg, size_t len);
/** A JSON string of any bytes: invalid UTF-8 and control characters written as \xNN. */
json_t *gck_json_text(const char *s);

#endif
