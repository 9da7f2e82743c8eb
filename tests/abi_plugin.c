/* A plugin built for another plugin ABI (GCK_TEST_ABI) or that does not declare one (no
 * GCK_TEST_ABI): gemmcheck must refuse it before calling anything in it. Its entry point
 * aborts, so a refusal that came too late would show as a crash. */
#include <stdlib.h>

#include "gemmcheck/backend.h"

#ifdef GCK_TEST_ABI
unsigned gemmcheck_plugin_abi(void);
unsigned gemmcheck_plugin_abi(void) { return GCK_TEST_ABI; }
#endif

const gck_backend_ops *gemmcheck_backend_plugin(const char *name);
const gck_backend_ops *gemmcheck_backend_plugin(const char *name) {
    (void)name;
    abort();
}
