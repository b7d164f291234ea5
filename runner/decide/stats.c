/* stats.c - summaries of raw times and the Hodges-Lehmann shift estimates with their
 * distribution-free confidence intervals. The rank tests live in stats_rank.c, the
 * order-statistic selection in stats_select.c, the sort order in stats_sort.c. */
#include "decide/stats.h"
#include "decide/stats_internal.h"

#include "kernel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double kt_stats_quantile(const double *sorted, size_t n, double q)
{
    if (n == 0 || !(q >= 0 && q <= 1))
        return NAN;
    double h = (double)(n - 1) * q;
    size_t lo = (size_t)h;
    if (lo >= n - 1)
        return sorted[n - 1];
    return sorted[lo] + (h - (double)lo) * (sorted[lo + 1] - sorted[lo]);
}

void kt_stats_summary(kt_summary *out, const double *x, size_t n)
{
    double *s = NULL;
    memset(out, 0, sizeof(*out));
    out->n = n;
    out->mean = out->median = out->p10 = out->p90 = out->min = out->max = out->mad = NAN;
    if (n == 0 || kt_stats_sorted_copy(&s, x, n) < 0)
        goto done;
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += s[i];
    out->mean = sum / (double)n;
    out->median = kt_stats_quantile(s, n, 0.5);
    out->p10 = kt_stats_quantile(s, n, 0.1);
    out->p90 = kt_stats_quantile(s, n, 0.9);
    out->min = s[0];
    out->max = s[n - 1];
    double q1 = kt_stats_quantile(s, n, 0.25), q3 = kt_stats_quantile(s, n, 0.75);
    double iqr = q3 - q1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < q1 - 3 * iqr || s[i] > q3 + 3 * iqr)
            out->outliers_severe++;
        else if (s[i] < q1 - 1.5 * iqr || s[i] > q3 + 1.5 * iqr)
            out->outliers_mild++;
    }
    for (size_t i = 0; i < n; i++)
        s[i] = fabs(s[i] - out->median);
    qsort(s, n, sizeof(*s), kt_stats_cmp_double);
    out->mad = kt_stats_quantile(s, n, 0.5);
done:
    free(s);
}

double kt_stats_normal_quantile(double p)
{
    /* Acklam's rational approximations (relative error < 1.2e-9) */
    static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                               -2.759285104469687e+02, 1.383577518672690e+02,
                               -3.066479806614716e+01, 2.506628277459239e+00};
    static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                               -1.556989798598866e+02, 6.680131188771972e+01,
                               -1.328068155288572e+01};
    static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                               -2.400758277161838e+00, -2.549732539343734e+00,
                               4.374664141464968e+00,  2.938163982698783e+00};
    static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                               3.754408661907416e+00};
    if (!(p > 0 && p < 1))
        return NAN;
    double x;
    if (p < 0.02425 || p > 1 - 0.02425) {
        double q = sqrt(-2 * log(p < 0.5 ? p : 1 - p));
        x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
        if (p > 0.5)
            x = -x;
    } else {
        double q = p - 0.5, r = q * q;
        x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
            (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
    }
    /* one Halley step on Phi(x) - p, with Phi from erfc */
    double e = 0.5 * erfc(-x / M_SQRT2) - p;
    double u = e * sqrt(2 * M_PI) * exp(x * x / 2);
    return x - u / (1 + x * u / 2);
}

/* The result for no data: no estimate, no interval. */
static void shift_empty(kt_shift *out, size_t n, double confidence)
{
    memset(out, 0, sizeof(*out));
    out->n = n;
    out->confidence = confidence;
    out->estimate = NAN;
    out->ci_low = -INFINITY;
    out->ci_high = INFINITY;
    out->achieved = 1;
    out->p_value = NAN;
}

static int check_args(kt_shift *out, size_t n, double confidence)
{
    if (!out)
        return kt_error_code(KT_EINVAL, "no result to fill");
    shift_empty(out, n, confidence);
    if (!(confidence > 0 && confidence < 1))
        return kt_error_code(KT_EINVAL, "confidence %g outside (0, 1)", confidence);
    return KT_OK;
}

static int check_finite(const double *x, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return kt_error_code(KT_EINVAL, "non-finite %s at index %zu", what, i);
    return KT_OK;
}

/* Critical rank k (1-based) from the exact null 'cdf' of a statistic on 0 .. m: the
 * largest k with cdf[k-1] <= alpha/2, and its exact coverage. Returns 0 when none. */
static uint64_t critical_exact(const double *cdf, uint64_t m, double alpha, double *achieved)
{
    uint64_t t = 0;
    while (t <= m && cdf[t] <= alpha / 2)
        t++;
    *achieved = t ? 1 - 2 * cdf[t - 1] : 1;
    return t;
}

/* Critical rank k from the normal approximation of a statistic on 0 .. m with standard
 * deviation 'sd': floor(m/2 - z sd) clamped to >= 1, and its approximate coverage. */
