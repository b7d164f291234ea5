/* attention_common.c - split-KV flash decoding pieces shared by the CPU attention variants. */
#include "attention_common.h"
#include "attention_lanes.h"
#include "simd_reduce.h"
#include "pool.h"

#include <math.h>
#include <string.h>

#define LOG2E 1.4426950408889634

static size_t align32(size_t bytes)
{
    return (bytes + 31) / 32 * 32;
}

/* bf16 keys and values are widened 16 channels at a time by interleaving with zeros, which
 * puts channels [0-3, 8-11] in one vector and [4-7, 12-15] in the other: position i of a
 * 16-channel group holds channel perm16[i] (KT_ATTN_ORDER_PERM16). Keys in that order meet a
 * query in that order (t->qk); accumulators stay in that order until kt_attn_task_store. */

int kt_attn_isa_resolve(int *avx512, int isa)
{
    int has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
              __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
    if (isa == KT_ATTN_ISA_AVX512 && !has)
        return kt_error_code(KT_EUNSUPPORTED, "isa 'avx512': this CPU has no AVX-512");
    *avx512 = isa != KT_ATTN_ISA_AVX2 && has;
    return KT_OK;
}

size_t kt_attn_scratch_bytes(int64_t g, int64_t d)
{
    size_t f = sizeof(float);
    return align32((size_t)(g * d) * f) * 3 + align32((size_t)((g + 7) * d) * f) +
           align32((size_t)g * f) * 2 + align32((size_t)(g * KT_ATTN_CHUNK) * f) +
           align32((size_t)(KT_ATTN_CHUNK * d) * f);
}

void kt_attn_task_bind(kt_attn_task *t, void *scratch, int64_t g, int64_t d)
{
    char *p = scratch;
    size_t f = sizeof(float);
    t->g = g;
    t->d = d;
    t->qs = (float *)p, p += align32((size_t)(g * d) * f);
    t->qk = (float *)p, p += align32((size_t)(g * d) * f);
    t->ql = (float *)p, p += align32((size_t)((g + 7) * d) * f);
    t->acc = (float *)p, p += align32((size_t)(g * d) * f);
    t->m = (float *)p, p += align32((size_t)g * f);
    t->l = (float *)p, p += align32((size_t)g * f);
    t->p = (float *)p, p += align32((size_t)(g * KT_ATTN_CHUNK) * f);
    t->kbuf = (float *)p;
}

/* t->qk in head lanes (attention_lanes.h): lane h s + i of step j of tile k holds channel s j + i
 * of head (16 / s) k + h (zero past the group); once per range, by its only reader. */
static void lanes_query(kt_attn_task *t)
{
    int s = kt_lanes_slots(t->g), tile = 16 / s;
    int64_t d = t->d, steps = d / s, tiles = (t->g + tile - 1) / tile;
    memset(t->ql, 0, sizeof(float) * 16 * (size_t)(tiles * steps));
    for (int64_t h = 0; h < t->g; h++) {
        float *dst = t->ql + h / tile * steps * 16 + h % tile * s;
        const float *src = t->qk + h * d;
        for (int64_t j = 0; j < steps; j++)
            for (int i = 0; i < s; i++)
                dst[j * 16 + i] = src[j * s + i];
    }
}

/* A task begins for every (batch row, KV head, split), a few thousand tokens, so its query is
 * converted without a call per channel: at 8 heads of 128 that took 3.4 us, a tenth of a task's
 * 2048 tokens at 15 ns. */
/* kt_attn_task_begin's query with AVX-512, for bf16 or fp32 'q' and d % 32 == 0 (the orders
 * permute within blocks of 32: 'order'): qs, then qk by one two-vector permute per 32 channels.
 * The scalar loops took 546 ns a task at group 8, d = 128 (64 tasks a call at 16K). */
