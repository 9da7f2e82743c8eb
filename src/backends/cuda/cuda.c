/* cuBLAS (cublasGemmEx, cublasGemmStridedBatchedEx) and cuBLASLt (cublasLtMatmul with the
 * heuristic's first algorithm) backends.
 *
 * Operands are mirrored region by region: every guarded host region (canary zone, operand,
 * back zone) is copied to a device allocation of the same size, the call runs on the device
 * pointers at the same offsets (cudaMalloc returns 256-byte aligned memory, so the offsets
 * from a 256-byte boundary are the host's), and every region is copied back afterwards. The
 * host's guard, padding and input checks then judge what the device did. A sticky CUDA error
 * after the call (illegal address, launch failure) is a device fault: a `crash`.
 *
 * Under a memory budget (call_budget.h) the operands are copied with the host limit lifted (they
 * are gemmcheck's), and then device memory is taken, also with the host limit lifted, until only
 * the budget is free (the host limit then leaves room for that much device memory's address
 * space besides the budget: unified virtual addressing maps device memory into it), so that what
 * the library allocates in the call fails past it: cuBLAS runs on a handle made in the call
 * (its set-up and workspace count), cuBLASLt's heuristic is offered a workspace of at most the
 * budget, allocated in the call.
 *
 * The support table follows the cuBLAS documentation's cublasGemmEx table (computeType,
 * scaleType, Atype/Btype, Ctype), without the integer and complex rows: 16F with f16; 32F with
 * bf16->bf16, f16->f16, bf16->f32, f16->f32, f32->f32; 32F_FAST_16F, _FAST_16BF, _FAST_TF32
 * with f32; 64F with f64. */
#define _GNU_SOURCE /* F_OFD_SETLKW */
#include "backend_cuda.h"
#include "format_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends.h"
#include "call_budget.h"
#include "cuda_api.h"
#include "cuda_probe.h"
#include "text.h"

/* ---- the support table ------------------------------------------------------------------- */

/* One line per row: element types of A/B and C/D, the case's compute type, cuBLAS's compute
 * type, the accumulation precision, what A and B are rounded to first, the epilogue's format.
 *
 * The 32F rows with bf16 or f16 output accumulate in f32, but cuBLAS by default allows
 * "reduced precision reductions": split-K partial sums and the epilogue kept in the output
 * type (cublasSetMathMode's CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION turns it off;
 * cuBLASLt's reduction-scheme mask allows CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE unless told
 * otherwise; PyTorch's allow_{fp16,bf16}_reduced_precision_reduction set the flag). Their
 * declared precision is therefore the output format's: on an H100 (cuBLAS 13.1) results of
 * these rows were off by an output-format rounding of alpha*AB before beta*C was added. */
#define CUDA_ROWS(X)                                                                               \
    X(F16, F16, F16, CUBLAS_COMPUTE_16F, F16, F16, F16)                                            \
    X(BF16, BF16, F32, CUBLAS_COMPUTE_32F, BF16, F32, BF16)                                        \
    X(F16, F16, F32, CUBLAS_COMPUTE_32F, F16, F32, F16)                                            \
    X(BF16, F32, F32, CUBLAS_COMPUTE_32F, F32, F32, F32)                                           \
    X(F16, F32, F32, CUBLAS_COMPUTE_32F, F32, F32, F32)                                            \
    X(F32, F32, F32, CUBLAS_COMPUTE_32F, F32, F32, F32)                                            \
    X(F32, F32, F16, CUBLAS_COMPUTE_32F_FAST_16F, F32, F16, F32)                                   \
    X(F32, F32, BF16, CUBLAS_COMPUTE_32F_FAST_16BF, F32, BF16, F32)                                \
    X(F32, F32, TF32, CUBLAS_COMPUTE_32F_FAST_TF32, F32, TF32, F32)                                \
    X(F64, F64, F64, CUBLAS_COMPUTE_64F, F64, F64, F64)

/* Tensor cores accumulate blocks of products with one rounding (Fasi et al. 2021); FTZ is
 * possible in reduced-precision paths. The checker's 2K+4 covers the block accumulation; eta =
 * smallest normal covers FTZ of results. */
#define CUDA_MODEL(ct, prec, in, epi)                                                              \
    {                                                                                              \
        .compute = GCK_##prec, .inputs_rounded = true, .input_format = GCK_##in,                   \
        .acc = GCK_ACC_BLOCK_FMA, .block = 0, .epilogue = GCK_##epi,                               \
        .ftz = ct != CUBLAS_COMPUTE_64F, .daz = false                                              \
    }
