/* attention_cuda.c - the CUDA attention_decode variants: dense split-KV flash decoding and
 * FFD. Inputs q[B,H,d], k[B,Hkv,T,d], v[B,Hkv,T,d]; output out[B,H,d]. */
#include "attn_plan.h"
#include "cuda_backend.h"
#include "cuda_private.h"
#include "ffd_quant.h"

#include <stdlib.h>

/* A device buffer and the byte count kt_backend_free needs. */
typedef struct dev_buf {
    void *ptr;
    size_t bytes;
} dev_buf;

static int buf_alloc(dev_buf *buf, kt_backend *b, size_t bytes)
{
    buf->bytes = bytes;
    return kt_backend_alloc(b, &buf->ptr, bytes);
}

static void buf_free(dev_buf *buf, kt_backend *b)
{
    kt_backend_free(b, buf->ptr, buf->bytes);
    buf->ptr = NULL;
}

typedef struct split_scratch {
    dev_buf acc, max_log2, sum;
    kt_cuda_attn_partials part;
} split_scratch;

static int scratch_alloc(split_scratch *s, kt_backend *b, const kt_problem *p, int64_t n_splits)
{
    size_t rows = (size_t)(p->batch * p->heads * n_splits);
    int rc;
    if ((rc = buf_alloc(&s->acc, b, rows * (size_t)p->head_dim * sizeof(float))) < 0 ||
        (rc = buf_alloc(&s->max_log2, b, rows * sizeof(float))) < 0 ||
        (rc = buf_alloc(&s->sum, b, rows * sizeof(float))) < 0)
        return rc;
    s->part.acc = s->acc.ptr;
    s->part.max_log2 = s->max_log2.ptr;
    s->part.sum = s->sum.ptr;
    s->part.n_splits = n_splits;
    return KT_OK;
}

static void scratch_free(split_scratch *s, kt_backend *b)
{
    buf_free(&s->acc, b);
    buf_free(&s->max_log2, b);
    buf_free(&s->sum, b);
}

static kt_cuda_attn_shape shape_of(const kt_problem *p)
{
    kt_cuda_attn_shape s = {p->batch, p->heads, p->kv_heads, p->head_dim, p->context};
    return s;
}

static int check_cuda(const kt_call *call)
{
    if (!kt_cuda_stream(call->backend))
        return kt_error_code(KT_EINVAL, "backend '%s' is not cuda", call->backend->iface->name);
    const kt_problem *p = call->problem;
    if (p->context <= 0 || p->head_dim <= 0 || p->heads <= 0 || p->kv_heads <= 0 || p->batch <= 0)
        return kt_error_code(KT_EINVAL, "bad attention shape");
    return KT_OK;
}

/* ---- dense ----------------------------------------------------------------------------- */

enum { P_SPLIT_TOKENS, P_VECTORISED, P_DENSE_COUNT };

static const kt_param_def dense_params[P_DENSE_COUNT] = {
    {"split_tokens", KT_PARAM_INT, 0, 0, 1 << 24, NULL,
     "tokens per split (one block per batch, KV head, 8 heads and split); 0: sized by the SM "
     "count, 4 blocks per SM, at least 128 tokens"},
    {"vectorised", KT_PARAM_BOOL, 1, 0, 1, NULL,
     "16-byte loads, 4 keys per lane group in flight (head_dim x element size 64..512 bytes); "
     "false: one scalar load per lane, the kernel ffd uses"},
};

typedef struct dense_state {
    split_scratch scratch;
    int64_t split_tokens;
    int vectorised;
} dense_state;

static int dense_prepare(void **out, const kt_call *call)
{
    const kt_problem *p = call->problem;
    *out = NULL;
    int rc = check_cuda(call);
    if (rc < 0)
        return rc;
    dense_state *st = calloc(1, sizeof(*st));
    if (!st)
        return kt_error_code(KT_ENOMEM, "out of memory");
    *out = st;
    st->split_tokens = (int64_t)call->params[P_SPLIT_TOKENS].num;
    st->vectorised = call->params[P_VECTORISED].num != 0;
    if (st->split_tokens == 0) {
        int64_t group = p->heads / p->kv_heads;
        int64_t head_groups =
            (group + KT_CUDA_ATTN_HEADS_PER_BLOCK - 1) / KT_CUDA_ATTN_HEADS_PER_BLOCK;
        st->split_tokens = kt_dense_split_tokens(p->batch * p->kv_heads * head_groups, p->context,
                                                 kt_cuda_sm_count(call->backend));
    }
    return scratch_alloc(&st->scratch, call->backend, p,
                         (p->context + st->split_tokens - 1) / st->split_tokens);
}

