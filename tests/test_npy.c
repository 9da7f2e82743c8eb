/* The strict .npy reader: every valid variant NumPy writes is read, anything else is refused
 * with one line saying what is wrong. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "npy.h"
#include "testutil.h"

/* Build a .npy image: version, header dict text (padded and '\n'-terminated here), data. */
static size_t image(unsigned char *buf, int major, int minor, const char *dict, const void *data,
                    size_t nbytes) {
    size_t pre = major == 1 ? 10 : 12;
    size_t dl = strlen(dict);
    size_t hlen = dl + 1;
    hlen += (64 - (pre + hlen) % 64) % 64;
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = (unsigned char)minor;
    if (major == 1) {
        buf[8] = (unsigned char)(hlen & 0xff);
        buf[9] = (unsigned char)(hlen >> 8);
    } else {
        for (int b = 0; b < 4; b++) buf[8 + b] = (unsigned char)(hlen >> (8 * b));
    }
    memcpy(buf + pre, dict, dl);
    memset(buf + pre + dl, ' ', hlen - dl - 1);
    buf[pre + hlen - 1] = '\n';
    memcpy(buf + pre + hlen, data, nbytes);
    return pre + hlen + nbytes;
}

static const float six[6] = {1, 2, 3, 4, 5, 6};

Test(npy, reads_every_header_variant_numpy_writes) {
    static const struct {
        int major;
        const char *dict;
        int ndim;
        int64_t d0, d1;
    } ok[] = {
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 2, 2, 3},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", 2, 2, 3},
        {2, "{'shape': (6,), 'fortran_order': False, 'descr': '<f4'}", 1, 6, 0},
        {3, "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (3, 2,)}", 2, 3, 2},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }", 2, 2, 3},
    };
    unsigned char buf[512];
    for (size_t t = 0; t < sizeof ok / sizeof ok[0]; t++) {
        size_t n = image(buf, ok[t].major, 0, ok[t].dict, six, sizeof six);
        gck_npy a;
        char msg[256];
        cr_assert_eq(gck_npy_parse(buf, n, &a, msg, sizeof msg), GCK_OK, "%s: %s", ok[t].dict, msg);
        cr_expect_eq(a.dtype, GCK_NPY_F4);
        cr_expect_eq(a.ndim, ok[t].ndim);
        cr_expect_eq(a.shape[0], ok[t].d0);
        cr_expect_eq(a.count, 6);
        cr_expect_eq(memcmp(a.data, six, sizeof six), 0);
        gck_npy_free(&a);
    }
    size_t n = image(buf, 1, 0, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }",
                     (double[]){2.5}, 8);
    gck_npy a;
    char msg[256];
    cr_assert_eq(gck_npy_parse(buf, n, &a, msg, sizeof msg), GCK_OK, "%s", msg);
    cr_expect_eq(a.ndim, 0);
    cr_expect_eq(a.count, 1);
    gck_npy_free(&a);
}

/* Fortran order (first index fastest) is read into C order: value 100x + 10i + j of element
 * (x, i, j) lies at x + 2i + 4j in the file's data. */
Test(npy, reads_fortran_order_into_c_order) {
    float f[12], want[12];
    for (int x = 0; x < 2; x++)
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++) {
                f[x + 2 * i + 4 * j] = (float)(100 * x + 10 * i + j);
                want[(x * 2 + i) * 3 + j] = (float)(100 * x + 10 * i + j);
            }
    unsigned char buf[512];
    size_t n = image(buf, 1, 0, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2, 3), }", f,
                     sizeof f);
    gck_npy a;
    char msg[256];
    cr_assert_eq(gck_npy_parse(buf, n, &a, msg, sizeof msg), GCK_OK, "%s", msg);
    cr_expect(a.fortran_order);
    cr_expect_eq(a.ndim, 3);
    cr_expect_eq(memcmp(a.data, want, sizeof want), 0);
    gck_npy_free(&a);
    /* 2-D: the matrix [[1 2 3] [4 5 6]] stored by columns */
    n = image(buf, 1, 0, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
              (float[]){1, 4, 2, 5, 3, 6}, 24);
    cr_assert_eq(gck_npy_parse(buf, n, &a, msg, sizeof msg), GCK_OK, "%s", msg);
    cr_expect_eq(memcmp(a.data, six, sizeof six), 0);
    gck_npy_free(&a);
}

Test(npy, refuses_malformed_files_with_the_reason) {
    static const struct {
        int major, minor;
        const char *dict;
        size_t data;
        const char *why;
    } bad[] = {
        {4, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", 24, "version 4.0"},
        {1, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", 24, "version 1.1"},
        {1, 0, "{'descr': '<i4', 'fortran_order': False, 'shape': (6,), }", 24,
         "'<i4' is not supported"},
        {1, 0, "{'descr': '>f4', 'fortran_order': False, 'shape': (6,), }", 24, "big-endian"},
        {1, 0, "{'descr': '<f4', 'shape': (6,), }", 24, "lacks 'fortran_order'"},
        {1, 0, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (6,)}", 24,
         "repeats 'descr'"},
        {1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'x': 1}", 24,
         "unknown key 'x'"},
        {1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (6), }", 24, "1-tuple"},
        {1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (-6,), }", 24, "non-negative"},
        {1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", 20, "truncated"},
        {1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", 24, "trailing"},
        {1, 0, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (6,), }", 24,
         "structured"},
        {1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), } extra", 24,
         "after the dict"},
        {1, 0, "['descr', '<f4']", 24, "not a dict"},
        {1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", 24,
         "non-negative integer"},
        {1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}", 24,
         "too large"},
    };
    unsigned char buf[512];
    for (size_t t = 0; t < sizeof bad / sizeof bad[0]; t++) {
        size_t n = image(buf, bad[t].major, bad[t].minor, bad[t].dict, six, bad[t].data);
        gck_npy a;
        char msg[256] = "";
        cr_expect_neq(gck_npy_parse(buf, n, &a, msg, sizeof msg), GCK_OK, "accepted: %s",
                      bad[t].dict);
        cr_expect(strstr(msg, bad[t].why) != NULL, "'%s' lacks '%s'", msg, bad[t].why);
        cr_expect(strchr(msg, '\n') == NULL, "message has a newline: %s", msg);
        gck_npy_free(&a);
    }
    /* short files and broken preambles */
    gck_npy a;
    char msg[256];
    cr_expect_eq(gck_npy_parse((const unsigned char *)"\x93NUMP", 5, &a, msg, sizeof msg),
                 GCK_EFORMAT);
    cr_expect(strstr(msg, "bad magic") != NULL);
    size_t n =
        image(buf, 1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", six, 24);
    cr_expect_eq(gck_npy_parse(buf, 40, &a, msg, sizeof msg), GCK_EFORMAT);
    cr_expect(strstr(msg, "truncated") != NULL, "%s", msg);
    buf[n - 24 - 1] = ' '; /* header no longer ends with a newline */
    cr_expect_eq(gck_npy_parse(buf, n, &a, msg, sizeof msg), GCK_EFORMAT);
    cr_expect(strstr(msg, "newline") != NULL, "%s", msg);
}

