/* gemmcheck compare: what changed between two certificates of `gemmcheck certify`, in words a
 * user can act on, each difference classified, and whether any is a regression. */
#include <jansson.h>
#include <math.h>
#include <nettle/base64.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "certify.h"
#include "cli.h"
#include "gemmcheck/format.h"
#include "gemmcheck/spec.h"
#include "gemmcheck/version.h"
#include "output.h"
#include "pinned.h"

static const char compare_help[] =
    "usage: gemmcheck compare OLD.json NEW.json [--fail-on-fingerprint] [--ignore-findings]\n"
    "                         [--fail-on-nondeterminism] [--ratio-growth F] [--html DIFF.html]\n"
    "                         [--json DIFF.json]\n"
    "\n"
    "Explains what changed between two certificates of `gemmcheck certify`: the environment\n"
    "(CPU, OS, variables), the library files (SHA-256) and version, support rows gained or\n"
    "lost or whose exercise changed, what each row's table declares (its model, its promises,\n"
    "the entry called), each row's fingerprint properties that changed (old -> new),\n"
    "the share of its pinned cases whose bits changed and their largest error/bound before and\n"
    "after, and the campaigns' findings new and fixed. The first line is the decision:\n"
    "  NO REGRESSION (exit 0): ...   or   REGRESSION (exit 1): ...\n"
    "with the differences counted by class. Each difference is one line \"[CLASS] what\"\n"
    "(\"[REGRESSION: CLASS]\" when it is one); the classes, from the mildest:\n"
    "  environment, library, support (a row gained, its exercise changed, a way of calling\n"
    "  it declared or another entry called, or a property one certificate has and the other,\n"
    "  of another gemmcheck, has not), resources\n"
    "  (a row's memory appetite, and what it does below it: certify --appetite),\n"
    "  reordered only (same arithmetic model), bits depend on the thread count (a regression\n"
    "  with --fail-on-nondeterminism), bits changed, no probe explains why,\n"
    "  arithmetic-model change (products, normalisation, alpha/beta, subnormals, Inf*0),\n"
    "  precision change (input or accumulator bits), accuracy beyond the bound,\n"
    "  crash or missing path.\n"
    "Regressions: a row lost or no longer running, a way of calling a row withdrawn from its\n"
    "declared promises (row-major, batched, D separate or in place; product only), a probe\n"
    "reading a wrong value, run-to-run bits lost, a probe failure, a pinned case now outside\n"
    "its bound or whose largest error/bound grew more than F times (default 4) past 0.01, an\n"
    "appetite that doubled and grew by 16 MiB or more or a new defect below it, and new\n"
    "findings (unless --ignore-findings, or marked known in NEW: certify --known); with\n"
    "--fail-on-fingerprint, any fingerprint change. --html writes the comparison as one\n"
    "self-contained page as well (differences, fingerprints side by side, histograms); --json\n"
    "writes the decision, the counts by class and every difference as JSON\n"
    "(docs/compare.schema.json, compare_version %d).\n"
    "\n"
    "Exit status: 0 no regression (\"identical\" when nothing differs), 1 regression, 2 bad\n"
    "input or certificates of another certificate_version.\n";

/* The classes of a difference, from the mildest; a row's and the whole comparison's verdict is
 * the most severe class among its differences. Environment and library differences are
 * reported but are no verdict of the arithmetic. */
static const char *const classes[] = {"identical",
                                      "reordered only (same arithmetic model)",
                                      "bits depend on the thread count",
                                      "bits changed, no probe explains why",
                                      "arithmetic-model change",
                                      "precision change",
                                      "accuracy beyond the bound",
                                      "crash or missing path"};
enum { N_CLASSES = sizeof classes / sizeof *classes };

/** The version of the JSON that compare --json writes (docs/compare.schema.json). */
#define GCK_COMPARE_VERSION 1

typedef struct tally {
    int differences, regressions;
    int worst;            /* index into classes */
    int count[N_CLASSES]; /* differences per class */
    char smallest[1024];  /* the smallest case reproducing a regression ("" none) */
    json_t *notes;        /* every difference: {class, regression, text} */
    double smallest_size; /* its M*N*K*batch */
    bool fail_on_fingerprint, ignore_findings, fail_on_nondeterminism;
    double ratio_growth;  /* a pinned case's largest error/bound growing past this factor */
    FILE *out;            /* the lines, printed after the decision */
    const char *files[2]; /* OLD.json, NEW.json */
} tally;

