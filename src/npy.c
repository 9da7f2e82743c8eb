/* Strict .npy reader and writer. The format (NEP 1, numpy.lib.format): the magic "\x93NUMPY",
 * a major and minor version byte, the header length (2 bytes little-endian in 1.x, 4 bytes in
 * 2.x and 3.x), then a Python dict literal with exactly the keys 'descr', 'fortran_order' and
 * 'shape', padded with spaces and ended by '\n', then the raw data. */
#include "npy.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const descr_names[] = {"<f2", "<f4", "<f8", "<u2"};
static const int item_sizes[] = {2, 4, 8, 2};

const char *gck_npy_descr(gck_npy_dtype t) { return descr_names[t]; }
int gck_npy_itemsize(gck_npy_dtype t) { return item_sizes[t]; }

static gck_status fail(gck_status s, char *msg, size_t len, const char *fmt, ...) {
    if (msg && len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, len, fmt, ap);
        va_end(ap);
    }
    return s;
}

typedef struct cursor {
    const char *p, *end;
} cursor;

static void skip_ws(cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t')) c->p++;
}

static bool eat(cursor *c, char ch) {
    skip_ws(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return true;
    }
    return false;
}

/* A quoted Python string without escapes; returns its length or -1. */
static int read_str(cursor *c, char *out, size_t cap) {
    skip_ws(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return -1;
    char q = *c->p++;
    size_t n = 0;
    while (c->p < c->end && *c->p != q) {
        if (*c->p == '\\' || n + 1 >= cap) return -1;
        out[n++] = *c->p++;
    }
    if (c->p >= c->end) return -1;
    c->p++;
    out[n] = '\0';
    return (int)n;
}

static bool read_word(cursor *c, const char *w) {
    skip_ws(c);
    size_t n = strlen(w);
    if ((size_t)(c->end - c->p) >= n && memcmp(c->p, w, n) == 0) {
        c->p += n;
        return true;
    }
    return false;
}

static bool read_int(cursor *c, int64_t *v) {
    skip_ws(c);
    const char *s = c->p;
    int64_t x = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        if (x > (INT64_MAX - 9) / 10) return false;
        x = x * 10 + (*c->p - '0');
        c->p++;
    }
    if (c->p < c->end && *c->p == 'L') c->p++; /* Python 2 long suffix, as old NumPy wrote */
    *v = x;
    return c->p > s;
}

