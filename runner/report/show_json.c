/* show_json.c - the document of 'ktrial show --json' (schemas/show.schema.json): an archived
 * run's state and verdicts, the same facts the text summary shows, with null where the text
 * shows "—". */
#include "report/writers.h"
#include "report/cells.h"
#include "util/json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* 'v' as a number, or null when it was not measured (not finite, or not positive when
 * 'positive'). */
static void add_measured(cJSON *o, const char *key, double v, int positive)
{
    if (isfinite(v) && (!positive || v > 0))
        kt_json_add_real(o, key, v);
    else
        cJSON_AddNullToObject(o, key);
}

static cJSON *candidate_json(const kt_candidate_result *c, int point_error,
                             const kt_summary_facts *f)
{
    cJSON *o = cJSON_CreateObject();
    int timed = c->n_pairs > 0;
    cJSON_AddStringToObject(o, "name", c->arm.name);
    cJSON_AddStringToObject(o, "verdict", kt_verdict_name(c->verdict));
    add_measured(o, "base_median_ns", timed ? c->base_time.median : NAN, 1);
    add_measured(o, "cand_median_ns", timed ? c->cand_time.median : NAN, 1);
    add_measured(o, "speedup", timed ? c->speedup : NAN, 1);
    if (timed && isfinite(c->ci_low) && isfinite(c->ci_high)) {
        cJSON *ci = cJSON_AddArrayToObject(o, "ci");
        cJSON_AddItemToArray(ci, kt_json_real(c->ci_low));
        cJSON_AddItemToArray(ci, kt_json_real(c->ci_high));
    } else {
        cJSON_AddNullToObject(o, "ci");
    }
    add_measured(o, "p_adjusted",
                 timed ? kt_p_adjusted(c->shift.p_value, f->confidence, c->confidence_used) : NAN,
                 0);
    add_measured(o, "rel_l2", c->arm.failed || point_error ? NAN : c->worst_rel_l2, 0);
    cJSON_AddNumberToObject(o, "pairs", (double)c->n_pairs);
    cJSON_AddNumberToObject(o, "noisy_pairs", c->noisy_pairs);
    cJSON *reasons = cJSON_AddArrayToObject(o, "reasons");
    for (int r = 0; r < c->n_reasons; r++)
        cJSON_AddItemToArray(reasons, cJSON_CreateString(c->reasons[r]));
    return o;
}

static cJSON *points_json(const kt_run_result *run, const kt_summary_facts *f)
{
    cJSON *points = cJSON_CreateArray();
    for (size_t i = 0; i < run->n_points; i++) {
        const kt_point_result *p = &run->points[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "id", p->point.id);
        kt_json_add_str_or_null(o, "error", p->error[0] ? p->error : NULL);
        cJSON *cands = cJSON_AddArrayToObject(o, "candidates");
        for (size_t k = 0; k < p->n_cands; k++)
            cJSON_AddItemToArray(cands, candidate_json(&p->cands[k], p->error[0] != 0, f));
        cJSON_AddItemToArray(points, o);
    }
    return points;
}

static cJSON *overall_json(const kt_run_result *run, const kt_summary_facts *f, int decided)
{
    cJSON *o = cJSON_CreateObject();
    int whole =
        decided && strcmp(f->status, "complete") == 0 && f->shard_count == 1 && f->n_not_run == 0;
    kt_json_add_str_or_null(o, "state", decided ? kt_summary_overall(run, f) : NULL);
    kt_json_add_str_or_null(o, "verdict", decided ? kt_verdict_name(run->verdict) : NULL);
    cJSON_AddBoolToObject(o, "whole_run", whole);
    cJSON_AddNumberToObject(o, "points_measured", (double)run->n_points);
    cJSON_AddNumberToObject(o, "points_not_run", (double)f->n_not_run);
    cJSON_AddStringToObject(o, "aggregate", f->aggregate);
    kt_json_add_real(o, "min_speedup", f->min_speedup);
    kt_json_add_real(o, "confidence", f->confidence);
    return o;
}

int kt_write_json(FILE *out, const kt_output *o)
{
    const kt_run_result *run = o->run;
    const kt_summary_facts *f = o->facts;
    int exit_code = o->exit_code, decided = o->decided;
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "archive", o->dir);
    cJSON_AddStringToObject(doc, "status", f->status);
    if (exit_code >= 0)
        cJSON_AddNumberToObject(doc, "exit_code", exit_code);
    else
        cJSON_AddNullToObject(doc, "exit_code");
    cJSON *quick = cJSON_AddObjectToObject(doc, "quick");
    cJSON_AddBoolToObject(quick, "on", f->quick);
    cJSON_AddNumberToObject(quick, "max_repetitions", f->quick_max_repetitions);
    cJSON *shard = cJSON_AddObjectToObject(doc, "shard");
    cJSON_AddNumberToObject(shard, "index", f->shard_index);
    cJSON_AddNumberToObject(shard, "count", f->shard_count);
    cJSON_AddItemToObject(doc, "overall", overall_json(run, f, decided));
    cJSON *cands = cJSON_AddArrayToObject(doc, "candidates");
    for (size_t k = 0; k < run->n_cands; k++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", run->cands[k].name);
        cJSON_AddStringToObject(o, "verdict", kt_verdict_name(run->cands[k].verdict));
        cJSON_AddStringToObject(o, "reason", run->cands[k].reason);
        add_measured(o, "geomean_speedup", run->cands[k].geomean_speedup, 1);
        cJSON_AddItemToArray(cands, o);
    }
    cJSON_AddItemToObject(doc, "points", points_json(run, f));
    char *text = kt_json_print(doc);
    cJSON_Delete(doc);
    if (!text)
        return kt_error_set("out of memory");
    fprintf(out, "%s\n", text);
    free(text);
    return 0;
}
