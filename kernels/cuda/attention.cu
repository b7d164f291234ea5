/* attention.cu - decode attention: dense split-KV flash decoding, and FFD (2-bit key codes
 * with fp8 residuals, block selection against a pseudo-max, refined attention over the kept
 * blocks). Both share one attend kernel and one log-sum-exp merge.
 *
 * Layout: q[B,H,d], K and V [B,Hkv,T,d], out[B,H,d]; query head h reads KV head h / G with
 * G = H / Hkv. A block of the attend kernel owns (b, KV head, up to 8 heads of its group,
 * one split) and keeps, per head, a running max and sum in log2 units and an unnormalised
 * fp32 output; the merge kernel combines the splits. */
#include "attn_plan.h"
#include "cuda_types.cuh"
#include "ffd_scan.h"

#include <cuda_fp8.h>
#include <math.h>

namespace
{

constexpr int THREADS = 128, WARPS = THREADS / 32;
constexpr int HG = KT_CUDA_ATTN_HEADS_PER_BLOCK;         /* a GQA group is split into groups of 8 */
constexpr int CH = 64;                                   /* tokens scored per step */
constexpr int CPT = KT_CUDA_ATTN_MAX_HEAD_DIM / THREADS; /* output channels per thread */

struct AttnArgs {
    const void *q, *k, *v;
    void *out;
    int64_t batch, heads, kv_heads, d, context, group, head_groups;
    float scale_log2; /* log2(e) / sqrt(d) */
    float *acc, *max_log2, *sum;
    int64_t n_splits;
    int64_t split_tokens; /* dense */
    bool vectorised;      /* dense: the 16-byte-load kernel where head_dim allows */
    /* ffd */
    const uint8_t *codes;
    const float *scales;
    const uint8_t *residual;
    int64_t block, n_full, split_blocks, n_full_splits;
    float *block_max; /* written by the scan, read by the attend kernel */
    uint8_t *keep;
    float delta_log2;
    bool scan_fp32; /* ffd: the fp32 scan even where the tensor-core scan applies */
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

/* ---- dense decode with 16-byte loads ----------------------------------------------------
 * A key row of D = LPK x VEC elements is read by a lane group of LPK lanes, one 16-byte load
 * each; a block of THREADS / LPK lane groups walks its split KPI keys per step per group
 * (attn_plan.h), so each lane has 2 x KPI loads in flight. Scores of all HG heads and KPI keys
 * are reduced across the group's lanes level by level (HG x KPI independent shuffles per
 * level). Every group keeps its own online softmax; the groups are combined at the end. */

/* The pair type of a 16-bit T. */
template <typename T> struct Pair;
template <> struct Pair<__nv_bfloat16> {
    using type = __nv_bfloat162;
};
template <> struct Pair<__half> {
    using type = __half2;
};

/* fp32 values of a 16-byte vector of T. */
__device__ __forceinline__ void unpack16(float (&f)[4], const uint4 &u, float)
{
    f[0] = __uint_as_float(u.x), f[1] = __uint_as_float(u.y);
    f[2] = __uint_as_float(u.z), f[3] = __uint_as_float(u.w);
}
__device__ __forceinline__ float2 to_float2(__nv_bfloat162 h)
{
    return __bfloat1622float2(h);
}
__device__ __forceinline__ float2 to_float2(__half2 h)
{
    return __half22float2(h);
}
/* 16-bit T: four pairs. */
template <typename T> __device__ __forceinline__ void unpack16(float (&f)[8], const uint4 &u, T)
{
    const typename Pair<T>::type *h = reinterpret_cast<const typename Pair<T>::type *>(&u);
#pragma unroll
    for (int i = 0; i < 4; i++) {
        float2 x = to_float2(h[i]);
        f[2 * i] = x.x, f[2 * i + 1] = x.y;
    }
}

template <typename T, int LPK> struct VecShape {
    static constexpr int VEC = 16 / (int)sizeof(T), D = LPK * VEC, NGRP = THREADS / LPK;
    static constexpr size_t smem_bytes = (size_t)(HG * D + 2 * HG * NGRP + NGRP * HG * D) * 4;
};

template <typename T, int LPK, int KPI>
__global__ void __launch_bounds__(THREADS) dense_vec_kernel(AttnArgs a)
{
    using S = VecShape<T, LPK>;
    constexpr int VEC = S::VEC, D = S::D, NGRP = S::NGRP;
    extern __shared__ float smem[];
    float *qs = smem;             /* [HG][D] q * scale_log2 (0 for heads past the group) */
    float *gm = qs + HG * D;      /* [HG][NGRP] each group's running max */
    float *gl = gm + HG * NGRP;   /* [HG][NGRP] each group's sum */
    float *gacc = gl + HG * NGRP; /* [NGRP][HG][D] each group's output */
    const int64_t split = blockIdx.x, b = blockIdx.z;
    const int64_t kvh = blockIdx.y / a.head_groups, hg = blockIdx.y % a.head_groups;
    const int64_t g0 = hg * HG, bh = b * a.kv_heads + kvh;
    const int ng = (int)min((int64_t)HG, a.group - g0);
    const int grp = threadIdx.x / LPK, sub = threadIdx.x % LPK;

    const T *q = (const T *)a.q + (b * a.heads + kvh * a.group + g0) * D;
    for (int i = threadIdx.x; i < HG * D; i += THREADS)
        qs[i] = i < ng * D ? kt_to_f32(q[i]) * a.scale_log2 : 0.0f;
    __syncthreads();

    const T *k = (const T *)a.k + bh * a.context * D + sub * VEC;
    const T *v = (const T *)a.v + bh * a.context * D + sub * VEC;
    const int64_t t0 = split * a.split_tokens, t1 = min(a.context, t0 + a.split_tokens);
    float m[HG], l[HG], acc[HG][VEC];
#pragma unroll
    for (int g = 0; g < HG; g++) {
        m[g] = -INFINITY, l[g] = 0.0f;
#pragma unroll
        for (int c = 0; c < VEC; c++)
            acc[g][c] = 0.0f;
    }
    const int64_t steps = kt_dense_steps(t1 - t0, NGRP, KPI); /* uniform: every lane shuffles */
    for (int64_t it = 0; it < steps; it++) {
        const int64_t tb = kt_dense_token(t0, it, grp, 0, NGRP, KPI);
        uint4 kr[KPI], vr[KPI];
#pragma unroll
        for (int j = 0; j < KPI; j++) {
            const int64_t t = tb + j;
            kr[j] = vr[j] = make_uint4(0, 0, 0, 0);
            if (t < t1) {
                kr[j] = __ldg(reinterpret_cast<const uint4 *>(k + t * D));
                vr[j] = __ldg(reinterpret_cast<const uint4 *>(v + t * D));
            }
        }
        float kf[KPI][VEC], s[HG][KPI];
#pragma unroll
        for (int j = 0; j < KPI; j++)
            unpack16(kf[j], kr[j], T());
#pragma unroll
        for (int g = 0; g < HG; g++) {
            float qv[VEC];
#pragma unroll
            for (int c = 0; c < VEC; c += 4) {
                float4 x = *reinterpret_cast<const float4 *>(qs + g * D + sub * VEC + c);
                qv[c] = x.x, qv[c + 1] = x.y, qv[c + 2] = x.z, qv[c + 3] = x.w;
            }
#pragma unroll
            for (int j = 0; j < KPI; j++) {
                float d0 = 0.0f;
#pragma unroll
                for (int c = 0; c < VEC; c++)
                    d0 = fmaf(qv[c], kf[j][c], d0);
                s[g][j] = d0;
            }
        }
#pragma unroll
        for (int o = LPK / 2; o > 0; o >>= 1)
#pragma unroll
            for (int g = 0; g < HG; g++)
#pragma unroll
                for (int j = 0; j < KPI; j++)
                    s[g][j] += __shfl_xor_sync(0xffffffffu, s[g][j], o);
        if (tb >= t1)
            continue; /* this group has no key in this step (the split's last) */
#pragma unroll
        for (int j = 0; j < KPI; j++)
            if (tb + j >= t1)
#pragma unroll
                for (int g = 0; g < HG; g++)
                    s[g][j] = -INFINITY;
        float alpha[HG];
#pragma unroll
        for (int g = 0; g < HG; g++)
            alpha[g] = kt_osm_step(&m[g], &l[g], s[g], s[g], KPI); /* s becomes the weights */
#pragma unroll
        for (int g = 0; g < HG; g++)
#pragma unroll
            for (int c = 0; c < VEC; c++)
                acc[g][c] *= alpha[g];
#pragma unroll
        for (int j = 0; j < KPI; j++) {
            float vf[VEC];
            unpack16(vf, vr[j], T());
#pragma unroll
            for (int g = 0; g < HG; g++)
#pragma unroll
                for (int c = 0; c < VEC; c++)
                    acc[g][c] = fmaf(s[g][j], vf[c], acc[g][c]);
        }
    }

    /* combine the groups of this block into the split's partial result */
#pragma unroll
    for (int g = 0; g < HG; g++) {
        if (sub == 0) {
            gm[g * NGRP + grp] = m[g];
            gl[g * NGRP + grp] = l[g];
        }
#pragma unroll
        for (int c = 0; c < VEC; c++)
            gacc[(grp * HG + g) * D + sub * VEC + c] = acc[g][c];
    }
    __syncthreads();
    for (int i = threadIdx.x; i < ng * D; i += THREADS) {
        const int g = i / D, c = i % D;
        float M, L, A;
        kt_lse_combine(&M, &L, &A, gm + g * NGRP, gl + g * NGRP, gacc + g * D + c, HG * D, NGRP);
        const int64_t idx = (b * a.heads + kvh * a.group + g0 + g) * a.n_splits + split;
        a.acc[idx * D + c] = A;
        if (c == 0) {
            a.max_log2[idx] = M;
            a.sum[idx] = L;
        }
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

/* __maxnreg__: ptxas's default register budget spills this kernel (64 registers) */
template <typename T, bool FFD> __global__ void __maxnreg__(128) attend_kernel(AttnArgs a)
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

/* One block per (full block, b, KV head): per-channel scale, 2-bit codes, fp8 residuals;
 * the same arithmetic as kt_ffd_quantize_block (kernels/ffd_quant.c), op for op. */
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
            /* as kt_ffd_quantize_block: one rounding, clamped, then e4m3 (ties to even),
             * so the device cache equals the host one bit for bit */
            float r = fminf(fmaxf(__fmaf_rn(-(code - 1.5f), sc, x), -448.0f), 448.0f);
            residual[(t_base + t) * d + c] = __nv_fp8_e4m3(r).__x;
        }
        codes[(t_base + t) * row_bytes + byte] = (uint8_t)packed;
    }
}

/* After every warp wrote its maxima into 'wmax': block_max of the block's 'ng' heads (a
 * scan kernel's end; synchronizes). */
__device__ __forceinline__ void store_block_max(const AttnArgs &a, const float (*wmax)[HG],
                                                int64_t bh, int64_t blk, int64_t g0, int ng)
{
    __syncthreads();
    if (threadIdx.x < ng) {
        float m = wmax[0][threadIdx.x];
        for (int w = 1; w < WARPS; w++)
            m = fmaxf(m, wmax[w][threadIdx.x]);
        a.block_max[(bh * a.n_full + blk) * a.group + g0 + threadIdx.x] = m;
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
    store_block_max(a, wmax, bh, blk, g0, ng);
}

/* ---- FFD scan on int8 tensor cores (ffd_scan.h) ------------------------------------------
 * One block per (full block, KV head x head group, b), as scan_kernel. The heads' weights
 * w = q x scale are quantised per head to qi = 128 hi + lo and held as mma B fragments (the
 * head is the fragment's column: HG = 8 = n); each warp takes 16-token m-tiles, unpacks each
 * token's code bytes into int8 A fragments, and runs two m16n8k32 mma per 32 channels. */

__device__ __forceinline__ void mma_s8(int (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                       uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <typename T, int KSTEPS>
__global__ void __launch_bounds__(THREADS) scan_mma_kernel(AttnArgs a)
{
    constexpr int D = 32 * KSTEPS;
    __shared__ float w[HG][D];
    __shared__ int qi[HG][D];
    __shared__ float sw[HG];
    __shared__ int sum_qi[HG];
    __shared__ float wmax[WARPS][HG];
    const int64_t blk = blockIdx.x, b = blockIdx.z;
    const int64_t kvh = blockIdx.y / a.head_groups, hg = blockIdx.y % a.head_groups;
    const int64_t g0 = hg * HG, bh = b * a.kv_heads + kvh;
    const int ng = (int)min((int64_t)HG, a.group - g0);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const T *q = (const T *)a.q + (b * a.heads + kvh * a.group + g0) * D;
    const float *scale = a.scales + (bh * a.n_full + blk) * D;
    for (int i = threadIdx.x; i < HG * D; i += THREADS)
        w[i / D][i % D] = i < ng * D ? (kt_to_f32(q[i]) * a.scale_log2) * scale[i % D] : 0.0f;
    __syncthreads();
    for (int g = warp; g < HG; g += WARPS) { /* per head: the step, the integers, their sum */
        float amax = 0.0f;
        for (int c = lane; c < D; c += 32)
            amax = fmaxf(amax, fabsf(w[g][c]));
        const float step = kt_ffd_weight_step(warp_max(amax));
        int sum = 0;
        for (int c = lane; c < D; c += 32) {
            qi[g][c] = kt_ffd_weight_int(w[g][c], step);
            sum += qi[g][c];
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1)
            sum += __shfl_xor_sync(0xffffffffu, sum, o);
        if (lane == 0) {
            sw[g] = step;
            sum_qi[g] = sum;
        }
    }
    __syncthreads();
    uint32_t bhi[KSTEPS][2], blo[KSTEPS][2]; /* this lane's B fragments: column = head */
    const int head = kt_mma_b_col(lane);
#pragma unroll
    for (int s = 0; s < KSTEPS; s++)
#pragma unroll
        for (int r = 0; r < 2; r++) {
            int h[4], l[4];
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int v = qi[head][32 * s + kt_mma_b_row(lane, r, e, 32, 4)];
                h[e] = kt_ffd_weight_hi(v), l[e] = kt_ffd_weight_lo(v);
            }
            bhi[s][r] = kt_pack_s8x4(h[0], h[1], h[2], h[3]);
            blo[s][r] = kt_pack_s8x4(l[0], l[1], l[2], l[3]);
        }

    const uint8_t *codes = a.codes + (bh * a.n_full + blk) * a.block * (D / 4);
    const int tig = lane & 3, col0 = kt_mma_c_col(lane, 0);
    float best[2] = {-INFINITY, -INFINITY}; /* heads col0, col0 + 1 */
    for (int64_t mt = warp; mt * 16 < a.block; mt += WARPS) {
        int chi[4] = {0, 0, 0, 0}, clo[4] = {0, 0, 0, 0};
        const int64_t row0 = mt * 16 + kt_mma_a_row(lane, 0),
                      row1 = mt * 16 + kt_mma_a_row(lane, 1);
#pragma unroll
        for (int s = 0; s < KSTEPS; s++) {
            /* 8 code bytes = 32 channels per row and k-step; this lane's 4 channels of each
             * half are byte tig of each 4-byte word */
            uint2 c0 = make_uint2(0, 0), c1 = make_uint2(0, 0);
            if (row0 < a.block)
                c0 = __ldg(reinterpret_cast<const uint2 *>(codes + row0 * (D / 4)) + s);
            if (row1 < a.block)
                c1 = __ldg(reinterpret_cast<const uint2 *>(codes + row1 * (D / 4)) + s);
            const uint32_t frag[4] = {kt_ffd_expand_codes((c0.x >> (8 * tig)) & 0xffu),
                                      kt_ffd_expand_codes((c1.x >> (8 * tig)) & 0xffu),
                                      kt_ffd_expand_codes((c0.y >> (8 * tig)) & 0xffu),
                                      kt_ffd_expand_codes((c1.y >> (8 * tig)) & 0xffu)};
            mma_s8(chi, frag, bhi[s][0], bhi[s][1]);
            mma_s8(clo, frag, blo[s][0], blo[s][1]);
        }
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int64_t row = mt * 16 + kt_mma_c_row(lane, i);
            const int h = kt_mma_c_col(lane, i);
            if (row < a.block)
                best[i & 1] =
                    fmaxf(best[i & 1], kt_ffd_scan_score(chi[i], clo[i], sw[h], sum_qi[h]));
        }
    }
#pragma unroll
    for (int o = 4; o < 32; o <<= 1) /* over the lanes of the same tig: same heads */
#pragma unroll
        for (int i = 0; i < 2; i++)
            best[i] = fmaxf(best[i], __shfl_xor_sync(0xffffffffu, best[i], o));
    if (lane < 4) {
        wmax[warp][col0] = best[0];
        wmax[warp][col0 + 1] = best[1];
    }
    store_block_max(a, wmax, bh, blk, g0, ng);
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

/* The dense vector kernel for head_dim LPK x VEC, 4 keys per lane group per step. */
template <typename T, int LPK> int launch_dense_vec(cudaStream_t stream, const AttnArgs &a)
{
    dim3 grid((unsigned)a.n_splits, (unsigned)(a.kv_heads * a.head_groups), (unsigned)a.batch);
    dense_vec_kernel<T, LPK, 4><<<grid, THREADS, VecShape<T, LPK>::smem_bytes, stream>>>(a);
    KT_CUDA_CHECK_LAUNCH();
    return KT_OK;
}

/* Dense with 16-byte loads when head_dim is 4, 8, 16 or 32 vectors of 16 bytes; 0 when it is
 * not (the scalar attend kernel then runs). */
template <typename T> int dense_vec(cudaStream_t stream, const AttnArgs &a, bool *done)
{
    const int64_t row_bytes = a.d * (int64_t)sizeof(T);
    *done = true;
    switch (row_bytes % 16 == 0 ? row_bytes / 16 : 0) {
    case 4:
        return launch_dense_vec<T, 4>(stream, a);
    case 8:
        return launch_dense_vec<T, 8>(stream, a);
    case 16:
        return launch_dense_vec<T, 16>(stream, a);
    case 32:
        return launch_dense_vec<T, 32>(stream, a);
    default:
        *done = false;
        return KT_OK;
    }
}

/* Attend over every split, then merge; 'a.n_splits' > 0. */
template <typename T, bool FFD> int launch_attend(cudaStream_t stream, const AttnArgs &a)
{
    bool done = false;
    int rc = FFD || !a.vectorised ? KT_OK : dense_vec<T>(stream, a, &done);
    if (rc < 0)
        return rc;
    if (!done) {
        dim3 grid((unsigned)a.n_splits, (unsigned)(a.kv_heads * a.head_groups), (unsigned)a.batch);
        attend_kernel<T, FFD><<<grid, THREADS, attend_smem_bytes(a.d), stream>>>(a);
        KT_CUDA_CHECK_LAUNCH();
    }
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

/* The scan: int8 tensor cores for head_dim 64, 128, 256 (unless 'a.scan_fp32'), else fp32. */
template <typename T> int launch_scan(cudaStream_t stream, const AttnArgs &a)
{
    dim3 grid((unsigned)a.n_full, (unsigned)(a.kv_heads * a.head_groups), (unsigned)a.batch);
    if (!a.scan_fp32 && a.d == 64)
        scan_mma_kernel<T, 2><<<grid, THREADS, 0, stream>>>(a);
    else if (!a.scan_fp32 && a.d == 128)
        scan_mma_kernel<T, 4><<<grid, THREADS, 0, stream>>>(a);
    else if (!a.scan_fp32 && a.d == 256)
        scan_mma_kernel<T, 8><<<grid, THREADS, 0, stream>>>(a);
    else
        scan_kernel<T><<<grid, THREADS, (size_t)(HG * a.d + a.d) * sizeof(float), stream>>>(a);
    KT_CUDA_CHECK_LAUNCH();
    return KT_OK;
}

template <typename T> int launch_ffd(cudaStream_t stream, const AttnArgs &a)
{
    int rc = a.n_full > 0 ? launch_scan<T>(stream, a) : KT_OK;
    return rc < 0 ? rc : launch_attend<T, true>(stream, a);
}

} // namespace

extern "C" int kt_cuda_attention_dense(cudaStream_t stream, kt_dtype dtype,
                                       const kt_cuda_attn_shape *s, const void *q, const void *k,
                                       const void *v, void *out, int64_t split_tokens,
                                       int vectorised, const kt_cuda_attn_partials *part)
{
    int rc = check_shape(s, false);
    if (rc < 0)
        return rc;
    if (split_tokens <= 0 || part->n_splits != (s->context + split_tokens - 1) / split_tokens)
        return kt_error_code(KT_EINVAL, "split scratch does not match split_tokens");
    AttnArgs a = base_args(s, q, k, v, out, part);
    a.split_tokens = split_tokens;
    a.vectorised = vectorised != 0;
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
                                  int64_t split_blocks, int scan_fp32, float *block_max,
                                  uint8_t *keep, const kt_cuda_attn_partials *part)
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
    a.scan_fp32 = scan_fp32 != 0;
    int64_t tail = s->context - cache->n_full * cache->block;
    if (split_blocks <= 0 || part->n_splits != a.n_full_splits + (tail > 0 ? 1 : 0))
        return kt_error_code(KT_EINVAL, "split scratch does not match split_blocks");
    return kt_dispatch_dtype(dtype, [&](auto t) { return launch_ffd<decltype(t)>(stream, a); });
}
