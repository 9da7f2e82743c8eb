/* The mark of gemmcheck's public functions. The library is built with hidden visibility: only
 * the functions declared with GCK_API in these public headers are exported from
 * libgemmcheck.so; everything else is internal and may change without notice. */
#ifndef GEMMCHECK_EXPORT_H
#define GEMMCHECK_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define GCK_API __attribute__((visibility("default")))
#else
#define GCK_API
#endif

#endif