#define CUDA_PROMISES(ct)                                                                          \
    (GCK_PROMISE_BETA0_NO_READ_C | GCK_PROMISE_ROW_MAJOR | GCK_PROMISE_BATCHED |                   \
     GCK_PROMISE_D_IN_PLACE | GCK_PROMISE_INT32_DIMS |                                             \
     (ct == CUBLAS_COMPUTE_16F   ? GCK_PROMISE_SCALE_F16                                           \
      : ct == CUBLAS_COMPUTE_64F ? GCK_PROMISE_SCALE_F64                                           \
                                 : GCK_PROMISE_SCALE_F32))
#define GEMMEX_ROW(ab, c, comp, ct, acc, in, epi)                                                  \
    {GCK_##ab,          GCK_##ab,                                                                  \
     GCK_##c,           GCK_##c,                                                                   \
     GCK_##comp,        CUDA_MODEL(ct, acc, in, epi),                                              \
     CUDA_PROMISES(ct), "cublasGemmEx / cublasGemmStridedBatchedEx"},
#define LT_ROW(ab, c, comp, ct, acc, in, epi)                                                      \
    {GCK_##ab,                                                                                     \
     GCK_##ab,                                                                                     \
     GCK_##c,                                                                                      \
     GCK_##c,                                                                                      \
     GCK_##comp,                                                                                   \
     CUDA_MODEL(ct, acc, in, epi),                                                                 \
     CUDA_PROMISES(ct) | GCK_PROMISE_D_SEPARATE,                                                   \
     "cublasLtMatmul"},
#define COMPUTE_TYPE(ab, c, comp, ct, acc, in, epi) ct,

static const gck_support_row rows_gemmex[] = {CUDA_ROWS(GEMMEX_ROW)};
static const gck_support_row rows_lt[] = {CUDA_ROWS(LT_ROW)};
static const cublasComputeType_t computes[] = {CUDA_ROWS(COMPUTE_TYPE)};
enum { NROWS = sizeof computes / sizeof computes[0] };

size_t gck_cuda_rows(bool lt, const gck_support_row **rows, const cublasComputeType_t **cts) {
    *rows = lt ? rows_lt : rows_gemmex;
    if (cts) *cts = computes;
    return NROWS;
}

cudaDataType gck_cuda_datatype(gck_format f) {
    switch (f) {
    case GCK_F16: return CUDA_R_16F;
    case GCK_BF16: return CUDA_R_16BF;
    case GCK_F64: return CUDA_R_64F;
    default: return CUDA_R_32F;
    }
}

cudaDataType gck_cuda_scale_type(cublasComputeType_t ct) {
    if (ct == CUBLAS_COMPUTE_16F || ct == CUBLAS_COMPUTE_16F_PEDANTIC) return CUDA_R_16F;
    if (ct == CUBLAS_COMPUTE_64F || ct == CUBLAS_COMPUTE_64F_PEDANTIC) return CUDA_R_64F;
    return CUDA_R_32F;
}

gck_cublas_args gck_cublas_map(const gck_case *c) {
    bool row = c->order == GCK_ROW_MAJOR;
    cublasOperation_t ta = c->transa == GCK_OP_N ? CUBLAS_OP_N : CUBLAS_OP_T;
    cublasOperation_t tb = c->transb == GCK_OP_N ? CUBLAS_OP_N : CUBLAS_OP_T;
    gck_cublas_args a = {
        .opx = row ? tb : ta,
        .opy = row ? ta : tb,
        .m = (int)(row ? c->n : c->m),
        .n = (int)(row ? c->m : c->n),
        .k = (int)c->k,
        .x = row ? GCK_B : GCK_A,
        .y = row ? GCK_A : GCK_B,
        .ldx = (int)(row ? c->ldb : c->lda),
        .ldy = (int)(row ? c->lda : c->ldb),
        .ldc = (int)c->ldc,
        .ldd = (int)gck_case_ld(c, GCK_D),
        .stride_x = row ? c->stride_b : c->stride_a,
        .stride_y = row ? c->stride_a : c->stride_b,
        .stride_c = c->stride_c,
        .stride_d = gck_case_stride(c, GCK_D),
        .batch = (int)c->batch,
    };
    return a;
}

