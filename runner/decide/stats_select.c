/* stats_select.c - the k-th smallest pairwise sum without materialising the pairs.
 *
 * The sums x[i] + y[j] of two ascending arrays form a matrix sorted along rows and
 * columns (floating-point addition is monotone, so this holds for the computed sums
 * too). The candidates still in play are, per row, a range of columns. Each round draws
 * a random sample of candidates, takes two sample values that bracket the target rank
 * (Floyd-Rivest style), counts with two pointers how many sums lie below the lower and
 * up to the upper one, and keeps the part holding the k-th: most rounds shrink the
 * candidates about eightfold. A round that fails to shrink falls back to one random
 * pivot, which always removes at least the pivot. Each round is O(nx + ny); once few
 * candidates remain they are gathered and sorted. */
#include "decide/stats_internal.h"

#include "kernel.h"

#include <stdlib.h>

#define KT_SELECT_SAMPLE 256 /* candidates sampled per round */
#define KT_SELECT_SPREAD 16  /* sample ranks either side of the target (~2 sd) */

typedef struct select_state {
    const double *x, *y;
    size_t nx, ny;
    size_t *lo, *hi;  /* row i's candidates are columns [lo[i], hi[i]) */
    size_t *cut_lo;   /* scratch: per row, first column with sum >= the lower pivot */
    size_t *cut_hi;   /* scratch: per row, first column with sum > the upper pivot */
    uint64_t *offset; /* scratch: candidates in rows before i (nx + 1 entries) */
} select_state;

uint64_t kt_stats_pair_count(size_t nx, size_t ny, int triangular)
{
    if (triangular)
        return (uint64_t)nx * ((uint64_t)nx + 1) / 2;
    return (uint64_t)nx * (uint64_t)ny;
}

static size_t clamp_index(size_t v, size_t lo, size_t hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}

/* Fills st->cut_lo[i] (first column with sum >= 'p_lo') and st->cut_hi[i] (first column
 * with sum > 'p_hi'), clamped to the row's candidates. Both cuts only move left as i
 * grows, so two pointers sweep each in O(nx + ny). */
static void cut_rows(select_state *st, double p_lo, double p_hi)
{
    size_t jl = st->ny;
    size_t jh = jl;
    for (size_t i = 0; i < st->nx; i++) {
        while (jl > 0 && st->x[i] + st->y[jl - 1] >= p_lo)
            jl--;
        while (jh > 0 && st->x[i] + st->y[jh - 1] > p_hi)
            jh--;
        st->cut_lo[i] = clamp_index(jl, st->lo[i], st->hi[i]);
        st->cut_hi[i] = clamp_index(jh, st->lo[i], st->hi[i]);
    }
}

/* The 'r'-th (0-based, row-major) candidate sum, found in the row offsets. */
static double candidate_at(const select_state *st, uint64_t r)
{
    size_t a = 0, b = st->nx; /* the row i with offset[i] <= r < offset[i + 1] */
    while (b - a > 1) {
        size_t mid = a + (b - a) / 2;
        if (st->offset[mid] <= r)
            a = mid;
        else
            b = mid;
    }
    return st->x[a] + st->y[st->lo[a] + (r - st->offset[a])];
}

/* Gathers the 'cand' remaining candidates, sorts them, and returns the 'r'-th (0-based). */
static int gather_select(double *out, const select_state *st, uint64_t cand, uint64_t r)
{
    double *buf = malloc((size_t)cand * sizeof(*buf));
    if (!buf)
        return kt_error_code(KT_ENOMEM, "out of memory selecting among %llu sums",
                             (unsigned long long)cand);
    size_t m = 0;
    for (size_t i = 0; i < st->nx; i++)
        for (size_t j = st->lo[i]; j < st->hi[i]; j++)
            buf[m++] = st->x[i] + st->y[j];
    qsort(buf, m, sizeof(*buf), kt_stats_cmp_double);
    *out = buf[r];
    free(buf);
    return KT_OK;
}

/* Picks the round's pivots: two sample values bracketing rank 'r' (0-based) of the
 * 'cand' candidates, or, when 'single', one random candidate for both. */
