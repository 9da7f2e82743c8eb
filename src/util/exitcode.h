/* Exit statuses of gemmcheck's processes: the command's (README.md, "Exit status"), which its
 * worker processes share for their own ends (a set-up error, an internal error) (internal: for
 * src/util/ and fuzz/, src/cli/, src/run/). */
#ifndef GEMMCHECK_UTIL_EXITCODE_H
#define GEMMCHECK_UTIL_EXITCODE_H

/** Exit codes of the gemmcheck command (README.md, "Exit status"). */
typedef enum gck_exit {
    GCK_EXIT_OK = 0,       /**< no findings */
    GCK_EXIT_FINDINGS = 1, /**< findings */
    GCK_EXIT_USAGE = 2,    /**< usage or set-up error: bad arguments, unreadable files, ... */
    GCK_EXIT_INTERNAL = 3  /**< a bug in gemmcheck */
} gck_exit;

#endif
