/* Text that comes from a backend: error messages, versions, table entries. It may be
 * anything: unterminated, invalid UTF-8, terminal escapes, markup. gemmcheck passes on only
 * printable, valid UTF-8, with every other byte written as \xNN, so that reports stay valid
 * JSON and XML and terminals print it as it is (internal: for src/util/ and fuzz/, kernels/,
 * src/backends/, src/check/, src/cli/, src/core/, src/io/, src/run/). */
#ifndef GEMMCHECK_UTIL_TEXT_H
#define GEMMCHECK_UTIL_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "gemmcheck/status.h"

/** Write the first `slen` bytes of src (or up to its NUL) into dst (always terminated,
 *  truncated to fit), control characters and bytes of invalid UTF-8 escaped as \xNN. */
void gck_text_clean(char *dst, size_t dlen, const char *src, size_t slen);
/** gck_text_clean of the whole string s into a new buffer (the caller frees it); NULL when
 *  memory runs out. */
char *gck_text_cleaned(const char *s);
/** s as XML character data or attribute value (also what the HTML pages write, in XHTML
 *  syntax): cleaned as gck_text_clean does, the markup characters & < > " ' escaped. */
void gck_text_xml(FILE *f, const char *s);
/** gck_text_clean in place on a buffer of `len` bytes that may lack its NUL. */
void gck_text_clean_inplace(char *buf, size_t len);

/** Write a one-line message (printf format) into msg, when msg is not NULL, and return s: the
 *  error path of every parser and validator. */
gck_status gck_fail(gck_status s, char *msg, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
