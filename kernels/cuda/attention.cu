/* attention.cu - decode attention: dense split-KV flash decoding, and FFD (2-bit key codes
 * with fp8 residuals, block selection against a pseudo-max, refined attention over the kept
 * blocks). Both share one attend kernel and one log-sum-exp merge.
 *
 * Layout: q[B,H,d], K and V [B,Hkv,T,d], out[B,H,d]; query head h reads KV head h / G with
 * G = H / Hkv. A block of the attend kernel owns (b, KV head, up to 8 heads of its group,
 * one split) and keeps, per head, a running max and sum in log2 units and an unnormalised
 * fp32 output; the merge kernel combines the splits. */
#include "cuda_types.cuh"

#include <cuda_fp8.h>
#include <math.h>

namespace
{

constexpr int THREADS = 128, WARPS = THREADS / 32;
constexpr int HG = 8;  /* query heads per block (a GQA group is split into groups of 8) */
constexpr int CH = 64; /* tokens scored per step */
constexpr int CPT = KT_CUDA_ATTN_MAX_HEAD_DIM / THREADS; /* output channels per thread */

struct AttnArgs {
    const void *q, *k, *v;
    void *out;
    int64_t batch, heads, kv_heads, d, context, group, head_groups;
    float scale_log2; /* log2(e) / sqrt(d) */
    float *acc, *max_log2, *sum;
    int64_t n_splits;
    int64_t split_tokens; /* dense */
    /* ffd */
    const uint8_t *codes;
    const float *scales;
    const uint8_t *residual;
    int64_t block, n_full, split_blocks, n_full_splits;
    float *block_max; /* written by the scan, read by the attend kernel */
    uint8_t *keep;
    float delta_log2;
};

struct Shared {
    float *qs;    /* [HG][d]: q * scale_log2 */
    float *s;     /* [HG][CH]: scores, then weights */
    float *m_run; /* [HG] */
    float *l_run; /* [HG] */
    float *alpha; /* [HG] */
};

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* Key element c of token t in storage type. */
template <typename T> struct DenseKeys {
    const T *k; /* this (b, KV head)'s rows */
    int64_t d;
    __device__ __forceinline__ float operator()(int64_t t, int c) const
    {
        return kt_to_f32(k[t * d + c]);
    }
};

/* Refined key of a quantized block: (code - 1.5) * scale + fp8 residual. */
struct RefinedKeys {
    const uint8_t *codes;    /* this (b, KV head)'s rows, d/4 bytes each */
    const float *scales;     /* this block's [d] */
    const uint8_t *residual; /* this (b, KV head)'s rows, d bytes each */
    int64_t d;
    __device__ __forceinline__ float operator()(int64_t t, int c) const
    {
        int code = (codes[t * (d / 4) + (c >> 2)] >> ((c & 3) * 2)) & 3;
        __nv_fp8_e4m3 r;
        r.__x = residual[t * d + c];
        return ((float)code - 1.5f) * scales[c] + (float)r;
    }
};

/* Attends the block's heads over tokens [t0, t1) with an online softmax in base 2. Called
 * by every thread of the block (it synchronizes). */
template <typename T, typename Keys>
__device__ __forceinline__ void attend_range(const Shared &sh, float (&acc)[HG][CPT],
                                             const Keys &keys, const T *v, int64_t d, int ng,
                                             int64_t t0, int64_t t1)
{
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int64_t tc = t0; tc < t1; tc += CH) {
        const int n = (int)min((int64_t)CH, t1 - tc);
        /* scores: one warp per token, lanes over channels */
        for (int tt = warp; tt < n; tt += WARPS) {
            float part[HG];
#pragma unroll
            for (int g = 0; g < HG; g++)
                part[g] = 0.0f;
            for (int c = lane; c < d; c += 32) {
                float kv = keys(tc + tt, c);
#pragma unroll
                for (int g = 0; g < HG; g++)
                    if (g < ng)
                        part[g] = fmaf(sh.qs[g * d + c], kv, part[g]);
            }
#pragma unroll
            for (int g = 0; g < HG; g++) {
                if (g < ng) {
                    float sc = warp_sum(part[g]);
                    if (lane == 0)
                        sh.s[g * CH + tt] = sc;
                }
            }
        }
        __syncthreads();
        /* running max and sum: one warp per head */
        for (int g = warp; g < ng; g += WARPS) {
            float a = lane < n ? sh.s[g * CH + lane] : -INFINITY;
            float b = lane + 32 < n ? sh.s[g * CH + lane + 32] : -INFINITY;
            float m_old = sh.m_run[g];
            float m_new = fmaxf(m_old, warp_max(fmaxf(a, b)));
            float pa = lane < n ? exp2f(a - m_new) : 0.0f;
            float pb = lane + 32 < n ? exp2f(b - m_new) : 0.0f;
            if (lane < n)
                sh.s[g * CH + lane] = pa;
            if (lane + 32 < n)
                sh.s[g * CH + lane + 32] = pb;
            float psum = warp_sum(pa + pb);
            if (lane == 0) {
                float al = m_old == -INFINITY ? 0.0f : exp2f(m_old - m_new);
                sh.alpha[g] = al;
                sh.l_run[g] = sh.l_run[g] * al + psum;
                sh.m_run[g] = m_new;
            }
        }
        __syncthreads();
        /* values: threads over channels */
#pragma unroll
        for (int j = 0; j < CPT; j++) {
            const int c = threadIdx.x + j * THREADS;
            if (c >= d)
                continue;
#pragma unroll
            for (int g = 0; g < HG; g++)
                if (g < ng)
                    acc[g][j] *= sh.alpha[g];
            for (int tt = 0; tt < n; tt++) {
                float vv = kt_to_f32(v[(tc + tt) * d + c]);
#pragma unroll
                for (int g = 0; g < HG; g++)
                    if (g < ng)
                        acc[g][j] = fmaf(sh.s[g * CH + tt], vv, acc[g][j]);
            }
        }
        __syncthreads();
    }
}