static void note(tally *t, bool regression, const char *cls, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void note(tally *t, bool regression, const char *cls, const char *fmt, ...) {
    char text[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    fprintf(t->out, "  [%s%s] %s\n", regression ? "REGRESSION: " : "", cls, text);
    json_array_append_new(t->notes, json_pack("{s:s, s:b, s:o}", "class", cls, "regression",
                                              regression, "text", gck_json_text(text)));
    t->differences++;
    if (regression) t->regressions++;
    for (int c = 0; c < N_CLASSES; c++)
        if (!strcmp(cls, classes[c])) {
            t->count[c]++;
            t->worst = c > t->worst ? c : t->worst;
        }
}

/* Keep spec as the smallest reproducer of a regression if it is smaller than the one kept. */
static void smallest(tally *t, const char *spec) {
    gck_spec s;
    char msg[256];
    if (!spec || gck_spec_parse(spec, &s, msg, sizeof msg) != GCK_OK) return;
    const gck_case *c = &s.c;
    double size = (double)(c->m ? c->m : 1) * (double)(c->n ? c->n : 1) *
                  (double)(c->k ? c->k : 1) * (double)c->batch;
    if (!t->smallest[0] || size < t->smallest_size) {
        snprintf(t->smallest, sizeof t->smallest, "%s", spec);
        t->smallest_size = size;
    }
}

static json_t *load(const char *path) {
    json_error_t e;
    json_t *j = json_load_file(path, 0, &e);
    if (!j) {
        gck_cli_usage_error("compare", "cannot read %s: %s (line %d)", path, e.text, e.line);
        return NULL;
    }
    json_t *v = json_object_get(j, "certificate_version");
    if (!json_is_integer(v) || json_integer_value(v) != GCK_CERTIFICATE_VERSION) {
        gck_cli_usage_error("compare", "%s: %s; this gemmcheck reads certificate_version %d", path,
                            v ? "another certificate_version" : "not a certificate",
                            GCK_CERTIFICATE_VERSION);
        json_decref(j);
        return NULL;
    }
    return j;
}

static char *text(const json_t *v) {
    return json_is_string(v) ? strdup(json_string_value(v))
                             : json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}

/* Every key of either object whose values differ, but the ones that differ on every run. */
static void environment(tally *t, const json_t *a, const json_t *b, const char *prefix) {
    static const char *const volatile_keys[] = {"timestamp", "seed", "shard", "host", "backends"};
    const char *key;
    json_t *v;
    json_t *keys = json_object();
    json_object_foreach((json_t *)a, key, v) json_object_set(keys, key, json_true());
    json_object_foreach((json_t *)b, key, v) json_object_set(keys, key, json_true());
    json_object_foreach(keys, key, v) {
        bool skip = false;
        for (size_t i = 0; i < sizeof volatile_keys / sizeof *volatile_keys; i++)
            skip |= strcmp(key, volatile_keys[i]) == 0;
        const json_t *x = json_object_get(a, key), *y = json_object_get(b, key);
        if (skip || json_equal((json_t *)x, (json_t *)y)) continue;
        if (json_is_object(x) && json_is_object(y)) {
            environment(t, x, y, key);
            continue;
        }
        char *sx = x ? text(x) : strdup("absent"), *sy = y ? text(y) : strdup("absent");
        note(t, false, "environment", "%s%s%s: %s -> %s", prefix, prefix[0] ? "." : "", key, sx,
             sy);
        free(sx);
        free(sy);
    }
    json_decref(keys);
}

static void library(tally *t, const json_t *a, const json_t *b) {
    const json_t *va = json_object_get(a, "version"), *vb = json_object_get(b, "version");
    if (!json_equal((json_t *)va, (json_t *)vb))
        note(t, false, "library", "version: %s -> %s", json_string_value(va),
             json_string_value(vb));
    const json_t *fa = json_object_get(a, "library_files"),
                 *fb = json_object_get(b, "library_files");
    size_t na = json_array_size(fa), nb = json_array_size(fb);
    for (size_t i = 0; i < na || i < nb; i++) {
        const json_t *x = json_array_get(fa, i), *y = json_array_get(fb, i);
        const char *px = json_string_value(json_object_get(x, "file")),
                   *py = json_string_value(json_object_get(y, "file")),
                   *hx = json_string_value(json_object_get(x, "sha256")),
                   *hy = json_string_value(json_object_get(y, "sha256"));
        if (px && py && strcmp(px, py) == 0 && hx && hy && strcmp(hx, hy) == 0) continue;
        note(t, false, "library", "file %s (sha256 %.12s) -> %s (sha256 %.12s)", px ? px : "none",
             hx ? hx : "-", py ? py : "none", hy ? hy : "-");
    }
}

static const json_t *row_of(const json_t *rows, const char *tuple) {
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
        const char *x = json_string_value(json_object_get(r, "tuple"));
        if (x && strcmp(x, tuple) == 0) return r;
    }
    return NULL;
}

static const char *prop_value(const json_t *fp, const char *name, const json_t **probe) {
    size_t i;
    json_t *p;
    json_array_foreach(fp, i, p) {
        const char *x = json_string_value(json_object_get(p, "property"));
        if (x && strcmp(x, name) == 0) {
            if (probe) *probe = json_object_get(p, "probe");
            return json_string_value(json_object_get(p, "value"));
        }
    }
    return NULL;
}

/* The class of a changed property, and whether the change is a regression by itself. */
static const char *classify(const char *name, const char *now, bool *regression) {
    *regression = strncmp(now, "wrong", 5) == 0;
    if (*regression) return "accuracy beyond the bound";
    if (strcmp(name, "run to run") == 0) {
        *regression = strcmp(now, "different bits") == 0;
        return *regression ? "crash or missing path" : "reordered only (same arithmetic model)";
    }
    if (strcmp(name, "threads") == 0 && strstr(now, "depend on the thread count"))
        return "bits depend on the thread count"; /* a regression with --fail-on-nondeterminism */
    if (strncmp(name, "order", 5) == 0 || strcmp(name, "threads") == 0)
        return "reordered only (same arithmetic model)";
    if (strncmp(name, "inputs", 6) == 0 || strncmp(name, "accumulator bits", 16) == 0)
        return "precision change";
    return "arithmetic-model change"; /* products, rounding, alpha/beta, subnormals, specials */
}

/* D of a pinned case kept whole (its "d", base64), decoded into buf; its size, 0 when absent. */
static size_t kept_d(const json_t *pinned, unsigned char *buf, size_t cap) {
    const char *b64 = json_string_value(json_object_get(pinned, "d"));
    if (!b64) return 0;
    size_t n = strlen(b64), out = cap;
    struct base64_decode_ctx ctx;
    base64_decode_init(&ctx);
    if (BASE64_DECODE_LENGTH(n) > cap || !base64_decode_update(&ctx, &out, buf, n, b64) ||
        !base64_decode_final(&ctx))
        return 0;
    return out;
}

/* The largest distance, in ulps of D's type at the old value, between the elements of two
 * results of one case kept whole in both certificates; -1 when they are not comparable. */
static double element_shift(const json_t *x, const json_t *y) {
    unsigned char a[4096], b[4096];
    size_t na = kept_d(x, a, sizeof a), nb = kept_d(y, b, sizeof b);
    gck_spec s;
    char msg[256];
    const char *spec = json_string_value(json_object_get(y, "case"));
    if (!na || na != nb || !spec || gck_spec_parse(spec, &s, msg, sizeof msg) != GCK_OK) return -1;
    const gck_case *c = &s.c;
    size_t bytes = (size_t)gck_case_extent(c, GCK_D) *
                   (size_t)gck_format_get(gck_case_type(c, GCK_D))->storage_bytes;
    return bytes == na ? gck_pinned_distance(c, a, b) : -1; /* D kept whole, as the case says */
}

/* An error/bound ratio in at most three significant digits, more where three would put it on
 * the other side of 1 than it is (0.9999999998 is not "1": it is inside its bound). */
static const char *ratio_text(double x, char *buf, size_t len) {
    for (int digits = 3; digits <= 17; digits++) {
        snprintf(buf, len, "%.*g", digits, x);
        double y = strtod(buf, NULL);
        if ((x < 1) == (y < 1) && (x > 1) == (y > 1)) break;
    }
    return buf;
}

/* The pinned cases, index by index: how many changed bits, the largest error/bound and
 * distance in ulps from the exact result before and after, the largest change of a case's
 * distance; a case now out of its bound that was inside it before, or a growth past
 * --ratio-growth, is a regression, and
 * the smallest such case is kept as the reproducer. `explained`: the row's fingerprint changed. */
static void pinned(tally *t, const char *tuple, const json_t *a, const json_t *b, bool explained) {
    size_t n = json_array_size(a), changed = 0, over = 0, kept = 0;
    double was = 0, now = 0, ulps_was = 0, ulps_now = 0, shift = 0, elem = 0;
    const char *worst_changed = NULL;
    if (n != json_array_size(b)) {
        note(t, true, "crash or missing path", "%s: %zu pinned cases -> %zu (another corpus)",
             tuple, n, json_array_size(b));
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *x = json_array_get(a, i), *y = json_array_get(b, i);
        const char *dx = json_string_value(json_object_get(x, "digest")),
                   *dy = json_string_value(json_object_get(y, "digest")),
                   *spec = json_string_value(json_object_get(y, "case"));
        double rx = json_real_value(json_object_get(x, "ratio")),
               ry = json_real_value(json_object_get(y, "ratio")),
               ux = json_real_value(json_object_get(x, "ulps")),
               uy = json_real_value(json_object_get(y, "ulps"));
        was = rx > was ? rx : was, now = ry > now ? ry : now;
        ulps_was = ux > ulps_was ? ux : ulps_was, ulps_now = uy > ulps_now ? uy : ulps_now;
        if (ry > 1 && !(rx > 1)) over++, smallest(t, spec); /* newly out (not: still out) */
        if ((dx || dy) && !(dx && dy && !strcmp(dx, dy))) {
            changed++;
            double es = element_shift(x, y);
            if (es >= 0) kept++, elem = es > elem ? es : elem;
            if (fabs(uy - ux) > shift || !worst_changed)
                shift = fabs(uy - ux), worst_changed = spec;
        }
    }
    bool grew = now > 0.01 && now > t->ratio_growth * was;
    if (grew && !over) smallest(t, worst_changed);
    if (!changed && !over && !grew) return;
    char rw[32], rn[32];
    note(t, over > 0 || grew,
         over || grew ? "accuracy beyond the bound"
         : explained  ? classes[t->worst] /* the row's fingerprint change */
                      : "bits changed, no probe explains why",
         "%s: %zu of %zu pinned cases changed bits%s; largest error/bound %s -> %s, largest "
         "distance from the exact result %.3g -> %.3g ulps (a case's largest distance moved by "
         "up to %.3g); element by element, in the %zu changed cases small enough to keep D, "
         "results up to %.3g ulps apart%s",
         tuple, changed, n,
         changed ? (explained ? " (the fingerprint changed too)"
                              : " (no probe of the fingerprint explains why)")
                 : "",
         ratio_text(was, rw, sizeof rw), ratio_text(now, rn, sizeof rn), ulps_was, ulps_now, shift,
         kept, elem, over ? "; some now outside the bound" : "");
}

static void fingerprint(tally *t, const char *tuple, const json_t *a, const json_t *b) {
    size_t i;
    json_t *p;
    json_array_foreach(a, i, p) {
        const char *name = json_string_value(json_object_get(p, "property")),
                   *was = json_string_value(json_object_get(p, "value"));
        const json_t *probe = NULL;
        const char *now = prop_value(b, name, &probe);
        if (!name || !was || !now || strcmp(was, now) == 0) continue; /* !now: one_side */
        bool reg;
        const char *cls = classify(name, now, &reg);
        reg = reg || t->fail_on_fingerprint ||
              (t->fail_on_nondeterminism && !strcmp(cls, "bits depend on the thread count"));
        note(t, reg, cls, "%s: %s: %s -> %s%s%s", tuple, name, was, now, probe ? "; probe: " : "",
             probe ? json_string_value(probe) : "");
    }
}

/* The properties only one side's row has: NEW's are what an older gemmcheck did not probe (OLD
 * from before a probe existed) or what a promise the row gained adds (row-major, batched), OLD's
 * the other way round. Either is a support difference, with nothing to compare its value with;
 * but a value NEW reads wrong is a regression, as a changed one is, and with
 * --fail-on-fingerprint so is a property NEW lost. */
static void one_side(tally *t, const char *tuple, const json_t *a, const json_t *b) {
    for (int side = 0; side < 2; side++) {
        size_t i;
        json_t *p;
        json_array_foreach(side ? a : b, i, p) {
            const char *name = json_string_value(json_object_get(p, "property")),
                       *v = json_string_value(json_object_get(p, "value"));
            if (!name || !v || prop_value(side ? b : a, name, NULL)) continue;
            const char *probe = json_string_value(json_object_get(p, "probe"));
            bool wrong = !side && strncmp(v, "wrong", 5) == 0;
            if (side)
                note(t, t->fail_on_fingerprint, "support",
                     "%s: %s: %s -> not in the new certificate", tuple, name, v);
            else
                note(t, wrong, wrong ? "accuracy beyond the bound" : "support",
                     "%s: %s: not in the old certificate -> %s%s%s", tuple, name, v,
                     probe ? "; probe: " : "", probe ? probe : "");
        }
    }
}

/* A defect below the appetite: anything but a clean refusal (an error status) or an unsupported
 * case. */
static bool defect_below(const char *what) {
    return what && strncmp(what, "refused", 7) != 0 && strcmp(what, "unsupported") != 0;
}

/* The rows' memory appetites (docs/RESOURCES.md): a budget that at least doubled, by 16 MiB or
 * more (a few hundred KiB more for a GEMM is no production job's end), or a defect below it where
 * there was none, is a regression; a smaller growth, a halved budget or a defect gone is a
 * difference. */
#define APPETITE_GROWTH_FLOOR (16.0 * 1048576)
static void appetite(tally *t, const char *tuple, const json_t *a, const json_t *b) {
    if (!a || !b) return;
    const json_t *ba = json_object_get(a, "bytes"), *bb = json_object_get(b, "bytes");
    const char *wa = json_string_value(
                   json_object_get(json_object_get(a, "failing_below"), "outcome")),
               *wb = json_string_value(
                   json_object_get(json_object_get(b, "failing_below"), "outcome"));
    double x = json_is_integer(ba) ? (double)json_integer_value(ba) : -1,
           y = json_is_integer(bb) ? (double)json_integer_value(bb) : -1;
    if (x > 0 && y > 0 && (y >= 2 * x || 2 * y <= x))
        note(t, y >= 2 * x && y - x >= APPETITE_GROWTH_FLOOR, "resources",
             "%s: memory appetite %.0f -> %.0f bytes (x%.2f) for %s", tuple, x, y, y / x,
             json_string_value(json_object_get(b, "case")));
    else if ((x > 0) != (y > 0))
        note(t, y <= 0, "resources", "%s: memory appetite %s -> %s", tuple,
             x > 0 ? "found" : "none up to the top budget",
             y > 0 ? "found" : "none up to the top budget");
    if (defect_below(wa) != defect_below(wb))
        note(t, defect_below(wb), "resources", "%s: below the appetite: %s -> %s", tuple,
             wa ? wa : "nothing failed", wb ? wb : "nothing failed");
}

/* A row's declared text (backends.c, row_describe): "types | compute | model | promises |
 * entry". Its fields into f[5], each run of spaces one and none at the ends; false when it has
 * not five. */
static bool declared_fields(const char *text, char f[5][512]) {
    const char *p = text;
    for (int i = 0; i < 5; i++) {
        const char *bar = i < 4 ? strstr(p, " | ") : p + strlen(p);
        if (!bar) return false;
        size_t n = 0;
        for (; p < bar && n < 511; p++)
            if (*p != ' ' || (n > 0 && f[i][n - 1] != ' ')) f[i][n++] = *p;
        while (n > 0 && f[i][n - 1] == ' ') n--;
        f[i][n] = 0;
        p = bar + (i < 4 ? 3 : 0);
    }
    return true;
}

/* Whether the promise word w (a0, row, ...) is among the words of list. */
static bool has_word(const char *list, const char *w) {
    size_t n = strlen(w);
    for (const char *p = strstr(list, w); p; p = strstr(p + 1, w))
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0)) return true;
    return false;
}

