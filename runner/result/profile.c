/* profile.c - per-stage profiles: accumulation, shares, Amdahl bounds, JSON and summary lines. */
#include "result/profile.h"
#include "util/json.h"

#include <math.h>
#include <string.h>

void kt_stage_stats_add(kt_stage_stats *s, const kt_stage_profile *p, double total_ns)
{
    if (!p || p->n <= 0 || !isfinite(total_ns))
        return;
    int n = p->n < KT_MAX_STAGES ? p->n : KT_MAX_STAGES;
    if (s->calls == 0) {
        s->n_stages = n;
        for (int i = 0; i < n; i++)
            snprintf(s->names[i], sizeof(s->names[i]), "%s", p->names[i] ? p->names[i] : "?");
    } else if (n != s->n_stages) {
        return;
    }
    for (int i = 0; i < n; i++)
        s->sum_ns[i] += p->ns[i];
    s->sum_total_ns += total_ns;
    s->calls++;
}

double kt_stage_mean_ns(const kt_stage_stats *s, int i)
{
    if (s->calls == 0 || i < 0 || i > s->n_stages)
        return NAN;
    if (i < s->n_stages)
        return s->sum_ns[i] / s->calls;
    double other = s->sum_total_ns;
    for (int k = 0; k < s->n_stages; k++)
        other -= s->sum_ns[k];
    /* the stages lie inside the call, so only rounding takes 'other' below zero (the sim's
     * stages sum to its call exactly): no "-0.0%" share; a real excess stays visible */
    if (other < 0 && -other <= 1e-9 * s->sum_total_ns)
        other = 0;
    return other / s->calls;
}

double kt_stage_share(const kt_stage_stats *s, int i)
{
    if (s->calls == 0 || s->sum_total_ns <= 0)
        return NAN;
    return kt_stage_mean_ns(s, i) / (s->sum_total_ns / s->calls);
}

double kt_amdahl_bound(double share, double speedup)
{
    if (!(share >= 0) || !(speedup > 0))
        return NAN;
    return 1.0 / ((1.0 - share) + share / speedup);
}

cJSON *kt_stage_stats_to_json(const kt_stage_stats *s)
{
    if (s->n_stages == 0 || s->calls == 0)
        return NULL;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "calls", s->calls);
    kt_json_add_real(o, "mean_ns", s->sum_total_ns / s->calls);
    cJSON *arr = cJSON_AddArrayToObject(o, "stages");
    for (int i = 0; i < s->n_stages; i++) {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "name", s->names[i]);
        kt_json_add_real(x, "mean_ns", kt_stage_mean_ns(s, i));
        kt_json_add_real(x, "share", kt_stage_share(s, i));
        cJSON_AddItemToArray(arr, x);
    }
    kt_json_add_real(o, "other_ns", kt_stage_mean_ns(s, s->n_stages));
    kt_json_add_real(o, "other_share", kt_stage_share(s, s->n_stages));
    return o;
}

/* Rebuilds the sums from the means (exact up to rounding). */
void kt_stage_stats_from_json(kt_stage_stats *s, const cJSON *json)
{
    memset(s, 0, sizeof(*s));
    if (!cJSON_IsObject(json))
        return;
    s->calls = (int)kt_json_get_real(json, "calls", 0);
    s->sum_total_ns = kt_json_get_real(json, "mean_ns", 0) * s->calls;
    const cJSON *x;
    cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(json, "stages"))
    {
        if (s->n_stages >= KT_MAX_STAGES)
            break;
        kt_json_get_str(x, "name", s->names[s->n_stages], sizeof(s->names[0]));
        s->sum_ns[s->n_stages++] = kt_json_get_real(x, "mean_ns", 0) * s->calls;
    }
}

static int same_stages(const kt_stage_stats *a, const kt_stage_stats *b)
{
    if (a->n_stages == 0 || a->n_stages != b->n_stages || a->calls == 0 || b->calls == 0)
        return 0;
    for (int i = 0; i < a->n_stages; i++)
        if (strcmp(a->names[i], b->names[i]) != 0)
            return 0;
    return 1;
}

cJSON *kt_stage_compare_json(const kt_stage_stats *base, const kt_stage_stats *cand)
{
    if (!same_stages(base, cand))
        return NULL;
    cJSON *o = cJSON_CreateObject();
    kt_json_add_real(o, "end_to_end_speedup",
                     (base->sum_total_ns / base->calls) / (cand->sum_total_ns / cand->calls));
    cJSON *arr = cJSON_AddArrayToObject(o, "stages");
    for (int i = 0; i < base->n_stages; i++) {
        double f = kt_stage_share(base, i);
        double sp = kt_stage_mean_ns(base, i) / kt_stage_mean_ns(cand, i);
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "name", base->names[i]);
        kt_json_add_real(x, "speedup", sp);
        kt_json_add_real(x, "baseline_share", f);
        kt_json_add_real(x, "amdahl_bound", kt_amdahl_bound(f, sp));
        kt_json_add_real(x, "amdahl_limit", f < 1 ? 1.0 / (1.0 - f) : INFINITY);
        cJSON_AddItemToArray(arr, x);
    }
    return o;
}

/* "attention 61.0%, mlp 27.1%, ..., other 2.9%", stages by decreasing share of 'order'. */
static void print_shares(FILE *out, const kt_stage_stats *s, const int *order)
{
    for (int k = 0; k < s->n_stages; k++)
        fprintf(out, "%s %.1f%%, ", s->names[order[k]], 100 * kt_stage_share(s, order[k]));
    fprintf(out, "other %.1f%%\n", 100 * kt_stage_share(s, s->n_stages));
}

void kt_stage_print(FILE *out, const kt_stage_stats *base, const char *base_name,
                    const kt_stage_stats *cand, const char *cand_name)
{
    if (!same_stages(base, cand))
        return;
    int order[KT_MAX_STAGES];
    for (int i = 0; i < base->n_stages; i++) {
        int at = i;
        while (at > 0 && kt_stage_share(base, order[at - 1]) < kt_stage_share(base, i)) {
            order[at] = order[at - 1];
            at--;
        }
        order[at] = i;
    }
    fprintf(out, "    stages of %s: ", base_name);
    print_shares(out, base, order);
    fprintf(out, "    stages of %s: ", cand_name);
    print_shares(out, cand, order);
    fprintf(out, "    stage speedups:");
    for (int k = 0; k < base->n_stages; k++) {
        int i = order[k];
        double f = kt_stage_share(base, i);
        double sp = kt_stage_mean_ns(base, i) / kt_stage_mean_ns(cand, i);
        if (f < 0.005)
            continue;
        if (!(kt_stage_mean_ns(cand, i) > 0)) {
            fprintf(out, " %s none in %s,", base->names[i], cand_name);
            continue;
        }
        fprintf(out, " %s %.2fx", base->names[i], sp);
        if (fabs(sp - 1) > 0.05)
            fprintf(out, " (Amdahl bound %.2fx)", kt_amdahl_bound(f, sp));
        fprintf(out, ",");
    }
    fprintf(out, " end-to-end %.2fx (means)\n",
            (base->sum_total_ns / base->calls) / (cand->sum_total_ns / cand->calls));
}