static KT_ATTN_AVX512 void query_avx512(kt_attn_task *t, const void *q, int bf16, float scale,
                                        const int64_t *order)
{
    int64_t n = t->g * t->d;
    __m512 s = _mm512_set1_ps(scale);
    int32_t idx[32];
    for (int j = 0; j < 32; j++)
        idx[j] = (int32_t)order[j];
    __m512i lo = _mm512_loadu_si512((const void *)idx),
            hi = _mm512_loadu_si512((const void *)(idx + 16));
    for (int64_t i = 0; i < n; i += 32) {
        __m512 a, b;
        if (bf16) {
            const uint16_t *x = (const uint16_t *)q + i;
            a = _mm512_castsi512_ps(_mm512_slli_epi32(
                _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)x)), 16));
            b = _mm512_castsi512_ps(_mm512_slli_epi32(
                _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(x + 16))), 16));
        } else {
            a = _mm512_loadu_ps((const float *)q + i);
            b = _mm512_loadu_ps((const float *)q + i + 16);
        }
        a = _mm512_mul_ps(a, s);
        b = _mm512_mul_ps(b, s);
        _mm512_storeu_ps(t->qs + i, a);
        _mm512_storeu_ps(t->qs + i + 16, b);
        _mm512_storeu_ps(t->qk + i, _mm512_permutex2var_ps(a, lo, b));
        _mm512_storeu_ps(t->qk + i + 16, _mm512_permutex2var_ps(a, hi, b));
    }
}

void kt_attn_task_begin(kt_attn_task *t, const void *q, kt_dtype dtype)
{
    float scale = (float)(LOG2E / sqrt((double)t->d));
    int64_t n = t->g * t->d;
    t->wide = t->avx512 && t->d % 32 == 0;
    t->perm = dtype != KT_DTYPE_BF16 ? KT_ATTN_ORDER_NATURAL
              : t->wide              ? KT_ATTN_ORDER_EVENODD32
              : t->d % 16 == 0       ? KT_ATTN_ORDER_PERM16
                                     : KT_ATTN_ORDER_NATURAL;
    /* every order permutes within blocks of 16 or 32 channels, and d is a multiple of the block */
    int64_t order[32], i = 0;
    for (int j = 0; j < 32; j++)
        order[j] = kt_attn_order_channel(t->perm, j);
    for (int64_t h = 0; h < t->g; h++) {
        t->m[h] = -INFINITY;
        t->l[h] = 0.0f;
    }
    memset(t->acc, 0, sizeof(float) * (size_t)(t->g * t->d));
    if (t->wide && (dtype == KT_DTYPE_BF16 || dtype == KT_DTYPE_FP32)) {
        query_avx512(t, q, dtype == KT_DTYPE_BF16, scale, order);
        return;
    }
    if (dtype == KT_DTYPE_FP32) {
        const float *x = q;
        for (int64_t i = 0; i < n; i++)
            t->qs[i] = x[i] * scale;
    } else if (dtype == KT_DTYPE_BF16) {
        const uint16_t *x = q;
        for (int64_t i = 0; i < n; i++) {
            uint32_t bits = (uint32_t)x[i] << 16;
            float f;
            memcpy(&f, &bits, sizeof f);
            t->qs[i] = f * scale;
        }
    } else {
        for (int64_t i = 0; i < n; i++)
            t->qs[i] = kt_dtype_load(q, dtype, (size_t)i) * scale;
    }
    for (; i + 32 <= n; i += 32)
        for (int j = 0; j < 32; j++)
            t->qk[i + j] = t->qs[i + order[j]];
    for (; i < n; i++)
        t->qk[i] = t->qs[kt_attn_order_channel(t->perm, i)];
}

void kt_attn_rows_f32(float *dst, const void *src, kt_dtype dtype, int64_t rows, int64_t d)
{
    int64_t n = rows * d;
    if (dtype == KT_DTYPE_BF16 && d % 16 == 0) {
        const uint16_t *s = src;
        __m256i zero = _mm256_setzero_si256();
        for (int64_t i = 0; i < n; i += 16) {
            __m256i x = _mm256_loadu_si256((const __m256i *)(s + i));
            _mm256_store_si256((__m256i *)(dst + i), _mm256_unpacklo_epi16(zero, x));
            _mm256_store_si256((__m256i *)(dst + i + 8), _mm256_unpackhi_epi16(zero, x));
        }
    } else if (dtype == KT_DTYPE_BF16) {
        const uint16_t *s = src;
        for (int64_t i = 0; i < n; i += 8) {
            __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(s + i)));
            _mm256_store_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
        }
    } else if (dtype == KT_DTYPE_FP16) {
        const uint16_t *s = src;
        for (int64_t i = 0; i < n; i += 8)
            _mm256_store_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + i))));
    } else {
        memcpy(dst, src, sizeof(float) * (size_t)n);
    }
    memset(dst + n, 0, sizeof(float) * (size_t)((KT_ATTN_CHUNK - rows) * d));
}

