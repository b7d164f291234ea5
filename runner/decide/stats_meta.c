/* stats_meta.c - combining estimates from several points (meta-analysis). */
#include "decide/stats.h"

#include <math.h>

double kt_stats_dl_tau2(const double *y, const double *v, size_t n)
{
    double s1 = 0, s2 = 0, sy = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(v[i] > 0) || !isfinite(v[i]) || !isfinite(y[i]))
            return NAN;
        double w = 1.0 / v[i];
        s1 += w;
        s2 += w * w;
        sy += w * y[i];
    }
    if (n < 2)
        return 0;
    double mean = sy / s1, q = 0;
    for (size_t i = 0; i < n; i++)
        q += (y[i] - mean) * (y[i] - mean) / v[i];
    double tau2 = (q - (double)(n - 1)) / (s1 - s2 / s1);
    return tau2 > 0 ? tau2 : 0;
}

/* Continued fraction of the regularized incomplete beta I_x(a, b) (modified Lentz), valid for
 * x < (a + 1) / (a + b + 2). */
static double beta_cf(double a, double b, double x)
{
    const double tiny = 1e-300;
    double c = 1, d = 1 - (a + b) * x / (a + 1);
    d = 1 / (fabs(d) < tiny ? tiny : d);
    double h = d;
    for (int m = 1; m <= 500; m++) {
        double m2 = 2.0 * m, num = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
        for (int half = 0; half < 2; half++) {
            d = 1 + num * d;
            c = 1 + num / c;
            d = 1 / (fabs(d) < tiny ? tiny : d);
            c = fabs(c) < tiny ? tiny : c;
            h *= d * c;
            num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
        }
        if (fabs(d * c - 1) < 1e-16)
            break;
    }
    return h;
}

static double incomplete_beta(double a, double b, double x)
{
    if (x <= 0)
        return 0;
    if (x >= 1)
        return 1;
    double front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
    if (x < (a + 1) / (a + b + 2))
        return front * beta_cf(a, b, x) / a;
    return 1 - front * beta_cf(b, a, 1 - x) / b;
}

double kt_stats_t_cdf(double t, double df)
{
    if (!(df > 0) || isnan(t))
        return NAN;
    double tail = 0.5 * incomplete_beta(df / 2, 0.5, df / (df + t * t));
    return t < 0 ? tail : 1 - tail;
}

double kt_stats_t_quantile(double p, double df)
{
    if (!(p > 0 && p < 1) || !(df > 0))
        return NAN;
    double lo = -1, hi = 1;
    while (kt_stats_t_cdf(lo, df) > p)
        lo *= 2;
    while (kt_stats_t_cdf(hi, df) < p)
        hi *= 2;
    for (int i = 0; i < 200 && hi - lo > 1e-15 * (fabs(lo) + fabs(hi)); i++) {
        double mid = 0.5 * (lo + hi);
        if (kt_stats_t_cdf(mid, df) < p)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}

void kt_stats_widen(kt_shift *s, double extra_var, double confidence)
{
    if (!(extra_var > 0))
        return;
    double z = kt_stats_normal_quantile(0.5 + confidence / 2), est = s->estimate;
    double lo = est - s->ci_low, hi = s->ci_high - est;
    s->ci_low = est - sqrt(lo * lo + z * z * extra_var);
    s->ci_high = est + sqrt(hi * hi + z * z * extra_var);
    double side = est >= 0 ? est - s->ci_low : s->ci_high - est;
    if (side > 0)
        s->p_value = fmax(s->p_value, erfc(fabs(est) / (side / z) / sqrt(2.0)));
}
