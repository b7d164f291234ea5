/* decoder_plan.h - the index and plan logic of the CUDA decoder_layer variant, as plain C for
 * the host and the device, so tests/unit/test_cuda_decoder_mirror.c runs on the CPU what
 * decoder_kernels.cu and decoder_cuda.c run with a GPU:
 *   - the launch plan of one block with fusion none (nine launches, an event after each, the
 *     stage each interval between two events belongs to);
 *   - the working KV cache: [L][B][Hkv][T + 1][d], the input cache copied into tokens 0..T-1
 *     of each head (one strided copy), the new token appended at T;
 *   - the RoPE + append kernel's rows: one row per (sequence, q/k/v head), where it reads in
 *     the qkv activations and where it writes (q, or the working cache and k_new / v_new);
 *   - the activation buffers carved out of one device allocation.
 * The math is decoder_layer.h's (RMSNorm eps, RoPE half-split pairs). */
#ifndef KT_CUDA_DECODER_PLAN_H
#define KT_CUDA_DECODER_PLAN_H

#include "../ops/decoder_layer.h"

#include <stddef.h>
#include <stdint.h>

#ifndef KT_HD
#ifdef __CUDACC__
#define KT_HD static __host__ __device__ __forceinline__
#else
#define KT_HD static inline
#endif
#endif

/* The launches of one block with fusion none, in stream order. */
enum {
    KT_CDL_NORM_ATTN, /* rmsnorm(x) * g_attn -> xn */
    KT_CDL_QKV,       /* gemm variant: xn Wqkv^T -> qkv */
    KT_CDL_ROPE,      /* RoPE on q and k; q -> q, k and v -> cache[T], k_new, v_new */
    KT_CDL_ATTN,      /* attention variant over T + 1 tokens -> att */
    KT_CDL_O,         /* gemm variant: att Wo^T -> o */
    KT_CDL_ADD_ATTN,  /* h = x + o */
    KT_CDL_NORM_MLP,  /* rmsnorm(h) * g_mlp -> xn */
    KT_CDL_MLP,       /* swiglu_mlp variant: xn -> mlp */
    KT_CDL_ADD_MLP,   /* y = h + mlp */
    KT_CDL_STEPS
};

/* The profile stage (KT_DLS_*) of launch 'step'. */
KT_HD int kt_cdl_step_stage(int step)
{
    switch (step) {
    case KT_CDL_NORM_ATTN:
    case KT_CDL_NORM_MLP:
        return KT_DLS_NORM;
    case KT_CDL_QKV:
    case KT_CDL_O:
        return KT_DLS_PROJ;
    case KT_CDL_ROPE:
        return KT_DLS_ROPE;
    case KT_CDL_ATTN:
        return KT_DLS_ATTN;
    case KT_CDL_MLP:
        return KT_DLS_MLP;
    default:
        return KT_DLS_RES;
    }
}

/* Events recorded per call for 'layers' blocks: one before the first launch, one after each. */
KT_HD int64_t kt_cdl_events(int64_t layers)
{
    return 1 + layers * KT_CDL_STEPS;
}

/* The stage of interval 'i' (from event i to event i + 1) of a call. */
KT_HD int kt_cdl_interval_stage(int64_t i)
{
    return kt_cdl_step_stage((int)(i % KT_CDL_STEPS));
}

/* Tokens per head of the working cache. */
KT_HD int64_t kt_cdl_work_tokens(const kt_dl_dims *m)
{
    return m->t + 1;
}

/* Element offset of token 'tok' of (block l, sequence b, KV head kh) in the working cache. */
KT_HD int64_t kt_cdl_work_at(const kt_dl_dims *m, int64_t l, int64_t b, int64_t kh, int64_t tok)
{
    return (((l * m->b + b) * m->hkv + kh) * (m->t + 1) + tok) * m->d;
}

/* Element offset of the same token in the input cache [L B][Hkv][T][d] (tok < T). */
KT_HD int64_t kt_cdl_input_at(const kt_dl_dims *m, int64_t l, int64_t b, int64_t kh, int64_t tok)
{
    return (((l * m->b + b) * m->hkv + kh) * m->t + tok) * m->d;
}

/* The copy of the input cache into the working one as one strided 2D copy of 'rows' rows
 * of 'width' bytes, source rows 'src_pitch' apart, destination rows 'dst_pitch' apart. */
typedef struct kt_cdl_copy {
    size_t width, src_pitch, dst_pitch, rows;
} kt_cdl_copy;