/* 2^x, lanes below -126 flush to 2^-126; relative error ~2e-7 (Cephes exp2f polynomial). */
static inline __m256 exp2_ps(__m256 x)
{
    x = _mm256_max_ps(x, _mm256_set1_ps(-126.0f));
    __m256 fi = _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 f = _mm256_sub_ps(x, fi); /* [-0.5, 0.5] */
    __m256 p = _mm256_set1_ps(KT_EXP2_C5);
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(KT_EXP2_C4));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(KT_EXP2_C3));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(KT_EXP2_C2));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(KT_EXP2_C1));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(KT_EXP2_C0));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f));
    __m256i e =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(fi), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

/* Scores of 8 consecutive key rows 'k' (row stride d) against 'q', one per lane. */
static inline __m256 dot8(const float *q, const float *k, int64_t d)
{
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    for (int64_t c = 0; c < d; c += 8) {
        __m256 qv = _mm256_load_ps(q + c);
        a0 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + 0 * d + c), a0);
        a1 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + 1 * d + c), a1);
        a2 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + 2 * d + c), a2);
        a3 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + 3 * d + c), a3);
        a4 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + 4 * d + c), a4);
        a5 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + 5 * d + c), a5);
        a6 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + 6 * d + c), a6);
        a7 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + 7 * d + c), a7);
    }
    return kt_attn_hsum8(a0, a1, a2, a3, a4, a5, a6, a7);
}

/* Eight values of 'src' (storage type 'dt', a compile-time constant after inlining) from
 * element 'i', as fp32. */
static inline __attribute__((always_inline)) __m256 load8(const void *src, int64_t i, const int dt)
{
    if (dt == KT_DTYPE_BF16) {
        __m128i w = _mm_loadu_si128((const __m128i *)((const uint16_t *)src + i));
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(w), 16));
    }
    if (dt == KT_DTYPE_FP16)
        return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)src + i)));
    return _mm256_loadu_ps((const float *)src + i);
}

/* acc[h] += sum_t p[h][t] v[t] for a tile of 'gt' heads, 'cb' blocks of 8 channels at a time,
 * values converted from storage type 'dt' as they are loaded. gt, cb and dt are compile-time
 * constants after inlining, so the gt x cb accumulators stay in registers. */
static inline __attribute__((always_inline)) void pv_tile(float *acc, const float *p, const void *v,
                                                          int n, int64_t d, const int gt,
                                                          const int cb, const int dt,
                                                          const int perm)
{
    const __m256i zero = _mm256_setzero_si256();
    for (int64_t c = 0; c < d; c += 8 * cb) {
        __m256 a[8][4];
        for (int h = 0; h < gt; h++)
            for (int j = 0; j < cb; j++)
                a[h][j] = _mm256_load_ps(acc + h * d + c + 8 * j);
        for (int t = 0; t < n; t++) {
            __m256 vt[4];
            for (int j = 0; perm && j < cb; j += 2) {
                const uint16_t *vp = (const uint16_t *)v + t * d + c + 8 * j;
                __m256i x = _mm256_loadu_si256((const __m256i *)vp);
                vt[j] = _mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, x));
                vt[j + 1] = _mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, x));
            }
            for (int j = 0; !perm && j < cb; j++)
                vt[j] = load8(v, t * d + c + 8 * j, dt);
            for (int h = 0; h < gt; h++) {
                __m256 ph = _mm256_broadcast_ss(p + h * KT_ATTN_CHUNK + t);
                for (int j = 0; j < cb; j++)
                    a[h][j] = _mm256_fmadd_ps(ph, vt[j], a[h][j]);
            }
        }
        for (int h = 0; h < gt; h++)
            for (int j = 0; j < cb; j++)
                _mm256_store_ps(acc + h * d + c + 8 * j, a[h][j]);
    }
}

static inline __attribute__((always_inline)) void pv_dt(float *acc, const float *p, const void *v,
                                                        int n, int64_t d, const int gt,
                                                        const int cb, kt_dtype dt)
{
    if (dt == KT_DTYPE_BF16)
        pv_tile(acc, p, v, n, d, gt, cb, KT_DTYPE_BF16, 0);
    else if (dt == KT_DTYPE_FP16)
        pv_tile(acc, p, v, n, d, gt, cb, KT_DTYPE_FP16, 0);
    else
        pv_tile(acc, p, v, n, d, gt, cb, KT_DTYPE_FP32, 0);
}

