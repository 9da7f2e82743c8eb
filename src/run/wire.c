/* Worker messages: framed, checked, sequenced. */
#include "wire.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "text.h"

#define MAGIC 0x574b4347u /* "GCKW" */

typedef struct header {
    uint32_t magic, tag, len, seq, sum;
} header;

/* The payload length a tag allows: exact for records, at most GCK_WIRE_TEXT_MAX for text. */
static bool length_ok(uint32_t tag, uint32_t len) {
    switch (tag) {
    case GCK_WIRE_RESULT: return len == sizeof(gck_run_result);
    case GCK_WIRE_ROW: return len == sizeof(gck_wire_row);
    case GCK_WIRE_REQUEST: return len == sizeof(gck_wire_request);
    case GCK_WIRE_TASK: return len == sizeof(gck_wire_task);
    case GCK_WIRE_TASK_OUT: return len >= 1 && len <= GCK_WIRE_CHUNK_MAX;
    default:
        return tag >= GCK_WIRE_SETUP && tag < GCK_WIRE_TAG_END && len >= 1 &&
               len <= GCK_WIRE_TEXT_MAX;
    }
}

/* FNV-1a over the header's tag, length and sequence number, then the payload. */
static uint32_t checksum(const header *h, const void *payload, size_t len) {
    uint32_t s = 2166136261u;
    const uint32_t fields[3] = {h->tag, h->len, h->seq};
    const unsigned char *p = (const unsigned char *)fields;
    for (size_t i = 0; i < sizeof fields; i++) s = (s ^ p[i]) * 16777619u;
    p = payload;
    for (size_t i = 0; i < len; i++) s = (s ^ p[i]) * 16777619u;
    return s;
}

double gck_wire_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Wait until fd is ready for `events` or the deadline passes: true when ready. */
static bool wait_fd(int fd, short events, double deadline) {
    for (;;) {
        int ms = -1;
        if (deadline > 0) {
            double left = deadline - gck_wire_now();
            if (left <= 0) return false;
            ms = (int)(left * 1000) + 1;
        }
        struct pollfd p = {.fd = fd, .events = events};
        int pr = poll(&p, 1, ms);
        if (pr > 0) return true;
        if (pr < 0 && errno != EINTR) return false;
    }
}

bool gck_wire_write(int fd, const void *buf, size_t n, double deadline) {
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            if (!wait_fd(fd, POLLOUT, deadline)) return false;
            continue;
        }
        if (w <= 0) return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

int gck_wire_read(int fd, void *buf, size_t n, double deadline) {
    size_t got = 0;
    while (got < n) {
        if (!wait_fd(fd, POLLIN, deadline)) return -1;
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (r <= 0) return 0;
        got += (size_t)r;
    }
    return 1;
}

size_t gck_wire_encode(void *buf, size_t cap, uint32_t seq, int tag, const void *payload,
                       size_t len) {
    header h = {MAGIC, (uint32_t)tag, (uint32_t)len, seq, 0};
    if (sizeof h + len > cap) return 0;
    h.sum = checksum(&h, payload, len);
    memcpy(buf, &h, sizeof h);
    memcpy((unsigned char *)buf + sizeof h, payload, len);
    return sizeof h + len;
}

bool gck_wire_send(int fd, uint32_t *seq, int tag, const void *payload, size_t len) {
    /* one write, so that a frame is not interleaved with a stray write of the backend */
    unsigned char small[sizeof(header) + GCK_WIRE_TEXT_MAX];
    size_t cap = sizeof(header) + len;
    unsigned char *buf = cap <= sizeof small ? small : malloc(cap);
    if (!buf) return false;
    size_t n = gck_wire_encode(buf, cap, (*seq)++, tag, payload, len);
    bool ok = gck_wire_write(fd, buf, n, 0);
    if (buf != small) free(buf);
    return ok;
}

bool gck_wire_send_text(int fd, uint32_t *seq, int tag, const char *text) {
    char t[GCK_WIRE_TEXT_MAX];
    snprintf(t, sizeof t, "%s", text ? text : "");
    return gck_wire_send(fd, seq, tag, t, strlen(t) + 1);
}

int gck_wire_read_frame(int fd, uint32_t *seq, int *tag, void *payload, size_t cap, size_t *len) {
    header h;
    int got = gck_wire_read(fd, &h, sizeof h, 0);
    if (got != 1) return got == 0 ? 0 : -1;
    if (h.magic != MAGIC || !length_ok(h.tag, h.len) || h.len > cap || h.seq != *seq) return -1;
    if (gck_wire_read(fd, payload, h.len, 0) != 1) return -1;
    if (checksum(&h, payload, h.len) != h.sum) return -1;
    (*seq)++;
    *tag = (int)h.tag;
    *len = h.len;
    return 1;
}

/* ---- the supervisor's reader ---------------------------------------------------------------- */

/* room for the longest frame a worker sends (a result, or a task's chunk) and more */
#define RECORDS_CAP (sizeof(gck_run_result) + sizeof(gck_wire_request))
#define READER_CAP                                                                                 \
    (sizeof(header) + (RECORDS_CAP > GCK_WIRE_CHUNK_MAX ? RECORDS_CAP : GCK_WIRE_CHUNK_MAX))

bool gck_wire_reader_init(gck_wire_reader *r) {
    memset(r, 0, sizeof *r);
    r->cap = READER_CAP;
    r->buf = malloc(r->cap);
    r->frame = malloc(r->cap);
    if (!r->buf || !r->frame) {
        gck_wire_reader_free(r);
        return false;
    }
    return true;
}