/* Whether full block 'blk' of (b, KV head) is kept: some head of the whole GQA group has an
 * approximate block max >= its pseudo-max (block 0, last full block) - delta. */
__device__ __forceinline__ bool ffd_keep(const AttnArgs &a, int64_t bh, int64_t blk)
{
    const float *bm = a.block_max + bh * a.n_full * a.group;
    const float *first = bm, *last = bm + (a.n_full - 1) * a.group, *cur = bm + blk * a.group;
    for (int64_t g = 0; g < a.group; g++)
        if (cur[g] >= fmaxf(first[g], last[g]) - a.delta_log2)
            return true;
    return false;
}

template <typename T, bool FFD> __global__ void __launch_bounds__(THREADS) attend_kernel(AttnArgs a)
{
    extern __shared__ float smem[];
    const int64_t d = a.d, split = blockIdx.x, b = blockIdx.z;
    const int64_t kvh = blockIdx.y / a.head_groups, hg = blockIdx.y % a.head_groups;
    const int64_t g0 = hg * HG, bh = b * a.kv_heads + kvh;
    const int ng = (int)min((int64_t)HG, a.group - g0);
    Shared sh;
    sh.qs = smem;
    sh.s = sh.qs + HG * d;
    sh.m_run = sh.s + HG * CH;
    sh.l_run = sh.m_run + HG;
    sh.alpha = sh.l_run + HG;

    const T *q = (const T *)a.q + (b * a.heads + kvh * a.group + g0) * d;
    for (int64_t i = threadIdx.x; i < ng * d; i += THREADS)
        sh.qs[i] = kt_to_f32(q[i]) * a.scale_log2;
    if (threadIdx.x < HG) {
        sh.m_run[threadIdx.x] = -INFINITY;
        sh.l_run[threadIdx.x] = 0.0f;
        sh.alpha[threadIdx.x] = 0.0f;
    }
    float acc[HG][CPT];
#pragma unroll
    for (int g = 0; g < HG; g++)
#pragma unroll
        for (int j = 0; j < CPT; j++)
            acc[g][j] = 0.0f;
    __syncthreads();

    const T *k = (const T *)a.k + bh * a.context * d;
    const T *v = (const T *)a.v + bh * a.context * d;
    DenseKeys<T> dense{k, d};
    if (!FFD) {
        int64_t t0 = split * a.split_tokens, t1 = min(a.context, t0 + a.split_tokens);
        attend_range<T>(sh, acc, dense, v, d, ng, t0, t1);
    } else if (split < a.n_full_splits) {
        int64_t blk_end = min(a.n_full, (split + 1) * a.split_blocks);
        for (int64_t blk = split * a.split_blocks; blk < blk_end; blk++) {
            bool keep = ffd_keep(a, bh, blk); /* uniform across the block */
            if (hg == 0 && threadIdx.x == 0)
                a.keep[bh * a.n_full + blk] = keep;
            if (!keep)
                continue;
            RefinedKeys refined{a.codes + bh * a.n_full * a.block * (d / 4),
                                a.scales + (bh * a.n_full + blk) * d,
                                a.residual + bh * a.n_full * a.block * d, d};
            attend_range<T>(sh, acc, refined, v, d, ng, blk * a.block, (blk + 1) * a.block);
        }
    } else {
        attend_range<T>(sh, acc, dense, v, d, ng, a.n_full * a.block, a.context);
    }

#pragma unroll
    for (int g = 0; g < HG; g++) {
        if (g >= ng)
            break;
        const int64_t idx = (b * a.heads + kvh * a.group + g0 + g) * a.n_splits + split;
#pragma unroll
        for (int j = 0; j < CPT; j++) {
            const int64_t c = threadIdx.x + j * THREADS;
            if (c < d)
                a.acc[idx * d + c] = acc[g][j];
        }
        if (threadIdx.x == 0) {
            a.max_log2[idx] = sh.m_run[g];
            a.sum[idx] = sh.l_run[g];
        }
    }
}

