/* gemmcheck verify: check a D computed anywhere (PyTorch, JAX, a user's library) against the
 * exact result, every element, under the arithmetic model its producer claims. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends.h"
#include "cli.h"
#include "gemmcheck/gemmcheck.h"
#include "inputs.h"
#include "npy.h"

static const char verify_help[] =
    "usage: gemmcheck verify --a A.npy --b B.npy [--c C.npy] --d D.npy [--alpha X] [--beta Y]\n"
    "                        [--transa N|T] [--transb N|T] [--a-type T] [--b-type T]\n"
    "                        [--c-type T] [--d-type T] [--model MODEL] [--strict-ieee]\n"
    "                        [--threads N] [--oracle K] [--tier stat|hard] [--random yes|no]\n"
    "\n"
    "Checks D against the exact D = alpha*op(A)*op(B) + beta*C, every element: its exact error\n"
    "against the hard bound of the arithmetic MODEL the producer of D claims, and the IEEE/BLAS\n"
    "rules for NaN, Inf and signed zeros (docs/TOLERANCE.md), and the statistical tier: an error\n"
    "(or a lean in the errors' signs) that correct round-to-nearest arithmetic on random data\n"
    "makes with probability below 1e-12 per element (improbable_error). Prints the verdict, the\n"
    "failing elements per finding kind with the worst of each, the distribution of\n"
    "error/bound and the statistical tier's line.\n"
    "\n"
    "  --a, --b, --c, --d   .npy arrays as gemmcheck oracle reads them (C or Fortran order;\n"
    "                       <f2, <f4, <f8, or <u2 bfloat16 bits with --X-type bf16; 2-D, or\n"
    "                       3-D batches). D has op(A)*op(B)'s shape (3-D when an input is)\n"
    "  --alpha, --beta      decimal numbers (default 1 and 0); --beta other than 0 needs --c\n"
    "  --model MODEL        the arithmetic claimed, in the words of gemmcheck backends:\n"
    "                       compute=F (f16, bf16, tf32, f32, f64: products and sums),\n"
    "                       in=F|exact (inputs rounded to F first, e.g. in=tf32), scalar or\n"
    "                       block-FMA[/n] (n products fused before one rounding), epi=F (the\n"
    "                       format of alpha*AB + beta*C), FTZ (results may be flushed), DAZ\n"
    "                       (subnormal inputs may be read as zero), skip0 (terms with a zero\n"
    "                       factor may be skipped), nearest or faithful (how D is rounded;\n"
    "                       default nearest). Default: \"compute=f64\" when an operand is\n"
    "                       f64, else \"compute=f32\"; any evaluation order\n"
    "  --strict-ieee        no zero-skipping leniency\n"
    "  --threads N          worker threads (default: one per core)\n"
    "  --oracle KIND        exact (default), mpfr, or both (a difference is exit 3)\n"
    "  --tier stat|hard     stat (default): improbable_error fails; hard: it is only counted\n"
    "  --random yes|no      the operands are (not) independent random values; default: a\n"
    "                       test on a sample of A and B decides where the tier applies\n"
    "\n"
    "Exit status: 0 pass, 1 findings, 2 bad arguments or input files, 3 internal error.\n";

static const char *const cmd = "verify";

/* The options, in the order of gck_cmd_verify's names[]. */
enum {
    OPT_A,
    OPT_B,
    OPT_C,
    OPT_D,
    OPT_ATYPE,
    OPT_BTYPE,
    OPT_CTYPE,
    OPT_DTYPE,
    OPT_ALPHA,
    OPT_BETA,
    OPT_TRANSA,
    OPT_TRANSB,
    OPT_MODEL,
    OPT_THREADS,
    OPT_ORACLE,
    OPT_TIER,
    OPT_RANDOM,
    NOPT
};