static int dense_run(void *state, const kt_call *call)
{
    dense_state *st = state;
    kt_cuda_attn_shape s = shape_of(call->problem);
    return kt_cuda_attention_dense(
        kt_cuda_stream(call->backend), call->problem->dtype, &s, call->inputs[0], call->inputs[1],
        call->inputs[2], call->outputs[0], st->split_tokens, st->vectorised, &st->scratch.part);
}

static void dense_release(void *state, kt_backend *backend)
{
    dense_state *st = state;
    if (!st)
        return;
    scratch_free(&st->scratch, backend);
    free(st);
}

/* split_tokens and n_splits: the plan the last prepare chose (auto or given). */
static int dense_metrics(void *state, kt_metric *out, int max)
{
    const dense_state *st = state;
    kt_metric m[] = {
        {"split_tokens", (double)st->split_tokens, ""},
        {"n_splits", (double)st->scratch.part.n_splits, ""},
    };
    return kt_cuda_metrics_copy(out, max, m, (int)(sizeof(m) / sizeof(m[0])));
}

const kt_variant kt_variant_cuda_attention_dense = {
    /* .op = */ "attention_decode",
    /* .name = */ "dense",
    /* .backend = */ "cuda",
    /* .doc = */
    "split-KV flash decoding, 16-byte loads, splits sized by the SM count, online softmax in "
    "fp32, log-sum-exp merge",
    /* .params = */ dense_params,
    /* .n_params = */ P_DENSE_COUNT,
    /* .prepare = */ dense_prepare,
    /* .run = */ dense_run,
    /* .release = */ dense_release,
    /* .metrics = */ dense_metrics,
};

/* ---- ffd ------------------------------------------------------------------------------- */

enum { P_DELTA, P_BLOCK, P_SPLIT_BLOCKS, P_SCAN, P_FFD_COUNT };

static const kt_param_def ffd_params[P_FFD_COUNT] = {
    {"delta", KT_PARAM_FLOAT, KT_FFD_DEFAULT_DELTA, 0, 1e30, NULL,
     "keep a block when a head's approximate score >= pseudo-max - delta (log2 units)"},
    {"block", KT_PARAM_INT, 128, 16, 4096, NULL, "tokens per quantization block"},
    {"split_blocks", KT_PARAM_INT, 4, 1, 1 << 20, NULL, "full blocks per attend split"},
    {"scan", KT_PARAM_ENUM, 0, 0, 0, "mma|fp32",
     "block scan: int8 tensor cores (head_dim 64, 128, 256; weights quantised to 15 bits) or "
     "fp32 FMA (every head_dim)"},
};

typedef struct ffd_state {
    kt_backend *backend; /* for metrics(), which downloads the keep flags */
    kt_cuda_ffd_cache cache;
    dev_buf codes, scales, residual, block_max, keep;
    split_scratch scratch;
    double delta_log2;
    int64_t split_blocks;
    int scan_fp32;
    size_t n_flags;
} ffd_state;

static int ffd_alloc(ffd_state *st, kt_backend *b, const kt_problem *p)
{
    const int64_t bh = p->batch * p->kv_heads, tokens = st->cache.n_full * st->cache.block;
    const int64_t group = p->heads / p->kv_heads;
    int rc;
    /* kt_backend_alloc gives a valid pointer for 0 bytes (no full block) */
    if ((rc = buf_alloc(&st->codes, b, (size_t)(bh * tokens * p->head_dim / 4))) < 0 ||
        (rc = buf_alloc(&st->scales, b,
                        (size_t)(bh * st->cache.n_full * p->head_dim) * sizeof(float))) < 0 ||
        (rc = buf_alloc(&st->residual, b, (size_t)(bh * tokens * p->head_dim))) < 0 ||
        (rc = buf_alloc(&st->block_max, b,
                        (size_t)(bh * st->cache.n_full * group) * sizeof(float))) < 0 ||
        (rc = buf_alloc(&st->keep, b, st->n_flags)) < 0)
        return rc;
    st->cache.codes = st->codes.ptr;
    st->cache.scales = st->scales.ptr;
    st->cache.residual = st->residual.ptr;
    return KT_OK;
}

