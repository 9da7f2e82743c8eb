/* The memory budget of the backend call in progress (a case's mem=, docs/RESOURCES.md), kept
 * where the backends can see it: src/run/call_limits.c puts it in force around one backend call,
 * and a backend whose memory is not the process's address space (a GPU's) applies it there too
 * (src/backends/cuda/cuda.c: a device reservation that leaves only the budget free).
 *
 * On the host the budget is the soft address-space limit (RLIMIT_AS) set to the process's own
 * size plus the budget. Up to 4 MiB of the calling thread's stack is mapped beforehand, so that
 * a library's frames do not count. gemmcheck's own work inside a backend's call (copying the
 * operands to a device and back) is done with the limit lifted (gck_call_budget_pause/resume),
 * so that it never counts either (internal: for src/backends/ and src/run/). */
#ifndef GEMMCHECK_BACKENDS_CALL_BUDGET_H
#define GEMMCHECK_BACKENDS_CALL_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

/** Put a budget of `bytes` (> 0) in force for the call about to start; false when the host
 *  limit could not be set (the budget is then still reported by gck_call_budget). */
bool gck_call_budget_begin(int64_t bytes);
/** Lift it (nothing when none is in force). */
void gck_call_budget_end(void);

/** The budget in force for the call in progress, in bytes; 0 when there is none. */
int64_t gck_call_budget(void);

/** Lift the host limit while gemmcheck's own work runs inside a backend's call, and put it back
 *  afterwards, from the process's size at that moment (each does nothing when no limit is in
 *  force). Not nested. */
void gck_call_budget_pause(void);
void gck_call_budget_resume(void);
/** gck_call_budget_resume with `extra` bytes more address space than the budget: room for what
 *  a device's allocations take of it (unified virtual addressing maps each into the process),
 *  so that the host's limit does not refuse the device memory the budget grants. */
void gck_call_budget_resume_plus(int64_t extra);

#endif