/* What the two certificates' support tables declare of a row: the checker holds the row to its
 * declared model and exercises it only as its promises allow, so a change there changes what
 * the rest of the comparison means. A model declared otherwise is an arithmetic-model change; a
 * way of calling the row withdrawn (row-major, batched, D separate or in place; or C no longer
 * read: product-only) is a missing path, and a regression; a promise about what alpha = 0 or beta
 * = 0 reads, or about zero terms, changed is an arithmetic-model change; any other difference
 * (a way gained, the entry called) is support. */
static void declared(tally *t, const char *tuple, const json_t *a, const json_t *b) {
    const char *da = json_string_value(json_object_get(a, "declared")),
               *db = json_string_value(json_object_get(b, "declared"));
    char fa[5][512], fb[5][512];
    if (!da || !db || !strcmp(da, db)) return;
    if (!declared_fields(da, fa) || !declared_fields(db, fb)) {
        note(t, t->fail_on_fingerprint, "support", "%s: declared: %s -> %s", tuple, da, db);
        return;
    }
    if (strcmp(fa[2], fb[2]))
        note(t, t->fail_on_fingerprint, "arithmetic-model change", "%s: declared model: %s -> %s",
             tuple, fa[2], fb[2]);
    static const struct {
        const char *word;
        bool a_way;   /* a way of calling the row: losing it is a missing path */
        bool licence; /* not a promise but a licence: gaining it weakens the row */
    } words[] = {{"row", true, false},   {"batch", true, false}, {"Dsep", true, false},
                 {"Dinpl", true, false}, {"a0", false, false},   {"b0", false, false},
                 {"skip0", false, true}};
    for (size_t w = 0; w < sizeof words / sizeof words[0]; w++) {
        bool before = has_word(fa[3], words[w].word), after = has_word(fb[3], words[w].word);
        if (before == after) continue;
        bool lost = words[w].licence ? after : before;
        const char *cls = words[w].a_way ? (lost ? "crash or missing path" : "support")
                                         : "arithmetic-model change";
        note(t, words[w].a_way ? lost : t->fail_on_fingerprint, cls,
             "%s: promise '%s' %s (promises: %s -> %s)", tuple, words[w].word,
             after ? "declared" : "withdrawn", fa[3], fb[3]);
    }
    bool po_a = has_word(fa[3], "product-only"), po_b = has_word(fb[3], "product-only");
    if (po_a != po_b)
        note(t, po_b, po_b ? "crash or missing path" : "support", "%s: %s (promises: %s -> %s)",
             tuple,
             po_b ? "now a plain product only (alpha 1, beta 0)" : "no longer a plain product only",
             fa[3], fb[3]);
    if (strcmp(fa[4], fb[4])) note(t, false, "support", "%s: entry: %s -> %s", tuple, fa[4], fb[4]);
}

