/* Certificates (gemmcheck certify) and their comparison (gemmcheck compare) (internal: private to
 * src/cli/). */
#ifndef GEMMCHECK_CLI_CERTIFY_H
#define GEMMCHECK_CLI_CERTIFY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "gemmcheck/backend.h"

/** The version of the certificate's layout; compare refuses two of different versions. */
#define GCK_CERTIFICATE_VERSION 2

/** The certificate as one self-contained HTML page (src/cli/certify_html.c). */
bool gck_certify_html(const json_t *cert, const char *path, char *err, size_t len);
/** The comparison as a page: the verdict, the smallest reproducer of a regression (or NULL),
 *  every difference ({class, regression, text} records), the fingerprints side by side. */
bool gck_compare_html(const json_t *a, const json_t *b, const json_t *notes, const char *verdict,
                      const char *smallest, const char *path, char *err, size_t len);

int gck_cmd_certify(int argc, char **argv);
int gck_cmd_compare(int argc, char **argv);

#endif
