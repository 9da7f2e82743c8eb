/* The floating-point environment: rounding mode, exception traps and, on x86, the
 * MXCSR controls (flush-to-zero, denormals-are-zero).
 *
 * Two uses. (1) gemmcheck's own arithmetic runs in the default environment whatever the caller's:
 * every public function that computes with floating point enters a guard that switches to it
 * (round to nearest, no flushing, every exception masked) when the caller's differs, and gives
 * the caller's controls back on the way out. A test binary built with -Ofast (whose start-up code
 * turns FTZ and DAZ on), a process in which PyTorch flushes denormals, or a caller rounding
 * upward or trapping on invalid therefore gets the same bits, bounds and verdicts as the command
 * line tool, and no signal. The sticky exception flags raised inside are left raised, as any
 * floating-point code leaves them. The functions that read or write numbers as text also run in
 * the "C" locale (a process in a decimal-comma locale would otherwise read "alpha=0.5" as an
 * error and write "alpha=0,5" into reproducer strings and messages). (2) A backend call must
 * return with the controls as it found them: the runner saves them before each call, restores
 * them after it, and reports a change (internal: for src/util/ and kernels/, oracles/, refimpl/,
 * src/backends/, src/certify/, src/check/, src/core/, src/run/). */
#ifndef GEMMCHECK_UTIL_FPENV_H
#define GEMMCHECK_UTIL_FPENV_H

#include <fenv.h>
#include <locale.h>
#include <stdbool.h>
#include <stddef.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define GCK_HAVE_MXCSR 1
#endif

typedef struct gck_fpenv {
    fenv_t env;
    unsigned controls; /* C's rounding mode and enabled traps */
    unsigned mxcsr;    /* x86: the SSE control and status register (0 elsewhere) */
} gck_fpenv;

/** Save the calling thread's environment. */
void gck_fpenv_save(gck_fpenv *e);
/** Restore it, flags included; returns true when the controls had changed since the save, with
 *  what changed ("rounding toward zero, flush-to-zero on", ...) in `what` (may be NULL). */
bool gck_fpenv_restore(const gck_fpenv *e, char *what, size_t len);

/** The caller's environment while a public function runs in gemmcheck's. */
typedef struct gck_fpguard {
    gck_fpenv caller;
} gck_fpguard;

/** Whether the calling thread is in the default environment: on x86, MXCSR's controls 0x1f80
 *  (all masked, to nearest, no FTZ or DAZ) and the x87 control word's masks, precision and
 *  rounding as the ABI starts them (0x037f). Elsewhere the controls are not read: false. */
static inline bool gck_fpenv_is_default(void) {
#ifdef GCK_HAVE_MXCSR
    unsigned short cw;
    __asm__ volatile("fnstcw %0" : "=m"(cw));
    return (_mm_getcsr() & 0xffc0u) == 0x1f80u && (cw & 0x0f3fu) == 0x033fu;
#else
    return false;
#endif
}

/** Save the caller's environment and enter the default one (every exception masked). */
void gck_fpguard_switch(gck_fpguard *g);
/** Give the caller's controls and flags back, with the flags raised since the switch added
 *  (into MXCSR, whose flags never trap by themselves; elsewhere they are dropped). */
void gck_fpguard_return(const gck_fpguard *g);

/** A public function `name` with parameters `params` that runs `impl` on `args` (its own
 *  parameters) in gemmcheck's environment and returns its value of type `type`. In the default
 *  environment `impl` is called as it is (and may be inlined); otherwise through a volatile
 *  pointer between the switch and the return: the compiler assumes that arithmetic does not
 *  depend on the environment, and could otherwise move it out of the guard. */
#define GCK_FPENV_GUARDED(type, name, impl, params, args)                                          \
    type name params {                                                                             \
        if (gck_fpenv_is_default()) return impl args;                                              \
        gck_fpguard guard_;                                                                        \
        gck_fpguard_switch(&guard_);                                                               \
        __typeof__(impl) *volatile impl_ = impl;                                                   \
        type result_ = impl_ args;                                                                 \
        gck_fpguard_return(&guard_);                                                               \
        return result_;                                                                            \
    }
/** The same for a function that returns nothing. */
#define GCK_FPENV_GUARDED_VOID(name, impl, params, args)                                           \
    void name params {                                                                             \
        if (gck_fpenv_is_default()) {                                                              \
            impl args;                                                                             \
            return;                                                                                \
        }                                                                                          \
        gck_fpguard guard_;                                                                        \
        gck_fpguard_switch(&guard_);                                                               \
        __typeof__(impl) *volatile impl_ = impl;                                                   \
        impl_ args;                                                                                \
        gck_fpguard_return(&guard_);                                                               \
    }

/** The "C" locale, made once (NULL if it cannot be). */
locale_t gck_c_locale(void);
/** Make the calling thread use the "C" locale; returns the one it used (NULL: unchanged). */
static inline locale_t gck_locale_enter(void) {
    locale_t c = gck_c_locale();
    return c ? uselocale(c) : (locale_t)0;
}
static inline void gck_locale_leave(locale_t caller) {
    if (caller) uselocale(caller);
}

/** As GCK_FPENV_GUARDED, and in the "C" locale: the public functions other than the value
 *  functions of gemmcheck/format.h (which write no text and are called per element). */
#define GCK_GUARDED(type, name, impl, params, args)                                                \
    type name params {                                                                             \
        locale_t caller_locale_ = gck_locale_enter();                                              \
        type result_;                                                                              \
        if (gck_fpenv_is_default()) {                                                              \
            result_ = impl args;                                                                   \
        } else {                                                                                   \
            gck_fpguard guard_;                                                                    \
            gck_fpguard_switch(&guard_);                                                           \
            __typeof__(impl) *volatile impl_ = impl;                                               \
            result_ = impl_ args;                                                                  \
            gck_fpguard_return(&guard_);                                                           \
        }                                                                                          \
        gck_locale_leave(caller_locale_);                                                          \
        return result_;                                                                            \
    }
#define GCK_GUARDED_VOID(name, impl, params, args)                                                 \
    void name params {                                                                             \
        locale_t caller_locale_ = gck_locale_enter();                                              \
        if (gck_fpenv_is_default()) {                                                              \
            impl args;                                                                             \
        } else {                                                                                   \
            gck_fpguard guard_;                                                                    \
            gck_fpguard_switch(&guard_);                                                           \
            __typeof__(impl) *volatile impl_ = impl;                                               \
            impl_ args;                                                                            \
            gck_fpguard_return(&guard_);                                                           \
        }                                                                                          \
        gck_locale_leave(caller_locale_);                                                          \
    }

#endif
