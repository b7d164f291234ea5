/* gemm_tiled.cu - plain CUDA C tiled GEMM in ktrial's layout (Y[m,n] = X[m,k] W[n,k]^T):
 * the deterministic gemm variant, and the same tiles with a SwiGLU epilogue for the fused
 * swiglu_mlp variant.
 *
 * Every output is one fp32 FMA chain over k = 0 .. k-1 in ascending order, started from
 * zero; tiles past k are zero-filled (fma(0, 0, acc) == acc). Nothing depends on m, the
 * tile position or the launch, so results are bit-identical across runs and batch sizes. */
#include "cuda_types.cuh"

namespace
{

constexpr int BM = 64, BN = 64, BK = 16, THREADS = 256;
constexpr int TM = BM / 16, TN = BN / 16; /* 4x4 outputs per thread, strided by 16 */

/* Loads a [rows, BK] tile of row-major 'src' (leading dim 'ld') starting at (row0, k0)
 * into 'dst'[BK][BM + 4] transposed, as fp32, zero outside [rows_total, k_total). */
template <typename T>
__device__ __forceinline__ void load_tile(float (*dst)[BM + 4], const T *src, int64_t row0,
                                          int64_t rows_total, int64_t k0, int64_t k_total,
                                          int64_t ld)
{
#pragma unroll
    for (int r = 0; r < (BM * BK) / THREADS; r++) {
        int l = threadIdx.x + r * THREADS;
        int row = l / BK, col = l % BK;
        int64_t gr = row0 + row, gk = k0 + col;
        float v = 0.0f;
        if (gr < rows_total && gk < k_total)
            v = kt_to_f32(src[gr * ld + gk]);
        dst[col][row] = v;
    }
}

/* One 64x64 output tile per block. SWIGLU: 'w' is w_gate_up[2n, k]; the block computes the
 * gate tile (rows j) and the up tile (rows n + j) and writes silu(gate) * up. */
template <typename T, bool SWIGLU>
__global__ void __launch_bounds__(THREADS)
    tiled_kernel(const T *__restrict__ x, const T *__restrict__ w, T *__restrict__ y, int64_t m,
                 int64_t n, int64_t k)
{
    __shared__ float xs[BK][BM + 4];
    __shared__ float gs[BK][BN + 4];
    __shared__ float us[SWIGLU ? BK : 1][BN + 4];
    const int64_t row0 = (int64_t)blockIdx.x * BM, col0 = (int64_t)blockIdx.y * BN;
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    float acc_g[TM][TN], acc_u[SWIGLU ? TM : 1][SWIGLU ? TN : 1];
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++)
            acc_g[i][j] = 0.0f;
    if (SWIGLU) {
#pragma unroll
        for (int i = 0; i < TM; i++)
#pragma unroll
            for (int j = 0; j < TN; j++)
                acc_u[SWIGLU ? i : 0][SWIGLU ? j : 0] = 0.0f;
    }

    for (int64_t k0 = 0; k0 < k; k0 += BK) {
        load_tile(xs, x, row0, m, k0, k, k);
        load_tile(gs, w, col0, n, k0, k, k);
        if (SWIGLU)
            load_tile(us, w + n * k, col0, n, k0, k, k);
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk++) {
            float a[TM], g[TN];
#pragma unroll
            for (int i = 0; i < TM; i++)
                a[i] = xs[kk][ty + 16 * i];
#pragma unroll
            for (int j = 0; j < TN; j++)
                g[j] = gs[kk][tx + 16 * j];
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++)
                    acc_g[i][j] = __fmaf_rn(a[i], g[j], acc_g[i][j]);
            if (SWIGLU) {
#pragma unroll
                for (int j = 0; j < TN; j++)
                    g[j] = us[SWIGLU ? kk : 0][tx + 16 * j];
#pragma unroll
                for (int i = 0; i < TM; i++)
#pragma unroll
                    for (int j = 0; j < TN; j++)
                        acc_u[SWIGLU ? i : 0][SWIGLU ? j : 0] =
                            __fmaf_rn(a[i], g[j], acc_u[SWIGLU ? i : 0][SWIGLU ? j : 0]);
            }
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < TM; i++) {
        int64_t r = row0 + ty + 16 * i;
        if (r >= m)
            continue;
#pragma unroll
        for (int j = 0; j < TN; j++) {
            int64_t c = col0 + tx + 16 * j;
            if (c >= n)
                continue;
            float v = acc_g[i][j];
            if (SWIGLU)
                v = v / (1.0f + expf(-v)) * acc_u[SWIGLU ? i : 0][SWIGLU ? j : 0];
            y[r * n + c] = kt_from_f32<T>(v);
        }
    }
}