/* MODEL's words into the model and the skip-zero promise (a usage error names a bad word). */
static int parse_model(const char *text, gck_model *m, bool *skip0) {
    char buf[512];
    if (strlen(text) >= sizeof buf) return gck_cli_usage_error(cmd, "--model is too long");
    snprintf(buf, sizeof buf, "%s", text);
    bool epi_given = false;
    for (char *save = NULL, *tok = strtok_r(buf, " \t", &save); tok;
         tok = strtok_r(NULL, " \t", &save)) {
        bool ok = true;
        if (!strncmp(tok, "compute=", 8))
            ok = gck_format_parse(tok + 8, &m->compute);
        else if (!strcmp(tok, "in=exact"))
            m->inputs_rounded = false;
        else if (!strncmp(tok, "in=", 3))
            ok = m->inputs_rounded = gck_format_parse(tok + 3, &m->input_format);
        else if (!strncmp(tok, "epi=", 4))
            ok = epi_given = gck_format_parse(tok + 4, &m->epilogue);
        else if (!strcmp(tok, "scalar"))
            m->acc = GCK_ACC_SCALAR;
        else if (!strcmp(tok, "block-FMA"))
            m->acc = GCK_ACC_BLOCK_FMA;
        else if (!strncmp(tok, "block-FMA/", 10)) {
            long long n;
            m->acc = GCK_ACC_BLOCK_FMA;
            ok = gck_parse_count(tok + 10, &n) && n <= 1 << 20;
            m->block = ok ? (int)n : 0;
        } else if (!strcmp(tok, "FTZ"))
            m->ftz = true;
        else if (!strcmp(tok, "DAZ"))
            m->daz = true;
        else if (!strcmp(tok, "skip0"))
            *skip0 = true;
        else if (!strcmp(tok, "nearest"))
            m->rounding = GCK_ROUND_NEAREST;
        else if (!strcmp(tok, "faithful"))
            m->rounding = GCK_ROUND_FAITHFUL;
        else
            ok = false;
        if (!ok)
            return gck_cli_usage_error(cmd,
                                       "--model: '%s' is not a model word (compute=F "
                                       "in=F|exact scalar block-FMA[/n] epi=F FTZ DAZ skip0 "
                                       "nearest faithful; "
                                       "F: f16, bf16, tf32, f32, f64)",
                                       tok);
    }
    if (!m->inputs_rounded) m->input_format = m->compute;
    if (!epi_given) m->epilogue = m->compute;
    return GCK_EXIT_OK;
}

/* The support row the check holds D to: the case's types, the model, every layout. */
static int make_row(const char **o, const gck_case *gc, gck_support_row *row) {
    bool f64 = gc->type_a == GCK_F64 || gc->type_b == GCK_F64 || gc->type_c == GCK_F64 ||
               gc->type_d == GCK_F64;
    gck_model m = {.compute = f64 ? GCK_F64 : GCK_F32, .acc = GCK_ACC_SCALAR};
    bool skip0 = false;
    int rc;
    if (o[OPT_MODEL] && (rc = parse_model(o[OPT_MODEL], &m, &skip0))) return rc;
    if (!o[OPT_MODEL]) m.input_format = m.epilogue = m.compute;
    m.orders = GCK_ORDERS_ANY;
    *row = (gck_support_row){.a = gc->type_a,
                             .b = gc->type_b,
                             .c = gc->type_c,
                             .d = gc->type_d,
                             .compute = m.compute,
                             .model = m,
                             .entry = "gemmcheck verify"};
    row->promises = GCK_PROMISE_ALPHA0_NO_READ_AB | GCK_PROMISE_BETA0_NO_READ_C |
                    GCK_PROMISE_ROW_MAJOR | GCK_PROMISE_BATCHED | GCK_PROMISE_D_SEPARATE |
                    GCK_PROMISE_SCALE_F64 | (skip0 ? GCK_PROMISE_MAY_SKIP_ZERO : 0);
    return GCK_EXIT_OK;
}

/* D and its type (from the dtype, or --d-type for bf16), read as the operands are. */
static int load_d(const char **o, gck_npy *d, gck_format *td) {
    int rc = gck_inputs_read(cmd, "D", o[OPT_D], d);
    return rc ? rc : gck_inputs_type(cmd, o[OPT_D], d, "--d-type", o[OPT_DTYPE], td);
}

