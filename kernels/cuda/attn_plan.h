/* attn_plan.h - the index math and merge arithmetic of the CUDA dense decode kernel, as
 * plain C that compiles for the host and the device, so tests/unit/test_cuda_mirror.c runs
 * the same code on the CPU that attention.cu runs on the GPU.
 *
 * Decomposition: a launch has n_splits splits of split_tokens tokens per (b, KV head, head
 * group). Inside a split, lane group 'grp' (of 'n_groups'; 'lanes' lanes read one key row,
 * each lane 'vec' consecutive channels with one 16-byte load) takes tokens in steps of
 * 'kpi' keys: step 'it' covers tokens kt_dense_token(t0, it, grp, j, ...) for j < kpi. Each
 * group keeps its own running max, sum and output (online softmax in base 2); the groups of a
 * split are combined with kt_lse_combine, then the splits by the merge kernel. */
#ifndef KT_CUDA_ATTN_PLAN_H
#define KT_CUDA_ATTN_PLAN_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define KT_HD static __host__ __device__ __forceinline__
#else
#define KT_HD static inline
#endif

/* Fewest tokens a split gets from the automatic plan (the merge reads d floats per split). */
#define KT_DENSE_MIN_SPLIT_TOKENS 128
/* Blocks per SM the automatic plan aims for: ~4 resident blocks of 4 warps keep enough
 * 16-byte loads in flight to cover HBM latency. */
#define KT_DENSE_BLOCKS_PER_SM 4

/* Tokens per split for 'blocks_per_split' = batch x KV heads x head groups blocks per split
 * on 'sm_count' SMs: enough splits for KT_DENSE_BLOCKS_PER_SM blocks per SM, none under
 * KT_DENSE_MIN_SPLIT_TOKENS tokens (unless the context is shorter), a multiple of 16. */
KT_HD int64_t kt_dense_split_tokens(int64_t blocks_per_split, int64_t context, int sm_count)
{
    int64_t target = (int64_t)(sm_count > 0 ? sm_count : 1) * KT_DENSE_BLOCKS_PER_SM;
    int64_t splits = (target + blocks_per_split - 1) / blocks_per_split;
    int64_t most = (context + KT_DENSE_MIN_SPLIT_TOKENS - 1) / KT_DENSE_MIN_SPLIT_TOKENS;
    if (splits > most)
        splits = most;
    if (splits < 1)
        splits = 1;
    int64_t tokens = (context + splits - 1) / splits;
    return (tokens + 15) / 16 * 16;
}

/* The token of key 'j' of step 'it' of lane group 'grp' in a split starting at 't0'. */
KT_HD int64_t kt_dense_token(int64_t t0, int64_t it, int grp, int j, int n_groups, int kpi)
{
    return t0 + (it * n_groups + grp) * kpi + j;
}

/* Steps lane group 0 needs to cover 'tokens' tokens (the others need as many or one fewer). */
KT_HD int64_t kt_dense_steps(int64_t tokens, int n_groups, int kpi)
{
    int64_t per_step = (int64_t)n_groups * kpi;
    return (tokens + per_step - 1) / per_step;
}

/* One online-softmax step of a head over 'n' scores 's' (log2 units, -INFINITY for a masked
 * key, at least one finite): updates the running max 'm' and sum 'l', writes the weights
 * into 'p' and returns the factor the old output must be scaled by. */
KT_HD float kt_osm_step(float *m, float *l, float *p, const float *s, int n)
{
    float mx = *m;
    for (int j = 0; j < n; j++)
        mx = fmaxf(mx, s[j]);
    float alpha = *m == -INFINITY ? 0.0f : exp2f(*m - mx), sum = 0.0f;
    for (int j = 0; j < n; j++) {
        p[j] = s[j] == -INFINITY ? 0.0f : exp2f(s[j] - mx);
        sum += p[j];
    }
    *l = *l * alpha + sum;
    *m = mx;
    return alpha;
}

/* Combines 'n' partial results (max 'm[i]' in log2 units, -INFINITY for an empty one; sum
 * 'l[i]'; output 'acc[i * stride]') of one head and channel into the max 'M', sum 'L' and
 * output 'A' of their union, in index order. */
KT_HD void kt_lse_combine(float *M, float *L, float *A, const float *m, const float *l,
                          const float *acc, int64_t stride, int n)
{
    float big = -INFINITY, sum = 0.0f, out = 0.0f;
    for (int i = 0; i < n; i++)
        big = fmaxf(big, m[i]);
    for (int i = 0; i < n; i++) {
        if (m[i] == -INFINITY)
            continue;
        float w = exp2f(m[i] - big);
        sum = fmaf(l[i], w, sum);
        out = fmaf(acc[i * stride], w, out);
    }
    *M = big;
    *L = sum;
    *A = out;
}

#endif
