/* ffd_quant.h - the FFD key cache format (arXiv 2609.00097) and its float64 same-policy
 * reference, in plain C so the CPU variant, the tests and a CUDA variant's host-side checks
 * share one definition.
 *
 * Keys [B, Hkv, T, d] are cut into n_full = T / block full blocks; the last T % block tokens
 * (the block still filling in a real server) stay unquantised. Per block and channel:
 *   scale = max(max|k| / 1.5, 1e-8)
 *   code  = clamp(round_half_even(k / scale + 1.5), 0, 3)      (fp32 arithmetic)
 *   residual = fp8_e4m3(fmaf(-(code - 1.5), scale, k))        (k - dequant, one rounding)
 * and a refined key is (code - 1.5) * scale + residual.
 *
 * Layout, each array indexed by (b, kv head) first:
 *   codes    uint8 [B][Hkv][n_full * block][d / 4]  channel 4i+m in bits 2m..2m+1 of byte i
 *   scales   float [B][Hkv][n_full][d]
 *   residual uint8 [B][Hkv][n_full * block][d]      fp8 e4m3, saturated to +-448 (not NaN) */
#ifndef KT_FFD_QUANT_H
#define KT_FFD_QUANT_H

#include "kernel.h"

#include <stddef.h>
#include <stdint.h>

/* FFD's default threshold (log2 units): the ffd variants' 'delta' and every param that passes a
 * delta through to it (decoder_layer's 'attention.delta') default to this one constant. Not the
 * paper's 5: on llm caches some input sets spread a head's attention over many tokens each below
 * 2^-5 of the pseudo-max, and delta 5 then drops 5-10% of the mass (rel_l2 0.089 on
 * llama-3.1-8b's heads at 32K, input set 2). At 9 the worst of three input sets was 0.0017 and
 * the kept fraction rose from 0.153 to 0.154 (docs/cpu-kernels.md). */
#define KT_FFD_DEFAULT_DELTA 9.0

/* FFD's default block (tokens) on the CPU: the ffd variant's 'block' and decoder_layer's
 * 'attention.block'. Not the paper's 128: at 64 the kept fraction on llm caches falls from
 * 0.14-0.17 to 0.08-0.09, halving the kept blocks' K and V reads, while selection's per-block
 * weight setup (now a third of the int8 scan's time) doubles; on the 5 catalog shapes measured
 * at 32K that was 1.05-1.16x faster in two interleaved runs, and rel_l2 unchanged
 * (docs/cpu-kernels.md). */
#define KT_FFD_DEFAULT_BLOCK 64

typedef struct kt_ffd_cache {
    int64_t batch, kv_heads, context, head_dim;
    int64_t block;  /* tokens per block */
    int64_t n_full; /* full (quantised) blocks per (b, kv head): context / block */
    uint8_t *codes;
    float *scales;
    uint8_t *residual;
} kt_ffd_cache;

/* Fills the shape fields of 'c' (pointers untouched); KT_EINVAL when head_dim is not a
 * multiple of 4 or a size is not positive. */
int kt_ffd_cache_shape(kt_ffd_cache *c, int64_t batch, int64_t kv_heads, int64_t context,
                       int64_t head_dim, int64_t block);
size_t kt_ffd_codes_bytes(const kt_ffd_cache *c);
size_t kt_ffd_scales_bytes(const kt_ffd_cache *c);
size_t kt_ffd_residual_bytes(const kt_ffd_cache *c);

/* The per-channel scale of a block whose largest magnitude is 'max_abs'. */
float kt_ffd_scale(float max_abs);
/* The 2-bit code of 'k' under 'scale' (0..3, ties to even; 0 for NaN). */
int kt_ffd_code(float k, float scale);
/* Code 'c' (0..3) of channel 'channel' in a packed row of codes. */
static inline int kt_ffd_code_at(const uint8_t *row, int64_t channel)
{
    return (row[channel >> 2] >> (2 * (channel & 3))) & 3;
}

/* Quantises one block: 'tokens' key rows of 'head_dim' values in storage type 'dtype'
 * (row stride head_dim) into 'codes' (tokens x head_dim/4), 'scales' (head_dim) and
 * 'residual' (tokens x head_dim). */
void kt_ffd_quantize_block(uint8_t *codes, float *scales, uint8_t *residual, const void *keys,
                           kt_dtype dtype, int64_t tokens, int64_t head_dim);

/* Quantises the full blocks of 'keys' [B,Hkv,T,d] into the arrays of 'c' (allocated by the
 * caller to the sizes above). Parallel over blocks when built with OpenMP. */
void kt_ffd_quantize_cache(kt_ffd_cache *c, const void *keys, kt_dtype dtype);

/* The FFD policy computed in float64 from a quantised cache: per (b, kv head) the pseudo-max
 * of each query head (largest approximate score over block 0 and the last full block, scores
 * in log2 units q.k / sqrt(d) / ln 2 with k = (code - 1.5) * scale), the kept blocks (any
 * head of the group with an approximate score >= pseudo-max - 'delta_log2'), then softmax
 * attention over the kept blocks with refined keys (dequant + residual) and over the tail
 * with the stored keys, all in double.
 *   out    [B, H, d] double
 *   kept   NULL, or [B][Hkv][n_full] flags (1 kept)
 *   margin NULL, or the smallest |max excess of a block over its threshold| (log2 units):
 *          how far the closest decision is from flipping; +inf when there are no blocks
 * Returns the number of kept blocks, or a negative code. */
int64_t kt_ffd_reference(double *out, uint8_t *kept, double *margin, const kt_ffd_cache *c,
                         const void *q, const void *keys, const void *values, kt_dtype dtype,
                         int64_t heads, double delta_log2);

#endif