/* Tiles of up to 8 heads; small tiles take 2 or 4 channel blocks per pass when d allows, so
 * each loaded value feeds more FMAs. */
static void pv(kt_attn_task *t, const void *v, kt_dtype dt, int n)
{
    int64_t d = t->d;
    int wide4 = d % 32 == 0, wide2 = d % 16 == 0;
    if (t->perm == KT_ATTN_ORDER_PERM16) { /* bf16 in perm16 order: tiles of up to 4 heads, 16 or 32
                                              channels a pass */
        for (int64_t h0 = 0; h0 < t->g; h0 += 4) {
            float *acc = t->acc + h0 * d;
            const float *p = t->p + h0 * KT_ATTN_CHUNK;
            switch (t->g - h0 < 4 ? t->g - h0 : 4) {
            case 1:
                wide4 ? pv_tile(acc, p, v, n, d, 1, 4, KT_DTYPE_BF16, 1)
                      : pv_tile(acc, p, v, n, d, 1, 2, KT_DTYPE_BF16, 1);
                break;
            case 2:
                wide4 ? pv_tile(acc, p, v, n, d, 2, 4, KT_DTYPE_BF16, 1)
                      : pv_tile(acc, p, v, n, d, 2, 2, KT_DTYPE_BF16, 1);
                break;
            case 3:
                pv_tile(acc, p, v, n, d, 3, 2, KT_DTYPE_BF16, 1);
                break;
            default:
                pv_tile(acc, p, v, n, d, 4, 2, KT_DTYPE_BF16, 1);
            }
        }
        return;
    }
    for (int64_t h0 = 0; h0 < t->g; h0 += 8) {
        float *acc = t->acc + h0 * d;
        const float *p = t->p + h0 * KT_ATTN_CHUNK;
        switch (t->g - h0 < 8 ? t->g - h0 : 8) {
        case 1:
            wide4 ? pv_dt(acc, p, v, n, d, 1, 4, dt) : pv_dt(acc, p, v, n, d, 1, 1, dt);
            break;
        case 2:
            wide4 ? pv_dt(acc, p, v, n, d, 2, 4, dt) : pv_dt(acc, p, v, n, d, 2, 1, dt);
            break;
        case 3:
            wide2 ? pv_dt(acc, p, v, n, d, 3, 2, dt) : pv_dt(acc, p, v, n, d, 3, 1, dt);
            break;
        case 4:
            wide2 ? pv_dt(acc, p, v, n, d, 4, 2, dt) : pv_dt(acc, p, v, n, d, 4, 1, dt);
            break;
        case 5:
            pv_dt(acc, p, v, n, d, 5, 1, dt);
            break;
        case 6:
            pv_dt(acc, p, v, n, d, 6, 1, dt);
            break;
        case 7:
            pv_dt(acc, p, v, n, d, 7, 1, dt);
            break;
        default:
            pv_dt(acc, p, v, n, d, 8, 1, dt);
        }
    }
}

void kt_attn_step(kt_attn_task *t, const float *k, int k_perm, const void *v, kt_dtype dtype, int n)
{
    if (t->wide) {
        kt_attn_step_avx512(t, k, k_perm, v, dtype, n);
        return;
    }
    int64_t d = t->d;
    __m256 lane = _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7);
    __m256 valid0 = _mm256_cmp_ps(lane, _mm256_set1_ps((float)n), _CMP_LT_OQ);
    __m256 valid1 = _mm256_cmp_ps(lane, _mm256_set1_ps((float)(n - 8)), _CMP_LT_OQ);
    __m256 ninf = _mm256_set1_ps(-INFINITY);
    for (int64_t h = 0; h < t->g; h++) {
        const float *q = (k_perm ? t->qk : t->qs) + h * d;
        float *p = t->p + h * KT_ATTN_CHUNK;
        __m256 s0 = _mm256_blendv_ps(ninf, dot8(q, k, d), valid0);
        __m256 s1 = n > 8 ? _mm256_blendv_ps(ninf, dot8(q, k + 8 * d, d), valid1) : ninf;
        float mx = kt_hmax8(_mm256_max_ps(s0, s1));
        if (mx > t->m[h]) {
            float alpha = exp2f(t->m[h] - mx);
            t->l[h] *= alpha;
            __m256 av = _mm256_set1_ps(alpha);
            for (int64_t c = 0; c < d; c += 8)
                _mm256_store_ps(t->acc + h * d + c,
                                _mm256_mul_ps(av, _mm256_load_ps(t->acc + h * d + c)));
            t->m[h] = mx;
        }
        __m256 mv = _mm256_set1_ps(t->m[h]);
        __m256 p0 = _mm256_and_ps(exp2_ps(_mm256_sub_ps(s0, mv)), valid0);
        __m256 p1 = _mm256_and_ps(exp2_ps(_mm256_sub_ps(s1, mv)), valid1);
        _mm256_store_ps(p, p0);
        _mm256_store_ps(p + 8, p1);
        t->l[h] += kt_hsum8(_mm256_add_ps(p0, p1));
    }
    pv(t, v, dtype, n);
}

