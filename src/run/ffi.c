/* The sizes of the public structs, for bindings that mirror them (gemmcheck/ffi.h). */
#include "gemmcheck/ffi.h"

#include <string.h>

#include "gemmcheck/checker.h"

size_t gck_struct_size(const char *name) {
    static const struct {
        const char *name;
        size_t size;
    } sizes[] = {
        {"gck_case", sizeof(gck_case)},
        {"gck_model", sizeof(gck_model)},
        {"gck_support_row", sizeof(gck_support_row)},
        {"gck_check_options", sizeof(gck_check_options)},
        {"gck_check_result", sizeof(gck_check_result)},
        {"gck_element_report", sizeof(gck_element_report)},
    };
    for (size_t i = 0; name && i < sizeof sizes / sizeof sizes[0]; i++)
        if (strcmp(name, sizes[i].name) == 0) return sizes[i].size;
    return 0;
}
