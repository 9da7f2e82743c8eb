/* Saving, restoring and entering the floating-point environment (fpenv.h). */
#define _GNU_SOURCE 1
#include "fpenv.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#ifdef GCK_HAVE_MXCSR
/* MXCSR controls: DAZ (bit 6), exception masks (7-12), rounding (13-14), FTZ (15). */
#define MXCSR_CONTROLS 0xffc0u
#endif

/* C's rounding mode and enabled traps, in one word. */
static unsigned controls(void) {
    int traps = fegetexcept();
    return ((unsigned)fegetround() & 0xffffu) | (unsigned)(traps < 0 ? 0 : traps) << 16;
}

void gck_fpenv_save(gck_fpenv *e) {
    fegetenv(&e->env);
    e->controls = controls();
#ifdef GCK_HAVE_MXCSR
    e->mxcsr = _mm_getcsr();
#else
    e->mxcsr = 0;
#endif
}

static void describe(char *what, size_t len) {
    const char *rm = "to nearest";
    switch (fegetround()) {
    case FE_TOWARDZERO: rm = "toward zero"; break;
    case FE_UPWARD: rm = "upward"; break;
    case FE_DOWNWARD: rm = "downward"; break;
    default: break;
    }
    int n = snprintf(what, len, "rounding %s, exception traps %s", rm,
                     fegetexcept() > 0 ? "enabled" : "off");
#ifdef GCK_HAVE_MXCSR
    unsigned m = _mm_getcsr();
    if (n > 0 && (size_t)n < len)
        snprintf(what + n, len - (size_t)n, ", FTZ %s, DAZ %s (MXCSR 0x%04x)",
                 (m >> 15) & 1 ? "on" : "off", (m >> 6) & 1 ? "on" : "off", m);
#else
    (void)n;
#endif
}

bool gck_fpenv_restore(const gck_fpenv *e, char *what, size_t len) {
    bool changed = controls() != e->controls;
#ifdef GCK_HAVE_MXCSR
    if ((_mm_getcsr() & MXCSR_CONTROLS) != (e->mxcsr & MXCSR_CONTROLS)) changed = true;
#endif
    if (changed && what && len) describe(what, len);
    /* flags raised by the call would trap at once under the traps it enabled: clear first */
    feclearexcept(FE_ALL_EXCEPT);
    fesetenv(&e->env);
#ifdef GCK_HAVE_MXCSR
    _mm_setcsr(e->mxcsr);
#endif
    return changed;
}

void gck_fpguard_switch(gck_fpguard *g) {
    gck_fpenv_save(&g->caller);
    fesetenv(FE_DFL_ENV);
#ifdef GCK_HAVE_MXCSR
    _mm_setcsr(0x1f80u);
#endif
}

void gck_fpguard_return(const gck_fpguard *g) {
    /* the caller's traps must not fire on flags raised under gemmcheck's masks: the x87 status
     * is restored as saved, and the flags go into MXCSR, whose flags never trap by themselves
     * (elsewhere they are dropped: raising them could trap) */
#ifdef GCK_HAVE_MXCSR
    unsigned raised = (unsigned)fetestexcept(FE_ALL_EXCEPT) & 0x3fu;
#endif
    feclearexcept(FE_ALL_EXCEPT);
    fesetenv(&g->caller.env);
#ifdef GCK_HAVE_MXCSR
    _mm_setcsr(g->caller.mxcsr | raised);
#endif
}

static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;

static void make_c_locale(void) { c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0); }

locale_t gck_c_locale(void) {
    pthread_once(&c_locale_once, make_c_locale);
    return c_locale;
}