void kt_attn_prefetch(const void *p, size_t bytes)
{
    const char *c = p;
    for (size_t off = 0; off < bytes; off += 64)
        _mm_prefetch(c + off, _MM_HINT_T0);
}

void kt_attn_prefetch_ahead(const void *k, const void *v, size_t row_bytes, int64_t s, int64_t t1)
{
    int64_t ahead = s + KT_ATTN_PREFETCH_CHUNKS * KT_ATTN_CHUNK;
    if (ahead >= t1)
        return;
    size_t bytes = (size_t)(t1 - ahead < KT_ATTN_CHUNK ? t1 - ahead : KT_ATTN_CHUNK) * row_bytes;
    kt_attn_prefetch((const char *)k + (size_t)ahead * row_bytes, bytes);
    kt_attn_prefetch((const char *)v + (size_t)ahead * row_bytes, bytes);
}

kt_attn_spread kt_attn_spread_at(const void *k, const void *v, size_t row_bytes, int64_t s,
                                 int64_t t1)
{
    int64_t chunks = KT_ATTN_SPREAD_BYTES / (2 * KT_ATTN_CHUNK * (int64_t)row_bytes);
    int64_t ahead = s + (chunks < 1 ? 1 : chunks > 8 ? 8 : chunks) * KT_ATTN_CHUNK;
    kt_attn_spread sp = {NULL, NULL, 0};
    if (ahead >= t1)
        return sp;
    int64_t rows = t1 - ahead < KT_ATTN_CHUNK ? t1 - ahead : KT_ATTN_CHUNK;
    sp.k = (const char *)k + (size_t)ahead * row_bytes;
    sp.v = (const char *)v + (size_t)ahead * row_bytes;
    sp.bytes = row_bytes * (size_t)rows;
    if (sp.bytes > KT_ATTN_SPREAD_BYTES) /* see KT_ATTN_SPREAD_LARGE_BYTES */
        sp.bytes = KT_ATTN_SPREAD_LARGE_BYTES;
    return sp;
}

void kt_attn_dense_range(kt_attn_task *t, const void *k, const void *v, kt_dtype dtype, int64_t t0,
                         int64_t t1)
{
    size_t row_bytes = (size_t)t->d * kt_dtype_size(dtype);
    int lanes = t->wide && t->g <= KT_LANES_F32_MAX_GROUP;
    if (lanes)
        lanes_query(t);
    for (int64_t s = t0; s < t1; s += KT_ATTN_CHUNK) {
        int n = t1 - s < KT_ATTN_CHUNK ? (int)(t1 - s) : KT_ATTN_CHUNK;
        if (!t->wide)
            kt_attn_prefetch_ahead(k, v, row_bytes, s, t1);
        const char *ks = (const char *)k + (size_t)s * row_bytes;
        const char *vs = (const char *)v + (size_t)s * row_bytes;
        const float *kf = t->kbuf;
        if (dtype == KT_DTYPE_FP32 && n == KT_ATTN_CHUNK)
            kf = (const float *)ks;
        else if (t->wide)
            kt_attn_rows_f32_avx512(t->kbuf, ks, dtype, n, t->d);
        else
            kt_attn_rows_f32(t->kbuf, ks, dtype, n, t->d);
        if (!t->wide) {
            kt_attn_step(t, kf, t->perm, vs, dtype, n);
            continue;
        }
        kt_attn_spread sp = kt_attn_spread_at(k, v, row_bytes, s, t1);
        kt_attn_trickle tr;
        kt_attn_spread_stage(&sp, KT_ATTN_BEFORE_SCORES, &tr);
        if (lanes) {
            kt_attn_scores_softmax_lanes(t, kf, n, &tr);
            kt_attn_spread_stage(&sp, KT_ATTN_AFTER_SCORES, &tr);
        } else {
            kt_attn_scores_avx512(t, kf, t->perm, &tr);
            kt_attn_spread_stage(&sp, KT_ATTN_AFTER_SCORES, &tr);
            kt_attn_softmax_avx512(t, n, NULL);
        }
        kt_attn_spread_stage(&sp, KT_ATTN_BEFORE_PV, &tr);
        kt_attn_pv_avx512(t, vs, dtype, n, &tr);
        kt_attn_spread_stage(&sp, KT_ATTN_AFTER_PV, &tr);
    }
}

