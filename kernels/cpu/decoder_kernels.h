/* decoder_kernels.h - private to kernels/cpu: the decoder_layer's own stage kernels.
 *
 * Each takes the calling thread's id and the team size and does that thread's share, without
 * opening a parallel region, so the same code runs one region per stage or many stages in one
 * persistent region with barriers between them (the fusion settings). A kernel that must
 * synchronise inside (attention: partials, then merge) is split in two. Activations are fp32
 * or the storage type (the 'dt' arguments); weights and the cache are in the storage type. */
#ifndef KT_DECODER_KERNELS_H
#define KT_DECODER_KERNELS_H

#include "../kernel.h"
#include "../ops/decoder_layer.h"

/* The part [lo, hi) of n items that thread 'tid' of 'nth' owns (contiguous, balanced). */
static inline void kt_dlk_range(int64_t *lo, int64_t *hi, int64_t n, int tid, int nth)
{
    int64_t q = n / nth, r = n % nth;
    *lo = tid * q + (tid < r ? tid : r);
    *hi = *lo + q + (tid < r ? 1 : 0);
}

/* out[r] = x[r] / sqrt(mean(x[r]^2) + eps) * g for 'rows' rows of 'h'; g in 'g_dt'. */
void kt_dlk_rmsnorm(void *out, kt_dtype out_dt, const void *x, kt_dtype x_dt, const void *g,
                    kt_dtype g_dt, int64_t rows, int64_t h, int tid, int nth);

/* out = a + b over 'n' elements. */
void kt_dlk_add(void *out, kt_dtype out_dt, const void *a, kt_dtype a_dt, const void *b,
                kt_dtype b_dt, int64_t n, int tid, int nth);

/* The shape and operands of kt_dlk_gemv. */
typedef struct kt_dlk_gemv_args {
    float *y;       /* [m, n] fp32 */
    const float *x; /* [m, k] fp32 */
    const void *w;  /* [n, k] (glu: [2n, k], gate rows then up rows), storage type 'w_dt' */
    kt_dtype w_dt;
    int64_t m, n, k;
    int glu;         /* y = silu(x wg^T) * (x wu^T) */
    const void *res; /* NULL, or [m, n] added to y (type 'res_dt') */
    kt_dtype res_dt;
    void *store; /* NULL, or a copy of y in 'store_dt' */
    kt_dtype store_dt;
} kt_dlk_gemv_args;

/* y = x w^T for few rows (decode: m = batch), the columns split across the team; each weight
 * row is read once from memory for all m rows. */
void kt_dlk_gemv(const kt_dlk_gemv_args *a, int tid, int nth);

/* RoPE at position t + i on the q and k heads of row r = b c + i of qkv (type 'src_dt', row
 * (H + 2 Hkv) d); q goes to q_out[r][H][d] ('q_dt'); k and v go to position t + i of the
 * block's cache (storage type, t + c tokens per head) and to k_new / v_new [b][Hkv][c][d].
 * cosv / sinv: [c][d / 2] values, one row per position. */
typedef struct kt_dlk_rope_args {
    const kt_dl_dims *m;
    kt_dtype dt; /* storage type: cache, k_new, v_new */
    const void *qkv;
    kt_dtype src_dt;
    void *q_out;
    kt_dtype q_dt;
    void *k_cache, *v_cache; /* this block's [B][Hkv][t + c][d] */
    void *k_new, *v_new;     /* this block's [B][Hkv][c][d] */
    const float *cosv, *sinv;
} kt_dlk_rope_args;

void kt_dlk_rope_append(const kt_dlk_rope_args *a, int tid, int nth);

/* Split-KV decode attention over t + 1 tokens, fp32 softmax in base 2: 'partial' computes each
 * (b, kv head, split) task's running max, sum and unnormalised output for the G heads of the
 * group; 'merge' combines the splits per (b, head) into out[b][H][d] fp32. */
typedef struct kt_dlk_attn_args {
    const kt_dl_dims *m;
    kt_dtype dt;
    const float *q; /* [B][H][d] */
    const void *k_cache, *v_cache;
    int64_t split;   /* tokens per task */
    float *partials; /* tasks x G x (d + 2) */
    float *scratch;  /* per thread kt_dlk_attn_scratch_floats() */
    float *out;
} kt_dlk_attn_args;

int64_t kt_dlk_attn_tasks(const kt_dl_dims *m, int64_t split);
size_t kt_dlk_attn_scratch_floats(const kt_dl_dims *m);
void kt_dlk_attn_partial(const kt_dlk_attn_args *a, int tid, int nth);
void kt_dlk_attn_merge(const kt_dlk_attn_args *a, int tid, int nth);

/* Causal multi-query attention of a prefill chunk (decoder_causal.c): new token i of sequence
 * b attends to the t cached tokens and the new tokens 0..i of its block's cache (storage type,
 * t + c tokens per head), every head of a GQA group at once. Tasks are (b, kv head, block of
 * KT_DLK_CAUSAL_ROWS query rows), spread over the team; each key and value row is loaded once
 * per task for all its rows and heads; fp32 online softmax in base 2 over 32-token chunks. */
typedef struct kt_dlk_causal_args {
    const kt_dl_dims *m;
    kt_dtype dt;   /* the cache's */
    const void *q; /* [R][H][d] */
    kt_dtype q_dt;
    const void *k_cache, *v_cache;
    float *scratch; /* per thread kt_dlk_causal_scratch_floats() */
    void *out;      /* [R][H][d] */
    kt_dtype out_dt;
} kt_dlk_causal_args;

#define KT_DLK_CAUSAL_ROWS 8

size_t kt_dlk_causal_scratch_floats(const kt_dl_dims *m);
void kt_dlk_attn_causal(const kt_dlk_causal_args *a, int tid, int nth);

#endif
