/* libFuzzer harness: the reproducer-string parser must refuse or accept any text without
 * crashing, and every accepted string must round-trip (format(parse(s)) parses to the same
 * spec). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gemmcheck/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char text[4200];
    if (size >= sizeof text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    gck_spec s, back;
    char msg[512], a[2048], b[2048];
    if (gck_spec_parse(text, &s, msg, sizeof msg) != GCK_OK) return 0;
    gck_spec_format(&s, a, sizeof a);
    if (gck_spec_parse(a, &back, msg, sizeof msg) != GCK_OK) abort();
    gck_spec_format(&back, b, sizeof b);
    if (strcmp(a, b) != 0) abort();
    return 0;
}