Test(npy, write_then_read_round_trips_each_dtype) {
    char dir[] = "/tmp/gck_npy_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/x.npy", dir);
    const gck_npy_dtype types[] = {GCK_NPY_F2, GCK_NPY_F4, GCK_NPY_F8, GCK_NPY_U2};
    unsigned char data[48];
    for (size_t b = 0; b < sizeof data; b++) data[b] = (unsigned char)(b * 37 + 1);
    const int64_t shapes[][2] = {{2, 3}, {0, 4}, {1, 1}};
    for (size_t t = 0; t < 4; t++)
        for (size_t s = 0; s < 3; s++) {
            char msg[256];
            cr_assert_eq(gck_npy_write(path, types[t], 2, shapes[s], data, msg, sizeof msg), GCK_OK,
                         "%s", msg);
            gck_npy a;
            cr_assert_eq(gck_npy_read(path, &a, msg, sizeof msg), GCK_OK, "%s", msg);
            cr_expect_eq(a.dtype, types[t]);
            cr_expect_eq(a.ndim, 2);
            cr_expect_eq(a.shape[0], shapes[s][0]);
            cr_expect_eq(a.shape[1], shapes[s][1]);
            cr_expect_eq(memcmp(a.data, data, (size_t)a.count * (size_t)gck_npy_itemsize(types[t])),
                         0);
            gck_npy_free(&a);
        }
    gck_npy a;
    char msg[256];
    cr_expect_eq(gck_npy_read("/nonexistent/a.npy", &a, msg, sizeof msg), GCK_EIO);
    cr_expect(strstr(msg, "/nonexistent/a.npy: No such file") != NULL, "%s", msg);
    remove(path);
    rmdir(dir);
}

/* A file is judged by its header and size before its data is read: a valid 2x3 header followed
 * by 3 GiB (a sparse file: nothing of it is read, so no time or memory is spent), a character
 * device, a FIFO without a writer (opening it must not wait), a directory; and a file whose
 * size is exactly right is read whole. */
Test(npy, judges_a_file_by_its_header_and_size_before_reading_data) {
    char dir[] = "/tmp/gck_npyread_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[256], msg[512];
    float v[6] = {1, 2, 3, 4, 5, 6};
    unsigned char buf[256];
    size_t n = image(buf, 1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", v,
                     sizeof v);
    snprintf(path, sizeof path, "%s/ok.npy", dir);
    FILE *f = fopen(path, "wb");
    cr_assert_eq(fwrite(buf, 1, n, f), n);
    fclose(f);
    gck_npy a;
    cr_assert_eq(gck_npy_read(path, &a, msg, sizeof msg), GCK_OK, "%s", msg);
    cr_expect_eq(a.count, 6);
    cr_expect_eq(memcmp(a.data, v, sizeof v), 0);
    gck_npy_free(&a);

    cr_assert_eq(truncate(path, (off_t)n + (3ll << 30)), 0);
    cr_expect_eq(gck_npy_read(path, &a, msg, sizeof msg), GCK_EFORMAT);
    cr_expect(strstr(msg, "3221225472 bytes of trailing data") != NULL, "%s", msg);
    cr_expect_null(a.data);
    cr_assert_eq(truncate(path, (off_t)n - 1), 0);
    cr_expect_eq(gck_npy_read(path, &a, msg, sizeof msg), GCK_EFORMAT);
    cr_expect(strstr(msg, "needs 24 bytes of data, file has 23") != NULL, "%s", msg);

    cr_expect_eq(gck_npy_read("/dev/zero", &a, msg, sizeof msg), GCK_EIO);
    cr_expect(strstr(msg, "/dev/zero: not a regular file (a character device)") != NULL, "%s", msg);
    snprintf(path, sizeof path, "%s/fifo", dir);
    cr_assert_eq(mkfifo(path, 0600), 0);
    cr_expect_eq(gck_npy_read(path, &a, msg, sizeof msg), GCK_EIO);
    cr_expect(strstr(msg, "not a regular file (a pipe)") != NULL, "%s", msg);
    cr_expect_eq(gck_npy_read(dir, &a, msg, sizeof msg), GCK_EIO);
    cr_expect(strstr(msg, "not a regular file (a directory)") != NULL, "%s", msg);
    snprintf(path, sizeof path, "rm -rf '%s'", dir);
    cr_assert_eq(system(path), 0);
}
