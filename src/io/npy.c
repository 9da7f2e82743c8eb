/* Strict .npy reader and writer. The format (NEP 1, numpy.lib.format): the magic "\x93NUMPY",
 * a major and minor version byte, the header length (2 bytes little-endian in 1.x, 4 bytes in
 * 2.x and 3.x), then a Python dict literal with exactly the keys 'descr', 'fortran_order' and
 * 'shape', padded with spaces and ended by '\n', then the raw data. */
#include "npy.h"
#include "text.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const descr_names[] = {"<f2", "<f4", "<f8", "<u2"};
static const int item_sizes[] = {2, 4, 8, 2};

const char *gck_npy_descr(gck_npy_dtype t) { return descr_names[t]; }

gck_npy_dtype gck_npy_dtype_of(gck_format fmt) {
    static const gck_npy_dtype dt[] = {[GCK_F16] = GCK_NPY_F2,
                                       [GCK_BF16] = GCK_NPY_U2,
                                       [GCK_TF32] = GCK_NPY_F4,
                                       [GCK_F32] = GCK_NPY_F4,
                                       [GCK_F64] = GCK_NPY_F8};
    return dt[fmt];
}

gck_format gck_npy_format_of(gck_npy_dtype t) {
    static const gck_format f[] = {[GCK_NPY_F2] = GCK_F16,
                                   [GCK_NPY_F4] = GCK_F32,
                                   [GCK_NPY_F8] = GCK_F64,
                                   [GCK_NPY_U2] = GCK_BF16};
    return f[t];
}
int gck_npy_itemsize(gck_npy_dtype t) { return item_sizes[t]; }

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

/* The value of 'shape': a tuple of non-negative integers ("(n,)" for one dimension). */
static gck_status parse_shape(cursor *c, gck_npy *out, char *msg, size_t len) {
    if (!eat(c, '(')) return gck_fail(GCK_EFORMAT, msg, len, "'shape' is not a tuple");
    out->ndim = 0;
    while (!eat(c, ')')) {
        if (out->ndim == GCK_NPY_MAX_DIMS)
            return gck_fail(GCK_EFORMAT, msg, len, "shape has more than %d dimensions",
                            GCK_NPY_MAX_DIMS);
        if (!read_int(c, &out->shape[out->ndim]))
            return gck_fail(GCK_EFORMAT, msg, len,
                            "'shape' holds something that is not "
                            "a non-negative integer");
        out->ndim++;
        if (!eat(c, ',')) {
            if (!eat(c, ')')) return gck_fail(GCK_EFORMAT, msg, len, "'shape' is malformed");
            if (out->ndim == 1)
                return gck_fail(GCK_EFORMAT, msg, len,
                                "'shape' (n) lacks the comma of a "
                                "1-tuple");
            break;
        }
    }
    return GCK_OK;
}

/* The value of 'fortran_order' (a Fortran-order array is converted to C order once read). */
static gck_status parse_order(cursor *c, bool *fortran, char *msg, size_t len) {
    *fortran = read_word(c, "True");
    if (!*fortran && !read_word(c, "False"))
        return gck_fail(GCK_EFORMAT, msg, len, "'fortran_order' is neither True nor False");
    return GCK_OK;
}

/* The dtype of a 'descr' string, or why it is not supported. */
static gck_status dtype_of(const char *descr, gck_npy *out, char *msg, size_t len) {
    for (int t = 0; t < 4; t++) {
        if (strcmp(descr, descr_names[t]) == 0) {
            out->dtype = (gck_npy_dtype)t;
            return GCK_OK;
        }
    }
    if (descr[0] == '>')
        return gck_fail(GCK_EFORMAT, msg, len,
                        "dtype '%s' is big-endian; save it little-endian "
                        "(arr.astype('<%s'))",
                        descr, descr + 1);
    return gck_fail(GCK_EFORMAT, msg, len,
                    "dtype '%s' is not supported (expected <f2, <f4, <f8, "
                    "or <u2 holding bfloat16 bits)",
                    descr);
}

