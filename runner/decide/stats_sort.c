/* stats_sort.c - the total order on doubles that every statistic sorts by; a leaf that
 * stats.c, stats_rank.c and stats_select.c all depend on. */
#include "decide/stats_internal.h"

#include "kernel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int kt_stats_cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    if (isnan(a) || isnan(b))
        return isnan(a) - isnan(b);
    return (a > b) - (a < b);
}

int kt_stats_sorted_copy(double **out, const double *x, size_t n)
{
    *out = malloc((n ? n : 1) * sizeof(**out));
    if (!*out)
        return kt_error_code(KT_ENOMEM, "out of memory sorting %zu values", n);
    if (n)
        memcpy(*out, x, n * sizeof(**out));
    qsort(*out, n, sizeof(**out), kt_stats_cmp_double);
    return KT_OK;
}
