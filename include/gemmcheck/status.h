/* gemmcheck — the status every function of the library returns (the ground of its layers:
 * src/util/ and everything above use it). */
#ifndef GEMMCHECK_STATUS_H
#define GEMMCHECK_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

/** What a function of the library returned. */
typedef enum gck_status {
    GCK_OK = 0,
    GCK_EINVAL,   /**< the case (or an argument) is invalid; the message names the field */
    GCK_ENOMEM,   /**< an allocation failed or a size overflowed */
    GCK_EIO,      /**< a file could not be read or written */
    GCK_EFORMAT,  /**< a file's contents are malformed */
    GCK_EINTERNAL /**< a bug in gemmcheck */
} gck_status;

#ifdef __cplusplus
}
#endif
#endif