/* out[b,h,:] = sum_s acc_s 2^(m_s - M) / sum_s l_s 2^(m_s - M); one block per (b, h). */
template <typename T>
__global__ void merge_kernel(const float *acc, const float *max_log2, const float *sum, T *out,
                             int64_t n_splits, int64_t d)
{
    const int64_t bh = blockIdx.x;
    const float *m = max_log2 + bh * n_splits, *l = sum + bh * n_splits;
    float big = -INFINITY;
    for (int64_t s = 0; s < n_splits; s++)
        big = fmaxf(big, m[s]);
    float total = 0.0f;
    for (int64_t s = 0; s < n_splits; s++)
        if (m[s] != -INFINITY)
            total += l[s] * exp2f(m[s] - big);
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x) {
        float o = 0.0f;
        for (int64_t s = 0; s < n_splits; s++)
            if (m[s] != -INFINITY)
                o = fmaf(acc[(bh * n_splits + s) * d + c], exp2f(m[s] - big), o);
        out[bh * d + c] = kt_from_f32<T>(o / total);
    }
}

/* One block per (full block, b, KV head): per-channel scale, 2-bit codes, fp8 residuals. */
template <typename T>
__global__ void __launch_bounds__(THREADS)
    quantize_kernel(const T *k, int64_t context, int64_t d, int64_t block, int64_t n_full,
                    uint8_t *codes, float *scales, uint8_t *residual)
{
    extern __shared__ float sscale[];
    const int64_t blk = blockIdx.x, bh = blockIdx.z * gridDim.y + blockIdx.y;
    const T *kb = k + (bh * context + blk * block) * d;
    for (int64_t c = threadIdx.x; c < d; c += THREADS) {
        float mx = 0.0f;
        for (int64_t t = 0; t < block; t++)
            mx = fmaxf(mx, fabsf(kt_to_f32(kb[t * d + c])));
        float sc = fmaxf(mx / 1.5f, 1e-8f);
        sscale[c] = sc;
        scales[(bh * n_full + blk) * d + c] = sc;
    }
    __syncthreads();
    const int64_t row_bytes = d / 4, t_base = bh * n_full * block + blk * block;
    for (int64_t i = threadIdx.x; i < block * row_bytes; i += THREADS) {
        const int64_t t = i / row_bytes, byte = i % row_bytes;
        unsigned packed = 0;
#pragma unroll
        for (int m = 0; m < 4; m++) {
            const int64_t c = byte * 4 + m;
            float x = kt_to_f32(kb[t * d + c]), sc = sscale[c];
            float code = fminf(fmaxf(rintf(x / sc + 1.5f), 0.0f), 3.0f);
            packed |= (unsigned)code << (2 * m);
            residual[(t_base + t) * d + c] = __nv_fp8_e4m3(x - (code - 1.5f) * sc).__x;
        }
        codes[(t_base + t) * row_bytes + byte] = (uint8_t)packed;
    }
}

/* One block per (full block, KV head x head group, b): the largest approximate score of each
 * head over the block, q . dequant(k) in log2 units, into block_max[b][kvh][blk][g]. */