/* ---- device state ------------------------------------------------------------------------ */

typedef struct cuda_state {
    bool lt;
    bool probed, usable;
    const gck_cuda_api *cu; /* the entry points, once loaded */
    char why[1024];
    cublasHandle_t handle;
    cublasLtHandle_t lt_handle;
    bool have_handle;
} cuda_state;

/* Whether calls can run: the CUDA probe's answer (the one place that asks the runtime), then
 * device 0's name and compute capability. */
static void probe(cuda_state *s) {
    if (s->probed) return;
    s->probed = true;
    char what[800];
    if (!gck_cuda_probe(what, sizeof what)) {
        snprintf(s->why, sizeof s->why, "%s", what);
        return;
    }
    s->cu = gck_cuda_api_get(true, s->why, sizeof s->why);
    if (!s->cu) return;
    struct cudaDeviceProp p;
    if (s->cu->cudaGetDeviceProperties(&p, 0) == cudaSuccess)
        snprintf(s->why, sizeof s->why, "device 0: %.120s (sm_%d%d); %.150s", p.name, p.major,
                 p.minor, what);
    s->usable = true;
}

static gck_status cuda_init_common(void **state, const char *arg, bool lt, char *msg, size_t len) {
    if (arg) {
        snprintf(msg, len, "backend '%s' takes no argument", lt ? "cublaslt" : "cublas");
        return GCK_EINVAL;
    }
    cuda_state *s = calloc(1, sizeof *s);
    if (!s) return gck_fail(GCK_ENOMEM, msg, len, "out of memory for the backend's state");
    s->lt = lt;
    *state = s;
    return GCK_OK;
}

static gck_status cublas_init(void **st, const char *arg, char *msg, size_t len) {
    return cuda_init_common(st, arg, false, msg, len);
}

static gck_status cublaslt_init(void **st, const char *arg, char *msg, size_t len) {
    return cuda_init_common(st, arg, true, msg, len);
}

static void cuda_teardown(void *state) {
    cuda_state *s = state;
    if (!s) return;
    if (s->have_handle) {
        if (s->lt)
            s->cu->cublasLtDestroy(s->lt_handle);
        else
            s->cu->cublasDestroy(s->handle);
    }
    free(s);
}

static bool cuda_available(void *state, char *why, size_t len) {
    cuda_state *s = state;
    probe(s);
    snprintf(why, len, "%s", s->why);
    return s->usable;
}

static void cuda_version(void *state, char *buf, size_t len) {
    cuda_state *s = state;
    char why[300];
    const gck_cuda_api *cu = gck_cuda_api_get(true, why, sizeof why);
    if (!cu) {
        snprintf(buf, len, "%s %d.%d.%d headers; libraries not loaded (%s)",
                 s->lt ? "cuBLASLt" : "cuBLAS", CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR,
                 CUBLAS_VER_PATCH, why);
        return;
    }
    size_t v = cu->cublasLtGetVersion();
    /* cublasGetVersion needs a handle, hence a device: cuBLAS ships with cuBLASLt's version */
    snprintf(buf, len, "%s %zu.%zu.%zu (%s; headers %d.%d.%d)", s->lt ? "cuBLASLt" : "cuBLAS",
             v / 10000, (v / 100) % 100, v % 100, cu->paths[s->lt ? 1 : 2], CUBLAS_VER_MAJOR,
             CUBLAS_VER_MINOR, CUBLAS_VER_PATCH);
}

static size_t cuda_table(void *state, const gck_support_row **rows) {
    return gck_cuda_rows(((cuda_state *)state)->lt, rows, NULL);
}

/* cuBLAS status -> call status. */
static gck_call_status from_cublas(const gck_cuda_api *cu, cublasStatus_t st, const char *what,
                                   char *msg, size_t len) {
    if (st == CUBLAS_STATUS_SUCCESS) return GCK_CALL_OK;
    snprintf(msg, len, "%s: %s", what, cu->cublasGetStatusString(st));
    return st == CUBLAS_STATUS_NOT_SUPPORTED ? GCK_CALL_NOT_SUPPORTED : GCK_CALL_ERROR;
}

/* A CUDA error after the call: sticky ones leave the context unusable (a crash). */
static gck_call_status from_cuda(const gck_cuda_api *cu, cudaError_t e, const char *what, char *msg,
                                 size_t len) {
    if (e == cudaSuccess) return GCK_CALL_OK;
    snprintf(msg, len, "%s: %s (%s)", what, cu->cudaGetErrorString(e), cu->cudaGetErrorName(e));
    switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert: return GCK_CALL_DEVICE_FAULT;
    default: return GCK_CALL_ERROR;
    }
}

