/* gemm_tiled.cu - GEMM in ktrial's layout (Y[m,n] = X[m,k] W[n,k]^T) with a fixed reduction
 * order: the deterministic gemm variant, and the same kernels with a SwiGLU epilogue for the
 * fused swiglu_mlp variant. 16-bit storage runs on tensor cores (mma.sync, below); fp32
 * storage, or 16-bit with fp32_cores, on the fp32 FMA tiles:
 *
 * Every output is one fp32 FMA chain over k = 0 .. k-1 in ascending order, started from
 * zero; tiles past k are zero-filled (fma(0, 0, acc) == acc). Nothing depends on m, the
 * tile position or the launch, so results are bit-identical across runs and batch sizes. */
#include "cuda_types.cuh"
#include "ffd_scan.h"

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
/* __maxnreg__: ptxas's default register budget spills this kernel (64 registers) */
template <typename T, bool SWIGLU>
__global__ void __maxnreg__(128) tiled_kernel(const T *__restrict__ x, const T *__restrict__ w,
                                              T *__restrict__ y, int64_t m, int64_t n, int64_t k)
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

/* ---- bf16 / fp16 on tensor cores ---------------------------------------------------------
 * mma.sync m16n8k16 with fp32 accumulation. A warp owns a 16 x 8 output tile (and the
 * matching up tile for SwiGLU); a block is 4 warps along n. Each output is the chain of mma
 * over k = 0, 32, 64, ... in ascending order (two k-steps per 32-chunk, the k of each step
 * permuted as kt_gemm_chunk_k says), started from zero: nothing depends on m, the tile or
 * the grid, so results are bit-identical across runs, batch sizes and launch shapes. Rows
 * and the k tail past the matrix read as zero (an exact 0 product). */

constexpr int MMA_MAX_WARPS = 8;

/* D = A B + D for one m16n8k16 with 16-bit operands of PTX type 'ty' ("bf16", "f16"). */
#define KT_MMA_M16N8K16(ty, c, a, b0, b1)                                                          \
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." ty "." ty ".f32 {%0,%1,%2,%3}, "         \
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"                                          \
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])                                  \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1))

__device__ __forceinline__ void mma16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                      uint32_t b1, __nv_bfloat16)
{
    KT_MMA_M16N8K16("bf16", c, a, b0, b1);
}

__device__ __forceinline__ void mma16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                      uint32_t b1, __half)
{
    KT_MMA_M16N8K16("f16", c, a, b0, b1);
}

/* The 8 elements k0 .. k0 + 7 of row 'row' of row-major 'src' [rows, k] as 4 registers (two
 * elements each, the lower k in the low half); zero past the matrix. 'vec': rows and base
 * 16-byte aligned and k0 + 8 <= k, so one 16-byte load does. */
template <typename T>
__device__ __forceinline__ uint4 load_k8(const T *src, int64_t row, int64_t rows, int64_t k0,
                                         int64_t k, bool vec)
{
    if (row >= rows)
        return make_uint4(0, 0, 0, 0);
    const T *p = src + row * k + k0;
    if (vec && k0 + 8 <= k)
        return __ldg(reinterpret_cast<const uint4 *>(p));
    uint16_t e[8];
#pragma unroll
    for (int i = 0; i < 8; i++) {
        T v = k0 + i < k ? p[i] : T(0.0f);
        e[i] = *reinterpret_cast<const uint16_t *>(&v);
    }
    return make_uint4(e[0] | (uint32_t)e[1] << 16, e[2] | (uint32_t)e[3] << 16,
                      e[4] | (uint32_t)e[5] << 16, e[6] | (uint32_t)e[7] << 16);
}

__device__ __forceinline__ uint32_t word_of(const uint4 &u, int i)
{
    return i == 0 ? u.x : i == 1 ? u.y : i == 2 ? u.z : u.w;
}