static int check_d_shape(const char **o, const gck_inputs *ops, const gck_npy *d,
                         const gck_case *gc) {
    bool batched = gck_inputs_batched(ops);
    int want = batched ? 3 : 2;
    int64_t shape[3] = {gc->batch, gc->m, gc->n};
    const int64_t *w = batched ? shape : shape + 1;
    bool same = d->ndim == want;
    for (int i = 0; same && i < want; i++) same = d->shape[i] == w[i];
    if (same) return GCK_EXIT_OK;
    char got[160];
    gck_inputs_shape(d, got, sizeof got);
    if (batched)
        return gck_cli_usage_error(
            cmd, "%s has shape %s; the product is (%" PRId64 ", %" PRId64 ", %" PRId64 ")",
            o[OPT_D], got, gc->batch, gc->m, gc->n);
    return gck_cli_usage_error(cmd, "%s has shape %s; the product is (%" PRId64 ", %" PRId64 ")",
                               o[OPT_D], got, gc->m, gc->n);
}

static void print_element(const char *what, const gck_element_report *e, bool batched,
                          gck_format d) {
    char at[96];
    if (batched)
        snprintf(at, sizeof at, "D[%" PRId64 ", %" PRId64 ", %" PRId64 "]", e->batch, e->i, e->j);
    else
        snprintf(at, sizeof at, "D[%" PRId64 ", %" PRId64 "]", e->i, e->j);
    printf("  %s %s = %.17g, exact (rounded to %s) %.17g, error %.3e, bound %.3e, error/bound "
           "%.3g%s%s\n",
           what, at, e->got, gck_format_get(d)->name, e->expected, e->error, e->bound, e->ratio,
           e->rule[0] ? "; " : "", e->rule);
}

static void print_report(const gck_case *gc, const gck_support_row *row, const gck_check_result *r,
                         bool batched) {
    int64_t failing = 0;
    for (int k = 0; k < GCK_KIND_COUNT; k++) failing += r->count[k];
    printf("gemmcheck verify: %s: %" PRId64 " of %" PRId64 " elements checked, %" PRId64
           " failing\n",
           failing ? "FAIL" : "pass", r->elements, r->total_elements, failing);
    char model[160];
    gck_row_model_words(row, model, sizeof model);
    printf("  D (%" PRId64 "x%" PRId64 "%s, %s) = alpha*op(A)*op(B)%s, K = %" PRId64
           ", %s x %s -> %s, model \"%s\"\n",
           gc->m, gc->n, gc->batch > 1 ? ", batched" : "", gck_format_get(gc->type_d)->name,
           gc->beta != 0 ? " + beta*C" : "", gc->k, gck_format_get(gc->type_a)->name,
           gck_format_get(gc->type_b)->name, gck_format_get(gc->type_d)->name, model);
    printf("  %" PRId64 " bound 0 by the exact-case certificate, %" PRId64
           " passed by a declared leniency\n",
           r->exact_elements, r->lenient);
    for (int k = 0; k < GCK_KIND_COUNT; k++)
        if (r->count[k]) {
            char what[64];
            snprintf(what, sizeof what, "%s: %" PRId64 " element(s); worst", gck_kind_name(k),
                     r->count[k]);
            print_element(what, &r->worst[k], batched, gc->type_d);
        }
    if (isfinite(r->max_ratio.error))
        print_element("largest error/bound:", &r->max_ratio, batched, gc->type_d);
    static const char *const bins[GCK_RATIO_BINS] = {
        "0", "<=1e-6", "<=1e-5", "<=1e-4", "<=1e-3", "<=1e-2", "<=0.1", "<=1", ">1"};
    printf("  error/bound:");
    for (int b = 0; b < GCK_RATIO_BINS; b++)
        printf(" %s %" PRId64 "%s", bins[b], r->ratio_bins[b], b + 1 < GCK_RATIO_BINS ? "," : "\n");
    if (r->oracle_path[0]) printf("  sums: %s\n", r->oracle_path);
    char st[400];
    gck_stat_describe(r, st, sizeof st);
    printf("  statistical tier: %s\n", st);
    /* the usual cause of an f64 D failing nearly everywhere: computed in f32, then widened */
    int64_t off = r->count[GCK_KIND_OUT_OF_TOLERANCE] + r->count[GCK_KIND_IMPROBABLE_ERROR];
    if (gc->type_d == GCK_F64 && gc->type_a != GCK_F64 && gc->type_b != GCK_F64 &&
        row->model.compute == GCK_F64 && r->elements > 0 && off * 10 >= r->elements * 9)
        printf("  hint: A and B are %s x %s but the model computes in f64 (the default for an "
               "f64 D); if D was computed in f32 and then widened, check it with --model "
               "compute=f32\n",
               gck_format_get(gc->type_a)->name, gck_format_get(gc->type_b)->name);
}

