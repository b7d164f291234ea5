/* ffd_check.h - what the CUDA FFD variant must produce on given inputs, computed on the CPU:
 * the host-quantised cache (the device one must equal it bit for bit), kt_ffd_reference's
 * output and decisions, the exact approximate block maxima in float64 and how far the
 * device scan may be from them (ffd_scan.h's bound for the tensor-core scan, fp32 rounding
 * for the fp32 scan), and so which decisions that error could flip ("ambiguous").
 * Used by tests/gpu/test_cuda_kernels.c, and by tests/unit/test_cuda_mirror.c to check on any
 * machine that the GPU test's cases have no ambiguous decision. */
#ifndef KT_TEST_FFD_CHECK_H
#define KT_TEST_FFD_CHECK_H

#include "ffd_quant.h"
#include "cuda/ffd_scan.h"
#include "kernel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct kt_ffd_case {
    int64_t heads, kv_heads, head_dim, batch, context, block, split_blocks;
    double delta;
} kt_ffd_case;

/* The GPU test's FFD cases, on llm caches (sinks, heavy hitters, recency) so blocks are
 * dropped; split_blocks 1 and 2 so whole splits are dropped; tails; GQA 1 to 8; head_dim 64,
 * 128, 256 (tensor-core scan) and 96 (fp32 scan). test_cuda_mirror checks on the CPU that
 * none has an ambiguous decision, and that each drops some whole split. */
static const kt_ffd_case kt_ffd_gpu_cases[] = {
    {32, 8, 64, 1, 4096 + 37, 128, 2, 5}, {14, 2, 128, 2, 2000, 128, 1, 5},
    {16, 2, 128, 1, 1024, 64, 2, 7},      {8, 1, 256, 1, 1500, 128, 2, 5},
    {4, 4, 128, 2, 3000, 128, 1, 5},      {6, 2, 96, 1, 1000, 128, 2, 5},
};
#define KT_FFD_GPU_CASES (sizeof(kt_ffd_gpu_cases) / sizeof(kt_ffd_gpu_cases[0]))
#define KT_FFD_GPU_SEED  21

typedef struct kt_ffd_expect {
    kt_ffd_cache cache; /* host-quantised; arrays owned */
    int64_t heads, group;
    double *out;       /* kt_ffd_reference [B, H, d] */
    uint8_t *kept;     /* kt_ffd_reference decisions [B][Hkv][n_full] */
    double margin;     /* kt_ffd_reference's closest decision */
    double *block_max; /* exact approximate block maxima [B][Hkv][n_full][G], log2 units */
    double *bound;     /* the scan's largest error on each, same layout */
    int64_t n_kept, ambiguous;
    int64_t empty_splits; /* of kt_ffd_reference's decisions, for the case's split_blocks */
} kt_ffd_expect;

static inline void kt_ffd_expect_free(kt_ffd_expect *e)
{
    free(e->cache.codes);
    free(e->cache.scales);
    free(e->cache.residual);
    free(e->out);
    free(e->kept);
    free(e->block_max);
    free(e->bound);
    memset(e, 0, sizeof(*e));
}

/* Block maxima and scan bounds of (b, kv head) 'bg', block 'blk', for query 'q'. */
static inline void kt_ffd_expect_block(kt_ffd_expect *e, const void *q, kt_dtype dtype, int64_t bg,
                                       int64_t blk, int scan_fp32)
{
    const kt_ffd_cache *c = &e->cache;
    const int64_t d = c->head_dim, b = bg / c->kv_heads, kh = bg % c->kv_heads;
    const int64_t i = bg * c->n_full + blk;
    const float scale_log2 = (float)(1.0 / sqrt((double)d) / log(2.0)); /* as the kernel */
    const double qscale = 1.0 / sqrt((double)d) / log(2.0);             /* as the reference */
    for (int64_t h = 0; h < e->group; h++) {
        size_t q0 = (size_t)(((b * e->heads) + kh * e->group + h) * d);
        float amax = 0.0f;
        double wsum = 0.0;
        for (int64_t ch = 0; ch < d; ch++) {
            float w =
                (kt_dtype_load(q, dtype, q0 + (size_t)ch) * scale_log2) * c->scales[i * d + ch];
            amax = fmaxf(amax, fabsf(w));
            wsum += fabs((double)w);
        }
        double best = -INFINITY;
        for (int64_t r = 0; r < c->block; r++) {
            const uint8_t *row = c->codes + (i * c->block + r) * (d / 4);
            double s = 0;
            for (int64_t ch = 0; ch < d; ch++)
                s += qscale * kt_dtype_load(q, dtype, q0 + (size_t)ch) *
                     ((double)kt_ffd_code_at(row, ch) - 1.5) * (double)c->scales[i * d + ch];
            best = fmax(best, s);
        }
        e->block_max[i * e->group + h] = best;
        e->bound[i * e->group + h] =
            scan_fp32 ? 1.5 * wsum * (double)(d + 8) * 1.2e-7 + 1e-6
                      : kt_ffd_scan_error_bound((int)d, kt_ffd_weight_step(amax), amax) + 1e-6;
    }
}

