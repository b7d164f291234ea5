/* gemm_engine.c - the tiled GEMM engine (Goto/BLIS blocking: pack a kc-deep panel of w and a
 * block of x to fp32, run a 6 x 16 (AVX2) or 6 x 64 (AVX-512) register-blocked FMA microkernel over
 * them, accumulate in an fp32 tile, convert once at the end) and the vectorised storage-type
 * conversions. */
#include "cpu_gemm.h"
#include "pool.h"

#include <stdlib.h>
#include <string.h>

/* MR rows of x per microkernel tile; its columns, nr, are 16 (AVX2) or 64 (AVX-512). */
enum { MR = 6, NR_MAX = 64, CHUNK = 1 << 14 };
enum { ISA_AUTO, ISA_AVX2, ISA_AVX512 };
enum { SPLIT_EVEN, SPLIT_BLOCKS };
/* kc 0 (auto): a call with up to KC_ROWS rows of x packs KC_SHALLOW deep, others KC_DEEP. With
 * few rows the packed panel of w is used by few tiles, and a shallow one stays in cache; with
 * many rows the tile of accumulators is large, and a deep panel reloads it less often. */
enum { KC_ROWS = 128, KC_SHALLOW = 128, KC_DEEP = 384 };
/* pack_x shared: calls of at least SHARED_ROWS rows pack x once, before the blocks run, into a
 * buffer of at most SHARED_BYTES (reserved by kt_cpu_tiled_reserve_x), and cut the columns into
 * at least ITEMS_PER_THREAD items per thread of at least MIN_PANELS panels where there are
 * enough: with x packed once, a finer cut costs no packing, and a worker that starts late
 * (descheduled, or woken slowly) still finds items to take instead of leaving the caller to run
 * a whole half of the call. Fewer rows: x is a few cache lines per item, not worth a pass. */
enum { SHARED_ROWS = 32, ITEMS_PER_THREAD = 4, MIN_PANELS = 2 };
#define SHARED_BYTES ((size_t)64 << 20)
enum { PACK_X_SHARED, PACK_X_PER_BLOCK };

/* ---- conversions ------------------------------------------------------------------------ */