template <typename T> __global__ void __launch_bounds__(THREADS) scan_kernel(AttnArgs a)
{
    extern __shared__ float smem[];
    __shared__ float wmax[WARPS][HG];
    const int64_t d = a.d, blk = blockIdx.x, b = blockIdx.z;
    const int64_t kvh = blockIdx.y / a.head_groups, hg = blockIdx.y % a.head_groups;
    const int64_t g0 = hg * HG, bh = b * a.kv_heads + kvh;
    const int ng = (int)min((int64_t)HG, a.group - g0);
    float *qs = smem, *sc = smem + HG * d;
    const T *q = (const T *)a.q + (b * a.heads + kvh * a.group + g0) * d;
    for (int64_t i = threadIdx.x; i < ng * d; i += THREADS)
        qs[i] = kt_to_f32(q[i]) * a.scale_log2;
    for (int64_t c = threadIdx.x; c < d; c += THREADS)
        sc[c] = a.scales[(bh * a.n_full + blk) * d + c];
    __syncthreads();

    float best[HG];
#pragma unroll
    for (int g = 0; g < HG; g++)
        best[g] = -INFINITY;
    const uint32_t *rows = (const uint32_t *)(a.codes + (bh * a.n_full + blk) * a.block * (d / 4));
    const int64_t words = d / 16;
    for (int64_t t = threadIdx.x; t < a.block; t += THREADS) {
        float s[HG];
#pragma unroll
        for (int g = 0; g < HG; g++)
            s[g] = 0.0f;
        for (int64_t w = 0; w < words; w++) {
            uint32_t bits = rows[t * words + w];
#pragma unroll
            for (int j = 0; j < 16; j++) {
                const int64_t c = w * 16 + j;
                float deq = ((float)((bits >> (2 * j)) & 3u) - 1.5f) * sc[c];
#pragma unroll
                for (int g = 0; g < HG; g++)
                    if (g < ng)
                        s[g] = fmaf(qs[g * d + c], deq, s[g]);
            }
        }
#pragma unroll
        for (int g = 0; g < HG; g++)
            best[g] = fmaxf(best[g], s[g]);
    }
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
    for (int g = 0; g < HG; g++) {
        float m = warp_max(best[g]);
        if (lane == 0)
            wmax[warp][g] = m;
    }
    __syncthreads();
    if (threadIdx.x < ng) {
        float m = wmax[0][threadIdx.x];
        for (int w = 1; w < WARPS; w++)
            m = fmaxf(m, wmax[w][threadIdx.x]);
        a.block_max[(bh * a.n_full + blk) * a.group + g0 + threadIdx.x] = m;
    }
}

int check_shape(const kt_cuda_attn_shape *s, bool ffd)
{
    if (s->batch <= 0 || s->heads <= 0 || s->kv_heads <= 0 || s->head_dim <= 0 || s->context <= 0 ||
        s->heads % s->kv_heads != 0)
        return kt_error_code(KT_EINVAL, "bad attention shape");
    if (s->head_dim > KT_CUDA_ATTN_MAX_HEAD_DIM)
        return kt_error_code(KT_EUNSUPPORTED, "head_dim %lld > %d", (long long)s->head_dim,
                             KT_CUDA_ATTN_MAX_HEAD_DIM);
    if (ffd && s->head_dim % 16 != 0)
        return kt_error_code(KT_EUNSUPPORTED, "ffd needs head_dim a multiple of 16, got %lld",
                             (long long)s->head_dim);
    if (s->kv_heads * ((s->heads / s->kv_heads + HG - 1) / HG) > 65535 || s->batch > 65535)
        return kt_error_code(KT_EUNSUPPORTED, "too many heads or batches for one launch");
    return KT_OK;
}

AttnArgs base_args(const kt_cuda_attn_shape *s, const void *q, const void *k, const void *v,
                   void *out, const kt_cuda_attn_partials *part)
{
    AttnArgs a = {};
    a.q = q;
    a.k = k;
    a.v = v;
    a.out = out;
    a.batch = s->batch;
    a.heads = s->heads;
    a.kv_heads = s->kv_heads;
    a.d = s->head_dim;
    a.context = s->context;
    a.group = s->heads / s->kv_heads;
    a.head_groups = (a.group + HG - 1) / HG;
    a.scale_log2 = (float)(1.0 / sqrt((double)s->head_dim) / log(2.0));
    a.acc = part->acc;
    a.max_log2 = part->max_log2;
    a.sum = part->sum;
    a.n_splits = part->n_splits;
    return a;
}

size_t attend_smem_bytes(int64_t d)
{
    return (size_t)(HG * d + HG * CH + 3 * HG) * sizeof(float);
}