typedef struct scalars {
    union {
        uint16_t h;
        float f;
        double d;
    } alpha, beta;
} scalars;

static void make_scalars(cublasComputeType_t ct, const gck_case *c, scalars *sc) {
    switch (gck_cuda_scale_type(ct)) {
    case CUDA_R_16F:
        sc->alpha.h = gck_fmt_f16_from_double(c->alpha);
        sc->beta.h = gck_fmt_f16_from_double(c->beta);
        break;
    case CUDA_R_64F:
        sc->alpha.d = c->alpha;
        sc->beta.d = c->beta;
        break;
    default:
        sc->alpha.f = (float)c->alpha;
        sc->beta.f = (float)c->beta;
        break;
    }
}

static gck_call_status run_gemmex(cuda_state *s, cublasHandle_t h, const gck_case *c,
                                  cublasComputeType_t ct, void *dev[4], char *msg, size_t len) {
    gck_cublas_args a = gck_cublas_map(c);
    scalars sc;
    make_scalars(ct, c, &sc);
    const void *X = dev[a.x], *Y = dev[a.y];
    cudaDataType tx = gck_cuda_datatype(a.x == GCK_A ? c->type_a : c->type_b);
    cudaDataType ty = gck_cuda_datatype(a.y == GCK_A ? c->type_a : c->type_b);
    cudaDataType tc = gck_cuda_datatype(c->type_c);
    cublasStatus_t st;
    if (c->batch == 1)
        st = s->cu->cublasGemmEx(h, a.opx, a.opy, a.m, a.n, a.k, &sc.alpha, X, tx, a.ldx, Y, ty,
                                 a.ldy, &sc.beta, dev[GCK_C], tc, a.ldc, ct, CUBLAS_GEMM_DEFAULT);
    else
        st = s->cu->cublasGemmStridedBatchedEx(h, a.opx, a.opy, a.m, a.n, a.k, &sc.alpha, X, tx,
                                               a.ldx, a.stride_x, Y, ty, a.ldy, a.stride_y,
                                               &sc.beta, dev[GCK_C], tc, a.ldc, a.stride_c, a.batch,
                                               ct, CUBLAS_GEMM_DEFAULT);
    return from_cublas(s->cu, st, c->batch == 1 ? "cublasGemmEx" : "cublasGemmStridedBatchedEx",
                       msg, len);
}

/* A column-major layout for a matrix of rows x cols with ld, batch and stride. */
static cublasStatus_t layout(const gck_cuda_api *cu, cublasLtMatrixLayout_t *l, cudaDataType t,
                             int rows, int cols, int ld, int batch, long long stride) {
    cublasStatus_t st = cu->cublasLtMatrixLayoutCreate(l, t, (uint64_t)rows, (uint64_t)cols, ld);
    if (st != CUBLAS_STATUS_SUCCESS || batch == 1) return st;
    int32_t b = batch;
    int64_t s = stride;
    st = cu->cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &b, sizeof b);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cu->cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                  &s, sizeof s);
    return st;
}

uint32_t gck_cuda_pointer_alignment(const void *p) {
    uintptr_t v = (uintptr_t)p;
    uint32_t al = 256;
    while (al > 1 && v % al != 0) al /= 2;
    return al;
}

/* The heuristic's preference: the workspace it may use, and each operand's alignment. It
 * assumes 256-byte aligned operands unless told otherwise (the attribute's default) and may then
 * pick a kernel that needs that alignment, which the fuzzer's offset pointers do not have. */