static gck_status parse_header(const char *h, size_t hlen, gck_npy *out, char *msg, size_t len) {
    if (hlen == 0 || h[hlen - 1] != '\n')
        return fail(GCK_EFORMAT, msg, len, "header does not end with a newline");
    for (size_t i = 0; i < hlen; i++)
        if ((unsigned char)h[i] < 0x20 && h[i] != '\n' && h[i] != '\t')
            return fail(GCK_EFORMAT, msg, len, "header has a control character at byte %zu", i);
    cursor c = {h, h + hlen - 1};
    if (!eat(&c, '{')) return fail(GCK_EFORMAT, msg, len, "header is not a dict literal");
    bool have_descr = false, have_order = false, have_shape = false;
    char key[32], descr[32];
    while (!eat(&c, '}')) {
        if (read_str(&c, key, sizeof key) < 0 || !eat(&c, ':'))
            return fail(GCK_EFORMAT, msg, len, "header dict is malformed");
        if (strcmp(key, "descr") == 0) {
            if (have_descr) return fail(GCK_EFORMAT, msg, len, "header repeats 'descr'");
            have_descr = true;
            if (read_str(&c, descr, sizeof descr) < 0)
                return fail(GCK_EFORMAT, msg, len,
                            "'descr' is not a simple dtype string "
                            "(structured dtypes are not supported)");
        } else if (strcmp(key, "fortran_order") == 0) {
            if (have_order) return fail(GCK_EFORMAT, msg, len, "header repeats 'fortran_order'");
            have_order = true;
            if (read_word(&c, "True"))
                return fail(GCK_EFORMAT, msg, len,
                            "fortran_order is True: save a C-order "
                            "array (np.ascontiguousarray) instead");
            if (!read_word(&c, "False"))
                return fail(GCK_EFORMAT, msg, len, "'fortran_order' is neither True nor False");
        } else if (strcmp(key, "shape") == 0) {
            if (have_shape) return fail(GCK_EFORMAT, msg, len, "header repeats 'shape'");
            have_shape = true;
            if (!eat(&c, '(')) return fail(GCK_EFORMAT, msg, len, "'shape' is not a tuple");
            out->ndim = 0;
            while (!eat(&c, ')')) {
                if (out->ndim == GCK_NPY_MAX_DIMS)
                    return fail(GCK_EFORMAT, msg, len, "shape has more than %d dimensions",
                                GCK_NPY_MAX_DIMS);
                if (!read_int(&c, &out->shape[out->ndim]))
                    return fail(GCK_EFORMAT, msg, len,
                                "'shape' holds something that is not "
                                "a non-negative integer");
                out->ndim++;
                if (!eat(&c, ',')) {
                    if (!eat(&c, ')')) return fail(GCK_EFORMAT, msg, len, "'shape' is malformed");
                    if (out->ndim == 1)
                        return fail(GCK_EFORMAT, msg, len,
                                    "'shape' (n) lacks the comma of a "
                                    "1-tuple");
                    break;
                }
            }
        } else {
            return fail(GCK_EFORMAT, msg, len, "header has an unknown key '%s'", key);
        }
        if (!eat(&c, ',')) {
            if (!eat(&c, '}')) return fail(GCK_EFORMAT, msg, len, "header dict is malformed");
            break;
        }
    }
    skip_ws(&c);
    if (c.p != c.end) return fail(GCK_EFORMAT, msg, len, "header has text after the dict");
    if (!have_descr || !have_order || !have_shape)
        return fail(GCK_EFORMAT, msg, len, "header lacks '%s'",
                    !have_descr   ? "descr"
                    : !have_order ? "fortran_order"
                                  : "shape");
    for (int t = 0; t < 4; t++) {
        if (strcmp(descr, descr_names[t]) == 0) {
            out->dtype = (gck_npy_dtype)t;
            return GCK_OK;
        }
    }
    if (descr[0] == '>')
        return fail(GCK_EFORMAT, msg, len,
                    "dtype '%s' is big-endian; save it little-endian "
                    "(arr.astype('<%s'))",
                    descr, descr + 1);
    return fail(GCK_EFORMAT, msg, len,
                "dtype '%s' is not supported (expected <f2, <f4, <f8, "
                "or <u2 holding bfloat16 bits)",
                descr);
}

