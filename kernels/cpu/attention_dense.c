/* attention_dense.c - attention_decode on the CPU: split-KV flash decoding with an online
 * softmax in fp32, all query heads of a GQA group per task so K and V are read once. */
#include "attention_common.h"
#include "attention_dense_bf16.h"
#include "cpu.h"

#include <stdlib.h>

enum { P_SPLIT, P_MAX_SPLITS, P_BF16_DOT, P_ISA, P_COUNT };
enum { BF16_DOT_AUTO, BF16_DOT_OFF, BF16_DOT_SCORES };

static const kt_param_def dense_params[P_COUNT] = {
    {"split", KT_PARAM_INT, 1024, 16, 1 << 24, NULL,
     "tokens per split-KV task, doubled while the context has more than max_splits splits (set "
     "by the context alone, so results do not depend on threads or batch)"},
    {"max_splits", KT_PARAM_INT, 8, 0, 1 << 24, NULL,
     "splits per KV head above which split doubles (0: split exactly as given)"},
    {"bf16_dot", KT_PARAM_ENUM, BF16_DOT_AUTO, 0, 0, "auto|off|scores",
     "bf16 scores and P V by AVX-512 BF16 dot products (query and weights rounded to bf16) where "
     "the CPU has them and the AVX-512 path runs (auto), scores only (scores), or keys and values "
     "widened to fp32 (off)"},
    KT_ATTN_ISA_PARAM,
};

typedef struct dense_state {
    kt_attn_work work;
    int64_t split;
    int bf16_dot; /* bf16 inputs take a path of attention_dense_bf16.c where the task is wide: */
    int bf16_pv;  /* kt_attn_dense_range_bf16_pv if set, else kt_attn_dense_range_bf16_dot */
} dense_state;

typedef struct dense_ctx {
    const kt_problem *p;
    const void *k, *v;
    int64_t split;
    int bf16_dot, bf16_pv;
} dense_ctx;

static void dense_task(kt_attn_task *t, void *ctx, int64_t b, int64_t kh, int64_t split)
{
    const dense_ctx *c = ctx;
    const kt_problem *p = c->p;
    size_t head =
        (size_t)((b * p->kv_heads + kh) * p->context * p->head_dim) * kt_dtype_size(p->dtype);
    int64_t t0 = split * c->split, t1 = t0 + c->split < p->context ? t0 + c->split : p->context;
    const char *k = (const char *)c->k + head, *v = (const char *)c->v + head;
    if (c->bf16_pv && t->wide)
        kt_attn_dense_range_bf16_pv(t, (const uint16_t *)k, (const uint16_t *)v, t0, t1);
    else if (c->bf16_dot && t->wide)
        kt_attn_dense_range_bf16_dot(t, (const uint16_t *)k, (const uint16_t *)v, t0, t1);
    else
        kt_attn_dense_range(t, k, v, p->dtype, t0, t1);
}

static int dense_prepare(void **out, const kt_call *call)
{
    const kt_problem *p = call->problem;
    int err = kt_attn_check_problem(p);
    if (err < 0)
        return err;
    dense_state *st = calloc(1, sizeof(*st));
    if (!st)
        return kt_error_code(KT_ENOMEM, "out of memory");
    *out = st;
    st->split = kt_attn_split_tokens((int64_t)call->params[P_SPLIT].num,
                                     (int64_t)call->params[P_MAX_SPLITS].num, p->context);
    int64_t n_splits = (p->context + st->split - 1) / st->split;
    int avx512;
    if ((err = kt_attn_isa_resolve(&avx512, (int)call->params[P_ISA].num)) < 0)
        return err;
    st->bf16_dot = p->dtype == KT_DTYPE_BF16 && avx512 &&
                   call->params[P_BF16_DOT].num != BF16_DOT_OFF && kt_attn_bf16_dot_supported();
    st->bf16_pv = st->bf16_dot && call->params[P_BF16_DOT].num == BF16_DOT_AUTO;
    size_t extra =
        st->bf16_dot ? kt_attn_bf16_dot_extra_bytes(p->heads / p->kv_heads, p->head_dim) : 0;
    err = kt_attn_work_alloc(&st->work, call->backend, p, n_splits, call->threads, extra);
    st->work.avx512 = avx512;
    return err;
}

static int dense_run(void *state, const kt_call *call)
{
    dense_state *st = state;
    dense_ctx ctx = {call->problem, call->inputs[1], call->inputs[2],
                     st->split,     st->bf16_dot,    st->bf16_pv};
    kt_attn_work_run(&st->work, call, dense_task, &ctx);
    return KT_OK;
}

static void dense_release(void *state, kt_backend *backend)
{
    dense_state *st = state;
    if (!st)
        return;
    kt_attn_work_free(&st->work, backend);
    free(st);
}

const kt_variant kt_variant_cpu_attention_dense = {
    /* .op = */ "attention_decode",
    /* .name = */ "dense",
    /* .backend = */ "cpu",
    /* .doc = */
    "split-KV flash decoding, online softmax, fp32 accumulation, AVX2 or AVX-512 "
    "(bf16 scores and P V by AVX-512 BF16 dot products where the CPU has them)",
    /* .params = */ dense_params,
    /* .n_params = */ P_COUNT,
    /* .prepare = */ dense_prepare,
    /* .run = */ dense_run,
    /* .release = */ dense_release,
    /* .metrics = */ NULL,
};
