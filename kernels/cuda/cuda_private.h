/* cuda_private.h - private to kernels/cuda: error checking, the open backend's stream and
 * cuBLASLt handle, and the extern "C" entry points of the .cu kernels.
 *
 * Every entry point enqueues on the given stream and returns KT_OK or KT_ERROR with the
 * message set (file:line, CUDA error name and text); none synchronizes. */
#ifndef KT_CUDA_PRIVATE_H
#define KT_CUDA_PRIVATE_H

#include "../kernel.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Turns a CUDA status into KT_OK, or KT_ERROR with "file:line: name: text" set. */
int kt_cuda_status(cudaError_t err, const char *file, int line);
/* Same for a cuBLASLt status. */
int kt_blaslt_status(cublasStatus_t st, const char *file, int line);

#define KT_CUDA_CALL(expr)   kt_cuda_status((expr), __FILE__, __LINE__)
#define KT_BLASLT_CALL(expr) kt_blaslt_status((expr), __FILE__, __LINE__)
/* Returns from the enclosing function with KT_ERROR when 'expr' fails (never aborts). */
#define KT_CUDA_CHECK(expr)                                                                        \
    do {                                                                                           \
        int kt_rc_ = KT_CUDA_CALL(expr);                                                           \
        if (kt_rc_ < 0)                                                                            \
            return kt_rc_;                                                                         \
    } while (0)
#define KT_BLASLT_CHECK(expr)                                                                      \
    do {                                                                                           \
        int kt_rc_ = KT_BLASLT_CALL(expr);                                                         \
        if (kt_rc_ < 0)                                                                            \
            return kt_rc_;                                                                         \
    } while (0)
/* After a kernel launch: the launch error, if any. */
#define KT_CUDA_CHECK_LAUNCH() KT_CUDA_CHECK(cudaGetLastError())

/* The open CUDA backend's stream, cuBLASLt handle and SM count (NULL/0 for another backend). */
cudaStream_t kt_cuda_stream(kt_backend *b);
cublasLtHandle_t kt_cuda_blaslt(kt_backend *b);
int kt_cuda_sm_count(kt_backend *b);

/* Runs fn(arg) once in the next timer_stop, after the stream has drained and the timed
 * interval is read, so a variant can read its own events of the timed call (the per-stage
 * profile) outside the timed interval; the next timer_start forgets a pending one. */
int kt_cuda_after_timer_stop(kt_backend *b, void (*fn)(void *), void *arg);

/* Copies up to 'max' of the 'n' metrics 'm' into 'out'; returns how many (for metrics()). */
int kt_cuda_metrics_copy(kt_metric *out, int max, const kt_metric *m, int n);

/* The params 'cores' and 'warps' of the deterministic gemm and the fused swiglu_mlp, in
 * this order, and (gemm_cuda.c) the 'tensor_warps' argument of kt_cuda_gemm_tiled and
 * kt_cuda_gate_up_silu they mean, from the value of 'cores' followed by that of 'warps'. */
#define KT_CUDA_TENSOR_PARAMS                                                                      \
    {"cores",                                                                                      \
     KT_PARAM_ENUM,                                                                                \
     0,                                                                                            \
     0,                                                                                            \
     0,                                                                                            \
     "tensor|fp32",                                                                                \
     "fp16/bf16: mma.sync tensor cores (fp32 accumulation) or fp32 FMA tiles; fp32 storage "       \
     "always uses fp32 FMA"},                                                                      \
    {                                                                                              \
        "warps", KT_PARAM_INT, 4, 1, 8, NULL,                                                      \
            "tensor cores: warps per block (16 x 8 outputs each); the result does not depend on "  \
            "it"                                                                                   \
    }
#define KT_CUDA_TENSOR_PARAM_COUNT 2
int kt_cuda_tensor_warps(const kt_param_value *cores_warps);

/* ---- cuBLASLt matmul in ktrial's layout: Y[m,n] = X[m,k] W[n,k]^T, row-major ---------- */

typedef struct kt_cuda_matmul {
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t layout_w, layout_x, layout_y;
    cublasLtMatmulAlgo_t algo;
    void *workspace;
    size_t workspace_bytes;      /* allocated through kt_backend_alloc */
    size_t algo_workspace_bytes; /* what the chosen algorithm asked for */
    int algo_id;
    int tf32;
    int ready;
} kt_cuda_matmul;

/* Creates the descriptors for 'dtype' storage with fp32 compute (TF32 when 'tf32' and the
 * storage is fp32), allocates 'workspace_bytes' and picks the heuristic's first algorithm.
 * KT_EUNSUPPORTED when cuBLASLt offers none. 'mm' must be zeroed before the first call. */
int kt_cuda_matmul_prepare(kt_cuda_matmul *mm, kt_backend *b, kt_dtype dtype, int64_t m, int64_t n,
                           int64_t k, int tf32, size_t workspace_bytes);
/* Enqueues Y = X W^T on the backend's stream. */
int kt_cuda_matmul_run(const kt_cuda_matmul *mm, kt_backend *b, const void *x, const void *w,
                       void *y);
/* Frees what prepare made; safe on a zeroed or partly prepared 'mm'. */
void kt_cuda_matmul_release(kt_cuda_matmul *mm, kt_backend *b);