static gck_status parse_header(const char *h, size_t hlen, gck_npy *out, char *msg, size_t len) {
    if (hlen == 0 || h[hlen - 1] != '\n')
        return gck_fail(GCK_EFORMAT, msg, len, "header does not end with a newline");
    for (size_t i = 0; i < hlen; i++)
        if ((unsigned char)h[i] < 0x20 && h[i] != '\n' && h[i] != '\t')
            return gck_fail(GCK_EFORMAT, msg, len, "header has a control character at byte %zu", i);
    cursor c = {h, h + hlen - 1};
    if (!eat(&c, '{')) return gck_fail(GCK_EFORMAT, msg, len, "header is not a dict literal");
    static const char *const keys[] = {"descr", "fortran_order", "shape"};
    bool have[3] = {false, false, false};
    char key[32], descr[32];
    while (!eat(&c, '}')) {
        if (read_str(&c, key, sizeof key) < 0 || !eat(&c, ':'))
            return gck_fail(GCK_EFORMAT, msg, len, "header dict is malformed");
        int k = 0;
        while (k < 3 && strcmp(key, keys[k]) != 0) k++;
        if (k == 3) return gck_fail(GCK_EFORMAT, msg, len, "header has an unknown key '%s'", key);
        if (have[k]) return gck_fail(GCK_EFORMAT, msg, len, "header repeats '%s'", keys[k]);
        have[k] = true;
        gck_status st = GCK_OK;
        if (k == 0 && read_str(&c, descr, sizeof descr) < 0)
            return gck_fail(GCK_EFORMAT, msg, len,
                            "'descr' is not a simple dtype string "
                            "(structured dtypes are not supported)");
        if (k == 1) st = parse_order(&c, &out->fortran_order, msg, len);
        if (k == 2) st = parse_shape(&c, out, msg, len);
        if (st != GCK_OK) return st;
        if (!eat(&c, ',')) {
            if (!eat(&c, '}')) return gck_fail(GCK_EFORMAT, msg, len, "header dict is malformed");
            break;
        }
    }
    skip_ws(&c);
    if (c.p != c.end) return gck_fail(GCK_EFORMAT, msg, len, "header has text after the dict");
    for (int k = 0; k < 3; k++)
        if (!have[k]) return gck_fail(GCK_EFORMAT, msg, len, "header lacks '%s'", keys[k]);
    return dtype_of(descr, out, msg, len);
}

/* The preamble: magic, version, header length. `len` bytes of the file's start are in buf (at
 * least the 12 a preamble can take, or the whole file if shorter). */
