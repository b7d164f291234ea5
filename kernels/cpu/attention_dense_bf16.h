/* attention_dense_bf16.h - private to the CPU attention variants: dense decode over bf16 keys
 * and values with AVX-512 BF16 dot products (attention_dense_bf16.c: the scores alone;
 * attention_dense_bf16_pv.c: scores in head lanes and P V). */
#ifndef KT_ATTENTION_DENSE_BF16_H
#define KT_ATTENTION_DENSE_BF16_H

#include "attention_common.h"

/* The target of the functions that use AVX-512 BF16. */
#define KT_ATTN_AVX512BF16                                                                         \
    __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,fma,f16c")))

/* Whether this CPU has AVX-512 BF16 (vdpbf16ps, vcvtne2ps2bf16). */
int kt_attn_bf16_dot_supported(void);

/* Bytes of kt_attn_task.extra kt_attn_dense_range_bf16_dot and the _bf16_pv functions need for
 * groups of 'g' heads of dimension 'd'. */
size_t kt_attn_bf16_dot_extra_bytes(int64_t g, int64_t d);

/* The 'n' rows of d bf16 at 'src', or, when n < KT_ATTN_CHUNK, a copy in 'tail' padded with
 * zero rows to a whole chunk (rows past a range may lie past the tensor). */
const uint16_t *kt_attn_bf16_chunk_rows(uint16_t *tail, const uint16_t *src, int n, int64_t d);

/* kt_attn_dense_range for bf16 'k' and 'v' with scores from vdpbf16ps against the task's query
 * rounded to bf16. Needs t->wide (AVX-512, d % 32 == 0), kt_attn_bf16_dot_supported() and
 * kt_attn_bf16_dot_extra_bytes of t->extra. */
void kt_attn_dense_range_bf16_dot(kt_attn_task *t, const uint16_t *k, const uint16_t *v, int64_t t0,
                                  int64_t t1);

/* The same with the scores in head lanes (attention_lanes.h) and P V by vdpbf16ps as well: the
 * chunk's weights rounded to bf16, the value rows read in pairs; the task's acc is left in
 * KT_ATTN_ORDER_PAIR32, so every range of a task must come here. Same needs as
 * kt_attn_dense_range_bf16_dot. */
void kt_attn_dense_range_bf16_pv(kt_attn_task *t, const uint16_t *k, const uint16_t *v, int64_t t0,
                                 int64_t t1);

/* A stream of whole blocks of one KV head and a dense tail: blocks list[0..kept) of 'block'
 * tokens (indices from token 0), then tokens [tail0, tail1) (none when equal). */
typedef struct kt_attn_blocks {
    const int64_t *list;
    int64_t kept, block, tail0, tail1;
} kt_attn_blocks;

/* Bytes of K and V kt_attn_dense_blocks_bf16_pv prefetches ahead of its current chunk in the
 * stream of kept blocks (no hardware prefetcher knows where the next block starts). */
#define KT_ATTN_BLOCKS_AHEAD_BYTES (4 << 10)

/* kt_attn_dense_range_bf16_pv over the blocks and tail of 'b', as one stream: the query is
 * rounded once, and the prefetches run KT_ATTN_BLOCKS_AHEAD_BYTES ahead across block
 * boundaries. Same needs, and the same channel order left in acc. */
void kt_attn_dense_blocks_bf16_pv(kt_attn_task *t, const uint16_t *k, const uint16_t *v,
                                  const kt_attn_blocks *b);
#endif
