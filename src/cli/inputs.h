/* The operands of `gemmcheck oracle` and `gemmcheck verify`: .npy files read and checked, and
 * the row-major case they describe. Every problem is a usage error (exit
 * 2) naming the file and what is wrong, with the command's name (internal: private to src/cli/). */
#ifndef GEMMCHECK_CLI_INPUTS_H
#define GEMMCHECK_CLI_INPUTS_H

#include "gemmcheck/case.h"
#include "gemmcheck/checker.h"
#include "npy.h"

typedef struct gck_inputs {
    const char *cmd;                      /* "oracle", "verify" */
    const char *a, *b, *c;                /* paths (c: NULL when there is no C) */
    const char *a_type, *b_type, *c_type; /* --X-type, or NULL */
    gck_op ta, tb;
    double alpha, beta;
    gck_npy A, B, C;
} gck_inputs;

/** The option texts oracle and verify share (NULL: not given). */
typedef struct gck_inputs_options {
    const char *a, *b, *c, *a_type, *b_type, *c_type, *alpha, *beta, *transa, *transb, *threads,
        *oracle;
} gck_inputs_options;

/** Parse them into *in (not yet loaded), *threads and *oracle; --a and --b are required. */
int gck_inputs_parse(const char *cmd, const gck_inputs_options *g, gck_inputs *in,
                     long long *threads, gck_oracle_kind *oracle);
/** Read one .npy file: a matrix (2-D) or a strided batch of them (3-D: batch, rows, cols), as
 *  repro --dump writes; `what` names it in an error ("A"). */
int gck_inputs_read(const char *cmd, const char *what, const char *path, gck_npy *a);
/** The element type of a file read: from its dtype, checked against its --X-type option `opt`
 *  (`given`, or NULL; needed only for bfloat16 bits stored as <u2). */
int gck_inputs_type(const char *cmd, const char *path, const gck_npy *a, const char *opt,
                    const char *given, gck_format *out);
/** Read the files into o->A, o->B (and o->C). */
int gck_inputs_load(gck_inputs *o);
/** The case D(type_d) = alpha*op(A)*op(B) + beta*C of the loaded files: shapes checked,
 *  a strided batch when some are 3-D (2-D ones shared), compute f64, D separate. */
int gck_inputs_case(const gck_inputs *o, gck_format type_d, gck_case *gc);
/** Whether some input is a 3-D batch (D then is 3-D too). */
bool gck_inputs_batched(const gck_inputs *o);
/** "(2, 3)" or "(4, 2, 3)" */
void gck_inputs_shape(const gck_npy *a, char *buf, size_t len);
void gck_inputs_free(gck_inputs *o);

#endif