template <typename T, bool SWIGLU>
__global__ void __launch_bounds__(MMA_MAX_WARPS * 32)
    mma_kernel(const T *__restrict__ x, const T *__restrict__ w, T *__restrict__ y, int64_t m,
               int64_t n, int64_t k, bool vec)
{
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, tig = lane & 3;
    const int64_t row0 = (int64_t)blockIdx.x * 16;
    const int64_t col0 = ((int64_t)blockIdx.y * (blockDim.x / 32) + warp) * 8;
    const int64_t ra = row0 + kt_mma_a_row(lane, 0), rb = row0 + kt_mma_a_row(lane, 1);
    const int64_t wn = col0 + kt_mma_b_col(lane);
    float acc_g[4] = {0, 0, 0, 0}, acc_u[4] = {0, 0, 0, 0};
    for (int64_t k0 = 0; k0 < k; k0 += 32) {
        const int64_t kl = k0 + 8 * tig; /* this lane's 8 k of the chunk (kt_gemm_chunk_k) */
        const uint4 xa = load_k8(x, ra, m, kl, k, vec), xb = load_k8(x, rb, m, kl, k, vec);
        const uint4 wg = load_k8(w, wn, n, kl, k, vec);
        uint4 wu = make_uint4(0, 0, 0, 0);
        if (SWIGLU)
            wu = load_k8(w + n * k, wn, n, kl, k, vec);
#pragma unroll
        for (int s = 0; s < 2; s++) {
            /* registers 2s, 2s+1 of the loads are k-step s: half 0 then half 1 */
            const uint32_t a[4] = {word_of(xa, 2 * s), word_of(xb, 2 * s), word_of(xa, 2 * s + 1),
                                   word_of(xb, 2 * s + 1)};
            mma16(acc_g, a, word_of(wg, 2 * s), word_of(wg, 2 * s + 1), T());
            if (SWIGLU)
                mma16(acc_u, a, word_of(wu, 2 * s), word_of(wu, 2 * s + 1), T());
        }
    }
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const int64_t r = row0 + kt_mma_c_row(lane, i), c = col0 + kt_mma_c_col(lane, i);
        if (r >= m || c >= n)
            continue;
        float v = acc_g[i];
        if (SWIGLU)
            v = v / (1.0f + expf(-v)) * acc_u[i];
        y[r * n + c] = kt_from_f32<T>(v);
    }
}

template <typename T, bool SWIGLU>
int launch_mma(cudaStream_t stream, const void *x, const void *w, void *y, int64_t m, int64_t n,
               int64_t k, int warps)
{
    if (m <= 0 || n <= 0 || k <= 0 || warps < 1 || warps > MMA_MAX_WARPS)
        return kt_error_code(KT_EINVAL, "bad tensor-core gemm shape or warp count");
    const int64_t cols = warps * 8;
    if ((n + cols - 1) / cols > 65535)
        return kt_error_code(KT_EUNSUPPORTED, "n = %lld is too large for the tensor-core kernel",
                             (long long)n);
    const bool vec = k % 8 == 0 && (uintptr_t)x % 16 == 0 && (uintptr_t)w % 16 == 0;
    dim3 grid((unsigned)((m + 15) / 16), (unsigned)((n + cols - 1) / cols));
    mma_kernel<T, SWIGLU>
        <<<grid, warps * 32, 0, stream>>>((const T *)x, (const T *)w, (T *)y, m, n, k, vec);
    KT_CUDA_CHECK_LAUNCH();
    return KT_OK;
}

/* fp32 storage: the fp32 FMA tiles (exact fp32 products); 16-bit: the tensor-core kernel
 * with 'warps' warps per block, or the FMA tiles when 'warps' is 0. */
template <typename T, bool SWIGLU>
int launch_gemm(cudaStream_t stream, const void *x, const void *w, void *y, int64_t m, int64_t n,
                int64_t k, int warps)
{
    if constexpr (sizeof(T) == 2) {
        if (warps > 0)
            return launch_mma<T, SWIGLU>(stream, x, w, y, m, n, k, warps);
    }
    return launch_tiled<T, SWIGLU>(stream, x, w, y, m, n, k);
}

} // namespace

extern "C" int kt_cuda_gemm_tiled(cudaStream_t stream, kt_dtype dtype, const void *x, const void *w,
                                  void *y, int64_t m, int64_t n, int64_t k, int tensor_warps)
{
    return kt_dispatch_dtype(dtype, [&](auto t) {
        return launch_gemm<decltype(t), false>(stream, x, w, y, m, n, k, tensor_warps);
    });
}

extern "C" int kt_cuda_gate_up_silu(cudaStream_t stream, kt_dtype dtype, const void *x,
                                    const void *w_gate_up, void *a, int64_t m, int64_t inter,
                                    int64_t hidden, int tensor_warps)
{
    return kt_dispatch_dtype(dtype, [&](auto t) {
        return launch_gemm<decltype(t), true>(stream, x, w_gate_up, a, m, inter, hidden,
                                              tensor_warps);
    });
}

extern "C" int kt_cuda_silu_mul(cudaStream_t stream, kt_dtype dtype, const void *h, void *a,
                                int64_t m, int64_t inter)
{
    return kt_dispatch_dtype(
        dtype, [&](auto t) { return launch_silu_mul<decltype(t)>(stream, h, a, m, inter); });
}
