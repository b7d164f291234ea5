/* run_result.c - the read-only questions on a run's results, and freeing them. */
#include "result/run.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Whether Ctrl-C cut point 'p' short: it has pairs but no verdict of its own, and a resume
 * measures it again, so no tally or mean of the run takes it. */
int kt_point_cut_short(const kt_point_result *p)
{
    return strcmp(p->stop_reason, "interrupted") == 0;
}

int kt_point_in_geomean(const kt_point_result *p, size_t k)
{
    if (kt_point_cut_short(p) || k >= p->n_cands)
        return 0;
    const kt_candidate_result *c = &p->cands[k];
    return c->speedup > 0 && c->ci_low > 0 && isfinite(c->ci_high) && c->shift.achieved > 0 &&
           c->shift.achieved < 1;
}

int kt_point_failed(const kt_point_result *p)
{
    return p->error[0] && !kt_point_cut_short(p);
}

size_t kt_run_finished_points(const kt_run_result *run)
{
    size_t n = 0;
    for (size_t i = 0; i < run->n_points; i++)
        n += !kt_point_cut_short(&run->points[i]);
    return n;
}

int kt_run_energy_unchecked(const kt_run_result *run, double max_ratio)
{
    int n = 0;
    for (size_t i = 0; !isnan(max_ratio) && i < run->n_points; i++) {
        const kt_point_result *p = &run->points[i];
        for (size_t k = 0; k < p->n_cands && !kt_point_failed(p) && !kt_point_cut_short(p); k++)
            n += !p->cands[k].arm.failed && isnan(p->cands[k].energy_ratio);
    }
    return n;
}

void kt_run_result_free(kt_run_result *run)
{
    for (size_t i = 0; i < run->n_points; i++)
        kt_point_result_free(&run->points[i]);
    free(run->points);
    free(run->cands);
    memset(run, 0, sizeof(*run));
}