static const char *support_status(const json_t *row) {
    const char *s = json_string_value(json_object_get(json_object_get(row, "support"), "status"));
    return s ? s : "not exercised";
}

static void rows(tally *t, const json_t *a, const json_t *b) {
    const json_t *ra = json_object_get(a, "rows"), *rb = json_object_get(b, "rows");
    size_t i;
    json_t *r;
    json_array_foreach(ra, i, r) {
        const char *tuple = json_string_value(json_object_get(r, "tuple"));
        const json_t *n = tuple ? row_of(rb, tuple) : NULL;
        if (!n) {
            note(t, true, "crash or missing path", "row %s lost", tuple ? tuple : "?");
            continue;
        }
        const char *sa = support_status(r), *sb = support_status(n);
        if (strcmp(sa, sb) != 0)
            note(t, strcmp(sa, "runs") == 0,
                 strcmp(sb, "runs") == 0 ? "support" : "crash or missing path", "%s: %s -> %s",
                 tuple, sa, sb);
        if (!json_object_get(r, "probe_failure") && !json_object_get(n, "probe_failure"))
            one_side(t, tuple, json_object_get(r, "fingerprint"),
                     json_object_get(n, "fingerprint"));
        int before = t->differences, worst = t->worst;
        t->worst = 0;
        declared(t, tuple, r, n);
        const char *fa = json_string_value(json_object_get(r, "probe_failure")),
                   *fb = json_string_value(json_object_get(n, "probe_failure"));
        if (fa || fb) { /* a row whose probes crashed has no fingerprint to compare */
            if (!fa || !fb || strcmp(fa, fb) != 0)
                note(t, fb != NULL, "crash or missing path", "%s: probes %s -> %s", tuple,
                     fa ? fa : "ran", fb ? fb : "ran");
        } else
            fingerprint(t, tuple, json_object_get(r, "fingerprint"),
                        json_object_get(n, "fingerprint"));
        const char *pa = json_string_value(json_object_get(r, "pinned_failure")),
                   *pb = json_string_value(json_object_get(n, "pinned_failure"));
        if (pa || pb) { /* pinned cases that crashed or hung have no digests to compare */
            if (!pa || !pb || strcmp(pa, pb) != 0)
                note(t, pb != NULL, "crash or missing path", "%s: pinned cases %s -> %s", tuple,
                     pa ? pa : "ran", pb ? pb : "ran");
        } else
            pinned(t, tuple, json_object_get(r, "pinned"), json_object_get(n, "pinned"),
                   t->differences > before);
        appetite(t, tuple, json_object_get(r, "appetite"), json_object_get(n, "appetite"));
        if (t->differences > before) fprintf(t->out, "    => %s: %s\n", tuple, classes[t->worst]);
        t->worst = t->worst > worst ? t->worst : worst;
    }
    json_array_foreach(rb, i, r) {
        const char *tuple = json_string_value(json_object_get(r, "tuple"));
        if (tuple && !row_of(ra, tuple)) note(t, false, "support", "row %s gained", tuple);
    }
}