/* ---- kernels (the .cu files) -------------------------------------------------------------- */

/* util.cu: one thread spins ~10 us and writes {clock64 start, globaltimer start, clock64
 * end, globaltimer end} into 'stamps' (device memory, 4 values). */
int kt_cuda_clock_sample(cudaStream_t stream, unsigned long long *stamps);
/* util.cu: reads 'bytes' (a multiple of 16) of device buffer 'buf' with 16-byte loads over
 * 4 blocks per SM; 'sink' is a device word that is written only if the XOR of the buffer
 * equals a constant no zeroed buffer has. */
int kt_cuda_l2_flush(cudaStream_t stream, const void *buf, size_t bytes, int sm_count,
                     unsigned *sink);

/* gemm_tiled.cu: Y[m,n] = X[m,k] W[n,k]^T in a fixed reduction order for every output
 * (bit-identical for any m, launch and run): fp16/bf16 on tensor cores (mma.sync, fp32
 * accumulation, 'tensor_warps' 1..8 warps per block); fp32, or 'tensor_warps' 0, as 64x64
 * tiles of fp32 FMA in ascending k. */
int kt_cuda_gemm_tiled(cudaStream_t stream, kt_dtype dtype, const void *x, const void *w, void *y,
                       int64_t m, int64_t n, int64_t k, int tensor_warps);
/* gemm_tiled.cu: A[m,inter] = silu(X Wg^T) * (X Wu^T), with w_gate_up[2*inter, hidden]
 * holding Wg in rows 0..inter-1 and Wu in rows inter..2*inter-1; both tiles in one kernel,
 * on tensor cores as kt_cuda_gemm_tiled. */
int kt_cuda_gate_up_silu(cudaStream_t stream, kt_dtype dtype, const void *x, const void *w_gate_up,
                         void *a, int64_t m, int64_t inter, int64_t hidden, int tensor_warps);
/* gemm_tiled.cu: A[m,inter] = silu(H[:, :inter]) * H[:, inter:] for H[m, 2*inter]. */
int kt_cuda_silu_mul(cudaStream_t stream, kt_dtype dtype, const void *h, void *a, int64_t m,
                     int64_t inter);

/* attention.cu: shapes of one decode attention call. */
typedef struct kt_cuda_attn_shape {
    int64_t batch, heads, kv_heads, head_dim, context;
} kt_cuda_attn_shape;

/* Scratch of a split-KV call: per (b, head, split) the unnormalised output [head_dim],
 * the running max (log2 units) and the sum of weights. */
typedef struct kt_cuda_attn_partials {
    float *acc;
    float *max_log2;
    float *sum;
    int64_t n_splits;
} kt_cuda_attn_partials;

/* Query heads of one GQA group one attention block handles (a larger group takes several). */
#define KT_CUDA_ATTN_HEADS_PER_BLOCK 8
/* Largest head_dim the attention kernels take (KT_EUNSUPPORTED beyond). */
#define KT_CUDA_ATTN_MAX_HEAD_DIM 256

/* attention.cu: dense split-KV flash decoding, 'split_tokens' tokens per split; 'part'
 * must hold ceil(context / split_tokens) splits. 'vectorised': 16-byte loads, several keys
 * per lane group in flight (attn_plan.h) when head_dim x element size is 64, 128, 256 or
 * 512 bytes; otherwise, or when 0, the scalar kernel FFD also uses. */
int kt_cuda_attention_dense(cudaStream_t stream, kt_dtype dtype, const kt_cuda_attn_shape *s,
                            const void *q, const void *k, const void *v, void *out,
                            int64_t split_tokens, int vectorised,
                            const kt_cuda_attn_partials *part);

/* FFD key cache for full blocks: codes [B][Hkv][n_full*block][head_dim/4] (2-bit, channel
 * 4i+m at bits 2m of byte i), scales [B][Hkv][n_full][head_dim] float, residuals
 * [B][Hkv][n_full*block][head_dim] fp8 e4m3. */
typedef struct kt_cuda_ffd_cache {
    uint8_t *codes;
    float *scales;
    uint8_t *residual;
    int64_t block;
    int64_t n_full;
} kt_cuda_ffd_cache;

/* attention.cu: quantizes the full blocks of 'k' into 'cache'. */
int kt_cuda_ffd_quantize(cudaStream_t stream, kt_dtype dtype, const kt_cuda_attn_shape *s,
                         const void *k, const kt_cuda_ffd_cache *cache);
/* attention.cu: FFD decode. 'block_max' [B][Hkv][n_full][G] holds approximate block maxima
 * (log2 units), 'keep' [B][Hkv][n_full] the kept flags; 'part' holds
 * ceil(n_full / split_blocks) + (tail ? 1 : 0) splits. The scan runs on int8 tensor cores
 * (ffd_scan.h) for head_dim 64, 128 and 256 unless 'scan_fp32', else in fp32. */
int kt_cuda_ffd_attend(cudaStream_t stream, kt_dtype dtype, const kt_cuda_attn_shape *s,
                       const void *q, const void *k, const void *v, void *out,
                       const kt_cuda_ffd_cache *cache, double delta_log2, int64_t split_blocks,
                       int scan_fp32, float *block_max, uint8_t *keep,
                       const kt_cuda_attn_partials *part);

#ifdef __cplusplus
}
#endif

#endif