int64_t kt_attn_split_tokens(int64_t split, int64_t max_splits, int64_t context)
{
    while (max_splits > 0 && (context + split - 1) / split > max_splits)
        split *= 2;
    return split;
}

void kt_attn_task_store(const kt_attn_task *t, float *part, int64_t b, int64_t heads, int64_t h0,
                        int64_t n_splits, int64_t split)
{
    int64_t d = t->d, stride = kt_attn_part_stride(d), order[32];
    /* every order permutes within blocks of 16 or 32 channels (kt_attn_task_begin): one table
     * for a block of 32, instead of the order's arithmetic per channel (1.2 us a task at group
     * 8, d = 128, a 2-3% of a 16K dense call at 64 tasks) */
    for (int j = 0; j < 32; j++)
        order[j] = kt_attn_order_channel(t->perm, j);
    for (int64_t h = 0; h < t->g; h++) {
        float *row = part + ((b * heads + h0 + h) * n_splits + split) * stride;
        const float *acc = t->acc + h * d;
        int64_t c = 0;
        for (; c + 32 <= d; c += 32)
            for (int j = 0; j < 32; j++)
                row[c + order[j]] = acc[c + j];
        for (; c < d; c++)
            row[kt_attn_order_channel(t->perm, c)] = acc[c];
        row[d] = t->m[h];
        row[d + 1] = t->l[h];
    }
}

static void store_out(void *out, kt_dtype dtype, size_t i, float x)
{
    if (dtype == KT_DTYPE_BF16)
        ((uint16_t *)out)[i] = kt_fp32_to_bf16(x);
    else if (dtype == KT_DTYPE_FP16)
        ((uint16_t *)out)[i] = kt_fp32_to_fp16(x);
    else
        ((float *)out)[i] = x;
}

typedef struct merge_ctx {
    void *out;
    kt_dtype dtype;
    const float *part;
    int64_t rows, n_splits, d;
} merge_ctx;

enum { MERGE_ROWS = 8 }; /* rows of the output per pool item */

static void merge_rows(void *arg, int64_t item, int slot)
{
    const merge_ctx *c = arg;
    int64_t d = c->d, n_splits = c->n_splits, stride = kt_attn_part_stride(d);
    int64_t r1 = (item + 1) * MERGE_ROWS < c->rows ? (item + 1) * MERGE_ROWS : c->rows;
    (void)slot;
    for (int64_t r = item * MERGE_ROWS; r < r1; r++) {
        const float *pr = c->part + r * n_splits * stride;
        float o[KT_ATTN_MAX_HEAD_DIM] = {0};
        float mx = -INFINITY, l = 0.0f;
        for (int64_t s = 0; s < n_splits; s++)
            mx = fmaxf(mx, pr[s * stride + d]);
        for (int64_t s = 0; s < n_splits; s++) {
            float w = exp2f(pr[s * stride + d] - mx);
            l += pr[s * stride + d + 1] * w;
            for (int64_t ch = 0; ch < d; ch++)
                o[ch] += pr[s * stride + ch] * w;
        }
        float inv = 1.0f / l;
        for (int64_t ch = 0; ch < d; ch++)
            store_out(c->out, c->dtype, (size_t)(r * d + ch), o[ch] * inv);
    }
}

void kt_attn_merge(void *out, kt_dtype dtype, const float *part, int64_t rows, int64_t n_splits,
                   int64_t d, int threads)
{
    merge_ctx c = {out, dtype, part, rows, n_splits, d};
    kt_pool_for(threads, (rows + MERGE_ROWS - 1) / MERGE_ROWS, merge_rows, &c);
}