gck_status gck_npy_parse(const unsigned char *buf, size_t len, gck_npy *out, char *msg,
                         size_t msg_len) {
    memset(out, 0, sizeof *out);
    static const unsigned char magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
    if (len < 10 || memcmp(buf, magic, sizeof magic) != 0)
        return fail(GCK_EFORMAT, msg, msg_len, "not a .npy file (bad magic)");
    int major = buf[6], minor = buf[7];
    if (major < 1 || major > 3 || minor != 0)
        return fail(GCK_EFORMAT, msg, msg_len,
                    ".npy format version %d.%d is not supported "
                    "(1.0, 2.0, 3.0 are)",
                    major, minor);
    size_t hstart = major == 1 ? 10 : 12;
    if (len < hstart) return fail(GCK_EFORMAT, msg, msg_len, "truncated in the header length");
    size_t hlen = major == 1 ? (size_t)buf[8] | (size_t)buf[9] << 8
                             : (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 |
                                   (size_t)buf[11] << 24;
    if (hlen > len - hstart)
        return fail(GCK_EFORMAT, msg, msg_len,
                    "truncated: header claims %zu bytes, file has "
                    "%zu after the preamble",
                    hlen, len - hstart);
    gck_status s = parse_header((const char *)buf + hstart, hlen, out, msg, msg_len);
    if (s != GCK_OK) return s;
    int64_t count = 1;
    for (int d = 0; d < out->ndim; d++) {
        if (out->shape[d] != 0 && count > INT64_MAX / 16 / out->shape[d])
            return fail(GCK_EFORMAT, msg, msg_len, "shape is too large to address");
        count *= out->shape[d];
    }
    out->count = count;
    size_t need = (size_t)count * (size_t)item_sizes[out->dtype];
    size_t have = len - hstart - hlen;
    if (have < need)
        return fail(GCK_EFORMAT, msg, msg_len,
                    "truncated: shape needs %zu bytes of data, file "
                    "has %zu",
                    need, have);
    if (have > need)
        return fail(GCK_EFORMAT, msg, msg_len, "%zu bytes of trailing data after the array",
                    have - need);
    out->data = malloc(need ? need : 1);
    if (!out->data) return fail(GCK_ENOMEM, msg, msg_len, "out of memory for %zu bytes", need);
    memcpy(out->data, buf + hstart + hlen, need);
    return GCK_OK;
}

gck_status gck_npy_read(const char *path, gck_npy *out, char *msg, size_t msg_len) {
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) return fail(GCK_EIO, msg, msg_len, "%s: %s", path, strerror(errno));
    unsigned char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            size_t ncap = cap ? cap * 2 : 65536;
            unsigned char *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                fclose(f);
                return fail(GCK_ENOMEM, msg, msg_len, "%s: out of memory reading the file", path);
            }
            buf = nb;
            cap = ncap;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    bool err = ferror(f);
    fclose(f);
    if (err) {
        free(buf);
        return fail(GCK_EIO, msg, msg_len, "%s: read error", path);
    }
    char inner[256];
    gck_status s = gck_npy_parse(buf, len, out, inner, sizeof inner);
    free(buf);
    if (s != GCK_OK) fail(s, msg, msg_len, "%s: %s", path, inner);
    return s;
}

gck_status gck_npy_write(const char *path, gck_npy_dtype t, int ndim, const int64_t *shape,
                         const void *data, char *msg, size_t msg_len) {
    char dict[256];
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                     descr_names[t]);
    int64_t count = 1;
    for (int d = 0; d < ndim; d++) {
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%lld,%s", (long long)shape[d],
                      d + 1 < ndim ? " " : "");
        count *= shape[d];
    }
    if (ndim > 1) n--; /* NumPy writes (2, 3), with a trailing comma only for 1-tuples */
    n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
    size_t total = 10 + (size_t)n + 1;
    size_t pad = (64 - total % 64) % 64;
    size_t hlen = (size_t)n + pad + 1;
    unsigned char pre[10] = {0x93,
                             'N',
                             'U',
                             'M',
                             'P',
                             'Y',
                             1,
                             0,
                             (unsigned char)(hlen & 0xff),
                             (unsigned char)(hlen >> 8)};
    FILE *f = fopen(path, "wb");
    if (!f) return fail(GCK_EIO, msg, msg_len, "%s: cannot create: %s", path, strerror(errno));
    bool ok =
        fwrite(pre, 1, sizeof pre, f) == sizeof pre && fwrite(dict, 1, (size_t)n, f) == (size_t)n;
    for (size_t i = 0; ok && i < pad; i++) ok = fputc(' ', f) != EOF;
    ok = ok && fputc('\n', f) != EOF;
    size_t bytes = (size_t)count * (size_t)item_sizes[t];
    ok = ok && (bytes == 0 || fwrite(data, 1, bytes, f) == bytes);
    ok = (fclose(f) == 0) && ok;
    if (!ok) return fail(GCK_EIO, msg, msg_len, "%s: write failed: %s", path, strerror(errno));
    return GCK_OK;
}

void gck_npy_free(gck_npy *a) {
    free(a->data);
    a->data = NULL;
}