void gck_wire_reader_free(gck_wire_reader *r) {
    free(r->buf);
    free(r->frame);
    r->buf = r->frame = NULL;
    r->have = r->cap = 0;
}

long gck_wire_reader_fill(gck_wire_reader *r, int fd) {
    if (r->have == r->cap) return -1; /* a full buffer is parsed (or refused) before more */
    for (;;) {
        ssize_t n = read(fd, r->buf + r->have, r->cap - r->have);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? -1 : 0;
        r->have += (size_t)n;
        return (long)n;
    }
}

int gck_wire_reader_next(gck_wire_reader *r, gck_wire_frame *f, char *why, size_t wlen) {
    header h;
    const uint32_t magic = MAGIC;
    size_t m = r->have < sizeof magic ? r->have : sizeof magic;
    bool bad_magic = memcmp(r->buf, &magic, m) != 0; /* known from the first byte on */
    if (!bad_magic && r->have < sizeof h) return 0;
    memcpy(&h, r->buf, r->have < sizeof h ? r->have : sizeof h);
    if (bad_magic) {
        snprintf(why, wlen, "bytes that are not a gemmcheck message (%02x %02x %02x %02x ...)",
                 r->buf[0], r->buf[1], r->buf[2], r->buf[3]);
        return -1;
    }
    if (!length_ok(h.tag, h.len)) {
        snprintf(why, wlen, "a message with tag %u and length %u, which no message has", h.tag,
                 h.len);
        return -1;
    }
    if (h.seq != r->seq) {
        snprintf(why, wlen, "message %u where %u was due", h.seq, r->seq);
        return -1;
    }
    if (r->have < sizeof h + h.len) return 0;
    if (checksum(&h, r->buf + sizeof h, h.len) != h.sum) {
        snprintf(why, wlen, "a message (tag %u) whose checksum does not match", h.tag);
        return -1;
    }
    memcpy(r->frame, r->buf + sizeof h, h.len);
    size_t used = sizeof h + h.len;
    memmove(r->buf, r->buf + used, r->have - used);
    r->have -= used;
    r->seq++;
    *f = (gck_wire_frame){(int)h.tag, h.len, r->frame};
    return 1;
}

bool gck_wire_text(const gck_wire_frame *f, const char **text) {
    if (f->len == 0 || f->data[f->len - 1] != '\0') return false;
    *text = (const char *)f->data;
    return true;
}

/* ---- calls ------------------------------------------------------------------------------------
 */

void gck_wire_send_call(int fd, uint32_t *seq, int tag, const gck_call_info *call) {
    char text[48];
    snprintf(text, sizeof text, "%d %d %d", (int)call->mode, call->calls, call->threads);
    gck_wire_send_text(fd, seq, tag, text);
}

bool gck_wire_parse_call(const char *text, gck_call_info *call) {
    int mode, calls, threads;
    if (sscanf(text, "%d %d %d", &mode, &calls, &threads) != 3 || mode < 0 ||
        mode >= GCK_CALL_MODE_COUNT || calls < 1 || calls > 4096 || threads < 0 || threads > 4096)
        return false;
    *call = (gck_call_info){(gck_call_mode)mode, calls, threads};
    return true;
}

#define CLEAN(s) gck_text_clean_inplace((s), sizeof(s))

bool gck_wire_check_result(gck_run_result *r, char *why, size_t wlen) {
    if ((unsigned)r->outcome > GCK_OUTCOME_FINDINGS) {
        snprintf(why, wlen, "a result with outcome %d", (int)r->outcome);
        return false;
    }
    if (r->nfindings < 0 || r->nfindings > GCK_KIND_COUNT) {
        snprintf(why, wlen, "a result claiming %d findings (at most %d)", r->nfindings,
                 GCK_KIND_COUNT);
        return false;
    }
    if ((r->outcome == GCK_OUTCOME_FINDINGS) != (r->nfindings > 0)) {
        snprintf(why, wlen, "a result whose outcome disagrees with its %d findings", r->nfindings);
        return false;
    }
    for (int i = 0; i < r->nfindings; i++) {
        gck_finding *f = &r->findings[i];
        if ((unsigned)f->kind >= GCK_KIND_COUNT) {
            snprintf(why, wlen, "a finding of kind %d", (int)f->kind);
            return false;
        }
        CLEAN(f->detail);
        CLEAN(f->element.rule);
    }
    for (int k = 0; k < GCK_KIND_COUNT; k++) CLEAN(r->check.worst[k].rule);
    CLEAN(r->check.max_ratio.rule);
    CLEAN(r->check.disagreement.rule);
    CLEAN(r->check.oracle_path);
    CLEAN(r->check.stat_note);
    CLEAN(r->row);
    CLEAN(r->note);
    if (r->attempts < 0) r->attempts = 0;
    return true;
}

/* ---- repro flags and hang details ------------------------------------------------------------ */

void gck_wire_repro_flags(char *flags, size_t len, long long concurrency, long long repeat) {
    char c[40] = "", r[40] = "";
    if (concurrency > 1) snprintf(c, sizeof c, " --concurrency %lld", concurrency);
    if (repeat > 1) snprintf(r, sizeof r, " --repeat %lld", repeat);
    snprintf(flags, len, "%s%s", c, r);
}

void gck_repro_command(char *buf, size_t len, const char *backend, const char *flags,
                       const char *repro) {
    snprintf(buf, len, "gemmcheck repro --backend %s%s '%s'", backend, flags ? flags : "", repro);
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