/* Fills 'e' for case 'fc' with inputs q [B,H,d], k and v [B,Hkv,T,d] in 'dtype', for the
 * tensor-core scan's error bound or (scan_fp32) the fp32 scan's; 0 or a negative code. */
static inline int kt_ffd_expect_compute(kt_ffd_expect *e, const kt_ffd_case *fc, const void *q,
                                        const void *k, const void *v, kt_dtype dtype, int scan_fp32)
{
    const int64_t batch = fc->batch, heads = fc->heads, kv_heads = fc->kv_heads;
    const int64_t d = fc->head_dim, context = fc->context, block = fc->block;
    const double delta = fc->delta;
    memset(e, 0, sizeof(*e));
    kt_ffd_cache *c = &e->cache;
    int rc = kt_ffd_cache_shape(c, batch, kv_heads, context, d, block);
    if (rc < 0)
        return rc;
    e->heads = heads;
    e->group = heads / kv_heads;
    const int64_t n_blocks = batch * kv_heads * c->n_full;
    c->codes = malloc(kt_ffd_codes_bytes(c) + 1);
    c->scales = malloc(kt_ffd_scales_bytes(c) + 1);
    c->residual = malloc(kt_ffd_residual_bytes(c) + 1);
    e->out = malloc(sizeof(double) * (size_t)(batch * heads * d));
    e->kept = malloc((size_t)n_blocks + 1);
    e->block_max = malloc(sizeof(double) * (size_t)(n_blocks * e->group + 1));
    e->bound = malloc(sizeof(double) * (size_t)(n_blocks * e->group + 1));
    if (!c->codes || !c->scales || !c->residual || !e->out || !e->kept || !e->block_max ||
        !e->bound)
        return kt_error_code(KT_ENOMEM, "out of memory");
    kt_ffd_quantize_cache(c, k, dtype);
    e->n_kept = kt_ffd_reference(e->out, e->kept, &e->margin, c, q, k, v, dtype, heads, delta);
    if (e->n_kept < 0)
        return (int)e->n_kept;
    for (int64_t bg = 0; bg < batch * kv_heads; bg++) {
        for (int64_t blk = 0; blk < c->n_full; blk++)
            kt_ffd_expect_block(e, q, dtype, bg, blk, scan_fp32);
        /* a decision is ambiguous when the scan's error on the block and on the pseudo-max
         * blocks could carry its excess across zero */
        const double *bm = e->block_max + bg * c->n_full * e->group;
        const double *bd = e->bound + bg * c->n_full * e->group;
        for (int64_t blk = 0; blk < c->n_full; blk++) {
            double excess = -INFINITY, err = 0;
            for (int64_t h = 0; h < e->group; h++) {
                const int64_t last = (c->n_full - 1) * e->group + h;
                double pm = fmax(bm[h], bm[last]);
                excess = fmax(excess, bm[blk * e->group + h] - (pm - delta));
                err = fmax(err, bd[blk * e->group + h] + fmax(bd[h], bd[last]) +
                                    1e-6 * (fabs(pm) + delta));
            }
            e->ambiguous += fabs(excess) <= err;
        }
        for (int64_t s0 = 0; s0 < c->n_full; s0 += fc->split_blocks) {
            int any = 0;
            for (int64_t j = s0; j < s0 + fc->split_blocks && j < c->n_full; j++)
                any |= e->kept[bg * c->n_full + j];
            e->empty_splits += !any;
        }
    }
    return KT_OK;
}

#endif
