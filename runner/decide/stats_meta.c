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
