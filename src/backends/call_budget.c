/* The memory budget of one backend call (call_budget.h). */
#define _GNU_SOURCE
#include "call_budget.h"

#include <alloca.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* One call at a time in a process: the budget in force, the limit saved before it and the one
 * set for it. */
static int64_t budget;
static bool applied;
static struct rlimit saved, limited;
static int64_t headroom; /* address space beyond the budget (gck_call_budget_resume_plus) */

/* The process's address-space size in bytes (0 when /proc cannot say), read without malloc. */
static uint64_t vm_size(void) {
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char buf[128];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = '\0';
    unsigned long long pages = 0;
    if (sscanf(buf, "%llu", &pages) != 1) return 0;
    return (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* The stack the call may use without counting against its budget: the calling thread's stack
 * grows on demand, and growth is address space, so under a small budget a library's deep
 * frames would fault. Touched before the limit is set, from the caller's frame down, these
 * pages are mapped already and part of the size the budget is added to: 4 MiB, or the stack
 * limit less 2 MiB for the frames above when that is less (a Python worker's interpreter
 * frames come first), at least 256 KiB. */
__attribute__((noinline)) static void prefault_stack(void) {
    size_t n = (size_t)4 << 20;
    struct rlimit st;
    if (getrlimit(RLIMIT_STACK, &st) == 0 && st.rlim_cur != RLIM_INFINITY &&
        st.rlim_cur < n + ((size_t)2 << 20))
        n = st.rlim_cur > ((rlim_t)3 << 20) ? (size_t)st.rlim_cur - ((size_t)2 << 20)
                                            : (size_t)256 << 10;
    volatile char *pad = alloca(n);
    for (size_t i = n; i > 0; i = i > 4096 ? i - 4096 : 0) pad[i - 1] = 0; /* downwards */
}

/* The limit of the process's size now plus the budget and the headroom (below the hard limit). */
static bool set_limit(void) {
    limited = saved;
    uint64_t want = vm_size() + (uint64_t)budget + (uint64_t)headroom;
    if (limited.rlim_max == RLIM_INFINITY || want < limited.rlim_max) limited.rlim_cur = want;
    return setrlimit(RLIMIT_AS, &limited) == 0;
}

bool gck_call_budget_begin(int64_t bytes) {
    budget = bytes > 0 ? bytes : 0;
    headroom = 0;
    applied = false;
    if (budget == 0) return true;
    prefault_stack();
    if (getrlimit(RLIMIT_AS, &saved) != 0) return false;
    applied = set_limit();
    return applied;
}

void gck_call_budget_end(void) {
    if (applied) setrlimit(RLIMIT_AS, &saved);
    applied = false;
    budget = 0;
    headroom = 0;
}

int64_t gck_call_budget(void) { return budget; }

void gck_call_budget_pause(void) {
    if (applied) setrlimit(RLIMIT_AS, &saved);
}

/* From the size the process has now: what gemmcheck's own work mapped meanwhile (a device
 * runtime's staging buffers) does not count either. */
void gck_call_budget_resume(void) { gck_call_budget_resume_plus(0); }

void gck_call_budget_resume_plus(int64_t extra) {
    headroom = extra > 0 ? extra : 0;
    if (applied) set_limit();
}
