/* attention_common.h - private to the CPU attention variants: the pieces of split-KV flash
 * decoding they share (AVX2 + FMA + F16C, which -march=x86-64-v3 provides, and AVX-512 paths
 * in attention_avx512.c behind KT_ATTN_AVX512 target attributes, chosen at run time).
 *
 * Scores are kept in log2 units (q is pre-multiplied by log2(e) / sqrt(d)) so the online
 * softmax uses exp2. Work is cut into tasks (b, kv head, split); a task runs every query head
 * of its GQA group over its tokens in chunks of KT_ATTN_CHUNK, so K and V are read once per
 * group, and leaves one partial (m, l, acc[d]) per query head. Partials are merged in split
 * order by log-sum-exp, so results depend neither on the thread count nor on the batch. */
#ifndef KT_ATTENTION_COMMON_H
#define KT_ATTENTION_COMMON_H

#include "../kernel.h"

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#define KT_ATTN_CHUNK        16   /* tokens per online-softmax step */
#define KT_ATTN_MAX_HEAD_DIM 1024 /* largest head_dim the CPU kernels accept */
/* Chunks ahead that dense ranges prefetch: a 16-token bf16 chunk of d = 128 is one 4 KiB page,
 * and the hardware prefetchers stop at page boundaries. */
#define KT_ATTN_PREFETCH_CHUNKS 2

/* Functions compiled for AVX-512 (F, BW, DQ, VL); called only where kt_attn_isa_resolve said
 * the CPU has them. */
#define KT_ATTN_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma,f16c")))

/* The 'isa' variant param both CPU attention variants share. */
enum { KT_ATTN_ISA_AUTO, KT_ATTN_ISA_AVX2, KT_ATTN_ISA_AVX512 };
#define KT_ATTN_ISA_PARAM                                                                          \
    {                                                                                              \
        "isa", KT_PARAM_ENUM, KT_ATTN_ISA_AUTO, 0, 0, "auto|avx2|avx512",                          \
            "AVX-512 (16 lanes) where the CPU has it and head_dim % 32 == 0 (auto), or AVX2"       \
    }

/* Sets *avx512 from the 'isa' param value: 1 for avx512, or auto on a CPU with AVX-512 F, BW, DQ
 * and VL; KT_EUNSUPPORTED when avx512 is asked of a CPU without them. */
int kt_attn_isa_resolve(int *avx512, int isa);

/* Channel orders of converted keys and of the accumulators (kt_attn_task.perm). */
enum {
    KT_ATTN_ORDER_NATURAL,
    KT_ATTN_ORDER_PERM16,    /* AVX2 bf16, d % 16 == 0: see perm16 in attention_common.c */
    KT_ATTN_ORDER_EVENODD32, /* AVX-512 bf16: per 32 channels the 16 even ones, then the odd */
    KT_ATTN_ORDER_PAIR32     /* bf16 P V by dot products: per 32 channels 0-3, 8-11, 16-19,
                                24-27, then 4-7, 12-15, 20-23, 28-31 (vpunpck{l,h}wd order) */
};
/* The channel at position 'i' of channel order 'order'. */
static inline int64_t kt_attn_order_channel(int order, int64_t i)
{
    static const int perm16[16] = {0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15};
    if (order == KT_ATTN_ORDER_PERM16)
        return i - i % 16 + perm16[i % 16];
    if (order == KT_ATTN_ORDER_EVENODD32) {
        int64_t j = i % 32;
        return i - j + (j < 16 ? 2 * j : 2 * (j - 16) + 1);
    }
    if (order == KT_ATTN_ORDER_PAIR32) {
        int64_t j = i % 32, h = j / 16, k = j % 16;
        return i - j + 8 * (k / 4) + 4 * h + k % 4;
    }
    return i;
}

/* The online-softmax state of the g query heads of one task, and its scratch. Every array is
 * 32-byte aligned; 'kbuf' holds KT_ATTN_CHUNK fp32 key rows of d values. */