/* Round to nearest even to bf16, NaN kept quiet with its sign: kt_fp32_to_bf16 on 8 lanes. */
static inline __m128i f32_to_bf16x8(__m256 v)
{
    __m256i u = _mm256_castps_si256(v);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(
        _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
    __m256i q = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
    __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    r = _mm256_blendv_epi8(r, q, nan);
    __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
    return _mm256_castsi256_si128(packed);
}

typedef struct convert_job {
    void *dst;
    const void *src;
    kt_dtype dtype;
    size_t n;
} convert_job;

static void to_f32_chunk(void *arg, int64_t c, int slot)
{
    const convert_job *j = arg;
    float *dst = j->dst;
    size_t i = (size_t)c * CHUNK, end = i + CHUNK < j->n ? i + CHUNK : j->n;
    (void)slot;
    for (; i + 8 <= end; i += 8)
        _mm256_storeu_ps(dst + i, kt_cpu_load8(j->src, j->dtype, i));
    for (; i < end; i++)
        dst[i] = kt_cpu_load1(j->src, j->dtype, i);
}

void kt_cpu_to_f32(float *dst, const void *src, kt_dtype dtype, size_t n, int threads)
{
    convert_job j = {dst, src, dtype, n};
    kt_pool_for(threads, (int64_t)((n + CHUNK - 1) / CHUNK), to_f32_chunk, &j);
}

static void from_f32_chunk(void *arg, int64_t c, int slot)
{
    const convert_job *j = arg;
    const float *src = j->src;
    size_t i = (size_t)c * CHUNK, end = i + CHUNK < j->n ? i + CHUNK : j->n;
    uint16_t *d16 = j->dst;
    (void)slot;
    for (; j->dtype != KT_DTYPE_FP32 && i + 8 <= end; i += 8) {
        __m256 v = _mm256_loadu_ps(src + i);
        __m128i h = j->dtype == KT_DTYPE_BF16
                        ? f32_to_bf16x8(v)
                        : _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm_storeu_si128((__m128i *)(d16 + i), h);
    }
    for (; i < end; i++)
        kt_cpu_store1(j->dst, j->dtype, i, src[i]);
}

void kt_cpu_from_f32(void *dst, const float *src, kt_dtype dtype, size_t n, int threads)
{
    convert_job j = {dst, src, dtype, n};
    kt_pool_for(threads, (int64_t)((n + CHUNK - 1) / CHUNK), from_f32_chunk, &j);
}

/* ---- packing ------------------------------------------------------------------------------ */

/* Transposes the 8 x 8 block r[0..7] in place: r[t] becomes column t. */
static inline void transpose8(__m256 r[8])
{
    __m256 t[8], s[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 2; i++) {
        s[4 * i + 0] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        s[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xee);
        s[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        s[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xee);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(s[i], s[i + 4], 0x20);
        r[i + 4] = _mm256_permute2f128_ps(s[i], s[i + 4], 0x31);
    }
}

/* Packs rows i0 .. i0+mb-1, depth p0 .. p0+kb-1 of x (row length k) into MR-row micro-panels:
 * ap[panel * kb * MR + kk * MR + ii]; rows past mb are zero. Eight depths at a time go through
 * one 8 x 8 transpose in registers (rows MR..7 zero), as pack_w does for w. */
static void pack_x(float *ap, const void *x, kt_dtype dtype, int64_t k, int64_t i0, int mb,
                   int64_t p0, int kb)
{
    for (int ir = 0; ir < mb; ir += MR) {
        float *dst = ap + (size_t)ir * kb;
        int rows = mb - ir < MR ? mb - ir : MR;
        size_t row[MR];
        for (int ii = 0; ii < rows; ii++)
            row[ii] = (size_t)(i0 + ir + ii) * (size_t)k + (size_t)p0;
        int kk = 0;
        for (; kk + 8 <= kb; kk += 8) {
            __m256 r[8];
            for (int ii = 0; ii < 8; ii++)
                r[ii] =
                    ii < rows ? kt_cpu_load8(x, dtype, row[ii] + (size_t)kk) : _mm256_setzero_ps();
            transpose8(r);
            for (int t = 0; t < 8; t++) { /* lanes 0..5: the MR rows at depth kk + t */
                float *d = dst + (size_t)(kk + t) * MR;
                _mm_storeu_ps(d, _mm256_castps256_ps128(r[t]));
                _mm_storel_pi((__m64 *)(d + 4), _mm256_extractf128_ps(r[t], 1));
            }
        }
        for (; kk < kb; kk++)
            for (int ii = 0; ii < MR; ii++)
                dst[(size_t)kk * MR + ii] =
                    ii < rows ? kt_cpu_load1(x, dtype, row[ii] + (size_t)kk) : 0.0f;
    }
}

/* The row of w that packed column 'col' (counted from the start of the packed matrix) holds,
 * or -1 for padding. glu: each nr-wide micro-panel holds nr/2 gate rows, then the matching
 * nr/2 up rows (n + the same index). */
static inline int64_t packed_row(int64_t col, int64_t n, int glu, int nr)
{
    if (!glu)
        return col < n ? col : -1;
    int64_t o = col / nr * (nr / 2) + col % (nr / 2);
    if (o >= n)
        return -1;
    return col % nr < nr / 2 ? o : n + o;
}

/* Prefetches (into L1) the depths p0 .. p0+kb-1 of the rows of w behind packed columns
 * j0+c .. j0+c+7, c < nb. */
static void prefetch_rows(const void *w, kt_dtype dtype, int64_t n, int64_t k, int glu, int64_t j0,
                          int c, int nb, int64_t p0, int kb, int nr)
{
    size_t esz = dtype == KT_DTYPE_FP32 ? sizeof(float) : sizeof(uint16_t);
    for (int q = c; q < c + 8 && q < nb; q++) {
        int64_t row = packed_row(j0 + q, n, glu, nr);
        if (row < 0)
            continue;
        uintptr_t at = (uintptr_t)w + (size_t)(row * k + p0) * esz;
        for (uintptr_t line = at & ~(uintptr_t)63; line < at + (size_t)kb * esz; line += 64)
            _mm_prefetch((const char *)line, _MM_HINT_T0);
    }
}

/* Packs packed columns j0 .. j0+nb-1 (nb a multiple of nr), depth p0 .. p0+kb-1 of w into
 * nr-column micro-panels: bp[panel * kb * nr + kk * nr + jj]. 8 x 8 blocks are converted
 * and transposed in registers. Each row of w gives kb values, a few cache lines, then the
 * packing moves to other rows, too short a run for the hardware prefetcher: so the rows
 * 'ahead' groups of 8 further on are prefetched while a group is packed. */
static void pack_w(float *bp, const void *w, kt_dtype dtype, int64_t n, int64_t k, int glu,
                   int64_t j0, int nb, int64_t p0, int kb, int nr, int ahead)
{
    for (int jr = 0; jr < nb; jr += nr) {
        float *dst = bp + (size_t)jr * kb;
        for (int jj = 0; jj < nr; jj += 8) {
            int64_t rows[8];
            for (int q = 0; q < 8; q++)
                rows[q] = packed_row(j0 + jr + jj + q, n, glu, nr);
            if (ahead > 0)
                prefetch_rows(w, dtype, n, k, glu, j0, jr + jj + 8 * ahead, nb, p0, kb, nr);
            int kk = 0;
            for (; kk + 8 <= kb; kk += 8) {
                __m256 r[8];
                for (int q = 0; q < 8; q++)
                    r[q] = rows[q] < 0 ? _mm256_setzero_ps()
                                       : kt_cpu_load8(w, dtype, (size_t)(rows[q] * k + p0 + kk));
                transpose8(r);
                for (int t = 0; t < 8; t++)
                    _mm256_storeu_ps(dst + (size_t)(kk + t) * nr + jj, r[t]);
            }
            for (; kk < kb; kk++)
                for (int q = 0; q < 8; q++)
                    dst[(size_t)kk * nr + jj + q] =
                        rows[q] < 0 ? 0.0f
                                    : kt_cpu_load1(w, dtype, (size_t)(rows[q] * k + p0 + kk));
        }
    }
}

/* ---- microkernel -------------------------------------------------------------------------- */

/* c[mr x 16] (row stride ldc) = (accumulate ? c : 0) + a-panel x b-panel over kb, for the first
 * mr <= MR rows of the a-panel (its row stride stays MR). Inlined with a constant mr, so each
 * row count gets its own unrolled tile and a partial panel costs only its rows. */
static inline __attribute__((always_inline)) void
tile_avx2(int mr, int kb, const float *a, const float *b, float *c, int ldc, int accumulate)
{
    __m256 acc[MR][2];
    for (int i = 0; i < mr; i++)
        acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    for (int kk = 0; kk < kb; kk++) {
        __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
        for (int i = 0; i < mr; i++) {
            __m256 ai = _mm256_broadcast_ss(a + i);
            acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
        }
        a += MR;
        b += 16;
    }
    for (int i = 0; i < mr; i++) {
        float *ci = c + (size_t)i * ldc;
        if (accumulate) {
            acc[i][0] = _mm256_add_ps(acc[i][0], _mm256_loadu_ps(ci));
            acc[i][1] = _mm256_add_ps(acc[i][1], _mm256_loadu_ps(ci + 8));
        }
        _mm256_storeu_ps(ci, acc[i][0]);
        _mm256_storeu_ps(ci + 8, acc[i][1]);
    }
}

/* The same tile 64 columns wide on AVX-512: 24 zmm accumulators, so each broadcast of x feeds
 * four FMAs and the loads per FMA drop from 8/12 to 10/24. Each element still sums its kb
 * products in order, then adds c: the same order as the AVX2 tile. */
static inline __attribute__((always_inline, target("avx512f"))) void
tile_avx512(int mr, int kb, const float *a, const float *b, float *c, int ldc, int accumulate)
{
    __m512 acc[MR][4];
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < 4; j++)
            acc[i][j] = _mm512_setzero_ps();
    for (int kk = 0; kk < kb; kk++) {
        __m512 bv[4];
        for (int j = 0; j < 4; j++)
            bv[j] = _mm512_loadu_ps(b + 16 * j);
        for (int i = 0; i < mr; i++) {
            __m512 ai = _mm512_set1_ps(a[i]);
            for (int j = 0; j < 4; j++)
                acc[i][j] = _mm512_fmadd_ps(ai, bv[j], acc[i][j]);
        }
        a += MR;
        b += 64;
    }
    for (int i = 0; i < mr; i++) {
        float *ci = c + (size_t)i * ldc;
        for (int j = 0; j < 4; j++) {
            if (accumulate)
                acc[i][j] = _mm512_add_ps(acc[i][j], _mm512_loadu_ps(ci + 16 * j));
            _mm512_storeu_ps(ci + 16 * j, acc[i][j]);
        }
    }
}

/* One tile of mr rows (1 .. MR) on the microkernel of 'nr' columns; the AVX-512 one is called
 * only where __builtin_cpu_supports("avx512f") said so (nr == 64). */
#define KT_TILE_CASES(fn)                                                                          \
    switch (mr) {                                                                                  \
    case 1:                                                                                        \
        fn(1, kb, a, b, c, ldc, accumulate);                                                       \
        break;                                                                                     \
    case 2:                                                                                        \
        fn(2, kb, a, b, c, ldc, accumulate);                                                       \
        break;                                                                                     \
    case 3:                                                                                        \
        fn(3, kb, a, b, c, ldc, accumulate);                                                       \
        break;                                                                                     \
    case 4:                                                                                        \
        fn(4, kb, a, b, c, ldc, accumulate);                                                       \
        break;                                                                                     \
    case 5:                                                                                        \
        fn(5, kb, a, b, c, ldc, accumulate);                                                       \
        break;                                                                                     \
    default:                                                                                       \
        fn(MR, kb, a, b, c, ldc, accumulate);                                                      \
        break;                                                                                     \
    }

static void microkernel_avx2(int mr, int kb, const float *a, const float *b, float *c, int ldc,
                             int accumulate)
{
    KT_TILE_CASES(tile_avx2)
}

__attribute__((target("avx512f"))) static void microkernel_avx512(int mr, int kb, const float *a,
                                                                  const float *b, float *c, int ldc,
                                                                  int accumulate)
{
    KT_TILE_CASES(tile_avx512)
}

/* ---- the engine ---------------------------------------------------------------------------- */

static int round_up(int v, int to)
{
    return (v + to - 1) / to * to;
}

const kt_param_def kt_cpu_tiled_params[KT_CPU_TILED_N_PARAMS] = {
    {"mc", KT_PARAM_INT, 264, 6, 3072, NULL,
     "rows of x per block (rounded up to a multiple of 6); the packed block lives in L2"},
    {"nc", KT_PARAM_INT, 512, 16, 8192, NULL,
     "columns of y per block (rounded up to a multiple of 64)"},
    {"kc", KT_PARAM_INT, 0, 0, 8192, NULL,
     "depth per packed panel (one micro-panel, kc x 16 or 64 floats, in L1 or L2); 0: "
     "128 for up to 128 rows of x, 384 beyond"},
    {"isa", KT_PARAM_ENUM, ISA_AUTO, 0, 0, "auto|avx2|avx512",
     "microkernel: 6x64 AVX-512 where the CPU has it (auto), or 6x16 AVX2"},
    {"prefetch", KT_PARAM_INT, 2, 0, 8, NULL,
     "groups of 8 rows of w prefetched ahead while packing (0: none)"},
    {"split", KT_PARAM_ENUM, SPLIT_EVEN, 0, 0, "even|blocks",
     "column blocks: even (a multiple of the threads, panels spread evenly) or blocks (nc wide)"},
    {"pack_x", KT_PARAM_ENUM, PACK_X_SHARED, 0, 0, "shared|per_block",
     "x packed once per call and shared by the column blocks, which are then cut finer (from 32 "
     "rows, up to 64 MiB), or packed again by every block"},
};

int kt_cpu_tiled_init(kt_cpu_tiled *t, kt_backend *b, int threads, const kt_param_value *params)
{
    kt_param_value defaults[KT_CPU_TILED_N_PARAMS];
    if (!params) {
        kt_param_defaults(defaults, kt_cpu_tiled_params, KT_CPU_TILED_N_PARAMS);
        params = defaults;
    }
    memset(t, 0, sizeof(*t));
    int isa = (int)params[3].num, avx512 = __builtin_cpu_supports("avx512f");
    if (isa == ISA_AVX512 && !avx512)
        return kt_error_code(KT_EUNSUPPORTED, "isa 'avx512': this CPU has no AVX-512");
    t->nr = isa == ISA_AVX2 || !avx512 ? 16 : 64;
    t->mc = round_up((int)params[0].num, MR);
    t->nc = round_up((int)params[1].num, NR_MAX);
    t->kc = (int)params[2].num;
    t->kc_max = t->kc > 0 ? t->kc : KC_DEEP;
    t->prefetch = (int)params[4].num;
    t->split = (int)params[5].num;
    t->pack_x = (int)params[6].num;
    t->threads = threads > 0 ? threads : 1;
    t->per_thread = (size_t)t->mc * (size_t)t->kc_max + (size_t)t->kc_max * (size_t)t->nc +
                    (size_t)t->mc * (size_t)t->nc;
    t->per_thread = (t->per_thread + 15) / 16 * 16; /* each thread's block on its own lines */
    size_t bytes = (size_t)t->threads * t->per_thread * sizeof(float);
    int err = kt_backend_alloc(b, (void **)&t->buf, bytes);
    if (err < 0)
        return err;
    t->bytes = bytes;
    return KT_OK;
}

int kt_cpu_tiled_reserve_x(kt_cpu_tiled *t, kt_backend *b, int64_t m, int64_t k)
{
    size_t floats = (size_t)((m + MR - 1) / MR * MR) * (size_t)k;
    if (t->pack_x != PACK_X_SHARED || m < SHARED_ROWS || floats * sizeof(float) > SHARED_BYTES ||
        floats <= t->x_floats)
        return KT_OK;
    kt_backend_free(b, t->xbuf, t->x_floats * sizeof(float));
    t->xbuf = NULL;
    t->x_floats = 0;
    int err = kt_backend_alloc(b, (void **)&t->xbuf, floats * sizeof(float));
    if (err < 0)
        return err;
    t->x_floats = floats;
    return KT_OK;
}

void kt_cpu_tiled_release(kt_cpu_tiled *t, kt_backend *b)
{
    if (!t)
        return;
    kt_backend_free(b, t->buf, t->bytes);
    kt_backend_free(b, t->xbuf, t->x_floats * sizeof(float));
    t->buf = NULL;
    t->bytes = 0;
    t->xbuf = NULL;
    t->x_floats = 0;
}

/* Writes rows i0 .. i0+mb-1 of the tile 'ct' (packed columns j0 .. j0+nb-1) into y. */
static void epilogue(void *y, kt_dtype dtype, const float *ct, int ldc, int64_t n, int glu,
                     int64_t i0, int mb, int64_t j0, int nb, int nr)
{
    for (int i = 0; i < mb; i++) {
        const float *ci = ct + (size_t)i * ldc;
        size_t row = (size_t)(i0 + i) * (size_t)n;
        if (!glu) {
            int valid = j0 + nb <= n ? nb : (int)(n - j0);
            for (int j = 0; j < valid; j++)
                kt_cpu_store1(y, dtype, row + (size_t)(j0 + j), ci[j]);
            continue;
        }
        for (int jr = 0; jr < nb; jr += nr) {
            int64_t o0 = (j0 + jr) / nr * (nr / 2);
            for (int q = 0; q < nr / 2 && o0 + q < n; q++)
                kt_cpu_store1(y, dtype, row + (size_t)(o0 + q),
                              kt_cpu_silu_mul(ci[jr + q], ci[jr + nr / 2 + q]));
        }
    }
}

typedef struct tiled_job {
    const kt_cpu_tiled *t;
    void *y;
    const void *x, *w;
    kt_dtype dtype;
    int64_t m, n, k;
    int kc;             /* this call's depth per packed panel */
    int64_t panels;     /* nr-wide panels of packed columns */
    int64_t col_blocks; /* blocks of whole panels, at most nc wide */
    int64_t row_blocks; /* blocks of at most mc rows */
    int glu;
    /* x packed once (pack_x shared), else NULL: depth p0 .. p0+kb-1 of rows i0 .. is at
     * xs + p0 * m_pad + i0 * kb, laid out as pack_x lays out a block */
    float *xs;
    int64_t m_pad; /* m rounded up to MR */
} tiled_job;

/* The number of column blocks for 'panels' panels on 'threads' threads (see kt_cpu_tiled);
 * 'finer' (x shared, split even): at least ITEMS_PER_THREAD items per thread over
 * 'row_blocks' row blocks, in blocks of at least MIN_PANELS panels. */
static int64_t column_blocks(const kt_cpu_tiled *t, int64_t panels, int64_t row_blocks, int threads,
                             int finer)
{
    int64_t per_block = t->nc / t->nr, blocks = (panels + per_block - 1) / per_block;
    if (finer && t->split == SPLIT_EVEN && threads > 1) {
        int64_t want = (ITEMS_PER_THREAD * threads + row_blocks - 1) / row_blocks;
        if (want > panels / MIN_PANELS)
            want = panels / MIN_PANELS;
        if (want > blocks)
            blocks = want;
    }
    if (t->split == SPLIT_EVEN && threads > 1) {
        blocks = (blocks + threads - 1) / threads * threads;
        if (blocks > panels)
            blocks = panels;
    }
    return blocks;
}

/* The first panel of column block 'cb'; block cb spans panels first(cb) .. first(cb + 1) - 1.
 * even: blocks differ by at most one panel, the larger ones first: the threads claim blocks in
 * turn, the caller first, so alternating sizes (4, 5, 4, 5) would give the caller the small
 * ones and leave it idle at the end while the last worker finishes. blocks: nc wide. */
static int64_t block_first_panel(const tiled_job *j, int64_t cb)
{
    if (j->t->split == SPLIT_EVEN) {
        int64_t q = j->panels / j->col_blocks, r = j->panels % j->col_blocks;
        return cb * q + (cb < r ? cb : r);
    }
    int64_t first = cb * (j->t->nc / j->t->nr);
    return first < j->panels ? first : j->panels;
}

/* Pool item: one mc-row, column-block piece of y, on the packing buffers of the running slot.
 * The accumulator tile's rows are as long as the block (nb), not nc: with kc 384 at M = 256
 * the packed x, the packed w and the tile together exceed L2, and rows nc apart with only nb
 * of each used crowd fewer cache sets (measured: 305-326 against 340 GFLOP/s at
 * 256x1152x896, two threads). */
static void tiled_block(void *arg, int64_t item, int slot)
{
    const tiled_job *j = arg;
    const kt_cpu_tiled *t = j->t;
    int nr = t->nr;
    int64_t rb = item / j->col_blocks, cb = item % j->col_blocks;
    float *ap = t->buf + (size_t)slot * t->per_thread;
    float *bp = ap + (size_t)t->mc * t->kc_max;
    float *ct = bp + (size_t)t->kc_max * t->nc;
    int64_t i0 = rb * t->mc, first = block_first_panel(j, cb);
    int64_t j0 = first * nr;
    int mb = (int)(j->m - i0 < t->mc ? j->m - i0 : t->mc);
    int nb = (int)(block_first_panel(j, cb + 1) - first) * nr;
    for (int64_t p0 = 0; p0 < j->k; p0 += j->kc) {
        int kb = (int)(j->k - p0 < j->kc ? j->k - p0 : j->kc);
        if (j->xs)
            ap = j->xs + (size_t)(p0 * j->m_pad + i0 * kb);
        else
            pack_x(ap, j->x, j->dtype, j->k, i0, mb, p0, kb);
        pack_w(bp, j->w, j->dtype, j->n, j->k, j->glu, j0, nb, p0, kb, nr, t->prefetch);
        for (int jr = 0; jr < nb; jr += nr)
            for (int ir = 0; ir < mb; ir += MR)
                (nr == 64 ? microkernel_avx512 : microkernel_avx2)(
                    mb - ir < MR ? mb - ir : MR, kb, ap + (size_t)ir * kb, bp + (size_t)jr * kb,
                    ct + (size_t)ir * nb + jr, nb, p0 > 0);
    }
    epilogue(j->y, j->dtype, ct, nb, j->n, j->glu, i0, mb, j0, nb, nr);
}

/* Pool item of the shared x packing: depth step item / row_blocks, row block item % row_blocks. */
static void pack_x_block(void *arg, int64_t item, int slot)
{
    const tiled_job *j = arg;
    int64_t step = item / j->row_blocks, i0 = item % j->row_blocks * j->t->mc, p0 = step * j->kc;
    int kb = (int)(j->k - p0 < j->kc ? j->k - p0 : j->kc);
    int mb = (int)(j->m - i0 < j->t->mc ? j->m - i0 : j->t->mc);
    (void)slot;
    pack_x(j->xs + (size_t)(p0 * j->m_pad + i0 * kb), j->x, j->dtype, j->k, i0, mb, p0, kb);
}

void kt_cpu_tiled_gemm(const kt_cpu_tiled *t, void *y, const void *x, const void *w, kt_dtype dtype,
                       int64_t m, int64_t n, int64_t k, int glu, int threads)
{
    /* packed columns: glu interleaves nr/2 gate and nr/2 up columns per micro-panel */
    int nr = t->nr;
    int64_t cols = glu ? (n + nr / 2 - 1) / (nr / 2) * nr : n;
    if (threads > t->threads)
        threads = t->threads;
    int kc = t->kc > 0 ? t->kc : m <= KC_ROWS ? KC_SHALLOW : KC_DEEP;
    tiled_job j = {t, y, x, w, dtype, m, n, k, kc, (cols + nr - 1) / nr, 0, 0, glu, NULL, 0};
    j.row_blocks = (m + t->mc - 1) / t->mc;
    j.m_pad = (m + MR - 1) / MR * MR;
    if (t->xbuf && m >= SHARED_ROWS && (size_t)(j.m_pad * k) <= t->x_floats)
        j.xs = t->xbuf;
    j.col_blocks = column_blocks(t, j.panels, j.row_blocks, threads, j.xs != NULL);
    if (j.xs)
        kt_pool_for(threads, (k + kc - 1) / kc * j.row_blocks, pack_x_block, &j);
    kt_pool_for(threads, j.row_blocks * j.col_blocks, tiled_block, &j);
}
