/* Worker messages: fixed-size records over pipes. */
#include "wire.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

bool gck_wire_write(int fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

void gck_wire_send(int fd, int tag, const char *text) {
    gck_wire_msg m = {.tag = tag};
    snprintf(m.text, sizeof m.text, "%s", text ? text : "");
    gck_wire_write(fd, &m, sizeof m);
}

void gck_wire_send_call(int fd, int tag, const gck_call_info *call) {
    char text[48];
    snprintf(text, sizeof text, "%d %d %d", (int)call->mode, call->calls, call->threads);
    gck_wire_send(fd, tag, text);
}

bool gck_wire_parse_call(const gck_wire_msg *m, gck_call_info *call) {
    int mode, calls, threads;
    if (sscanf(m->text, "%d %d %d", &mode, &calls, &threads) != 3 || mode < 0 ||
        mode >= GCK_CALL_MODE_COUNT || calls < 1 || calls > 4096 || threads < 0 || threads > 4096)
        return false;
    *call = (gck_call_info){(gck_call_mode)mode, calls, threads};
    return true;
}

void gck_wire_repro_flags(char *flags, size_t len, long long concurrency, long long repeat) {
    char c[40] = "", r[40] = "";
    if (concurrency > 1) snprintf(c, sizeof c, " --concurrency %lld", concurrency);
    if (repeat > 1) snprintf(r, sizeof r, " --repeat %lld", repeat);
    snprintf(flags, len, "%s%s", c, r);
}

bool gck_wire_call_flags(const gck_call_info *call, char *flags, size_t len) {
    bool conc = call->mode == GCK_CALL_ALONE || call->mode == GCK_CALL_CONCURRENT;
    gck_wire_repro_flags(flags, len, conc ? (call->threads > 1 ? call->threads : 2) : 0, 1);
    return conc;
}

void gck_wire_hang_detail(const gck_call_info *call, double seconds, char *detail, size_t len,
                          char *flags, size_t flen) {
    bool conc = gck_wire_call_flags(call, flags, flen);
    char n[32] = "";
    if (call->mode == GCK_CALL_CONCURRENT) snprintf(n, sizeof n, ", %d at once", call->calls);
    snprintf(detail, len,
             "the backend's %s%s did not return within its deadline of %.1f s; the worker was "
             "killed%s%s",
             gck_call_mode_name(call->mode), n, seconds, conc ? " (repro flags for this call:" : "",
             conc ? flags : "");
    if (conc) snprintf(detail + strlen(detail), len - strlen(detail), ")");
}

double gck_wire_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int gck_wire_read(int fd, void *buf, size_t n, double deadline) {
    size_t got = 0;
    while (got < n) {
        int wait_ms = -1;
        if (deadline > 0) {
            double left = deadline - gck_wire_now();
            if (left <= 0) return -1;
            wait_ms = (int)(left * 1000) + 1;
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int pr = poll(&p, 1, wait_ms);
        if (pr < 0 && errno == EINTR) continue;
        if (pr == 0) continue; /* the deadline is checked at the top */
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return 0;
        got += (size_t)r;
    }
    return 1;
}
