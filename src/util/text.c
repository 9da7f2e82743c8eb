/* Cleaning backend text. */
#include "text.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bytes of the valid UTF-8 sequence starting at s (at most n bytes available), or 0. Overlong
 * forms, surrogates and code points above U+10FFFF are invalid (RFC 3629). */
static size_t utf8_len(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t len;
    unsigned cp, min;
    if (c < 0x80) return 1;
    if ((c & 0xe0) == 0xc0)
        len = 2, cp = c & 0x1f, min = 0x80;
    else if ((c & 0xf0) == 0xe0)
        len = 3, cp = c & 0x0f, min = 0x800;
    else if ((c & 0xf8) == 0xf0)
        len = 4, cp = c & 0x07, min = 0x10000;
    else
        return 0;
    if (len > n) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    if (cp >= 0x80 && cp < 0xa0) return 0;      /* C1 controls */
    if (cp == 0xfffe || cp == 0xffff) return 0; /* not characters; XML 1.0 excludes them */
    return len;
}

void gck_text_clean(char *dst, size_t dlen, const char *src, size_t slen) {
    if (dlen == 0) return;
    const unsigned char *s = (const unsigned char *)src;
    size_t n = 0, o = 0;
    while (n < slen && s[n]) n++;
    for (size_t i = 0; i < n;) {
        size_t l = utf8_len(s + i, n - i);
        bool printable = l > 1 || (l == 1 && s[i] >= 0x20 && s[i] != 0x7f);
        if (printable) {
            if (o + l >= dlen) break;
            memcpy(dst + o, s + i, l);
            o += l;
            i += l;
        } else {
            if (o + 4 >= dlen) break;
            snprintf(dst + o, 5, "\\x%02x", s[i]);
            o += 4;
            i++;
        }
    }
    dst[o] = '\0';
}

char *gck_text_cleaned(const char *s) {
    size_t n = strlen(s), cap = 4 * n + 1; /* each byte at most \xNN */
    char *clean = malloc(cap);
    if (clean) gck_text_clean(clean, cap, s, n);
    return clean;
}

void gck_text_clean_inplace(char *buf, size_t len) {
    if (len == 0) return;
    char *copy = malloc(len);
    if (!copy) {
        buf[len - 1] = '\0';
        return;
    }
    memcpy(copy, buf, len);
    gck_text_clean(buf, len, copy, len);
    free(copy);
}

gck_status gck_fail(gck_status s, char *msg, size_t len, const char *fmt, ...) {
    if (msg && len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, len, fmt, ap);
        va_end(ap);
    }
    return s;
}

/* Text as XML character data or attribute value: cleaned to printable, valid UTF-8 (any other
 * byte written as \xNN; XML 1.0 cannot carry control characters), markup escaped. */
void gck_text_xml(FILE *f, const char *s) {
    char *clean = gck_text_cleaned(s);
    if (!clean) return;
    for (const char *p = clean; *p; p++) {
        switch (*p) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        default: fputc(*p, f);
        }
    }
    free(clean);
}
