/* The messages between a worker process and its supervisor. Every message is a
 * frame: a header (magic, tag, payload length, sequence number, checksum) and the payload. The
 * backend runs inside the worker and can write to any descriptor it holds, so the supervisor
 * trusts nothing it reads: a frame with a wrong magic, tag, length, sequence number or
 * checksum, or a payload that does not validate, ends that worker (docs/ISOLATION.md) (internal:
 * for src/run/ and fuzz/, src/cli/). */
#ifndef GEMMCHECK_RUN_WIRE_H
#define GEMMCHECK_RUN_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gemmcheck/runner.h"

/** The tags of the worker protocol's messages. */
typedef enum gck_wire_tag {
    GCK_WIRE_SETUP = 1, /* set-up failed (text: why) */
    GCK_WIRE_READY,     /* the backend is open (text: "<oracle> <version>") */
    GCK_WIRE_CALLING,   /* a backend call starts: its deadline runs (text: "mode calls threads") */
    GCK_WIRE_CALLED,    /* the call returned */
    GCK_WIRE_RESULT,    /* a case's result (payload: gck_run_result) */
    GCK_WIRE_INTERNAL,  /* gemmcheck failed on the case (text: why) */
    GCK_WIRE_TABLE,     /* the support table follows (text: row count) */
    GCK_WIRE_ROW,       /* one support row (payload: gck_wire_row) */
    GCK_WIRE_REQUEST,   /* supervisor to worker: one case (payload: gck_wire_request) */
    GCK_WIRE_UNAVAILABLE, /* the backend opened but cannot run here (text: why) */
    GCK_WIRE_TASK,        /* supervisor to a task worker: the task (payload: gck_wire_task) */
    GCK_WIRE_TASK_OUT,    /* what the task writes (payload: 1 to GCK_WIRE_CHUNK_MAX bytes) */
    GCK_WIRE_TASK_END,    /* the task returned (text: "" when it succeeded, else why not) */
    GCK_WIRE_TAG_END
} gck_wire_tag;

/** Longest text payload, its NUL included. */
#define GCK_WIRE_TEXT_MAX 1024

/** One case for a worker, with the run options that are not the worker's own. */
typedef struct gck_wire_request {
    uint64_t id;
    int determinism;   /**< rerun on fresh buffers and compare bitwise */
    int concurrency;   /**< > 1: also call from this many threads at once */
    int repeat;        /**< run up to this many times, stopping at the first finding */
    int no_guard_page; /**< end operands 4 KiB (or 64 leading dimensions) before their guards */
    int threads;       /**< checker threads */
    char dump_dir[1024];
    char repro[2048];
} gck_wire_request;

/** The most bytes of a task's output one TASK_OUT frame carries. */
#define GCK_WIRE_CHUNK_MAX 16384

/** A task for a worker started in task mode (task.h): a registered name and its argument. */
typedef struct gck_wire_task {
    char name[64];
    char arg[960];
} gck_wire_task;

/** A support row as it crosses the pipe (the entry string inline). */
typedef struct gck_wire_row {
    gck_support_row row;
    char entry[96];
} gck_wire_row;

/** A frame as read: the tag and its payload (valid until the next read). */
typedef struct gck_wire_frame {
    int tag;
    size_t len;
    const unsigned char *data;
} gck_wire_frame;

/** The supervisor's side of one message stream: bytes read so far, the next sequence number. */
typedef struct gck_wire_reader {
    unsigned char *buf;
    size_t have, cap;
    uint32_t seq;
    unsigned char *frame; /* the payload of the last frame returned */
} gck_wire_reader;

bool gck_wire_reader_init(gck_wire_reader *r);
void gck_wire_reader_free(gck_wire_reader *r);
/** Append what `fd` (non-blocking) has now. Returns bytes read, 0 at end of file, -1 when
 *  nothing is there yet. */
long gck_wire_reader_fill(gck_wire_reader *r, int fd);
/** The next complete frame: 1 (in *f), 0 when more bytes are needed, -1 when the bytes are not
 *  a frame gemmcheck wrote (why says what is wrong). */
int gck_wire_reader_next(gck_wire_reader *r, gck_wire_frame *f, char *why, size_t wlen);

/** Encode one frame into buf (header and payload); its size, 0 when cap is too small. */
size_t gck_wire_encode(void *buf, size_t cap, uint32_t seq, int tag, const void *payload,
                       size_t len);
/** Send one frame (the worker's side; blocking). *seq counts the frames sent. */
bool gck_wire_send(int fd, uint32_t *seq, int tag, const void *payload, size_t len);
/** Send a text frame (truncated to GCK_WIRE_TEXT_MAX - 1 bytes). */
bool gck_wire_send_text(int fd, uint32_t *seq, int tag, const char *text);
/** Write all n bytes before `deadline` (CLOCK_MONOTONIC seconds; <= 0: none); false on error
 *  or timeout. Works on blocking and non-blocking descriptors. */
bool gck_wire_write(int fd, const void *buf, size_t n, double deadline);
/** Read exactly n bytes before `deadline` (<= 0: none). Returns 1 on success, 0 on end of
 *  file, -1 on timeout. */
int gck_wire_read(int fd, void *buf, size_t n, double deadline);
/** Read one frame from a blocking descriptor (the worker reading its requests): 1, 0 at end of
 *  file, -1 when malformed. *seq is the expected sequence number, advanced. */
int gck_wire_read_frame(int fd, uint32_t *seq, int *tag, void *payload, size_t cap, size_t *len);

/** The text of a text frame, checked: NUL-terminated within its length. False otherwise. */
bool gck_wire_text(const gck_wire_frame *f, const char **text);
/** CALLING or CALLED for one backend call; the text carries its mode and calls in flight. */
void gck_wire_send_call(int fd, uint32_t *seq, int tag, const gck_call_info *call);
/** The call a CALLING/CALLED text describes; false when the text is malformed. */
bool gck_wire_parse_call(const char *text, gck_call_info *call);
/** Check a result that crossed the pipe: enumerations in range, counts within their arrays,
 *  strings terminated and cleaned (in place). False with the reason otherwise. */
bool gck_wire_check_result(gck_run_result *r, char *why, size_t wlen);
/** `repro` options, as appended to its command line: " --concurrency N" when concurrency > 1,
 *  " --repeat R" when repeat > 1, else "". The one spelling of both for every reproducer. */
void gck_wire_repro_flags(char *flags, size_t len, long long concurrency, long long repeat);
/** The command that reproduces a case: gemmcheck repro --backend B[flags] 'CASE'. The one
 *  spelling of it in every report, message and test. */
void gck_repro_command(char *buf, size_t len, const char *backend, const char *flags,
                       const char *repro);
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