static cublasStatus_t preference(const gck_cuda_api *cu, cublasLtMatmulPreference_t *pref,
                                 size_t ws_bytes, void *dev[4], const gck_cublas_args *a) {
    static const cublasLtMatmulPreferenceAttributes_t align_attr[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    const void *ptrs[4] = {dev[a->x], dev[a->y], dev[GCK_C], dev[GCK_D]};
    cublasStatus_t st = cu->cublasLtMatmulPreferenceCreate(pref);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cu->cublasLtMatmulPreferenceSetAttribute(
            *pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes);
    for (int i = 0; i < 4 && st == CUBLAS_STATUS_SUCCESS; i++) {
        uint32_t al = gck_cuda_pointer_alignment(ptrs[i]);
        st = cu->cublasLtMatmulPreferenceSetAttribute(*pref, align_attr[i], &al, sizeof al);
    }
    return st;
}

static gck_call_status run_lt(cuda_state *s, const gck_case *c, cublasComputeType_t ct,
                              void *dev[4], size_t ws_bytes, char *msg, size_t len) {
    gck_cublas_args a = gck_cublas_map(c);
    scalars sc;
    make_scalars(ct, c, &sc);
    cudaDataType tx = gck_cuda_datatype(a.x == GCK_A ? c->type_a : c->type_b);
    cudaDataType ty = gck_cuda_datatype(a.y == GCK_A ? c->type_a : c->type_b);
    cudaDataType tc = gck_cuda_datatype(c->type_c), td = gck_cuda_datatype(gck_case_type(c, GCK_D));
    cublasLtMatmulDesc_t op = NULL;
    cublasLtMatrixLayout_t lx = NULL, ly = NULL, lc = NULL, ld = NULL;
    cublasLtMatmulPreference_t pref = NULL;
    void *workspace = NULL;
    gck_call_status out = GCK_CALL_OK;
    cublasStatus_t st = s->cu->cublasLtMatmulDescCreate(&op, ct, gck_cuda_scale_type(ct));
    if (st == CUBLAS_STATUS_SUCCESS)
        st = s->cu->cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &a.opx,
                                                   sizeof a.opx);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = s->cu->cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &a.opy,
                                                   sizeof a.opy);
    /* stored shapes of X and Y in the column-major view */
    int xr = a.opx == CUBLAS_OP_N ? a.m : a.k, xc = a.opx == CUBLAS_OP_N ? a.k : a.m;
    int yr = a.opy == CUBLAS_OP_N ? a.k : a.n, yc = a.opy == CUBLAS_OP_N ? a.n : a.k;
    if (st == CUBLAS_STATUS_SUCCESS)
        st = layout(s->cu, &lx, tx, xr, xc, a.ldx, a.batch, a.stride_x);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = layout(s->cu, &ly, ty, yr, yc, a.ldy, a.batch, a.stride_y);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = layout(s->cu, &lc, tc, a.m, a.n, a.ldc, a.batch, a.stride_c);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = layout(s->cu, &ld, td, a.m, a.n, a.ldd, a.batch, a.stride_d);
    if (st == CUBLAS_STATUS_SUCCESS) st = preference(s->cu, &pref, ws_bytes, dev, &a);
    if (st != CUBLAS_STATUS_SUCCESS) {
        out = from_cublas(s->cu, st, "cublasLt descriptor set-up", msg, len);
        goto done;
    }
    cublasLtMatmulHeuristicResult_t heur;
    int found = 0;
    st = s->cu->cublasLtMatmulAlgoGetHeuristic(s->lt_handle, op, lx, ly, lc, ld, pref, 1, &heur,
                                               &found);
    if (st == CUBLAS_STATUS_SUCCESS && found > 0 && heur.state != CUBLAS_STATUS_SUCCESS)
        st = heur.state; /* the algorithm returned is not usable as configured */
    if (st != CUBLAS_STATUS_SUCCESS || found == 0) {
        out = st != CUBLAS_STATUS_SUCCESS
                  ? from_cublas(s->cu, st, "cublasLtMatmulAlgoGetHeuristic", msg, len)
                  : GCK_CALL_NOT_SUPPORTED;
        if (found == 0 && st == CUBLAS_STATUS_SUCCESS)
            snprintf(msg, len, "cublasLtMatmulAlgoGetHeuristic found no algorithm");
        goto done;
    }
    if (heur.workspaceSize > 0) {
        cudaError_t e = s->cu->cudaMalloc(&workspace, heur.workspaceSize);
        if (e != cudaSuccess) {
            out = from_cuda(s->cu, e, "cudaMalloc (workspace)", msg, len);
            goto done;
        }
    }
    st = s->cu->cublasLtMatmul(s->lt_handle, op, &sc.alpha, dev[a.x], lx, dev[a.y], ly, &sc.beta,
                               dev[GCK_C], lc, dev[GCK_D], ld, &heur.algo, workspace,
                               heur.workspaceSize, 0);
    out = from_cublas(s->cu, st, "cublasLtMatmul", msg, len);
