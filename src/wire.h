/* The messages a worker process sends to its supervisor (internal): fixed-size records on a
 * pipe, so that a worker killed mid-write never leaves half a message that parses. */
#ifndef GEMMCHECK_WIRE_H
#define GEMMCHECK_WIRE_H

#include <stdbool.h>
#include <stddef.h>

enum {
    GCK_WIRE_SETUP = 1, /* set-up failed (text: why); the worker exits */
    GCK_WIRE_READY,     /* the backend is open (text: its version) */
    GCK_WIRE_CALLING,   /* a backend call starts: its deadline runs */
    GCK_WIRE_CALLED,    /* the call returned */
    GCK_WIRE_RESULT,    /* followed by one gck_run_result (text: the backend's version) */
    GCK_WIRE_INTERNAL,  /* gemmcheck failed (text: why) */
    GCK_WIRE_TABLE      /* followed by the support table (text: row count) */
};

typedef struct gck_wire_msg {
    int tag;
    char text[1024];
} gck_wire_msg;

/** Send one record (write errors are ignored: the reader sees end of file). */
void gck_wire_send(int fd, int tag, const char *text);
/** Write all n bytes; false on error. */
bool gck_wire_write(int fd, const void *buf, size_t n);
/** Read exactly n bytes before `deadline` (CLOCK_MONOTONIC seconds; <= 0: none). Returns 1 on
 *  success, 0 on end of file, -1 on timeout. */
int gck_wire_read(int fd, void *buf, size_t n, double deadline);
/** CLOCK_MONOTONIC in seconds. */
double gck_wire_now(void);

#endif