typedef struct kt_attn_task {
    int64_t g, d;
    int avx512;  /* the CPU may run the AVX-512 paths (set after kt_attn_task_bind) */
    int wide;    /* this task runs them: avx512 and d % 32 == 0 (set by kt_attn_task_begin) */
    float *qs;   /* [g][d] query in log2 units */
    float *qk;   /* [g][d] the same in the channel order of converted keys ('perm') */
    float *ql;   /* qk in head lanes, laid out by kt_attn_dense_range for its AVX-512 scores:
                    [tiles][d / s][16] */
    int perm;    /* KT_ATTN_ORDER_* of converted keys, of values as read, and of 'acc' */
    float *m;    /* [g] running max */
    float *l;    /* [g] running sum of 2^(s - m) */
    float *acc;  /* [g][d] running sum of 2^(s - m) v */
    float *p;    /* [g][KT_ATTN_CHUNK] scores, then weights, of the current chunk */
    float *kbuf; /* [KT_ATTN_CHUNK][d] */
    void *extra; /* the variant's own per-thread scratch (kt_attn_work_alloc 'extra_bytes') */
} kt_attn_task;

/* Prefetches still to issue, a few lines at a time from inside a step's loops: the lines of the
 * chunk ahead are spread over the scores (its K rows) and over P V (its V rows), a tick per
 * inner iteration, so they never fill the L1 miss buffers in one burst and the loads of the
 * current chunk never queue behind them (kt_attn_spread_stage says where it is used). */
typedef struct kt_attn_trickle {
    const char *next, *end; /* the lines not yet prefetched (next == end: none) */
    int per_tick;           /* lines a tick prefetches */
} kt_attn_trickle;

/* A trickle over the 'bytes' at 'p' (none when p is NULL); kt_attn_trickle_pace sets its rate. */
static inline kt_attn_trickle kt_attn_trickle_of(const void *p, size_t bytes)
{
    kt_attn_trickle tr = {(const char *)p, p ? (const char *)p + bytes : (const char *)p, 0};
    return tr;
}

/* Spreads what is left of 'tr' over the 'ticks' ticks the caller's loops are about to make. */
static inline void kt_attn_trickle_pace(kt_attn_trickle *tr, int64_t ticks)
{
    int64_t lines = (tr->end - tr->next + 63) / 64;
    tr->per_tick = (int)(ticks > 0 ? (lines + ticks - 1) / ticks : lines);
}

static inline __attribute__((always_inline)) void kt_attn_trickle_tick(kt_attn_trickle *tr)
{
    for (int l = 0; l < tr->per_tick && tr->next < tr->end; l++, tr->next += 64)
        _mm_prefetch(tr->next, _MM_HINT_T0);
}

/* A tick of 'lines' prefetches ('lines' a compile-time constant after inlining): one test per
 * tick instead of two per line. Where the caller's ticks times 'lines' is the chunk's line count
 * (a full chunk ahead), it prefetches exactly that chunk; a shorter one (the range's last) is
 * overrun by at most lines - 1 lines, which a prefetch may touch harmlessly (it never faults).
 * Warm (group 8, d = 128, K and V in L2, one thread) the step with its prefetches took 15-16.4 ns
 * a token this way against 18-22.5 with kt_attn_trickle_tick's loop, whose pointer update was
 * a chain through memory every line. */
static inline __attribute__((always_inline)) void kt_attn_trickle_tick_lines(kt_attn_trickle *tr,
                                                                             const int lines)
{
    if (tr->next < tr->end) {
        for (int l = 0; l < lines; l++)
            _mm_prefetch(tr->next + 64 * l, _MM_HINT_T0);
        tr->next += 64 * lines;
    }
}

/* Prefetches whatever 'tr' still holds. */
static inline void kt_attn_trickle_finish(kt_attn_trickle *tr)
{
    for (; tr->next < tr->end; tr->next += 64)
        _mm_prefetch(tr->next, _MM_HINT_T0);
}

/* Bytes of one thread's scratch for groups of 'g' heads of dimension 'd'. */
size_t kt_attn_scratch_bytes(int64_t g, int64_t d);
/* Carves 't' out of 'scratch' (kt_attn_scratch_bytes, 32-byte aligned). */
void kt_attn_task_bind(kt_attn_task *t, void *scratch, int64_t g, int64_t d);
/* Loads the g query heads of a group ('q' points at head 0 of the group, storage type 'dtype')
 * into t->qs in log2 units and resets m, l and acc. */
