/* history_json.c - 'ktrial history --json' (schemas/history.schema.json): per point and
 * candidate, each archive's verdict, speedup and interval, and what changed. */
#include "report/writers.h"
#include "util/json.h"

#include <math.h>
#include <stdlib.h>

static cJSON *history_json(const kt_history *h)
{
    kt_history_series *s = kt_history_series_new(h);
    cJSON *arr = cJSON_CreateArray();
    if (!s)
        return arr;
    for (size_t j = 0; j < s->n; j++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "point", s->points[j]);
        cJSON_AddStringToObject(o, "candidate", s->cands[j]);
        cJSON *runs = cJSON_AddArrayToObject(o, "runs");
        for (size_t r = 0; r < h->n; r++) {
            const kt_candidate_result *c = kt_history_find(&h->runs[r], s->points[j], s->cands[j]);
            if (!c)
                continue;
            cJSON *x = cJSON_CreateObject();
            cJSON_AddStringToObject(x, "archive", h->runs[r].dir);
            cJSON_AddStringToObject(x, "commit",
                                    kt_history_str(h->runs[r].doc, "provenance.git.commit"));
            cJSON_AddStringToObject(x, "commit_time",
                                    kt_history_str(h->runs[r].doc, "provenance.git.commit_time"));
            cJSON_AddStringToObject(x, "verdict", kt_verdict_name(c->verdict));
            kt_json_add_real(x, "speedup", c->speedup);
            cJSON *ci = cJSON_AddArrayToObject(x, "ci");
            cJSON_AddItemToArray(ci, kt_json_real(c->ci_low));
            cJSON_AddItemToArray(ci, kt_json_real(c->ci_high));
            kt_json_add_real(x, "baseline_median_ns", c->base_time.median);
            kt_json_add_real(x, "candidate_median_ns", c->cand_time.median);
            kt_history_change ch;
            int has = kt_history_change_at(&ch, h, r, s->points[j], s->cands[j]);
            cJSON_AddBoolToObject(x, "verdict_changed", has && ch.verdict_changed);
            cJSON_AddBoolToObject(x, "speedup_changed", has && ch.significant);
            if (has)
                kt_json_add_real(x, "speedup_change", expm1(ch.shift));
            cJSON_AddItemToArray(runs, x);
        }
        cJSON_AddItemToArray(arr, o);
    }
    free(s);
    return arr;
}

int kt_write_history_json(FILE *f, const kt_output *o)
{
    cJSON *doc = history_json(o->history);
    char *text = kt_json_print(doc);
    fprintf(f, "%s\n", text ? text : "[]");
    free(text);
    cJSON_Delete(doc);
    return 0;
}