done:
    if (workspace) s->cu->cudaFree(workspace);
    if (pref) s->cu->cublasLtMatmulPreferenceDestroy(pref);
    if (ld) s->cu->cublasLtMatrixLayoutDestroy(ld);
    if (lc) s->cu->cublasLtMatrixLayoutDestroy(lc);
    if (ly) s->cu->cublasLtMatrixLayoutDestroy(ly);
    if (lx) s->cu->cublasLtMatrixLayoutDestroy(lx);
    if (op) s->cu->cublasLtMatmulDescDestroy(op);
    return out;
}

/* ---- a memory budget on the device ------------------------------------------------------- */

/* The device memory taken for one call so that only its budget stays free. */
enum { BALLOON_PIECES = 64 };
typedef struct balloon {
    void *piece[BALLOON_PIECES];
    int n;
} balloon;

/* A worker that dies under a budget (cuBLAS 13.1 aborts on some refused allocations,
 * docs/DEVIATIONS.md) releases its lock at once, but the driver frees its reservation (nearly
 * the whole device) some time after the process is gone: on an H200 the next calls, in other
 * workers, found the device full ("copying operands to the device: out of memory",
 * cublasLtCreate failing) and were reported as failures of their next call. So the holder of
 * the exclusive lock writes a mark into the file (bytes 8 to 23: its pid and the device's free
 * memory before the reservation) and clears it after the reservation is given back; a call
 * that finds a mark left behind waits, up to RESERVE_WAIT_MS, until the free memory is back
 * within a 32nd of the device (2 GiB at most: other workers' contexts) of what it was, and
 * clears it. */
typedef struct reserve_mark {
    int64_t pid;
    uint64_t free_before;
} reserve_mark;
enum { RESERVE_MARK_AT = 8, RESERVE_WAIT_MS = 10000, RESERVE_POLL_MS = 20 };

/* Write m into the lock file fd (-1: none); {0, 0} clears the mark. Advice: a write that fails
 * leaves no mark, and then none waits. */
static void reserve_mark_write(int fd, reserve_mark m) {
    ssize_t w = fd >= 0 ? pwrite(fd, &m, sizeof m, RESERVE_MARK_AT) : 0;
    (void)w;
}

/* Take free memory less `budget`, in pieces of whole multiples of 2 MiB (the devices' allocation
 * granularity; a piece is halved when it does not fit), so that between `budget` and `budget` +
 * 2 MiB stay free; the free memory found first is marked in the device lock mark_fd (-1: none)
 * before anything is taken. A failed cudaMalloc here is not left as the runtime's last error,
 * where the library would find it. */
static void inflate(const gck_cuda_api *cu, int64_t budget, int mark_fd, balloon *b) {
    memset(b, 0, sizeof *b);
    const size_t grain = (size_t)2 << 20;
    size_t free_b = 0, total = 0;
    if (cu->cudaMemGetInfo(&free_b, &total) != cudaSuccess || free_b <= (uint64_t)budget) {
        cu->cudaGetLastError();
        return;
    }
    reserve_mark_write(mark_fd, (reserve_mark){(int64_t)getpid(), free_b});
    size_t want = (free_b - (size_t)budget) / grain * grain, piece = want;
    while (want > 0 && piece > 0 && b->n < BALLOON_PIECES) {
        if (piece > want) piece = want;
        if (cu->cudaMalloc(&b->piece[b->n], piece) == cudaSuccess) {
            b->n++;
            want -= piece;
        } else {
            cu->cudaGetLastError();
            piece = piece / 2 / grain * grain;
        }
    }
}

static void deflate(const gck_cuda_api *cu, balloon *b) {
    for (int i = 0; i < b->n; i++) cu->cudaFree(b->piece[i]);
    b->n = 0;
}

/* ---- one device, several workers -------------------------------------------------------- */

/* A call under a budget leaves the device only that budget free, so no other call may use the
 * device meanwhile: the campaign's other workers, and other gemmcheck processes, would find it
 * full and fail (on an H200 they did: "copying operands to the device: out of memory" and
 * cublasLtCreate failures in calls without a budget). Every call therefore holds a lock on one
 * file per user and machine: shared without a budget, exclusive under one. Byte 0 of the file
 * is a turnstile that every call takes briefly before it asks for byte 1, so that a budgeted
 * call waiting for byte 1 is not starved by a stream of shared holders. The locks are open file
 * description locks on a file opened for the call alone: two threads of one worker (the
 * concurrency check) lock apart, and a worker that dies releases its lock. The file is the
 * user's own (/tmp/gemmcheck-cuda-UID.lock; GEMMCHECK_CUDA_LOCK names another): where it cannot
 * be opened as such, the call runs without the lock. */