void kt_attn_task_begin(kt_attn_task *t, const void *q, kt_dtype dtype);

/* Converts 'rows' rows of d storage-typed values to fp32 'dst' and zero-fills the rows up to
 * KT_ATTN_CHUNK. d must be a multiple of 8; bf16 rows with d % 16 == 0 come out in perm16
 * order (see attention_common.c). The _avx512 form needs d % 32 == 0 and writes bf16 rows in
 * KT_ATTN_ORDER_EVENODD32. */
void kt_attn_rows_f32(float *dst, const void *src, kt_dtype dtype, int64_t rows, int64_t d);
void kt_attn_rows_f32_avx512(float *dst, const void *src, kt_dtype dtype, int64_t rows, int64_t d);

/* One online-softmax step over 'n' (1..KT_ATTN_CHUNK) tokens with fp32 keys 'k' (KT_ATTN_CHUNK
 * rows of d; rows past n are read but ignored, so they must be finite; in perm16 order when
 * 'k_perm') and 'n' value rows 'v' in storage type 'dtype' (converted as they are read). */
void kt_attn_step(kt_attn_task *t, const float *k, int k_perm, const void *v, kt_dtype dtype,
                  int n);
/* The same on AVX-512 (t->wide); kt_attn_step calls it. It is kt_attn_scores_avx512 (the
 * scores of the g heads into t->p, ticking 'tr' through its loops) followed by
 * kt_attn_softmax_pv_avx512. */
void kt_attn_scores_avx512(kt_attn_task *t, const float *k, int k_perm, kt_attn_trickle *tr);
void kt_attn_step_avx512(kt_attn_task *t, const float *k, int k_perm, const void *v, kt_dtype dtype,
                         int n);

/* The online-softmax update of one AVX-512 step (t->wide) whose scores, in log2 units, the
 * caller left in t->p ([g][KT_ATTN_CHUNK], lanes past 'n' ignored), for up to 16 heads at a
 * time: their maxima and sums come from one tree each (kt_attn_hreduce16) instead of a chain of
 * horizontal reductions per head. Rescales m, l and acc, and turns t->p into weights; with 'pb'
 * it also writes them rounded to bf16 (nearest even) to pb ([g][KT_ATTN_CHUNK]) and l adds the
 * rounded weights. */
void kt_attn_softmax_avx512(kt_attn_task *t, int n, uint16_t *pb);

/* The scores of the g heads against the chunk's 16 fp32 key rows 'k' (in t->perm's order, rows
 * past 'n' read but ignored) and the online-softmax update, on AVX-512 (t->wide): the scores in
 * head lanes from t->ql (attention_lanes.h, attention_f32_lanes.c), no reduction tree per head;
 * leaves the weights in t->p for kt_attn_pv_avx512. Ticks 'tr' through the scores. For groups
 * up to KT_LANES_F32_MAX_GROUP; larger ones take kt_attn_scores_avx512 and kt_attn_softmax_avx512.
 */
void kt_attn_scores_softmax_lanes(kt_attn_task *t, const float *k, int n, kt_attn_trickle *tr);

/* acc += t->p times the 'n' value rows 'v' (storage type 'dtype') on AVX-512 (t->wide), ticking
 * 'tr' through its loops: the P V half of kt_attn_softmax_pv_avx512. */
void kt_attn_pv_avx512(kt_attn_task *t, const void *v, kt_dtype dtype, int n, kt_attn_trickle *tr);

/* The online-softmax update and P V of one AVX-512 step (t->wide) whose scores, in log2 units,
 * the caller left in t->p ([g][KT_ATTN_CHUNK], lanes past 'n' ignored): rescales m, l and acc,
 * turns t->p into weights and adds them times the 'n' value rows 'v' to acc. The second half of
 * kt_attn_step_avx512, for score paths of their own (attention_dense_bf16.c). */
void kt_attn_softmax_pv_avx512(kt_attn_task *t, const void *v, kt_dtype dtype, int n,
                               kt_attn_trickle *tr);