/* A finding's signature without its backend (kind|tuple|shape class): the two certificates may
 * name the same library by different paths, and the same defect must match. */
static const char *unbacked(const json_t *f) {
    const char *sig = json_string_value(json_object_get(f, "signature")),
               *be = json_string_value(json_object_get(f, "backend"));
    size_t n = be ? strlen(be) : 0;
    return sig && be && !strncmp(sig, be, n) && sig[n] == '|' ? sig + n + 1 : sig;
}

static void findings(tally *t, const json_t *a, const json_t *b) {
    const json_t *fa = json_object_get(json_object_get(a, "campaign"), "findings"),
                 *fb = json_object_get(json_object_get(b, "campaign"), "findings");
    for (int side = 0; side < 2; side++) {
        const json_t *from = side ? fa : fb, *other = side ? fb : fa;
        size_t i, j;
        json_t *f, *g;
        json_array_foreach(from, i, f) {
            const char *sig = unbacked(f);
            bool seen = false;
            json_array_foreach(other, j, g) {
                const char *s2 = unbacked(g);
                seen |= sig && s2 && strcmp(sig, s2) == 0;
            }
            if (seen || !sig) continue;
            const char *kind = json_string_value(json_object_get(f, "kind"));
            const char *known = json_string_value(json_object_get(f, "known"));
            bool numeric =
                kind && (!strcmp(kind, "out_of_tolerance") || !strcmp(kind, "nonfinite_mismatch"));
            bool reg = side == 0 && !t->ignore_findings && !known;
            note(t, reg,
                 side                          ? "fixed finding"
                 : t->ignore_findings || known ? "new finding"
                 : numeric                     ? "accuracy beyond the bound"
                                               : "crash or missing path",
                 "%s %s%s%s%s; reproduce: %s", side ? "no longer found:" : "new finding", sig,
                 known && !side ? " (known: " : "", known && !side ? known : "",
                 known && !side ? ")" : "", json_string_value(json_object_get(f, "reproduce")));
            if (reg) smallest(t, json_string_value(json_object_get(f, "case")));
        }
    }
}

