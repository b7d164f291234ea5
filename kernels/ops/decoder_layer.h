/* decoder_layer.h - private to kernels/: the decoder_layer op's tensor layout, shared by the op
 * (shape, inputs, float64 reference) and its variants on every backend.
 *
 * One decode step (C = 1 new token per sequence) or one prefill chunk (C = the 'chunk' input
 * param) of L transformer blocks (L = the 'layers' input param) with a KV cache of
 * T = context_length tokens per layer. Per block, for each of the B sequences and each new
 * token i < C (one row of the R = B C rows):
 *   xn = rmsnorm(x) * g_attn;  [q | k | v] = xn Wqkv^T;  q, k = rope(q, k) at position T + i;
 *   append k, v at position T + i;  o = attention(q, K[0..T+i], V[0..T+i]) Wo^T (causal);
 *   h = x + o;  hn = rmsnorm(h) * g_mlp;  y = h + (silu(hn Wg^T) * (hn Wu^T)) Wd^T;  x = y for
 *   the next block.
 * RMSNorm: x / sqrt(mean(x^2) + 1e-5); RoPE: the half-split pairing (channel c with c + d/2) of
 * Llama's reference code, theta 500000; attention scale 1/sqrt(d), GQA group G = H / Hkv. */
#ifndef KT_DECODER_LAYER_H
#define KT_DECODER_LAYER_H

#include "ops.h"

/* Inputs, then outputs, in problem->tensors order. */
enum {
    KT_DL_X,      /* [B, hidden] (decode) or [B, C, hidden] (prefill) */
    KT_DL_NORMS,  /* [L, 2, hidden]: g_attn, g_mlp */
    KT_DL_WQKV,   /* [L, (H + 2 Hkv) d, hidden] */
    KT_DL_WO,     /* [L, hidden, H d] */
    KT_DL_WGU,    /* [L, 2 I, hidden]: gate rows, then up rows */
    KT_DL_WDOWN,  /* [L, hidden, I] */
    KT_DL_KCACHE, /* [L B, Hkv, T, d] */
    KT_DL_VCACHE, /* [L B, Hkv, T, d] */
    KT_DL_N_INPUTS
};
enum {
    KT_DL_Y,    /* like x */
    KT_DL_KNEW, /* [L, B, Hkv, d] or [L B, Hkv, C, d]: the appended keys of each block, after RoPE
                 */
    KT_DL_VNEW, /* like k_new */
    KT_DL_N_OUTPUTS
};

/* The stages of the step's profile (kt_stage_profile), in the order every variant reports
 * them: both RMSNorms; the QKV and O projections; RoPE + KV append; attention; the MLP
 * (gate/up, silu*mul, down); the residual adds (fused into the projections' epilogues where a
 * variant does so, then 0). */
enum { KT_DLS_NORM, KT_DLS_PROJ, KT_DLS_ROPE, KT_DLS_ATTN, KT_DLS_MLP, KT_DLS_RES, KT_DLS_COUNT };
extern const char *const kt_dl_stage_names[KT_DLS_COUNT];

#define KT_DL_RMS_EPS    1e-5
#define KT_DL_ROPE_THETA 500000.0

extern const kt_op kt_op_decoder_layer;

/* The sizes of a decoder_layer problem, in elements. */
typedef struct kt_dl_dims {
    int64_t b, h, hq, hkv, d, g, t, i, l;
    int64_t c;    /* new tokens per sequence: 1 (decode) or the chunk (prefill) */
    int prefill;  /* a prefill point (its x is [B, C, hidden], even for C = 1) */
    int64_t rows; /* b c: the rows of every activation */
    int64_t qkv;  /* (hq + 2 hkv) d */
} kt_dl_dims;

static inline void kt_dl_dims_of(kt_dl_dims *m, const kt_problem *p)
{
    m->b = p->batch;
    m->h = p->k;
    m->hq = p->heads;
    m->hkv = p->kv_heads;
    m->d = p->head_dim;
    m->g = p->heads / p->kv_heads;
    m->t = p->context;
    m->i = p->n;
    m->l = p->layers;
    m->rows = p->m;
    m->c = p->m / p->batch;
    m->prefill = p->tensors[KT_DL_X].ndim == 3;
    m->qkv = (m->hq + 2 * m->hkv) * m->d;
}

/* Element offsets of block 'l' in each stacked weight and cache tensor. */
static inline size_t kt_dl_off_norms(const kt_dl_dims *m, int64_t l)
{
    return (size_t)(l * 2 * m->h);
}
static inline size_t kt_dl_off_wqkv(const kt_dl_dims *m, int64_t l)
{
    return (size_t)(l * m->qkv * m->h);
}
static inline size_t kt_dl_off_wo(const kt_dl_dims *m, int64_t l)
{
    return (size_t)(l * m->h * m->hq * m->d);
}
static inline size_t kt_dl_off_wgu(const kt_dl_dims *m, int64_t l)
{
    return (size_t)(l * 2 * m->i * m->h);
}
static inline size_t kt_dl_off_wdown(const kt_dl_dims *m, int64_t l)
{
    return (size_t)(l * m->h * m->i);
}
static inline size_t kt_dl_off_cache(const kt_dl_dims *m, int64_t l)
{
    return (size_t)(l * m->b * m->hkv * m->t * m->d);
}
static inline size_t kt_dl_off_new(const kt_dl_dims *m, int64_t l)
{
    return (size_t)(l * m->b * m->hkv * m->c * m->d);
}

/* Fills n elements of 'dst' with std * N(0, 1) (U(-a, a) of that std for KT_DIST_UNIFORM),
 * rounded to 'dtype'; a value that rounds to zero becomes +-1e-3. Chunks of the elements have
 * their own streams of 'seed', spread over 'threads': the values do not depend on 'threads'. */
void kt_dl_fill(void *dst, kt_dtype dtype, size_t n, kt_distribution dist, double std,
                uint64_t seed, int threads);

/* cos and sin of RoPE's angle for pair c < d/2 at position 'pos', in double. */
void kt_dl_rope_angles(double *cos_out, double *sin_out, int64_t d, int64_t pos);

/* Called by kt_dl_forward before block 'l' attends, with q[R][H][d] (after RoPE, float64). */
typedef int (*kt_dl_attend_hook)(void *ctx, int64_t l, const double *q);

/* The step in float64 from the stored inputs: fills outputs[KT_DL_Y..KT_DL_VNEW] (may be NULL
 * for any of them). 'hook' (may be NULL) runs before each block's attention, e.g. to plant
 * that block's cache for its actual queries. */
int kt_dl_forward(const kt_problem *p, const void *const *inputs, double *const *outputs,
                  kt_dl_attend_hook hook, void *hook_ctx);

#endif