KT_HD kt_cdl_copy kt_cdl_cache_copy(const kt_dl_dims *m, size_t elem)
{
    kt_cdl_copy c;
    c.width = (size_t)(m->t * m->d) * elem;
    c.src_pitch = c.width;
    c.dst_pitch = (size_t)((m->t + 1) * m->d) * elem;
    c.rows = (size_t)(m->l * m->b * m->hkv);
    return c;
}

/* One row of the RoPE + append kernel: head 'head' (q heads, then k, then v) of sequence 'b'.
 * 'src' is its offset in qkv[B][(H + 2 Hkv) d]; q rows write q[B][H][d] at 'dst'; k and v
 * rows write the block's working cache at 'dst' (token T, offsets inside block l's part) and
 * k_new / v_new [B][Hkv][d] of block l at 'new_at'. */
enum { KT_CDL_ROW_Q, KT_CDL_ROW_K, KT_CDL_ROW_V };

typedef struct kt_cdl_rope_row {
    int kind;
    int rotate; /* q and k rows are rotated, v rows copied */
    int64_t b, head;
    int64_t src, dst, new_at;
} kt_cdl_rope_row;

/* Rows of one call of the RoPE + append kernel. */
KT_HD int64_t kt_cdl_rope_rows(const kt_dl_dims *m)
{
    return m->b * (m->hq + 2 * m->hkv);
}

KT_HD kt_cdl_rope_row kt_cdl_rope_row_of(const kt_dl_dims *m, int64_t row)
{
    kt_cdl_rope_row r;
    int64_t per = m->hq + 2 * m->hkv, hh = row % per;
    r.b = row / per;
    r.src = r.b * m->qkv + hh * m->d;
    r.kind = hh < m->hq ? KT_CDL_ROW_Q : hh < m->hq + m->hkv ? KT_CDL_ROW_K : KT_CDL_ROW_V;
    r.rotate = r.kind != KT_CDL_ROW_V;
    r.head = r.kind == KT_CDL_ROW_Q   ? hh
             : r.kind == KT_CDL_ROW_K ? hh - m->hq
                                      : hh - m->hq - m->hkv;
    r.new_at = (r.b * m->hkv + r.head) * m->d;
    r.dst = r.kind == KT_CDL_ROW_Q ? (r.b * m->hq + r.head) * m->d
                                   : kt_cdl_work_at(m, 0, r.b, r.head, m->t);
    return r;
}

/* Channels c and c + d/2 of a q or k row rotated by RoPE's angle (cos, sin) for pair c. */
KT_HD void kt_cdl_rotate(float *y0, float *y1, float x0, float x1, float cos_c, float sin_c)
{
    *y0 = x0 * cos_c - x1 * sin_c;
    *y1 = x0 * sin_c + x1 * cos_c;
}

/* The activations between launches, in the storage type, carved out of one allocation with
 * every view 256-byte aligned. */
enum {
    KT_CDL_BUF_X,   /* [B, hidden]: the output of a block that is not the last */
    KT_CDL_BUF_XN,  /* [B, hidden]: normalised input of the QKV projection or the MLP */
    KT_CDL_BUF_QKV, /* [B, (H + 2 Hkv) d] */
    KT_CDL_BUF_Q,   /* [B, H, d]: q after RoPE */
    KT_CDL_BUF_ATT, /* [B, H, d]: attention output */
    KT_CDL_BUF_O,   /* [B, hidden]: O projection */
    KT_CDL_BUF_H,   /* [B, hidden]: x + o */
    KT_CDL_BUF_MLP, /* [B, hidden]: the MLP's output */
    KT_CDL_N_BUFS
};

#define KT_CDL_ALIGN 256

typedef struct kt_cdl_buffers {
    size_t at[KT_CDL_N_BUFS];    /* byte offset of each view */
    size_t bytes[KT_CDL_N_BUFS]; /* its size */
    size_t total;
} kt_cdl_buffers;

KT_HD void kt_cdl_buffers_of(kt_cdl_buffers *out, const kt_dl_dims *m, size_t elem)
{
    int64_t n[KT_CDL_N_BUFS] = {m->b * m->h,         m->b * m->h,         m->b * m->qkv,
                                m->b * m->hq * m->d, m->b * m->hq * m->d, m->b * m->h,
                                m->b * m->h,         m->b * m->h};
    size_t total = 0;
    for (int i = 0; i < KT_CDL_N_BUFS; i++) {
        out->at[i] = total;
        out->bytes[i] = (size_t)n[i] * elem;
        total += (out->bytes[i] + KT_CDL_ALIGN - 1) / KT_CDL_ALIGN * KT_CDL_ALIGN;
    }
    out->total = total;
}

#endif