/* The comparison as JSON (compare --json): the decision, the counts by class, every difference. */
static bool write_json(const tally *t, const json_t *a, const json_t *b, const char *verdict,
                       const char *smallest, int rc, const char *path, char *err, size_t len) {
    json_t *by = json_object();
    for (int c = 1; c < N_CLASSES; c++)
        if (t->count[c]) json_object_set_new(by, classes[c], json_integer(t->count[c]));
    json_t *side[2];
    for (int i = 0; i < 2; i++)
        side[i] =
            json_pack("{s:o, s:o}", "file", gck_json_text(t->files[i]), "backend",
                      gck_json_text(json_string_value(json_object_get(i ? b : a, "backend"))));
    json_t *o =
        json_pack("{s:i, s:s, s:o, s:o, s:s, s:i, s:i, s:i, s:o, s:o, s:O, s:o}", "compare_version",
                  GCK_COMPARE_VERSION, "gemmcheck", GEMMCHECK_VERSION, "old", side[0], "new",
                  side[1], "decision", t->regressions ? "REGRESSION" : "NO REGRESSION",
                  "exit_status", rc, "differences", t->differences, "regressions", t->regressions,
                  "by_class", by, "verdict", gck_json_text(verdict), "notes", t->notes,
                  "smallest_reproducer", smallest[0] ? gck_json_text(smallest) : json_null());
    bool ok = o && gck_output_json(o, path, JSON_INDENT(1), err, len);
    if (!o) snprintf(err, len, "out of memory");
    json_decref(o);
    return ok;
}

