/* usage_lines.c - the summary's lines on usage costs: what the profiling pass measured per arm
 * (CPU time, context switches, page faults, IPC where the PMU allows, energy), the costs per
 * million tokens, and once, what this machine cannot measure and why. */
#include "report/summary.h"
#include "report/cells.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const kt_counter *counter(const kt_counter_values *v, const char *name)
{
    for (int i = 0; i < v->n; i++)
        if (strcmp(v->c[i].name, name) == 0)
            return &v->c[i];
    return NULL;
}

static void arm_line(FILE *out, const char *point, const kt_arm_result *a, int w)
{
    const kt_counter_values *v = &a->profile;
    const kt_counter *tc = counter(v, "task_clock_ns"), *cs = counter(v, "context_switches");
    const kt_counter *pf = counter(v, "page_faults"), *cyc = counter(v, "cycles");
    const kt_counter *ins = counter(v, "instructions");
    char wall[32], cpu[32];
    fprintf(out, "  %-*s  %-16s wall %10s", w, point, a->name,
            kt_cell_time(wall, sizeof(wall), v->wall_ns));
    if (tc && tc->supported)
        fprintf(out, "  cpu %10s", kt_cell_time(cpu, sizeof(cpu), tc->value));
    /* counts per call are means over the pass: whole when every call agreed */
    if (cs && cs->supported)
        fprintf(out, "  ctx-sw %.*f", cs->value == floor(cs->value) ? 0 : 2, cs->value);
    if (pf && pf->supported)
        fprintf(out, "  faults %.*f", pf->value == floor(pf->value) ? 0 : 2, pf->value);
    if (cyc && ins && cyc->supported && ins->supported && cyc->value > 0)
        fprintf(out, "  IPC %.2f", ins->value / cyc->value);
    if (!v->energy_unavailable[0])
        fprintf(out, "  energy %.3g J",
                v->energy_j[0] + (isnan(v->energy_j[1]) ? 0 : v->energy_j[1]));
    fputc('\n', out);
    kt_gpu_print_line(out, &v->gpu);
}

void kt_print_usage(FILE *out, const kt_run_result *run, int virtual_clock)
{
    const kt_arm_result *any = NULL;
    int w = 5;
    for (size_t i = 0; i < run->n_points; i++)
        if ((int)strlen(run->points[i].point.id) > w)
            w = (int)strlen(run->points[i].point.id);
    for (size_t i = 0; i < run->n_points; i++) {
        const kt_point_result *p = &run->points[i];
        if (p->baseline.profiled && !any) {
            any = &p->baseline;
            fprintf(out,
                    "\nusage per call (profiling pass: %d extra calls per arm on input set 0, "
                    "apart from the timed pairs):\n%s",
                    any->profile.calls,
                    virtual_clock ? "  (sim backend: wall and cpu are the host's real work on "
                                    "the simulated calls, not the virtual clock of the medians)\n"
                                  : "");
        }
        if (p->baseline.profiled)
            arm_line(out, p->point.id, &p->baseline, w);
        for (size_t k = 0; k < p->n_cands; k++)
            if (p->cands[k].arm.profiled)
                arm_line(out, p->point.id, &p->cands[k].arm, w);
    }
    for (size_t i = 0; i < run->n_points; i++)
        for (size_t k = 0; k < run->points[i].n_cands; k++) {
            const kt_candidate_result *c = &run->points[i].cands[k];
            if (!kt_candidate_priced(c))
                continue;
            fprintf(out,
                    "cost %-*s  %-16s $%.4g per million tokens (baseline $%.4g; %.6g token%s "
                    "per call)\n",
                    w, run->points[i].point.id, c->arm.name, c->usd_per_mtok_cand,
                    c->usd_per_mtok_base, c->tokens_per_call, c->tokens_per_call == 1 ? "" : "s");
        }
    if (!any)
        return;
    char missing[512] = "";
    size_t used = 0;
    const char *why = NULL;
    for (int i = 0; i < any->profile.n; i++)
        if (!any->profile.c[i].supported && used < sizeof(missing) - 40) {
            used += (size_t)snprintf(missing + used, sizeof(missing) - used, "%s%s",
                                     used ? ", " : "", any->profile.c[i].name);
            why = any->profile.c[i].unsupported;
        }
    if (why)
        fprintf(out, "note: not measurable on this machine: %s (%s)\n", missing, why);
    if (any->profile.energy_unavailable[0])
        fprintf(out, "note: energy %s\n", any->profile.energy_unavailable);
}
