/* The messages a worker process sends to its supervisor (internal): fixed-size records on a
 * pipe, so that a worker killed mid-write never leaves half a message that parses. */
#ifndef GEMMCHECK_WIRE_H
#define GEMMCHECK_WIRE_H

#include <stdbool.h>
#include <stddef.h>

#include "gemmcheck/runner.h"

enum {
    GCK_WIRE_SETUP = 1, /* set-up failed (text: why); the worker exits */
    GCK_WIRE_READY,     /* the backend is open (text: its version) */
    GCK_WIRE_CALLING,   /* a backend call starts: its deadline runs (text: "mode calls threads") */
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
/** CALLING or CALLED for one backend call; the text carries its mode and calls in flight. */
void gck_wire_send_call(int fd, int tag, const gck_call_info *call);
/** The call a CALLING/CALLED record describes; false when the text is malformed. */
bool gck_wire_parse_call(const gck_wire_msg *m, gck_call_info *call);
/** `repro` options, as appended to its command line: " --concurrency N" when concurrency > 1,
 *  " --repeat R" when repeat > 1, else "". The one spelling of both for every reproducer. */
void gck_wire_repro_flags(char *flags, size_t len, long long concurrency, long long repeat);
/** The repro flags that make the same call again: " --concurrency N" for the concurrency
 *  check's calls (returns true), else "" (the first call and the rerun are repro's default). */
bool gck_wire_call_flags(const gck_call_info *call, char *flags, size_t len);
/** The detail of a `hang`: which call missed its deadline of `seconds`, and the repro flags
 *  that make the same call again ("" or " --concurrency N"). */
void gck_wire_hang_detail(const gck_call_info *call, double seconds, char *detail, size_t len,
                          char *flags, size_t flen);
/** CLOCK_MONOTONIC in seconds. */
double gck_wire_now(void);

#endif
