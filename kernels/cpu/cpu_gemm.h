/* cpu_gemm.h - private to kernels/cpu: the GEMM machinery shared by the gemm and swiglu_mlp
 * variants: storage-type conversions, OpenBLAS sgemm over any storage type, and ktrial's
 * cache-blocked, packed GEMM with an optional SwiGLU epilogue.
 *
 * Every GEMM here is NT: y[m, n] = sum_k x[m, k] * w[n, k] with x, w, y row-major. */
#ifndef KT_CPU_GEMM_H
#define KT_CPU_GEMM_H

#include "../kernel.h"

#include <math.h>
#include <string.h>

/* Converts 'n' storage-typed values to fp32 (exact) and back (round to nearest even, as
 * kt_fp32_to_bf16 / kt_fp32_to_fp16), using up to 'threads' OpenMP threads. */
void kt_cpu_to_f32(float *dst, const void *src, kt_dtype dtype, size_t n, int threads);
void kt_cpu_from_f32(void *dst, const float *src, kt_dtype dtype, size_t n, int threads);

/* The element helpers need AVX2, FMA and F16C (x86-64-v3, how kernels/ is compiled); code
 * built for plain x86-64 (the tests) sees only the functions below them. */
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>

/* Loads 8 (1) storage-typed values from element i of src as fp32 (exact). */
static inline __m256 kt_cpu_load8(const void *src, kt_dtype dtype, size_t i)
{
    if (dtype == KT_DTYPE_BF16) {
        __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)src + i));
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    }
    if (dtype == KT_DTYPE_FP16)
        return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)src + i)));
    return _mm256_loadu_ps((const float *)src + i);
}

static inline float kt_cpu_load1(const void *src, kt_dtype dtype, size_t i)
{
    if (dtype == KT_DTYPE_BF16) {
        uint32_t u = (uint32_t)((const uint16_t *)src)[i] << 16;
        float f;
        memcpy(&f, &u, sizeof(f));
        return f;
    }
    if (dtype == KT_DTYPE_FP16)
        return _cvtsh_ss(((const uint16_t *)src)[i]);
    return ((const float *)src)[i];
}

#endif

/* Stores v into element i of a storage-typed array, rounding to nearest even. */
static inline void kt_cpu_store1(void *dst, kt_dtype dtype, size_t i, float v)
{
    if (dtype == KT_DTYPE_BF16)
        ((uint16_t *)dst)[i] = kt_fp32_to_bf16(v);
    else if (dtype == KT_DTYPE_FP16)
        ((uint16_t *)dst)[i] = kt_fp32_to_fp16(v);
    else
        ((float *)dst)[i] = v;
}

/* silu(g) * u in fp32, the SwiGLU activation of one gate/up pair. */
static inline float kt_cpu_silu_mul(float g, float u)
{
    return g / (1.0f + expf(-g)) * u;
}

/* OpenBLAS on storage-typed operands: sgemm, or at m == 1 (a decode step) sgemv, the routine
 * an engine calls for one row. For fp16 and bf16 (the installed OpenBLAS exports neither
 * sbgemm nor sbgemv) the operands are converted to fp32 inside the call, into buffers
 * allocated once by kt_cpu_blas_init so the backend counts them: at m > 1 all of w at once;
 * at m == 1 w is converted a chunk of 'rows' rows at a time into a per-thread buffer that
 * stays in cache and multiplied by sgemv there, so w is read once from memory. */
typedef struct kt_cpu_blas {
    kt_dtype dtype;
    int64_t m, n, k;
    int gemv;         /* 1: m == 1, calls go to sgemv */
    int64_t rows;     /* gemv with fp16/bf16: rows of w per converted chunk */
    int slots;        /* gemv with fp16/bf16: per-thread chunk buffers in w */
    size_t w_floats;  /* floats allocated at w */
    float *x, *w, *y; /* fp32 staging; NULL for fp32 storage */
} kt_cpu_blas;

int kt_cpu_blas_init(kt_cpu_blas *g, kt_backend *b, kt_dtype dtype, int64_t m, int64_t n,
                     int64_t k);
/* Frees what init allocated; accepts a zeroed or partially initialised 'g'. */
void kt_cpu_blas_release(kt_cpu_blas *g, kt_backend *b);
/* y[m, n] = x[m, k] w[n, k]^T, all three in g->dtype. */
void kt_cpu_blas_gemm(const kt_cpu_blas *g, void *y, const void *x, const void *w, int threads);

/* The tiled engine: per thread a packed block of x (mc x kc), a packed panel of w
 * (kc x nc) and an fp32 accumulator tile (mc x nc). The microkernel is 6 x 16 (AVX2+FMA) or,
 * where the CPU has AVX-512 (checked at run time), 6 x 64. The columns are cut into blocks of
 * whole nr-wide panels, at most nc wide: with split 'even', as many blocks as the panels need,
 * rounded up to a multiple of the thread count, with the panels spread evenly over them. */