int kt_attn_check_problem(const kt_problem *p)
{
    if (p->head_dim % 8 != 0)
        return kt_error_code(KT_EUNSUPPORTED, "head_dim %lld is not a multiple of 8",
                             (long long)p->head_dim);
    if (p->head_dim > KT_ATTN_MAX_HEAD_DIM)
        return kt_error_code(KT_EUNSUPPORTED, "head_dim %lld is above %d", (long long)p->head_dim,
                             KT_ATTN_MAX_HEAD_DIM);
    if (p->heads % p->kv_heads != 0)
        return kt_error_code(KT_EINVAL, "heads (%lld) is not a multiple of kv_heads (%lld)",
                             (long long)p->heads, (long long)p->kv_heads);
    return KT_OK;
}

int kt_attn_work_alloc(kt_attn_work *w, kt_backend *backend, const kt_problem *p, int64_t n_splits,
                       int threads, size_t extra_bytes)
{
    int64_t g = p->heads / p->kv_heads, d = p->head_dim;
    memset(w, 0, sizeof(*w));
    w->n_splits = n_splits;
    w->threads = threads > 0 ? threads : 1;
    w->extra_offset = kt_attn_scratch_bytes(g, d);
    w->scratch_stride = align32(w->extra_offset + extra_bytes);
    w->part_bytes =
        (size_t)(p->batch * p->heads * n_splits * kt_attn_part_stride(d)) * sizeof(float);
    int err = kt_backend_alloc(backend, (void **)&w->part, w->part_bytes);
    if (err < 0)
        return err;
    return kt_backend_alloc(backend, (void **)&w->scratch, w->scratch_stride * (size_t)w->threads);
}

void kt_attn_work_task(kt_attn_task *t, const kt_attn_work *w, int tid, int64_t g, int64_t d)
{
    char *scratch = w->scratch + (size_t)tid * w->scratch_stride;
    kt_attn_task_bind(t, scratch, g, d);
    t->extra = scratch + w->extra_offset;
    t->avx512 = w->avx512;
    t->wide = 0;
}

void kt_attn_work_free(kt_attn_work *w, kt_backend *backend)
{
    if (w->part)
        kt_backend_free(backend, w->part, w->part_bytes);
    if (w->scratch)
        kt_backend_free(backend, w->scratch, w->scratch_stride * (size_t)w->threads);
    w->part = NULL;
    w->scratch = NULL;
}

typedef struct work_ctx {
    kt_attn_work *w;
    const kt_call *call;
    kt_attn_task_fn fn;
    void *ctx;
} work_ctx;

/* Pool item i: split s of KV head kh of batch row b, on the scratch of the running slot. */
static void work_item(void *arg, int64_t i, int slot)
{
    const work_ctx *c = arg;
    const kt_problem *p = c->call->problem;
    int64_t g = p->heads / p->kv_heads, d = p->head_dim, ns = c->w->n_splits;
    int64_t b = i / (p->kv_heads * ns), kh = (i / ns) % p->kv_heads, s = i % ns;
    size_t q_row = (size_t)d * kt_dtype_size(p->dtype);
    kt_attn_task t;
    kt_attn_work_task(&t, c->w, slot, g, d);
    kt_attn_task_begin(
        &t, (const char *)c->call->inputs[0] + (size_t)(b * p->heads + kh * g) * q_row, p->dtype);
    c->fn(&t, c->ctx, b, kh, s);
    kt_attn_task_store(&t, c->w->part, b, p->heads, kh * g, ns, s);
}

void kt_attn_work_tasks(kt_attn_work *w, const kt_call *call, kt_attn_task_fn fn, void *ctx)
{
    const kt_problem *p = call->problem;
    int64_t n_tasks = p->batch * p->kv_heads * w->n_splits;
    int threads = call->threads < w->threads ? call->threads : w->threads;
    work_ctx c = {w, call, fn, ctx};
    kt_pool_for(threads, n_tasks, work_item, &c);
}

void kt_attn_work_run(kt_attn_work *w, const kt_call *call, kt_attn_task_fn fn, void *ctx)
{
    const kt_problem *p = call->problem;
    int threads = call->threads < w->threads ? call->threads : w->threads;
    kt_attn_work_tasks(w, call, fn, ctx);
    kt_attn_merge(call->outputs[0], p->dtype, w->part, p->batch * p->heads, w->n_splits,
                  p->head_dim, threads);
}
