/* stats_rank.c - rank tests: Wilcoxon signed-rank and Mann-Whitney U p-values, both
 * two-sided, with their exact null distributions. The choices between exact and normal
 * approximation follow scipy 1.10 (see stats.h for where they differ). */
#include "decide/stats.h"
#include "decide/stats_internal.h"

#include <math.h>
#include <stdlib.h>

/* Above this many entries the exact Mann-Whitney tail is replaced by the normal
 * approximation (only reachable with one sample <= 8 and the other > 1 million). */
#define KT_MWU_EXACT_MAX_TAIL (1u << 22)

typedef struct ranked {
    double key;
    int tag; /* signed rank: the sign of d; Mann-Whitney: 1 for sample a, 0 for b */
} ranked;

static int cmp_ranked(const void *pa, const void *pb)
{
    return kt_stats_cmp_double(&((const ranked *)pa)->key, &((const ranked *)pb)->key);
}

/* Sorts 'r' by key and assigns average ranks (1-based). Returns the sum of the ranks of
 * the items with tag > 0 in '*tagged_rank_sum' and the tie term sum(t^3 - t) over
 * groups of equal keys in '*tie_term'. */
static void rank_sorted(ranked *r, size_t n, double *tagged_rank_sum, double *tie_term)
{
    qsort(r, n, sizeof(*r), cmp_ranked);
    double sum = 0, ties = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && r[j].key == r[i].key)
            j++;
        double t = (double)(j - i);
        double avg = (double)(i + 1 + j) / 2; /* mean of ranks i+1 .. j */
        for (size_t m = i; m < j; m++)
            if (r[m].tag > 0)
                sum += avg;
        ties += t * t * t - t;
        i = j;
    }
    *tagged_rank_sum = sum;
    *tie_term = ties;
}

double kt_stats_normal_sf(double z)
{
    return 0.5 * erfc(z / M_SQRT2);
}

double *kt_stats_signed_rank_cdf(size_t n)
{
    if (n > 50)
        return NULL;
    size_t m = n * (n + 1) / 2;
    double *c = calloc(m + 1, sizeof(*c));
    if (!c)
        return NULL;
    c[0] = 1; /* counts of subsets of {1..i} by sum: exact integers below 2^50 */
    for (size_t i = 1; i <= n; i++)
        for (size_t s = i * (i + 1) / 2; s >= i; s--)
            c[s] += c[s - i];
    double acc = 0;
    for (size_t s = 0; s <= m; s++) {
        acc += c[s];
        c[s] = ldexp(acc, -(int)n);
    }
    return c;
}

double *kt_stats_mann_whitney_cdf(size_t m, size_t n, uint64_t tmax)
{
    size_t a = m < n ? m : n, b = m < n ? n : m;
    if (tmax > (uint64_t)a * b)
        tmax = (uint64_t)a * b;
    double *g = calloc((size_t)tmax + 1, sizeof(*g));
    if (!g)
        return NULL;
    /* g = [b+i choose i]_q after step i; multiplying by (1 - q^(b+i)) then dividing by
     * (1 - q^i) keeps every step a power-series operation, so truncation is exact. The
     * subtraction cancels at most a factor ~i^2 of precision (counts stay positive). */
    g[0] = 1;
    double total = 1;
    for (size_t i = 1; i <= a; i++) {
        for (uint64_t t = tmax; t >= b + i; t--)
            g[t] -= g[t - b - i];
        for (uint64_t t = i; t <= tmax; t++)
            g[t] += g[t - i];
        total = total * (double)(b + i) / (double)i;
    }
    double acc = 0;
    for (uint64_t t = 0; t <= tmax; t++) {
        acc += g[t];
        g[t] = acc / total;
    }
    return g;
}

double kt_stats_wilcoxon_p_opt(const double *d, size_t n, int continuity, int *exact)
{
    double p = NAN;
    ranked *r = NULL;
    if (exact)
        *exact = 0;
    if (n == 0)
        goto done;
    size_t nz = 0;
    r = malloc(n * sizeof(*r));
    if (!r)
        goto done;
    for (size_t i = 0; i < n; i++) {
        if (isnan(d[i]))
            goto done;
        if (d[i] != 0)
            r[nz++] = (ranked){fabs(d[i]), d[i] > 0};
    }
    if (nz == 0) {
        p = 1; /* every difference is zero: no evidence of a shift (scipy raises) */
        goto done;
    }
    double r_plus, ties;
    rank_sorted(r, nz, &r_plus, &ties);
    double m = (double)nz * (nz + 1) / 2;
    if (n <= 50 && nz == n && ties == 0) {
        double *cdf = kt_stats_signed_rank_cdf(nz);
        if (!cdf)
            goto done;
        size_t w = (size_t)r_plus;
        /* P(W+ >= w) = P(W+ <= m - w) by symmetry: no cancellation in the far tail. At
         * the centre both exceed 1/2, so the cap gives scipy's special case p = 1. */
        p = fmin(2 * fmin(cdf[w], cdf[(size_t)m - w]), 1);
        free(cdf);
        if (exact)
            *exact = 1;
        goto done;
    }
    double t = fmin(r_plus, m - r_plus);
    double mean = m / 2;
    double se = sqrt(((double)nz * (nz + 1) * (2.0 * nz + 1) - 0.5 * ties) / 24);
    double cc = continuity ? 0.5 * (t > mean ? 1 : (t < mean ? -1 : 0)) : 0;
    p = 2 * kt_stats_normal_sf(fabs((t - mean - cc) / se));
done:
    free(r);
    return p;
}

double kt_stats_wilcoxon_p(const double *d, size_t n, int *exact)
{
    return kt_stats_wilcoxon_p_opt(d, n, 0, exact);
}

double kt_stats_mann_whitney_p_ex(const double *a, size_t na, const double *b, size_t nb,
                                  int *exact)
{
    double p = NAN;
    ranked *r = NULL;
    if (exact)
        *exact = 0;
    size_t n = na + nb;
    if (na == 0 || nb == 0)
        goto done;
    r = malloc(n * sizeof(*r));
    if (!r)
        goto done;
    for (size_t i = 0; i < n; i++) {
        double v = i < na ? a[i] : b[i - na];
        if (isnan(v))
            goto done;
        r[i] = (ranked){v, i < na};
    }
    double r1, ties;
    rank_sorted(r, n, &r1, &ties);
    double u1 = r1 - (double)na * (na + 1) / 2;
    double u = fmax(u1, (double)na * nb - u1);
    double mean = (double)na * nb / 2;
    if ((na <= 8 || nb <= 8) && ties == 0 && mean <= KT_MWU_EXACT_MAX_TAIL) {
        uint64_t umin = (uint64_t)((double)na * nb - u);
        double *cdf = kt_stats_mann_whitney_cdf(na, nb, umin);
        if (!cdf)
            goto done;
        p = fmin(2 * cdf[umin], 1);
        free(cdf);
        if (exact)
            *exact = 1;
        goto done;
    }
    double var = (double)na * nb / 12 * ((double)(n + 1) - ties / ((double)n * (n - 1)));
    if (var <= 0) {
        p = 1; /* all values tied: U sits at its mean */
        goto done;
    }
    p = fmin(2 * kt_stats_normal_sf((u - mean - 0.5) / sqrt(var)), 1);
done:
    free(r);
    return p;
}

double kt_stats_mann_whitney_p(const double *a, size_t na, const double *b, size_t nb)
{
    return kt_stats_mann_whitney_p_ex(a, na, b, nb, NULL);
}