template <typename T>
__global__ void silu_mul_kernel(const T *__restrict__ h, T *__restrict__ a, int64_t m,
                                int64_t inter)
{
    const int64_t total = m * inter;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i / inter, c = i % inter;
        float g = kt_to_f32(h[r * 2 * inter + c]);
        float u = kt_to_f32(h[r * 2 * inter + inter + c]);
        a[i] = kt_from_f32<T>(g / (1.0f + expf(-g)) * u);
    }
}

template <typename T, bool SWIGLU>
int launch_tiled(cudaStream_t stream, const void *x, const void *w, void *y, int64_t m, int64_t n,
                 int64_t k)
{
    if (m <= 0 || n <= 0 || k <= 0)
        return kt_error_code(KT_EINVAL, "bad tiled gemm shape");
    if ((n + BN - 1) / BN > 65535)
        return kt_error_code(KT_EUNSUPPORTED, "n = %lld is too large for the tiled kernel",
                             (long long)n);
    dim3 grid((unsigned)((m + BM - 1) / BM), (unsigned)((n + BN - 1) / BN));
    tiled_kernel<T, SWIGLU>
        <<<grid, THREADS, 0, stream>>>((const T *)x, (const T *)w, (T *)y, m, n, k);
    KT_CUDA_CHECK_LAUNCH();
    return KT_OK;
}

template <typename T>
int launch_silu_mul(cudaStream_t stream, const void *h, void *a, int64_t m, int64_t inter)
{
    if (m <= 0 || inter <= 0)
        return kt_error_code(KT_EINVAL, "bad silu_mul shape");
    int64_t blocks = (m * inter + 255) / 256;
    if (blocks > 65536)
        blocks = 65536;
    silu_mul_kernel<T><<<(unsigned)blocks, 256, 0, stream>>>((const T *)h, (T *)a, m, inter);
    KT_CUDA_CHECK_LAUNCH();
    return KT_OK;
}

} // namespace

extern "C" int kt_cuda_gemm_tiled(cudaStream_t stream, kt_dtype dtype, const void *x, const void *w,
                                  void *y, int64_t m, int64_t n, int64_t k)
{
    return kt_dispatch_dtype(
        dtype, [&](auto t) { return launch_tiled<decltype(t), false>(stream, x, w, y, m, n, k); });
}

extern "C" int kt_cuda_gate_up_silu(cudaStream_t stream, kt_dtype dtype, const void *x,
                                    const void *w_gate_up, void *a, int64_t m, int64_t inter,
                                    int64_t hidden)
{
    return kt_dispatch_dtype(dtype, [&](auto t) {
        return launch_tiled<decltype(t), true>(stream, x, w_gate_up, a, m, inter, hidden);
    });
}

extern "C" int kt_cuda_silu_mul(cudaStream_t stream, kt_dtype dtype, const void *h, void *a,
                                int64_t m, int64_t inter)
{
    return kt_dispatch_dtype(
        dtype, [&](auto t) { return launch_silu_mul<decltype(t)>(stream, h, a, m, inter); });
}