static void pick_pivots(const select_state *st, kt_rng *rng, uint64_t cand, uint64_t r, int single,
                        double *p_lo, double *p_hi)
{
    if (single) {
        *p_lo = *p_hi = candidate_at(st, kt_rng_next(rng) % cand);
        return;
    }
    double sample[KT_SELECT_SAMPLE];
    for (size_t s = 0; s < KT_SELECT_SAMPLE; s++)
        sample[s] = candidate_at(st, kt_rng_next(rng) % cand);
    qsort(sample, KT_SELECT_SAMPLE, sizeof(*sample), kt_stats_cmp_double);
    double at = (double)r / (double)cand * KT_SELECT_SAMPLE;
    double lo = at - KT_SELECT_SPREAD, hi = at + KT_SELECT_SPREAD;
    *p_lo = sample[lo < 0 ? 0 : (size_t)lo];
    *p_hi = sample[hi > KT_SELECT_SAMPLE - 1 ? KT_SELECT_SAMPLE - 1 : (size_t)hi];
}

static void swap_ptr(size_t **a, size_t **b)
{
    size_t *t = *a;
    *a = *b;
    *b = t;
}

int kt_stats_select_sum(double *out, const double *x, size_t nx, const double *y, size_t ny,
                        int triangular, uint64_t k)
{
    uint64_t total = kt_stats_pair_count(nx, ny, triangular);
    if (k < 1 || k > total)
        return kt_error_code(KT_EINVAL, "rank %llu outside 1..%llu", (unsigned long long)k,
                             (unsigned long long)total);
    int rc = KT_OK;
    select_state st = {.x = x, .y = y, .nx = nx, .ny = ny};
    st.lo = malloc(nx * sizeof(size_t));
    st.hi = malloc(nx * sizeof(size_t));
    st.cut_lo = malloc(nx * sizeof(size_t));
    st.cut_hi = malloc(nx * sizeof(size_t));
    st.offset = malloc((nx + 1) * sizeof(uint64_t));
    if (!st.lo || !st.hi || !st.cut_lo || !st.cut_hi || !st.offset) {
        rc = kt_error_code(KT_ENOMEM, "out of memory selecting among %llu sums",
                           (unsigned long long)total);
        goto done;
    }
    for (size_t i = 0; i < nx; i++) {
        st.lo[i] = triangular ? i : 0;
        st.hi[i] = ny;
    }
    kt_rng rng;
    kt_rng_seed(&rng, 0x6b74737461747321ull); /* fixed: the same input selects the same way */
    uint64_t below = 0, cand = total;         /* sums left of the candidates; candidates */
    uint64_t gather_max = ((uint64_t)nx + ny) / 2 + 4 * KT_SELECT_SAMPLE;
    int single = 0;
    while (cand > gather_max) {
        st.offset[0] = 0;
        for (size_t i = 0; i < nx; i++)
            st.offset[i + 1] = st.offset[i] + (st.hi[i] - st.lo[i]);
        double p_lo, p_hi;
        pick_pivots(&st, &rng, cand, k - below - 1, single, &p_lo, &p_hi);
        cut_rows(&st, p_lo, p_hi);
        uint64_t n_lt = below, n_le = below; /* sums < p_lo; sums <= p_hi */
        for (size_t i = 0; i < nx; i++) {
            n_lt += st.cut_lo[i] - st.lo[i];
            n_le += st.cut_hi[i] - st.lo[i];
        }
        uint64_t before = cand;
        if (k <= n_lt) {
            swap_ptr(&st.hi, &st.cut_lo);
            cand = n_lt - below;
        } else if (k > n_le) {
            swap_ptr(&st.lo, &st.cut_hi);
            cand = below + cand - n_le;
            below = n_le;
        } else if (p_lo == p_hi) {
            *out = p_lo; /* every sum ranked n_lt+1 .. n_le equals the pivot */
            goto done;
        } else {
            swap_ptr(&st.lo, &st.cut_lo);
            swap_ptr(&st.hi, &st.cut_hi);
            cand = n_le - n_lt;
            below = n_lt;
        }
        single = cand == before; /* no progress (ties at both ends): one pivot next */
    }
    rc = gather_select(out, &st, cand, k - below - 1);
done:
    free(st.lo);
    free(st.hi);
    free(st.cut_lo);
    free(st.cut_hi);
    free(st.offset);
    return rc;
}