/* Prefetches 'bytes' from 'p' into L1, one request per 64-byte line. */
void kt_attn_prefetch(const void *p, size_t bytes);

/* Prefetches the K and V rows ('row_bytes' each) of the chunk KT_ATTN_PREFETCH_CHUNKS ahead of
 * the chunk at token 's' of a range ending at 't1', if there is one. */
void kt_attn_prefetch_ahead(const void *k, const void *v, size_t row_bytes, int64_t s, int64_t t1);

/* Bytes of K and V a dense range prefetches ahead of its current chunk (kt_attn_spread), at
 * least one chunk: 8 KiB ran 1.1-1.2x faster than 32 KiB at 32K on llama-3.2-1b and
 * llama-3.1-70b heads (a task's first chunks go unprefetched, and far lines compete for L1), and
 * no slower than 16 KiB; with the trickle, 16 and 32 KiB were again slower. */
#define KT_ATTN_SPREAD_BYTES (8 << 10)
/* What a dense range prefetches of each of K and V of the chunk ahead when that chunk is larger
 * than KT_ATTN_SPREAD_BYTES per stream (fp32 rows of 1 KiB and more: 16 KiB of K and 16 of V).
 * The whole chunk ahead and the current one together are 64 KiB there, more than the 48 KiB L1,
 * and the prefetched lines evicted the current ones: fp32 group 2, d = 256 read at 0.73-0.78 of
 * the read pass with the whole chunk ahead, 0.88-0.98 with 2 KiB of it (0.91 with one line),
 * which leaves the rest of the stream to the hardware prefetchers. bf16 at d = 256 (8 KiB a
 * stream) and fp32 at d = 128 keep the whole chunk: capped at 4 KiB, fp32 group 8, d = 128 fell
 * from 0.87 to 0.74. */
#define KT_ATTN_SPREAD_LARGE_BYTES (2 << 10)

/* The chunk a range prefetches while it works on the current one. */
typedef struct kt_attn_spread {
    const char *k, *v; /* the chunk's first K and V rows, or NULL past the range */
    size_t bytes;      /* its K (and V) bytes */
} kt_attn_spread;
/* The chunk KT_ATTN_SPREAD_BYTES of K and V ahead of token 's' of a range ending at 't1' of 'k'
 * and 'v' with 'row_bytes' per row. */
kt_attn_spread kt_attn_spread_at(const void *k, const void *v, size_t row_bytes, int64_t s,
                                 int64_t t1);

/* The points of an AVX-512 dense step where it issues the prefetches of its kt_attn_spread. */
enum { KT_ATTN_BEFORE_SCORES, KT_ATTN_AFTER_SCORES, KT_ATTN_BEFORE_PV, KT_ATTN_AFTER_PV };
/* The prefetches of 'sp' due at 'stage' of a step: the K rows are
 * trickled through the scores and the V rows through P V (*tr; what a stage leaves is issued
 * after it). Up to commit 1fcd5a8, heads of d < 128 had them in quarters between the stages,
 * where the trickle was 3-7% slower; with the cheaper bf16 step it is faster there too
 * (docs/cpu-kernels.md). */
static inline void kt_attn_spread_stage(const kt_attn_spread *sp, int stage, kt_attn_trickle *tr)
{
    if (stage == KT_ATTN_AFTER_SCORES || stage == KT_ATTN_AFTER_PV)
        kt_attn_trickle_finish(tr);
    if (stage == KT_ATTN_BEFORE_SCORES || stage == KT_ATTN_BEFORE_PV)
        *tr = kt_attn_trickle_of(stage == KT_ATTN_BEFORE_SCORES ? sp->k : sp->v, sp->bytes);
}

/* Dense attention of a task over tokens [t0, t1) of one KV head ('k' and 'v' point at its
 * token 0, storage type 'dtype'), chunk by chunk from t0. */
void kt_attn_dense_range(kt_attn_task *t, const void *k, const void *v, kt_dtype dtype, int64_t t0,
                         int64_t t1);

