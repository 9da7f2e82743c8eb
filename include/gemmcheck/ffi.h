/* gemmcheck — facts for foreign-function interfaces (Python's ctypes, Julia's ccall, ...) that
 * mirror the public structs: their sizes as this library was built, so a binding can refuse to
 * run against a library whose layout differs from the one it was written for. */
#ifndef GEMMCHECK_FFI_H
#define GEMMCHECK_FFI_H

#include <stddef.h>

#include "gemmcheck/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/** sizeof the public struct named `name` ("gck_case", "gck_model", "gck_support_row",
 *  "gck_check_options", "gck_check_result", "gck_element_report"); 0 for any other name. */
GCK_API size_t gck_struct_size(const char *name);

#ifdef __cplusplus
}
#endif
#endif