static gck_status preamble(const unsigned char *buf, size_t len, size_t *hstart, size_t *hlen,
                           char *msg, size_t msg_len) {
    static const unsigned char magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
    if (len < 10 || memcmp(buf, magic, sizeof magic) != 0)
        return gck_fail(GCK_EFORMAT, msg, msg_len, "not a .npy file (bad magic)");
    int major = buf[6], minor = buf[7];
    if (major < 1 || major > 3 || minor != 0)
        return gck_fail(GCK_EFORMAT, msg, msg_len,
                        ".npy format version %d.%d is not supported "
                        "(1.0, 2.0, 3.0 are)",
                        major, minor);
    *hstart = major == 1 ? 10 : 12;
    if (len < *hstart) return gck_fail(GCK_EFORMAT, msg, msg_len, "truncated in the header length");
    *hlen = major == 1 ? (size_t)buf[8] | (size_t)buf[9] << 8
                       : (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 |
                             (size_t)buf[11] << 24;
    return GCK_OK;
}

/* After the header: the element count, and the data bytes the shape needs against those the
 * file has after the header (`have`). */
static gck_status data_size(gck_npy *out, size_t have, size_t *need, char *msg, size_t msg_len) {
    int64_t count = 1;
    for (int d = 0; d < out->ndim; d++) {
        if (out->shape[d] != 0 && count > INT64_MAX / 16 / out->shape[d])
            return gck_fail(GCK_EFORMAT, msg, msg_len, "shape is too large to address");
        count *= out->shape[d];
    }
    out->count = count;
    *need = (size_t)count * (size_t)item_sizes[out->dtype];
    if (have < *need)
        return gck_fail(GCK_EFORMAT, msg, msg_len,
                        "truncated: shape needs %zu bytes of data, file "
                        "has %zu",
                        *need, have);
    if (have > *need)
        return gck_fail(GCK_EFORMAT, msg, msg_len, "%zu bytes of trailing data after the array",
                        have - *need);
    out->data = malloc(*need ? *need : 1);
    if (!out->data) return gck_fail(GCK_ENOMEM, msg, msg_len, "out of memory for %zu bytes", *need);
    return GCK_OK;
}

/* A Fortran-order array's data (first index fastest) rearranged into C order. */
static gck_status to_c_order(gck_npy *a, char *msg, size_t len) {
    if (!a->fortran_order || a->ndim < 2 || a->count == 0) return GCK_OK;
    size_t es = (size_t)item_sizes[a->dtype];
    unsigned char *c = malloc((size_t)a->count * es);
    if (!c) return gck_fail(GCK_ENOMEM, msg, len, "out of memory converting to C order");
    int64_t idx[GCK_NPY_MAX_DIMS] = {0}, fstride[GCK_NPY_MAX_DIMS];
    fstride[0] = 1;
    for (int d = 1; d < a->ndim; d++) fstride[d] = fstride[d - 1] * a->shape[d - 1];
    for (int64_t x = 0; x < a->count; x++) { /* x: the C-order position of idx */
        int64_t f = 0;
        for (int d = 0; d < a->ndim; d++) f += idx[d] * fstride[d];
        memcpy(c + (size_t)x * es, (const unsigned char *)a->data + (size_t)f * es, es);
        for (int d = a->ndim - 1; d >= 0 && ++idx[d] == a->shape[d]; d--) idx[d] = 0;
    }
    free(a->data);
    a->data = c;
    return GCK_OK;
}

gck_status gck_npy_parse(const unsigned char *buf, size_t len, gck_npy *out, char *msg,
                         size_t msg_len) {
    memset(out, 0, sizeof *out);
    size_t hstart = 0, hlen = 0, need = 0;
    gck_status s = preamble(buf, len, &hstart, &hlen, msg, msg_len);
    if (s != GCK_OK) return s;
    if (hlen > len - hstart)
        return gck_fail(GCK_EFORMAT, msg, msg_len,
                        "truncated: header claims %zu bytes, file has "
                        "%zu after the preamble",
                        hlen, len - hstart);
    s = parse_header((const char *)buf + hstart, hlen, out, msg, msg_len);
    if (s == GCK_OK) s = data_size(out, len - hstart - hlen, &need, msg, msg_len);
    if (s != GCK_OK) return s;
    memcpy(out->data, buf + hstart + hlen, need);
    return to_c_order(out, msg, msg_len);
}

/* Read exactly n bytes (fewer only at the end of the file: *got says). */
static bool read_exactly(int fd, void *buf, size_t n, size_t *got) {
    *got = 0;
    while (*got < n) {
        ssize_t r = read(fd, (char *)buf + *got, n - *got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return false;
        if (r == 0) break;
        *got += (size_t)r;
    }
    return true;
}

/* The largest header gemmcheck reads: NumPy itself refuses headers over 10000 bytes by default;
 * a shape of 8 dimensions needs a few hundred. */
#define GCK_NPY_MAX_HEADER (1u << 20)

/* The file is checked before its data is read: a regular file (not a FIFO or a device), a valid
 * header, and a size that is exactly the header plus what the shape needs. Only then are exactly
 * those bytes read. */
static gck_status read_fd(int fd, gck_npy *out, char *msg, size_t msg_len) {
    struct stat st;
    if (fstat(fd, &st) != 0) return gck_fail(GCK_EIO, msg, msg_len, "%s", strerror(errno));
    if (!S_ISREG(st.st_mode))
        return gck_fail(GCK_EIO, msg, msg_len, "not a regular file (a %s)",
                        S_ISDIR(st.st_mode)    ? "directory"
                        : S_ISFIFO(st.st_mode) ? "pipe"
                        : S_ISCHR(st.st_mode)  ? "character device"
                        : S_ISBLK(st.st_mode)  ? "block device"
                                               : "socket");
    unsigned char pre[12];
    size_t got = 0, hstart = 0, hlen = 0, need = 0;
    if (!read_exactly(fd, pre, sizeof pre, &got))
        return gck_fail(GCK_EIO, msg, msg_len, "read error: %s", strerror(errno));
    gck_status s = preamble(pre, got, &hstart, &hlen, msg, msg_len);
    if (s != GCK_OK) return s;
    size_t size = (size_t)st.st_size;
    if (hlen > size - hstart)
        return gck_fail(GCK_EFORMAT, msg, msg_len,
                        "truncated: header claims %zu bytes, file has %zu after the preamble", hlen,
                        size - hstart);
    if (hlen > GCK_NPY_MAX_HEADER)
        return gck_fail(GCK_EFORMAT, msg, msg_len,
                        "a header of %zu bytes (more than %u is not a .npy "
                        "header gemmcheck reads)",
                        hlen, GCK_NPY_MAX_HEADER);
    char *h = malloc(hlen ? hlen : 1);
    if (!h) return gck_fail(GCK_ENOMEM, msg, msg_len, "out of memory for the header");
    if (lseek(fd, (off_t)hstart, SEEK_SET) < 0 || !read_exactly(fd, h, hlen, &got) || got < hlen) {
        free(h);
        return gck_fail(GCK_EIO, msg, msg_len,
                        "the file changed or cannot be read while reading it");
    }
    s = parse_header(h, hlen, out, msg, msg_len);
    free(h);
    if (s == GCK_OK) s = data_size(out, size - hstart - hlen, &need, msg, msg_len);
    if (s != GCK_OK) return s;
    if (!read_exactly(fd, out->data, need, &got) || got < need) {
        gck_npy_free(out);
        return gck_fail(GCK_EIO, msg, msg_len,
                        "the file changed or cannot be read while reading it");
    }
    return to_c_order(out, msg, msg_len);
}

gck_status gck_npy_read(const char *path, gck_npy *out, char *msg, size_t msg_len) {
    memset(out, 0, sizeof *out);
    /* O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused after fstat) */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return gck_fail(GCK_EIO, msg, msg_len, "%s: %s", path, strerror(errno));
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    char inner[256];
    gck_status s = read_fd(fd, out, inner, sizeof inner);
    close(fd);
    if (s != GCK_OK) {
        gck_npy_free(out);
        gck_fail(s, msg, msg_len, "%s: %s", path, inner);
    }
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
    if (!f) return gck_fail(GCK_EIO, msg, msg_len, "%s: cannot create: %s", path, strerror(errno));
    bool ok =
        fwrite(pre, 1, sizeof pre, f) == sizeof pre && fwrite(dict, 1, (size_t)n, f) == (size_t)n;
    for (size_t i = 0; ok && i < pad; i++) ok = fputc(' ', f) != EOF;
    ok = ok && fputc('\n', f) != EOF;
    size_t bytes = (size_t)count * (size_t)item_sizes[t];
    ok = ok && (bytes == 0 || fwrite(data, 1, bytes, f) == bytes);
    ok = (fclose(f) == 0) && ok;
    if (!ok) return gck_fail(GCK_EIO, msg, msg_len, "%s: write failed: %s", path, strerror(errno));
    return GCK_OK;
}

void gck_npy_free(gck_npy *a) {
    free(a->data);
    a->data = NULL;
}