/* Tokens per split-KV task at 'context' tokens: 'split', doubled while the context has more than
 * 'max_splits' splits (0: never). A task's start costs the streams it begins (prefetches that
 * start cold, hardware prefetchers that train again) and its partials: at 16K and 32K, dense's
 * splits of 2048 and 4096 ran 8-18% faster than 1024 (interleaved, cold), and FFD's ran
 * 1.15-1.3x faster (its tasks begin cold twice: the codes, then the kept blocks); 8 splits per
 * KV head leave tasks enough for two threads to balance, also when one of them loses its core
 * for a while. Set by the context alone, so results do not depend on threads or batch. */
int64_t kt_attn_split_tokens(int64_t split, int64_t max_splits, int64_t context);

/* Partials: per (b, h, split) a row of kt_attn_part_stride(d) floats: acc[d], m, l. */
static inline int64_t kt_attn_part_stride(int64_t d)
{
    return d + 8;
}
/* Writes the task's state as the partials of query heads 'h0'..'h0+g-1' of batch row 'b':
 * part[((b * heads + h) * n_splits + split) * stride]. */
void kt_attn_task_store(const kt_attn_task *t, float *part, int64_t b, int64_t heads, int64_t h0,
                        int64_t n_splits, int64_t split);
/* Merges the n_splits partials of every (b, h) into out[B, H, d] (storage type 'dtype'). */
void kt_attn_merge(void *out, kt_dtype dtype, const float *part, int64_t rows, int64_t n_splits,
                   int64_t d, int threads);

/* The sums of eight vectors, one per lane (lane i = sum of the lanes of 'a'i); a fixed order. */
static inline __m256 kt_attn_hsum8(__m256 a0, __m256 a1, __m256 a2, __m256 a3, __m256 a4, __m256 a5,
                                   __m256 a6, __m256 a7)
{
    __m256 t01 = _mm256_hadd_ps(a0, a1), t23 = _mm256_hadd_ps(a2, a3);
    __m256 t45 = _mm256_hadd_ps(a4, a5), t67 = _mm256_hadd_ps(a6, a7);
    __m256 lo = _mm256_hadd_ps(t01, t23), hi = _mm256_hadd_ps(t45, t67);
    return _mm256_add_ps(_mm256_permute2f128_ps(lo, hi, 0x20),
                         _mm256_permute2f128_ps(lo, hi, 0x31));
}

/* Lane i of the result: the sum (or, where 'max', a compile-time constant after inlining, the
 * maximum) of the lanes of a[i], in a fixed order. Each level adds a blend of two vectors to one
 * shuffle of them, where two shuffles would do: shuffles are the scarce port, and this tree is the
 * cost of a score on row-major keys. */
static inline KT_ATTN_AVX512 __attribute__((always_inline)) __m512
kt_attn_hreduce16(const __m512 *a, const int max)
{
#define KT_ATTN_R(x, y) (max ? _mm512_max_ps((x), (y)) : _mm512_add_ps((x), (y)))
    const __m512i pairs =
        _mm512_setr_epi32(4, 5, 6, 7, 16, 17, 18, 19, 12, 13, 14, 15, 24, 25, 26, 27);
    __m512 b[8], c[4], d[2];
    /* 128-bit lanes: [x.0 + x.2, x.1 + x.3, y.2 + y.0, y.3 + y.1] */
    for (int i = 0; i < 8; i++)
        b[i] = KT_ATTN_R(_mm512_mask_blend_ps(0xff00, a[i], a[i + 8]),
                         _mm512_shuffle_f32x4(a[i], a[i + 8], _MM_SHUFFLE(1, 0, 3, 2)));
    /* 128-bit lanes: [x.0 + x.1, y.0 + y.1, x.2 + x.3, y.2 + y.3] */
    for (int i = 0; i < 4; i++)
        c[i] = KT_ATTN_R(_mm512_mask_blend_ps(0xf0f0, b[i], b[i + 4]),
                         _mm512_permutex2var_ps(b[i], pairs, b[i + 4]));
    /* within each 128-bit lane: [x0 + x2, x1 + x3, y2 + y0, y3 + y1] */
    for (int i = 0; i < 2; i++)
        d[i] = KT_ATTN_R(_mm512_mask_blend_ps(0xcccc, c[i], c[i + 2]),
                         _mm512_shuffle_ps(c[i], c[i + 2], _MM_SHUFFLE(1, 0, 3, 2)));
    /* within each 128-bit lane: [x0 + x1, y0 + y1, x2 + x3, y2 + y3] */
    const __m512i odd =
        _mm512_setr_epi32(1, 16, 3, 18, 5, 20, 7, 22, 9, 24, 11, 26, 13, 28, 15, 30);
    __m512 x = _mm512_mask_blend_ps(0xaaaa, d[0], d[1]);
    __m512 y = _mm512_permutex2var_ps(d[0], odd, d[1]);
    return KT_ATTN_R(x, y);
#undef KT_ATTN_R
}
/* The sums of sixteen vectors, one per lane: lane i = the sum of the lanes of a[i]. */
static inline KT_ATTN_AVX512 __attribute__((always_inline)) __m512 kt_attn_hsum16(const __m512 *a)
{
    return kt_attn_hreduce16(a, 0);
}