static int ffd_prepare(void **out, const kt_call *call)
{
    const kt_problem *p = call->problem;
    *out = NULL;
    int rc = check_cuda(call);
    if (rc < 0)
        return rc;
    ffd_state *st = calloc(1, sizeof(*st));
    if (!st)
        return kt_error_code(KT_ENOMEM, "out of memory");
    *out = st;
    st->backend = call->backend;
    st->delta_log2 = call->params[P_DELTA].num;
    st->split_blocks = (int64_t)call->params[P_SPLIT_BLOCKS].num;
    st->scan_fp32 = call->params[P_SCAN].num != 0;
    st->cache.block = (int64_t)call->params[P_BLOCK].num;
    st->cache.n_full = p->context / st->cache.block;
    st->n_flags = (size_t)(p->batch * p->kv_heads * st->cache.n_full);
    int64_t tail = p->context - st->cache.n_full * st->cache.block;
    int64_t n_splits = (st->cache.n_full + st->split_blocks - 1) / st->split_blocks + (tail > 0);
    if ((rc = ffd_alloc(st, call->backend, p)) < 0 ||
        (rc = scratch_alloc(&st->scratch, call->backend, p, n_splits)) < 0)
        return rc;
    cudaStream_t stream = kt_cuda_stream(call->backend);
    kt_cuda_attn_shape s = shape_of(p);
    KT_CUDA_CHECK(cudaMemsetAsync(st->keep.ptr, 0, st->keep.bytes, stream));
    if ((rc = kt_cuda_ffd_quantize(stream, p->dtype, &s, call->inputs[1], &st->cache)) < 0)
        return rc;
    return kt_backend_synchronize(call->backend);
}

static int ffd_run(void *state, const kt_call *call)
{
    ffd_state *st = state;
    kt_cuda_attn_shape s = shape_of(call->problem);
    return kt_cuda_ffd_attend(kt_cuda_stream(call->backend), call->problem->dtype, &s,
                              call->inputs[0], call->inputs[1], call->inputs[2], call->outputs[0],
                              &st->cache, st->delta_log2, st->split_blocks, st->scan_fp32,
                              st->block_max.ptr, st->keep.ptr, &st->scratch.part);
}

static void ffd_release(void *state, kt_backend *backend)
{
    ffd_state *st = state;
    if (!st)
        return;
    buf_free(&st->codes, backend);
    buf_free(&st->scales, backend);
    buf_free(&st->residual, backend);
    buf_free(&st->block_max, backend);
    buf_free(&st->keep, backend);
    scratch_free(&st->scratch, backend);
    free(st);
}

/* kept_fraction: kept full blocks over all full blocks of the last run (1 when there are
 * none: everything is the dense tail); quantized_key_bytes: codes, scales and residuals. */
static int ffd_metrics(void *state, kt_metric *out, int max)
{
    ffd_state *st = state;
    double kept = 1.0;
    if (st->n_flags > 0) {
        uint8_t *flags = malloc(st->n_flags);
        if (!flags || kt_backend_download(st->backend, flags, st->keep.ptr, st->n_flags) < 0) {
            free(flags);
            return 0;
        }
        size_t n = 0;
        for (size_t i = 0; i < st->n_flags; i++)
            n += flags[i] != 0;
        free(flags);
        kept = (double)n / (double)st->n_flags;
    }
    kt_metric m[] = {
        {"kept_fraction", kept, ""},
        {"quantized_key_bytes", (double)(st->codes.bytes + st->scales.bytes + st->residual.bytes),
         "B"},
    };
    return kt_cuda_metrics_copy(out, max, m, (int)(sizeof(m) / sizeof(m[0])));
}

const kt_variant kt_variant_cuda_attention_ffd = {
    /* .op = */ "attention_decode",
    /* .name = */ "ffd",
    /* .backend = */ "cuda",
    /* .doc = */
    "2-bit key codes + fp8 residuals per block, pseudo-max block selection, "
    "refined split-KV attention over kept blocks",
    /* .params = */ ffd_params,
    /* .n_params = */ P_FFD_COUNT,
    /* .prepare = */ ffd_prepare,
    /* .run = */ ffd_run,
    /* .release = */ ffd_release,
    /* .metrics = */ ffd_metrics,
};
