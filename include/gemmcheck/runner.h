/* gemmcheck — running one spec on one backend, in this process.
 *
 * The runner places the operands in guarded buffers, fills them from the spec, calls the
 * backend, checks guard zones, padding and inputs, then checks D with the checker (and, on
 * request, runs the call again on fresh identical buffers to compare bit for bit). Crashes and
 * hangs are the caller's business: `gemmcheck repro` runs this in a child process. */
#ifndef GEMMCHECK_RUNNER_H
#define GEMMCHECK_RUNNER_H

#include "gemmcheck/backend.h"
#include "gemmcheck/checker.h"
#include "gemmcheck/spec.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gck_outcome {
    GCK_OUTCOME_PASS = 0,
    GCK_OUTCOME_UNSUPPORTED, /**< no row of the backend's table serves the case */
    GCK_OUTCOME_FINDINGS
} gck_outcome;

GCK_API const char *gck_outcome_name(gck_outcome o);

/** One finding of one case. */
typedef struct gck_finding {
    gck_kind kind;
    char detail[384]; /**< one line: what was seen */
    bool has_element; /**< numeric kinds: `element` is the worst element */
    gck_element_report element;
    int64_t count; /**< elements (or bytes) affected */
} gck_finding;

/** Which backend call of a run is under way (each has its own deadline). */
typedef enum gck_call_mode {
    GCK_CALL_FIRST = 0,  /**< the case's call */
    GCK_CALL_RERUN,      /**< the determinism check's second call on fresh buffers */
    GCK_CALL_ALONE,      /**< a concurrency-check call made alone (its reference result) */
    GCK_CALL_CONCURRENT, /**< the concurrency check's calls, all at once from threads */
    GCK_CALL_RECOVERY,   /**< the call, without limits, after a first call refused under the
                              case's memory budget or thread limit (docs/RESOURCES.md) */
    GCK_CALL_MODE_COUNT
} gck_call_mode;

/** "first call", "rerun (determinism check)", ... */
GCK_API const char *gck_call_mode_name(gck_call_mode m);

/** One backend call as the hooks see it. */
typedef struct gck_call_info {
    gck_call_mode mode;
    int calls;   /**< calls in flight: 1, or the thread count for GCK_CALL_CONCURRENT */
    int threads; /**< the concurrency check's thread count (0 outside it) */
} gck_call_info;

/** The deadline of a backend call of case c, in seconds: `floor` plus time for its
 *  multiply-adds (1e7 per second: a slow reference BLAS) and for the bytes it may touch (every
 *  operand's extent, padding included, at 1e8 bytes per second), times the calls in flight
 *  (they share the cores). gemmcheck's own work (allocation, filling, checks) never counts. */
GCK_API double gck_call_deadline(const gck_case *c, int calls, double floor);

typedef struct gck_run_options {
    gck_check_options check;
    bool determinism;     /**< run twice on fresh identical buffers, compare D */
    int concurrency;      /**< > 1: also call from this many threads at once on distinct buffers and
                               compare each D with the single-threaded one (thread safety) */
    bool no_guard_page;   /**< end operands 4 KiB (or 64 lines of the widest leading dimension,
                               if more) before their guard pages: a read past the end does not
                               fault (to tell an over-read from other crashes) */
    const char *dump_dir; /**< write A, B, C, D_expected, D_got as .npy here */
    int repeat; /**< > 1: run the case up to this many times with the same backend (its state
                     carried over, as in a campaign's worker), stopping at the first run with
                     findings: a race may show only after the library has served some calls */
    /** Called just before each backend call (for the concurrent calls: once, when every
     *  thread's buffers are ready and the threads are released) and as soon as it returns. */
    void (*before_call)(void *ctx, const gck_call_info *call);
    void (*after_call)(void *ctx, const gck_call_info *call);
    void *ctx;
} gck_run_options;

typedef struct gck_run_result {
    gck_outcome outcome;
    char row[256];  /**< the support row used */
    char note[384]; /**< why unsupported */
    gck_check_result check;
    int nfindings;
    gck_finding findings[GCK_KIND_COUNT]; /**< at most one per kind */
    double call_seconds;
    int attempts; /**< runs made (1 unless gck_run_options.repeat > 1) */
    /** The first call, under the case's memory budget or thread limit, returned an error:
     *  counted, not a finding; the case's verdict is then the next call's, made without
     *  limits on fresh buffers (docs/RESOURCES.md). refusal: its message. */
    bool refused;
    char refusal[256];
    int threads_refused; /**< pthread_create calls refused to the first call */
} gck_run_result;

/** Run one spec. Returns GCK_OK when the case ran (whatever its outcome); GCK_EINVAL for an
 *  invalid spec, GCK_ENOMEM when the operands cannot be allocated, GCK_EIO when dumping fails;
 *  msg says what happened. */
GCK_API gck_status gck_run_spec(gck_backend *be, const gck_spec *s, const gck_run_options *o,
                                gck_run_result *r, char *msg, size_t len);

/** Remove the finding of `kind` from r (the outcome becomes pass when none is left): how a
 *  caller that does not fail on a kind (`--tier hard` and improbable_error) keeps its counts in
 *  r->check but not the finding. */
GCK_API void gck_run_result_drop(gck_run_result *r, gck_kind kind);

/** How an isolated run ended. */
typedef enum gck_isolated_status {
    GCK_ISOLATED_RAN = 0,     /**< the case ran; `run` holds its result */
    GCK_ISOLATED_SETUP_ERROR, /**< bad backend spec, library or device unavailable, no memory,
                                   or a backend whose opening (init) crashed, hung or misbehaved */
    GCK_ISOLATED_CRASH,       /**< the worker died in or after the backend's calls for the case */
    GCK_ISOLATED_HANG,        /**< a backend call did not return before the deadline */
    GCK_ISOLATED_INTERNAL     /**< gemmcheck itself failed after the call had returned */
} gck_isolated_status;

typedef struct gck_isolated_result {
    gck_isolated_status status;
    char message[1024]; /**< set-up error, or what killed the worker */
    char version[256];  /**< the backend's version (when it ran) */
    gck_run_result run;
} gck_isolated_result;

/** Run one spec in a forked child that opens the backend itself (the parent never
 *  initialises it), so that a crash or a hang is reported instead of taking the caller down.
 *  Each backend call has its own deadline: `call_timeout` seconds when > 0 (times the calls in
 *  flight for the concurrent calls), else gck_call_deadline(case, calls, 10). Set-up and the
 *  checks are not timed against the backend. */
GCK_API gck_status gck_run_isolated(const char *backend, const gck_spec *s,
                                    const gck_run_options *o, double call_timeout,
                                    gck_isolated_result *out);

/** The worker's side of a campaign or repro: serves cases on descriptors 3 (requests) and 4
 *  (messages) until the supervisor closes them, and returns the exit status. The arguments are
 *  those the supervisor gives `gemmcheck __worker`: --backend SPEC, --oracle KIND, --parent PID,
 *  --strict-ieee, and --setup-error TEXT, which reports TEXT as the backend's set-up error and
 *  serves nothing. The Python module's worker (`python3 -m gemmcheck.worker`) calls it after
 *  defining the user's callable (gck_backend_define). */
GCK_API int gck_worker_main(int argc, char **argv);

#ifdef __cplusplus
}
#endif
#endif
