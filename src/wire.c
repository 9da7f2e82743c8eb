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
