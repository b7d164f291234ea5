/* kt_stats_oracle.c - prints runner/stats results for tests/cli/test_stats_scipy.py,
 * which compares them with scipy. Reads one case per line from stdin:
 *   w CONFIDENCE N d_1 .. d_N             one sample (kt_stats_signed_rank)
 *   m CONFIDENCE NA NB a_1 .. a_NA b_1 .. b_NB   two samples (kt_stats_two_sample)
 * and writes one line per case:
 *   ESTIMATE CI_LOW CI_HIGH ACHIEVED P_VALUE EXACT P_CONTINUITY
 * (P_CONTINUITY: Wilcoxon with continuity correction; NAN for two samples).
 * Exits 1 with a message on malformed input or a failing call. */
#include "decide/stats.h"

#include "kernel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int read_values(double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (scanf("%lf", &v[i]) != 1)
            return -1;
    return 0;
}

static int run_case(char kind)
{
    double conf, *v = NULL;
    size_t na = 0, nb = 0;
    int rc = -1;
    kt_shift r;
    if (scanf("%lf %zu", &conf, &na) != 2 || (kind == 'm' && scanf("%zu", &nb) != 1))
        goto done;
    if (!(v = malloc((na + nb + 1) * sizeof(*v))) || read_values(v, na + nb) < 0)
        goto done;
    double p_cc = NAN;
    if (kind == 'w') {
        rc = kt_stats_signed_rank(&r, v, na, conf);
        p_cc = kt_stats_wilcoxon_p_opt(v, na, 1, NULL);
    } else {
        rc = kt_stats_two_sample(&r, v, na, v + na, nb, conf);
    }
    if (rc < 0) {
        fprintf(stderr, "kt_stats_oracle: %s\n", kt_error_last());
        goto done;
    }
    printf("%.17g %.17g %.17g %.17g %.17g %d %.17g\n", r.estimate, r.ci_low, r.ci_high, r.achieved,
           r.p_value, r.exact, p_cc);
done:
    free(v);
    return rc;
}

int main(void)
{
    char kind[2];
    while (scanf("%1s", kind) == 1) {
        if ((kind[0] != 'w' && kind[0] != 'm') || run_case(kind[0]) < 0) {
            fprintf(stderr, "kt_stats_oracle: bad case '%c'\n", kind[0]);
            return 1;
        }
    }
    return 0;
}