static uint64_t critical_normal(uint64_t m, double sd, double confidence, double *achieved)
{
    double z = kt_stats_normal_quantile((1 + confidence) / 2);
    double k = floor((double)m / 2 - z * sd);
    if (k < 1)
        k = 1;
    *achieved = 1 - 2 * kt_stats_normal_sf(((double)m / 2 - (k - 0.5)) / sd); /* P(T <= k-1) */
    return (uint64_t)k;
}

/* Fills the estimate (median of the pair values) and the interval [v_(k), v_(m+1-k)]
 * from the pairwise sums of 'x' and 'y' scaled by 'scale'; k = 0: no interval. */
static int fill_from_pairs(kt_shift *out, const double *x, size_t nx, const double *y, size_t ny,
                           int triangular, double scale, uint64_t k)
{
    uint64_t m = kt_stats_pair_count(nx, ny, triangular);
    double lo, hi;
    int rc = kt_stats_select_sum(&lo, x, nx, y, ny, triangular, (m + 1) / 2);
    if (rc == KT_OK && m % 2 == 0)
        rc = kt_stats_select_sum(&hi, x, nx, y, ny, triangular, m / 2 + 1);
    else
        hi = lo;
    if (rc < 0)
        return rc;
    out->estimate = (lo * scale + hi * scale) / 2;
    if (k == 0)
        return KT_OK;
    if ((rc = kt_stats_select_sum(&lo, x, nx, y, ny, triangular, k)) < 0 ||
        (rc = kt_stats_select_sum(&hi, x, nx, y, ny, triangular, m + 1 - k)) < 0)
        return rc;
    out->ci_low = lo * scale;
    out->ci_high = hi * scale;
    return KT_OK;
}

int kt_stats_signed_rank(kt_shift *out, const double *d, size_t n, double confidence)
{
    double *s = NULL, *cdf = NULL;
    int rc = check_args(out, n, confidence);
    if (rc < 0)
        return rc;
    if (n == 0)
        return KT_OK;
    if ((rc = check_finite(d, n, "difference")) < 0 || (rc = kt_stats_sorted_copy(&s, d, n)) < 0)
        goto done;
    uint64_t m = kt_stats_pair_count(n, n, 1), k;
    if (n <= 50) {
        if (!(cdf = kt_stats_signed_rank_cdf(n))) {
            rc = kt_error_code(KT_ENOMEM, "out of memory for the signed-rank distribution");
            goto done;
        }
        k = critical_exact(cdf, m, 1 - confidence, &out->achieved);
    } else {
        double sd = sqrt((double)n * (n + 1) * (2.0 * n + 1) / 24);
        k = critical_normal(m, sd, confidence, &out->achieved);
    }
    if ((rc = fill_from_pairs(out, s, n, s, n, 1, 0.5, k)) < 0)
        goto done;
    out->p_value = kt_stats_wilcoxon_p(d, n, &out->exact);
done:
    free(s);
    free(cdf);
    return rc;
}

int kt_stats_two_sample(kt_shift *out, const double *a, size_t na, const double *b, size_t nb,
                        double confidence)
{
    double *sa = NULL, *sb = NULL, *cdf = NULL;
    int rc = check_args(out, na + nb, confidence);
    if (rc < 0)
        return rc;
    if (na == 0 || nb == 0)
        return KT_OK;
    if ((rc = check_finite(a, na, "value in a")) < 0 ||
        (rc = check_finite(b, nb, "value in b")) < 0 ||
        (rc = kt_stats_sorted_copy(&sa, a, na)) < 0 || (rc = kt_stats_sorted_copy(&sb, b, nb)) < 0)
        goto done;
    /* a_i - b_j = a_i + (-b_j) exactly; -b ascending is b descending, negated */
    for (size_t j = 0; j < nb / 2; j++) {
        double t = sb[j];
        sb[j] = sb[nb - 1 - j];
        sb[nb - 1 - j] = t;
    }
    for (size_t j = 0; j < nb; j++)
        sb[j] = -sb[j];
    uint64_t m = kt_stats_pair_count(na, nb, 0), k;
    if (na <= 50 && nb <= 50) {
        if (!(cdf = kt_stats_mann_whitney_cdf(na, nb, m))) {
            rc = kt_error_code(KT_ENOMEM, "out of memory for the Mann-Whitney distribution");
            goto done;
        }
        k = critical_exact(cdf, m, 1 - confidence, &out->achieved);
    } else {
        double sd = sqrt((double)na * nb * (double)(na + nb + 1) / 12);
        k = critical_normal(m, sd, confidence, &out->achieved);
    }
    if ((rc = fill_from_pairs(out, sa, na, sb, nb, 0, 1, k)) < 0)
        goto done;
    out->p_value = kt_stats_mann_whitney_p_ex(a, na, b, nb, &out->exact);
done:
    free(sa);
    free(sb);
    free(cdf);
    return rc;
}
