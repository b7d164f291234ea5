/* stats_select.c - the k-th smallest pairwise sum without materialising the pairs.
 *
 * The sums x[i] + y[j] of two ascending arrays form a matrix sorted along rows and
 * columns (floating-point addition is monotone, so this holds for the computed sums
 * too). The candidates still in play are, per row, a range of columns; each round
 * picks a random candidate as pivot, counts with two pointers how many sums lie below
 * and at it, and keeps the side holding the k-th. Expected O(log(pairs)) rounds of
 * O(nx + ny) each; once few candidates remain they are gathered and sorted. */
#include "stats_internal.h"

#include "kernel.h"

#include <stdlib.h>

/* Candidates below this many are gathered and sorted instead of partitioned further. */
#define KT_SELECT_GATHER_MIN 64

typedef struct select_state {
    const double *x, *y;
    size_t nx, ny;
    size_t *lo, *hi; /* row i's candidates are columns [lo[i], hi[i]) */
    size_t *lt, *le; /* scratch: per-row cut for "< pivot" and "<= pivot" */
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

/* Fills st->lt[i] (first column with sum >= p) and st->le[i] (first column with
 * sum > p), clamped to the row's candidate range. Both cuts only move left as i grows. */
static void cut_rows(select_state *st, double p)
{
    size_t jl = st->ny, je = st->ny;
    for (size_t i = 0; i < st->nx; i++) {
        while (jl > 0 && st->x[i] + st->y[jl - 1] >= p)
            jl--;
        while (je > 0 && st->x[i] + st->y[je - 1] > p)
            je--;
        st->lt[i] = clamp_index(jl, st->lo[i], st->hi[i]);
        st->le[i] = clamp_index(je, st->lo[i], st->hi[i]);
    }
}

/* The 'r'-th (0-based, in row-major order) candidate sum. */
static double candidate_at(const select_state *st, uint64_t r)
{
    for (size_t i = 0; i < st->nx; i++) {
        uint64_t w = st->hi[i] - st->lo[i];
        if (r < w)
            return st->x[i] + st->y[st->lo[i] + r];
        r -= w;
    }
    return st->x[st->nx - 1] + st->y[st->ny - 1]; /* not reached: r < candidates */
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
    st.lt = malloc(nx * sizeof(size_t));
    st.le = malloc(nx * sizeof(size_t));
    if (!st.lo || !st.hi || !st.lt || !st.le) {
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
    uint64_t gather_max = 2 * ((uint64_t)nx + ny) + KT_SELECT_GATHER_MIN;
    for (;;) {
        if (cand <= gather_max) {
            rc = gather_select(out, &st, cand, k - below - 1);
            goto done;
        }
        double p = candidate_at(&st, kt_rng_next(&rng) % cand);
        cut_rows(&st, p);
        uint64_t n_lt = below, n_le = below;
        for (size_t i = 0; i < nx; i++) {
            n_lt += st.lt[i] - st.lo[i];
            n_le += st.le[i] - st.lo[i];
        }
        if (k <= n_lt) {
            size_t *t = st.hi;
            st.hi = st.lt, st.lt = t;
            cand = n_lt - below;
        } else if (k <= n_le) {
            *out = p;
            goto done;
        } else {
            size_t *t = st.lo;
            st.lo = st.le, st.le = t;
            cand = below + cand - n_le;
            below = n_le;
        }
    }
done:
    free(st.lo);
    free(st.hi);
    free(st.lt);
    free(st.le);
    return rc;
}