/* Attend over every split, then merge; 'a.n_splits' > 0. */
template <typename T, bool FFD> int launch_attend(cudaStream_t stream, const AttnArgs &a)
{
    dim3 grid((unsigned)a.n_splits, (unsigned)(a.kv_heads * a.head_groups), (unsigned)a.batch);
    attend_kernel<T, FFD><<<grid, THREADS, attend_smem_bytes(a.d), stream>>>(a);
    KT_CUDA_CHECK_LAUNCH();
    merge_kernel<T><<<(unsigned)(a.batch * a.heads), THREADS, 0, stream>>>(
        a.acc, a.max_log2, a.sum, (T *)a.out, a.n_splits, a.d);
    KT_CUDA_CHECK_LAUNCH();
    return KT_OK;
}

template <typename T>
int launch_quantize(cudaStream_t stream, const kt_cuda_attn_shape *s, const void *k,
                    const kt_cuda_ffd_cache *cache)
{
    if (cache->n_full == 0)
        return KT_OK;
    dim3 grid((unsigned)cache->n_full, (unsigned)s->kv_heads, (unsigned)s->batch);
    quantize_kernel<T><<<grid, THREADS, (size_t)s->head_dim * sizeof(float), stream>>>(
        (const T *)k, s->context, s->head_dim, cache->block, cache->n_full, cache->codes,
        cache->scales, cache->residual);
    KT_CUDA_CHECK_LAUNCH();
    return KT_OK;
}

template <typename T> int launch_ffd(cudaStream_t stream, const AttnArgs &a)
{
    if (a.n_full > 0) {
        dim3 grid((unsigned)a.n_full, (unsigned)(a.kv_heads * a.head_groups), (unsigned)a.batch);
        size_t smem = (size_t)(HG * a.d + a.d) * sizeof(float);
        scan_kernel<T><<<grid, THREADS, smem, stream>>>(a);
        KT_CUDA_CHECK_LAUNCH();
    }
    return launch_attend<T, true>(stream, a);
}

} // namespace

extern "C" int kt_cuda_attention_dense(cudaStream_t stream, kt_dtype dtype,
                                       const kt_cuda_attn_shape *s, const void *q, const void *k,
                                       const void *v, void *out, int64_t split_tokens,
                                       const kt_cuda_attn_partials *part)
{
    int rc = check_shape(s, false);
    if (rc < 0)
        return rc;
    if (split_tokens <= 0 || part->n_splits != (s->context + split_tokens - 1) / split_tokens)
        return kt_error_code(KT_EINVAL, "split scratch does not match split_tokens");
    AttnArgs a = base_args(s, q, k, v, out, part);
    a.split_tokens = split_tokens;
    return kt_dispatch_dtype(dtype,
                             [&](auto t) { return launch_attend<decltype(t), false>(stream, a); });
}

extern "C" int kt_cuda_ffd_quantize(cudaStream_t stream, kt_dtype dtype,
                                    const kt_cuda_attn_shape *s, const void *k,
                                    const kt_cuda_ffd_cache *cache)
{
    int rc = check_shape(s, true);
    if (rc < 0)
        return rc;
    return kt_dispatch_dtype(
        dtype, [&](auto t) { return launch_quantize<decltype(t)>(stream, s, k, cache); });
}

extern "C" int kt_cuda_ffd_attend(cudaStream_t stream, kt_dtype dtype, const kt_cuda_attn_shape *s,
                                  const void *q, const void *k, const void *v, void *out,
                                  const kt_cuda_ffd_cache *cache, double delta_log2,
                                  int64_t split_blocks, float *block_max, uint8_t *keep,
                                  const kt_cuda_attn_partials *part)
{
    int rc = check_shape(s, true);
    if (rc < 0)
        return rc;
    AttnArgs a = base_args(s, q, k, v, out, part);
    a.codes = cache->codes;
    a.scales = cache->scales;
    a.residual = cache->residual;
    a.block = cache->block;
    a.n_full = cache->n_full;
    a.split_blocks = split_blocks;
    a.n_full_splits = split_blocks > 0 ? (cache->n_full + split_blocks - 1) / split_blocks : 0;
    a.block_max = block_max;
    a.keep = keep;
    a.delta_log2 = (float)delta_log2;
    int64_t tail = s->context - cache->n_full * cache->block;
    if (split_blocks <= 0 || part->n_splits != a.n_full_splits + (tail > 0 ? 1 : 0))
        return kt_error_code(KT_EINVAL, "split scratch does not match split_blocks");
    return kt_dispatch_dtype(dtype, [&](auto t) { return launch_ffd<decltype(t)>(stream, a); });
}