static bool lock_byte(int fd, short type, off_t byte) {
    struct flock l = {.l_type = type, .l_whence = SEEK_SET, .l_start = byte, .l_len = 1};
    while (fcntl(fd, type == F_UNLCK ? F_OFD_SETLK : F_OFD_SETLKW, &l) != 0)
        if (errno != EINTR) return false;
    return true;
}

static int device_lock(bool exclusive) {
    char path[256];
    const char *env = getenv("GEMMCHECK_CUDA_LOCK");
    if (env && *env)
        snprintf(path, sizeof path, "%s", env);
    else
        snprintf(path, sizeof path, "/tmp/gemmcheck-cuda-%lu.lock", (unsigned long)geteuid());
    /* never through a link, and only a regular file of this user's: another user cannot plant
     * the file and hold its lock */
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
        !lock_byte(fd, F_WRLCK, 0) || !lock_byte(fd, exclusive ? F_WRLCK : F_RDLCK, 1)) {
        close(fd);
        return -1;
    }
    lock_byte(fd, F_UNLCK, 0);
    return fd;
}

static void await_dead_reservation(const gck_cuda_api *cu, int fd) {
    reserve_mark m = {0, 0};
    if (fd < 0 || pread(fd, &m, sizeof m, RESERVE_MARK_AT) != (ssize_t)sizeof m || m.pid == 0)
        return;
    for (int waited = 0; waited < RESERVE_WAIT_MS; waited += RESERVE_POLL_MS) {
        size_t free_b = 0, total = 0;
        if (cu->cudaMemGetInfo(&free_b, &total) != cudaSuccess) {
            cu->cudaGetLastError();
            break;
        }
        uint64_t slack = total / 32 < ((uint64_t)2 << 30) ? total / 32 : (uint64_t)2 << 30;
        if (free_b + slack >= m.free_before) break;
        usleep(RESERVE_POLL_MS * 1000);
    }
    reserve_mark_write(fd, (reserve_mark){0, 0});
}

/* The library's part of one call, under `budget` bytes of device memory (0: none); lock_fd: the
 * device lock it holds (-1: none), where inflate marks the reservation. */
static gck_call_status run_budgeted(cuda_state *s, const gck_case *c, cublasComputeType_t ct,
                                    void *dev[4], int64_t budget, int lock_fd, char *msg,
                                    size_t len) {
    balloon b;
    if (budget > 0) {
        /* The reservation is gemmcheck's: made with the host limit lifted, since each device
         * allocation also takes its size of the process's address space (unified virtual
         * addressing; under the limit it took only what the budget allowed, and the library's
         * own allocations then failed for want of address space, not of device memory). The
         * limit comes back from the size with the reservation in it, plus room for the device
         * memory left free (the budget and up to one 2 MiB grain more). */
        gck_call_budget_pause();
        inflate(s->cu, budget, lock_fd, &b);
        gck_call_budget_resume_plus(budget + ((int64_t)2 << 20));
    }
    gck_call_status out;
    size_t ws = (size_t)32 << 20; /* NVIDIA's recommended cuBLASLt workspace on Hopper */
    if (s->lt) {
        if (budget > 0 && (uint64_t)budget < ws) ws = (size_t)budget;
        out = run_lt(s, c, ct, dev, ws, msg, len);
    } else if (budget > 0) {
        cublasHandle_t h;
        cublasStatus_t st = s->cu->cublasCreate(&h);
        out = from_cublas(s->cu, st, "cublasCreate (in the call, under its budget)", msg, len);
        if (st == CUBLAS_STATUS_SUCCESS) {
            out = run_gemmex(s, h, c, ct, dev, msg, len);
            s->cu->cublasDestroy(h); /* synchronises the device first */
        }
    } else {
        out = run_gemmex(s, s->handle, c, ct, dev, msg, len);
    }
    gck_call_status sync =
        from_cuda(s->cu, s->cu->cudaDeviceSynchronize(), "after the call", msg, len);
    if (sync != GCK_CALL_OK) out = sync;
    if (budget > 0) {
        deflate(s->cu, &b);
        reserve_mark_write(lock_fd, (reserve_mark){0, 0});
    }
    return out;
}