/* The verdict (printed, and the page when asked for); the exit status. */
static int conclude(tally *t, const json_t *a, const json_t *b, const char *html,
                    const char *json) {
    char verdict[512], smallest[1600] = "";
    size_t n = (size_t)snprintf(verdict, sizeof verdict, "%s", classes[t->worst]);
    if (t->differences && !t->worst)
        snprintf(verdict, sizeof verdict,
                 "identical arithmetic (%d difference%s of the "
                 "environment, library, support or resources only)",
                 t->differences, t->differences == 1 ? "" : "s");
    for (int c = N_CLASSES - 1; c > 0 && n < sizeof verdict; c--)
        if (t->count[c])
            n += (size_t)snprintf(verdict + n, sizeof verdict - n, "; %s: %d", classes[c],
                                  t->count[c]);
    if (t->differences == 0)
        fprintf(t->out, "identical: no difference in environment, library, support, fingerprint, "
                        "pinned cases or findings\n");
    else
        fprintf(t->out, "%d difference%s, %d regression%s\nverdict: %s\n", t->differences,
                t->differences == 1 ? "" : "s", t->regressions, t->regressions == 1 ? "" : "s",
                verdict);
    if (t->smallest[0]) {
        snprintf(smallest, sizeof smallest, "gemmcheck repro --backend %s '%s'",
                 json_string_value(json_object_get(b, "backend")), t->smallest);
        fprintf(t->out, "smallest reproducer of a regression: %s\n", smallest);
    }
    char err[512];
    if (html && !gck_compare_html(a, b, t->notes, t->differences ? verdict : "identical", smallest,
                                  html, err, sizeof err)) {
        fprintf(stderr, "gemmcheck compare: %s\n", err);
        return GCK_EXIT_USAGE;
    }
    int rc = t->regressions ? 1 : GCK_EXIT_OK;
    if (json && !write_json(t, a, b, t->differences ? verdict : "identical", smallest, rc, json,
                            err, sizeof err)) {
        fprintf(stderr, "gemmcheck compare: %s\n", err);
        return GCK_EXIT_USAGE;
    }
    return rc;
}