typedef struct kt_cpu_tiled {
    int mc, nc, kc; /* rounded: mc to the microkernel's rows, nc to 64 columns; kc 0: auto */
    int kc_max;     /* the deepest panel a call may pack */
    int nr;         /* microkernel columns: 16 (AVX2) or 64 (AVX-512) */
    int prefetch;   /* groups of 8 rows of w prefetched ahead while packing; 0: none */
    int split;      /* 0: even, 1: blocks (nc wide, the last one short) */
    int pack_x;     /* 0: shared (x packed once per call into xbuf), 1: per block */
    int threads;
    float *buf; /* threads * per_thread floats */
    size_t per_thread;
    size_t bytes;
    float *xbuf; /* x packed once per call; NULL: every block packs its own */
    size_t x_floats;
} kt_cpu_tiled;

/* The engine's block sizes, microkernel, packing prefetch, column split and x packing as
 * variant params (mc, nc, kc, isa, prefetch, split, pack_x), shared by every variant built on
 * it; the defaults were chosen with tests/bench/bench_gemm.c. */
#define KT_CPU_TILED_N_PARAMS 7
extern const kt_param_def kt_cpu_tiled_params[KT_CPU_TILED_N_PARAMS];

/* Allocates per-thread buffers for 'threads' threads; 'params' holds the engine's params (NULL:
 * the defaults). KT_EUNSUPPORTED when isa 'avx512' is asked of a CPU without it. */
int kt_cpu_tiled_init(kt_cpu_tiled *t, kt_backend *b, int threads, const kt_param_value *params);
/* With pack_x shared, reserves the buffer x is packed into once per call, for calls of up to
 * 'm' rows of depth 'k' (at least 32 rows; at most 64 MiB, else nothing is reserved). Calls
 * without a reserved buffer large enough pack x block by block. */
int kt_cpu_tiled_reserve_x(kt_cpu_tiled *t, kt_backend *b, int64_t m, int64_t k);
/* Frees what init and reserve_x allocated; accepts a zeroed or partially initialised 't'. */
void kt_cpu_tiled_release(kt_cpu_tiled *t, kt_backend *b);
/* glu == 0: y[m, n] = x[m, k] w[n, k]^T.
 * glu != 0: w has 2n rows (gate 0..n-1, up n..2n-1) and y[m, n] = silu(x wg^T) * (x wu^T):
 * matching gate and up columns share a microkernel tile and the activation is applied to
 * the fp32 accumulators before the only store. x, w, y in 'dtype'; 'threads' <= t->threads. */
void kt_cpu_tiled_gemm(const kt_cpu_tiled *t, void *y, const void *x, const void *w, kt_dtype dtype,
                       int64_t m, int64_t n, int64_t k, int glu, int threads);

#ifdef KT_HAVE_ONEDNN
/* oneDNN matmul on storage-typed operands (gemm_onednn.c): the primitive and its user-managed
 * scratchpad are made once by kt_cpu_dnnl_init (the scratchpad through the backend, so it is
 * counted); a call binds x, w, y and executes. KT_EUNSUPPORTED when oneDNN has no
 * implementation for the type on this CPU. */
typedef struct kt_cpu_dnnl {
    struct dnnl_engine *engine;
    struct dnnl_stream *stream;
    struct dnnl_primitive_desc *pd;
    struct dnnl_primitive *prim;
    struct dnnl_memory *mem[4]; /* x, w, y, scratchpad */
    void *pad;
    size_t pad_bytes;
    char impl[64]; /* oneDNN's implementation name, e.g. "brg:avx512_core_bf16" */
} kt_cpu_dnnl;

int kt_cpu_dnnl_init(kt_cpu_dnnl *g, kt_backend *b, kt_dtype dtype, int64_t m, int64_t n,
                     int64_t k);
/* Whether oneDNN has a matmul of this type and shape on this CPU: KT_OK, or the error init would
 * give (KT_EUNSUPPORTED for fp16 on a CPU without its ISA), without making the primitive. */
int kt_cpu_dnnl_check(kt_dtype dtype, int64_t m, int64_t n, int64_t k);
/* Frees what init made; accepts a zeroed or partially initialised 'g'. */
void kt_cpu_dnnl_release(kt_cpu_dnnl *g, kt_backend *b);
/* y[m, n] = x[m, k] w[n, k]^T, all three in the storage type given to init. */
int kt_cpu_dnnl_gemm(const kt_cpu_dnnl *g, void *y, const void *x, const void *w, int threads);
#endif

#endif
