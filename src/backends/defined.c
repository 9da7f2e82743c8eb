/* Backends defined at run time by a function of this process (gck_backend_define): the Python
 * module's worker defines the user's callable so, and the worker loop then opens it by its spec
 * like any backend. The definitions live for the process; a worker defines one. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "backends.h"
#include "text.h"

#define MAX_DEFINED      16
#define DEFINED_ROWS_MAX 64

typedef struct defined {
    char spec[256];
    char version[512];
    gck_support_row rows[DEFINED_ROWS_MAX];
    char entries[DEFINED_ROWS_MAX][96];
    size_t nrows;
    gck_defined_call call;
    void *ctx;
} defined;

static defined table[MAX_DEFINED];
static size_t ndefined;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static defined *find(const char *spec) {
    for (size_t i = 0; i < ndefined; i++)
        if (strcmp(table[i].spec, spec) == 0) return &table[i];
    return NULL;
}

static bool spec_ok(const char *spec, char *msg, size_t len) {
    size_t n = spec ? strlen(spec) : 0;
    if (n == 0 || n >= sizeof table[0].spec) {
        snprintf(msg, len, "a defined backend's name is 1 to %zu bytes", sizeof table[0].spec - 1);
        return false;
    }
    for (const char *p = spec; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f) {
            snprintf(msg, len, "a defined backend's name has no blanks or control characters");
            return false;
        }
    if (gck_backend_is_builtin(spec)) {
        snprintf(msg, len, "'%s' is a built-in backend's spec; a defined one needs its own name",
                 spec);
        return false;
    }
    return true;
}

gck_status gck_backend_define(const char *spec, const char *version, const gck_support_row *rows,
                              size_t nrows, gck_defined_call call, void *ctx, char *msg,
                              size_t len) {
    char why[256];
    if (!spec_ok(spec, msg, len)) return GCK_EINVAL;
    if (!call) return gck_fail(GCK_EINVAL, msg, len, "backend %s: no call function", spec);
    if (nrows > DEFINED_ROWS_MAX)
        return gck_fail(GCK_EINVAL, msg, len, "backend %s: %zu rows, more than %d", spec, nrows,
                        DEFINED_ROWS_MAX);
    if (!gck_backend_check_table(rows, nrows, why, sizeof why))
        return gck_fail(GCK_EINVAL, msg, len, "backend %s declares an invalid support table: %s",
                        spec, why);
    pthread_mutex_lock(&lock);
    defined *d = find(spec);
    if (!d && ndefined == MAX_DEFINED) {
        pthread_mutex_unlock(&lock);
        return gck_fail(GCK_EINVAL, msg, len, "more than %d defined backends", MAX_DEFINED);
    }
    if (!d) d = &table[ndefined++];
    memset(d, 0, sizeof *d);
    snprintf(d->spec, sizeof d->spec, "%s", spec);
    gck_text_clean(d->version, sizeof d->version, version ? version : spec,
                   strlen(version ? version : spec));
    for (size_t r = 0; r < nrows; r++) {
        d->rows[r] = rows[r];
        if (rows[r].entry) snprintf(d->entries[r], sizeof d->entries[r], "%s", rows[r].entry);
        d->rows[r].entry = rows[r].entry ? d->entries[r] : NULL;
    }
    d->nrows = nrows;
    d->call = call;
    d->ctx = ctx;
    pthread_mutex_unlock(&lock);
    if (len) msg[0] = '\0';
    return GCK_OK;
}

/* ---- the backend operations over a definition (the state is the definition) ---------------- */

static gck_status defined_init(void **state, const char *spec, char *msg, size_t len) {
    pthread_mutex_lock(&lock);
    defined *d = spec ? find(spec) : NULL;
    pthread_mutex_unlock(&lock);
    if (!d) return gck_fail(GCK_EINVAL, msg, len, "no backend '%s' is defined", spec ? spec : "");
    *state = d;
    return GCK_OK;
}

static void defined_teardown(void *state) { (void)state; }

static bool defined_available(void *state, char *why, size_t len) {
    (void)state;
    if (len) why[0] = '\0';
    return true;
}

static void defined_version(void *state, char *buf, size_t len) {
    snprintf(buf, len, "%s", ((const defined *)state)->version);
}

static size_t defined_table(void *state, const gck_support_row **rows) {
    const defined *d = state;
    *rows = d->rows;
    return d->nrows;
}

static gck_call_status defined_call(void *state, const gck_case *c, const gck_support_row *row,
                                    const gck_operands *ops, char *msg, size_t len) {
    const defined *d = state;
    return d->call(d->ctx, c, row, ops, msg, len);
}

static const gck_backend_ops ops = {
    .name = "defined",
    .init = defined_init,
    .teardown = defined_teardown,
    .available = defined_available,
    .version = defined_version,
    .table = defined_table,
    .call = defined_call,
};

bool gck_backend_defined(const char *spec) {
    pthread_mutex_lock(&lock);
    bool yes = find(spec) != NULL;
    pthread_mutex_unlock(&lock);
    return yes;
}

const gck_backend_ops *gck_defined_backend_ops(void) { return &ops; }