/* The first line: the decision, then the differences by class (most severe first). */
static void decision(const tally *t, int rc) {
    printf("%s (exit %d)", t->regressions ? "REGRESSION" : "NO REGRESSION", rc);
    int other = t->differences;
    const char *sep = ": ";
    for (int c = N_CLASSES - 1; c > 0; c--)
        if (t->count[c]) {
            printf("%s%d %s", sep, t->count[c], classes[c]);
            other -= t->count[c];
            sep = ", ";
        }
    if (other > 0)
        printf("%s%d environment, library, support or resources difference%s", sep, other,
               other == 1 ? "" : "s");
    else if (t->differences == 0)
        printf(": identical");
    if (t->regressions)
        printf(" (%d of them regression%s)", t->regressions, t->regressions == 1 ? "" : "s");
    putchar('\n');
}

int gck_cmd_compare(int argc, char **argv) {
    const char *cmd = "compare", *files[2] = {NULL, NULL};
    tally t = {0};
    const char *growth = NULL, *html = NULL, *json = NULL;
    const gck_opt opts[] = {
        {"--ratio-growth", .value = &growth},
        {"--html", .value = &html},
        {"--json", .value = &json},
        {"--fail-on-fingerprint", .flag = &t.fail_on_fingerprint, .flag_value = true},
        {"--fail-on-nondeterminism", .flag = &t.fail_on_nondeterminism, .flag_value = true},
        {"--ignore-findings", .flag = &t.ignore_findings, .flag_value = true}};
    gck_opt_spec os = {cmd,   opts, (int)(sizeof opts / sizeof opts[0]),
                       files, 2,    "compare takes two certificates: OLD.json NEW.json"};
    int nargs;
    bool help = false;
    int rc = gck_opt_parse(&os, argc, argv, &nargs, &help);
    if (help) return printf(compare_help, GCK_COMPARE_VERSION), GCK_EXIT_OK;
    if (rc != GCK_EXIT_OK) return rc;
    t.ratio_growth = 4;
    if (growth && !gck_parse_real_opt(cmd, "--ratio-growth", growth, 1, &t.ratio_growth))
        return GCK_EXIT_USAGE;
    if (nargs != 2)
        return gck_cli_usage_error(cmd, "two certificates are needed: OLD.json NEW.json");
    json_t *a = load(files[0]), *b = a ? load(files[1]) : NULL;
    if (!a || !b) {
        json_decref(a);
        return GCK_EXIT_USAGE;
    }
    t.notes = json_array();
    char *body = NULL;
    size_t blen = 0;
    t.out = open_memstream(&body, &blen);
    if (!t.out) {
        json_decref(a);
        json_decref(b);
        json_decref(t.notes);
        return gck_cli_usage_error(cmd, "out of memory");
    }
    fprintf(t.out, "compare %s (%s) -> %s (%s)\n", files[0],
            json_string_value(json_object_get(a, "backend")), files[1],
            json_string_value(json_object_get(b, "backend")));
    environment(&t, json_object_get(a, "environment"), json_object_get(b, "environment"), "");
    const json_t *pa = json_object_get(a, "probed"), *pb = json_object_get(b, "probed");
    if (!pb && pa)
        note(&t, true, "crash or missing path", "the new backend could not be probed: %s",
             json_string_value(json_object_get(b, "probe_failure")));
    if (pa && pb) {
        library(&t, pa, pb);
        rows(&t, pa, pb);
    }
    findings(&t, a, b);
    t.files[0] = files[0];
    t.files[1] = files[1];
    rc = conclude(&t, a, b, html, json);
    fclose(t.out);
    if (rc == GCK_EXIT_OK || rc == 1) decision(&t, rc);
    fputs(body ? body : "", stdout);
    free(body);
    json_decref(a);
    json_decref(b);
    json_decref(t.notes);
    return rc;
}
