/* Strict .npy reader and writer (NumPy format versions 1.0, 2.0, 3.0; little-endian f2, f4,
 * f8 and u2; C or Fortran order read, C order written). Internal to gemmcheck (internal: for
 * src/io/ and fuzz/, src/cli/, src/run/). */
#ifndef GEMMCHECK_IO_NPY_H
#define GEMMCHECK_IO_NPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gemmcheck/case.h"

#define GCK_NPY_MAX_DIMS 8

typedef enum gck_npy_dtype { GCK_NPY_F2 = 0, GCK_NPY_F4, GCK_NPY_F8, GCK_NPY_U2 } gck_npy_dtype;

typedef struct gck_npy {
    gck_npy_dtype dtype;
    int ndim;
    int64_t shape[GCK_NPY_MAX_DIMS];
    int64_t count;      /**< number of elements */
    void *data;         /**< count elements in C order, malloc'd; free with gck_npy_free */
    bool fortran_order; /**< the file held them in Fortran order (converted when read) */
} gck_npy;

/** The dtype a value of `fmt` is stored as (tf32 as <f4, bf16 as <u2 holding its bits), and
 *  the format a dtype holds (<u2: bf16). */
gck_npy_dtype gck_npy_dtype_of(gck_format fmt);
gck_format gck_npy_format_of(gck_npy_dtype t);
/** "<f2", "<f4", "<f8", "<u2". */
const char *gck_npy_descr(gck_npy_dtype t);
/** Bytes per element of a dtype. */
int gck_npy_itemsize(gck_npy_dtype t);

/** Parse a whole .npy image held in memory; on error one line in msg (without the path). */
gck_status gck_npy_parse(const unsigned char *buf, size_t len, gck_npy *out, char *msg,
                         size_t msg_len);
/** Read a .npy file; on error one line in msg that starts with the path. */
gck_status gck_npy_read(const char *path, gck_npy *out, char *msg, size_t msg_len);
/** Write a C-order .npy file (format 1.0). */
gck_status gck_npy_write(const char *path, gck_npy_dtype t, int ndim, const int64_t *shape,
                         const void *data, char *msg, size_t msg_len);
void gck_npy_free(gck_npy *a);

#endif