/* The handle the calls without a budget use, made once, outside any limit. */
static gck_call_status make_handle(cuda_state *s, char *msg, size_t len) {
    if (s->have_handle) return GCK_CALL_OK;
    cublasStatus_t st =
        s->lt ? s->cu->cublasLtCreate(&s->lt_handle) : s->cu->cublasCreate(&s->handle);
    if (st != CUBLAS_STATUS_SUCCESS)
        return from_cublas(s->cu, st, s->lt ? "cublasLtCreate" : "cublasCreate", msg, len);
    s->have_handle = true;
    return GCK_CALL_OK;
}

/* Mirror the four regions (D's is C's when in place) on the device. */
static gck_call_status copy_in(cuda_state *s, const gck_case *c, const gck_operands *ops,
                               void *dregion[4], void *dev[4], char *msg, size_t len) {
    const void *host_base[4] = {ops->a, ops->b, ops->c, ops->d};
    gck_call_status out = GCK_CALL_OK;
    int nreg = c->d_is_c ? 3 : 4;
    for (int x = 0; x < nreg && out == GCK_CALL_OK; x++) {
        cudaError_t e = s->cu->cudaMalloc(&dregion[x], ops->region_bytes[x]);
        if (e == cudaSuccess)
            e = s->cu->cudaMemcpy(dregion[x], ops->region[x], ops->region_bytes[x],
                                  cudaMemcpyHostToDevice);
        out = from_cuda(s->cu, e, "copying operands to the device", msg, len);
        dev[x] = (char *)dregion[x] + ((const char *)host_base[x] - (const char *)ops->region[x]);
    }
    if (c->d_is_c) dev[GCK_D] = dev[GCK_C];
    return out;
}

static gck_call_status cuda_call(void *state, const gck_case *c, const gck_support_row *row,
                                 const gck_operands *ops, char *msg, size_t len) {
    cuda_state *s = state;
    gck_call_budget_pause(); /* gemmcheck's own work: the probe, the handle of later calls and
                                the copies */
    probe(s);
    if (!s->usable) {
        gck_call_budget_resume();
        snprintf(msg, len, "%s", s->why);
        return GCK_CALL_ERROR;
    }
    const gck_support_row *rows;
    const cublasComputeType_t *cts;
    gck_cuda_rows(s->lt, &rows, &cts);
    cublasComputeType_t ct = cts[row - rows];
    int64_t budget = gck_call_budget();
    int lock_fd = device_lock(budget > 0);
    await_dead_reservation(s->cu, lock_fd);
    void *dregion[4] = {NULL, NULL, NULL, NULL}, *dev[4] = {NULL, NULL, NULL, NULL};
    gck_call_status out = make_handle(s, msg, len);
    if (out == GCK_CALL_OK) out = copy_in(s, c, ops, dregion, dev, msg, len);
    gck_call_budget_resume();
    if (out == GCK_CALL_OK) out = run_budgeted(s, c, ct, dev, budget, lock_fd, msg, len);
    /* copy every region back, so the host checks see inputs, guards and padding as the device
     * left them (skipped after a device fault: the context is gone) */
    gck_call_budget_pause();
    int nreg = c->d_is_c ? 3 : 4;
    for (int x = 0; x < nreg && out != GCK_CALL_DEVICE_FAULT; x++)
        if (dregion[x]) {
            gck_call_status back =
                from_cuda(s->cu,
                          s->cu->cudaMemcpy(ops->region[x], dregion[x], ops->region_bytes[x],
                                            cudaMemcpyDeviceToHost),
                          "copying operands back", msg, len);
            if (back != GCK_CALL_OK && out == GCK_CALL_OK) out = back;
        }
    for (int x = 0; x < nreg; x++)
        if (dregion[x]) s->cu->cudaFree(dregion[x]);
    if (lock_fd >= 0) close(lock_fd);
    gck_call_budget_resume();
    return out;
}

const gck_backend_ops *gck_cublas_backend_ops(void) {
    static const gck_backend_ops ops = {"cublas",     cublas_init, cuda_teardown, cuda_available,
                                        cuda_version, cuda_table,  cuda_call};
    return &ops;
}

const gck_backend_ops *gck_cublaslt_backend_ops(void) {
    static const gck_backend_ops ops = {"cublaslt",   cublaslt_init, cuda_teardown, cuda_available,
                                        cuda_version, cuda_table,    cuda_call};
    return &ops;
}
