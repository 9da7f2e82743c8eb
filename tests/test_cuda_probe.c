/* The CUDA probe never crashes and tells the truth about device availability: on a machine
 * without NVIDIA device nodes it must report "unavailable: <reason>". */
#include <criterion/criterion.h>
#include <glob.h>
#include <string.h>

#include "cuda_probe.h"

static bool nvidia_device_nodes_present(void) {
    glob_t g;
    int rc = glob("/dev/nvidia[0-9]*", 0, NULL, &g);
    bool present = rc == 0 && g.gl_pathc > 0;
    if (rc == 0) globfree(&g);
    return present;
}

Test(cuda_probe, reports_unavailable_with_a_reason_when_there_is_no_device) {
    char what[256];
    bool ok = gck_cuda_probe(what, sizeof what);
    cr_expect(strchr(what, '\n') == NULL, "one line: %s", what);
    if (ok) {
        cr_expect(strstr(what, "device") != NULL, "%s", what);
        cr_expect(nvidia_device_nodes_present(), "probe claims a device without /dev/nvidia*");
    } else {
        cr_expect(strncmp(what, "unavailable: ", 13) == 0 && strlen(what) > 20, "%s", what);
    }
    if (!nvidia_device_nodes_present()) cr_expect_not(ok, "no /dev/nvidia* but: %s", what);
    /* a second call gives the same answer (sticky runtime state must not flip it) */
    char again[256];
    cr_expect_eq(gck_cuda_probe(again, sizeof again), ok);
    cr_expect_str_eq(again, what);
}
