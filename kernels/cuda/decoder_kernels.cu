/* decoder_kernels.cu - the decoder_layer variant's own small kernels: RMSNorm (a block per
 * row), RoPE + KV append (a block per q/k/v head row, decoder_plan.h's row map) and the
 * residual add. fp32 arithmetic, the storage type in memory, as the CPU variant's kernels. */
#include "cuda_types.cuh"
#include "decoder_cuda.h"

namespace
{

constexpr int NORM_THREADS = 256;

/* Sum of 'v' over the block (NORM_THREADS threads); every thread gets it. */
__device__ float block_sum(float v, float *shared)
{
    for (int o = 16; o > 0; o /= 2)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0)
        shared[warp] = v;
    __syncthreads();
    float s = 0;
    for (int w = 0; w < NORM_THREADS / 32; w++)
        s += shared[w];
    return s;
}

template <typename T>
__global__ void __launch_bounds__(NORM_THREADS)
    rmsnorm_kernel(T *__restrict__ out, const T *__restrict__ x, const T *__restrict__ g, int64_t h)
{
    __shared__ float part[NORM_THREADS / 32];
    const T *row = x + (int64_t)blockIdx.x * h;
    float ss = 0;
    for (int64_t c = threadIdx.x; c < h; c += NORM_THREADS) {
        float v = kt_to_f32(row[c]);
        ss += v * v;
    }
    ss = block_sum(ss, part);
    const float inv = 1.0f / sqrtf(ss / (float)h + (float)KT_DL_RMS_EPS);
    for (int64_t c = threadIdx.x; c < h; c += NORM_THREADS)
        out[(int64_t)blockIdx.x * h + c] =
            kt_from_f32<T>(kt_to_f32(row[c]) * inv * kt_to_f32(g[c]));
}

template <typename T>
__global__ void add_kernel(T *__restrict__ out, const T *__restrict__ a, const T *__restrict__ b,
                           int64_t n)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        out[i] = kt_from_f32<T>(kt_to_f32(a[i]) + kt_to_f32(b[i]));
}

template <typename T>
__global__ void rope_append_kernel(kt_dl_dims m, const T *__restrict__ qkv, T *__restrict__ q,
                                   T *__restrict__ k_work, T *__restrict__ v_work,
                                   T *__restrict__ k_new, T *__restrict__ v_new,
                                   const float *__restrict__ cos_sin)
{
    const kt_cdl_rope_row r = kt_cdl_rope_row_of(&m, blockIdx.x);
    const int64_t half = m.d / 2;
    T *dst = r.kind == KT_CDL_ROW_Q ? q : r.kind == KT_CDL_ROW_K ? k_work : v_work;
    T *nw = r.kind == KT_CDL_ROW_K ? k_new : v_new;
    for (int64_t c = threadIdx.x; c < half; c += blockDim.x) {
        float x0 = kt_to_f32(qkv[r.src + c]), x1 = kt_to_f32(qkv[r.src + c + half]);
        float y0 = x0, y1 = x1;
        if (r.rotate)
            kt_cdl_rotate(&y0, &y1, x0, x1, cos_sin[c], cos_sin[half + c]);
        const T t0 = kt_from_f32<T>(y0), t1 = kt_from_f32<T>(y1);
        dst[r.dst + c] = t0;
        dst[r.dst + c + half] = t1;
        if (r.kind != KT_CDL_ROW_Q) {
            nw[r.new_at + c] = t0;
            nw[r.new_at + c + half] = t1;
        }
    }
}

unsigned grid_of(int64_t n, int threads)
{
    int64_t blocks = (n + threads - 1) / threads;
    return (unsigned)(blocks > 65536 ? 65536 : blocks);
}

} // namespace

extern "C" int kt_cuda_dl_rmsnorm(cudaStream_t stream, kt_dtype dtype, void *out, const void *x,
                                  const void *g, int64_t rows, int64_t h)
{
    if (rows <= 0 || rows > 0x7fffffff || h <= 0)
        return kt_error_code(KT_EINVAL, "bad rmsnorm shape %lld x %lld", (long long)rows,
                             (long long)h);
    return kt_dispatch_dtype(dtype, [&](auto t) -> int {
        using T = decltype(t);
        rmsnorm_kernel<T>
            <<<(unsigned)rows, NORM_THREADS, 0, stream>>>((T *)out, (const T *)x, (const T *)g, h);
        KT_CUDA_CHECK_LAUNCH();
        return KT_OK;
    });
}

extern "C" int kt_cuda_dl_add(cudaStream_t stream, kt_dtype dtype, void *out, const void *a,
                              const void *b, int64_t n)
{
    if (n <= 0)
        return kt_error_code(KT_EINVAL, "bad add size %lld", (long long)n);
    return kt_dispatch_dtype(dtype, [&](auto t) -> int {
        using T = decltype(t);
        add_kernel<T><<<grid_of(n, 256), 256, 0, stream>>>((T *)out, (const T *)a, (const T *)b, n);
        KT_CUDA_CHECK_LAUNCH();
        return KT_OK;
    });
}

extern "C" int kt_cuda_dl_rope_append(cudaStream_t stream, kt_dtype dtype, const kt_dl_dims *m,
                                      const kt_cuda_dl_rope *r)
{
    const int64_t rows = kt_cdl_rope_rows(m), half = m->d / 2;
    if (rows <= 0 || rows > 0x7fffffff || half <= 0)
        return kt_error_code(KT_EINVAL, "bad rope shape");
    const int threads = half >= 128 ? 128 : (int)((half + 31) / 32 * 32);
    return kt_dispatch_dtype(dtype, [&](auto t) -> int {
        using T = decltype(t);
        rope_append_kernel<T><<<(unsigned)rows, threads, 0, stream>>>(
            *m, (const T *)r->qkv, (T *)r->q, (T *)r->k_work, (T *)r->v_work, (T *)r->k_new,
            (T *)r->v_new, r->cos_sin);
        KT_CUDA_CHECK_LAUNCH();
        return KT_OK;
    });
}