static int run(const char **o, bool strict) {
    gck_inputs_options io = {o[OPT_A],      o[OPT_B],      o[OPT_C],       o[OPT_ATYPE],
                             o[OPT_BTYPE],  o[OPT_CTYPE],  o[OPT_ALPHA],   o[OPT_BETA],
                             o[OPT_TRANSA], o[OPT_TRANSB], o[OPT_THREADS], o[OPT_ORACLE]};
    gck_inputs ops;
    gck_check_options opt = {.strict_ieee = strict, .sample_above = 1e300};
    long long threads;
    int rc = gck_inputs_parse(cmd, &io, &ops, &threads, &opt.oracle);
    if (rc) return rc;
    if (!o[OPT_D]) return gck_cli_usage_error(cmd, "missing --d (see gemmcheck verify --help)");
    opt.threads = (int)threads;
    bool hard;
    if ((rc = gck_cli_tier(cmd, o[OPT_TIER], &hard))) goto done0;
    if (o[OPT_RANDOM] && strcmp(o[OPT_RANDOM], "yes") && strcmp(o[OPT_RANDOM], "no")) {
        rc = gck_cli_usage_error(cmd, "--random '%s' must be yes or no", o[OPT_RANDOM]);
        goto done0;
    }
    if (o[OPT_RANDOM])
        opt.stat_data = !strcmp(o[OPT_RANDOM], "yes") ? GCK_STAT_RANDOM : GCK_STAT_OFF;
    gck_npy d = {0};
    gck_format td;
    gck_case gc;
    gck_support_row row;
    if ((rc = gck_inputs_load(&ops)) || (rc = load_d(o, &d, &td)) ||
        (rc = gck_inputs_case(&ops, td, &gc)) || (rc = check_d_shape(o, &ops, &d, &gc)) ||
        (rc = make_row(o, &gc, &row)))
        goto done;
    gc.compute = row.compute;
    gck_check_result r;
    char msg[512];
    gck_status s = gck_check_values(&gc, &row, &opt, ops.A.data, ops.B.data,
                                    o[OPT_C] ? ops.C.data : NULL, d.data, &r, msg, sizeof msg);
    if (s == GCK_EINVAL || s == GCK_ENOMEM) {
        rc = gck_cli_usage_error(cmd, "%s", msg);
    } else if (s != GCK_OK || r.oracle_disagreements) {
        fprintf(stderr, "gemmcheck verify: internal error: %s\n",
                s != GCK_OK ? msg : "the exact and MPFR oracles disagree");
        rc = GCK_EXIT_INTERNAL;
    } else {
        if (hard) r.count[GCK_KIND_IMPROBABLE_ERROR] = 0; /* printed on the stat line */
        print_report(&gc, &row, &r, gck_inputs_batched(&ops));
        bool any = false;
        for (int k = 0; k < GCK_KIND_COUNT; k++) any = any || r.count[k];
        rc = any ? GCK_EXIT_FINDINGS : GCK_EXIT_OK;
    }
done:
    gck_npy_free(&d);
done0:
    gck_inputs_free(&ops);
    return rc;
}

int gck_cmd_verify(int argc, char **argv) {
    static const char *const names[NOPT] = {
        "--a",      "--b",       "--c",      "--d",    "--a-type", "--b-type",
        "--c-type", "--d-type",  "--alpha",  "--beta", "--transa", "--transb",
        "--model",  "--threads", "--oracle", "--tier", "--random"};
    const char *vals[NOPT] = {0};
    bool strict = false;
    gck_opt opts[NOPT + 1];
    for (int k = 0; k < NOPT; k++) opts[k] = (gck_opt){.name = names[k], .value = &vals[k]};
    opts[NOPT] = (gck_opt){"--strict-ieee", .flag = &strict, .flag_value = true};
    gck_opt_spec spec = {cmd, opts, NOPT + 1, NULL, 0, NULL};
    int nargs;
    bool help;
    if (gck_opt_parse(&spec, argc, argv, &nargs, &help)) return GCK_EXIT_USAGE;
    if (help) {
        fputs(verify_help, stdout);
        return GCK_EXIT_OK;
    }
    return run(vals, strict);
}