/* What a variant allocates in prepare for split-KV tasks: the partials and per-thread scratch. */
typedef struct kt_attn_work {
    int64_t n_splits;
    int threads;
    int avx512; /* tasks may take the AVX-512 paths (kt_attn_isa_resolve) */
    float *part;
    size_t part_bytes;
    char *scratch; /* threads x scratch_stride bytes */
    size_t scratch_stride;
    size_t extra_offset; /* of kt_attn_task.extra within a thread's scratch */
} kt_attn_work;

/* The body of one task: attends the tokens of split 'split' of KV head 'kh' of batch row 'b'
 * into 't' (already begun with the group's queries). */
typedef void (*kt_attn_task_fn)(kt_attn_task *t, void *ctx, int64_t b, int64_t kh, int64_t split);

/* Allocates through 'backend' the partials of 'n_splits' splits and the scratch of 'threads'
 * threads, each with 'extra_bytes' of the variant's own. */
int kt_attn_work_alloc(kt_attn_work *w, kt_backend *backend, const kt_problem *p, int64_t n_splits,
                       int threads, size_t extra_bytes);
/* Binds thread 'tid''s task over the work's scratch (kt_attn_task_bind, extra, avx512). */
void kt_attn_work_task(kt_attn_task *t, const kt_attn_work *w, int tid, int64_t g, int64_t d);
void kt_attn_work_free(kt_attn_work *w, kt_backend *backend);
/* Runs 'fn' for every (b, kv head, split) on min(call->threads, w->threads) OpenMP threads,
 * then merges the partials into call->outputs[0]. */
void kt_attn_work_run(kt_attn_work *w, const kt_call *call, kt_attn_task_fn fn, void *ctx);
/* The task part of kt_attn_work_run alone (the caller merges with kt_attn_merge). */
void kt_attn_work_tasks(kt_attn_work *w, const kt_call *call, kt_attn_task_fn fn, void *ctx);

/* Coefficients of the Cephes exp2f polynomial on [-0.5, 0.5] (highest degree first, then 1),
 * shared by the AVX2 and AVX-512 exp2 so both paths compute the same softmax. */
#define KT_EXP2_C5 1.535336188319500e-4f
#define KT_EXP2_C4 1.339887440266574e-3f
#define KT_EXP2_C3 9.618437357674640e-3f
#define KT_EXP2_C2 5.550332471162809e-2f
#define KT_EXP2_C1 2.402264791363012e-1f
#define KT_EXP2_C0 6.931472028550421e-1f

/* 2^x as exp2_ps in attention_common.c, 16 lanes (x below -126 gives 2^-126). */
static inline KT_ATTN_AVX512 __attribute__((always_inline)) __m512 kt_attn_exp2_512(__m512 x)
{
    x = _mm512_max_ps(x, _mm512_set1_ps(-126.0f));
    __m512 fi = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 f = _mm512_sub_ps(x, fi);
    __m512 p = _mm512_set1_ps(KT_EXP2_C5);
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(KT_EXP2_C4));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(KT_EXP2_C3));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(KT_EXP2_C2));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(KT_EXP2_C1));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(KT_EXP2_C0));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
    __m512i e =
        _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(fi), _mm512_set1_epi32(127)), 23);
    return _mm512_mul_ps(p, _mm512_castsi512_ps(e));
}

#endif
