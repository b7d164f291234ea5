/* serving.c - a service arm's figures in result.json and back (serving.h). */
#include "result/serving.h"
#include "util/json.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static const kt_serving_q none = {NAN, NAN, NAN};

void kt_serving_init(kt_serving *s)
{
    memset(s, 0, sizeof(*s));
    s->startup_s = s->cold_ms = NAN;
    s->p50 = s->p90 = s->p99 = s->p99_ratio = none;
    s->e2e_p50_ms = s->ttft_p50_ms = s->tpot_p50_ms = NAN;
    s->requests_per_s = s->tokens_per_s = s->error_rate = NAN;
    s->peak_rss_mib = s->cpu_s = NAN;
    s->throughput_ratio = none;
}

static void add_q(cJSON *o, const char *name, const kt_serving_q *q)
{
    cJSON *x = cJSON_AddObjectToObject(o, name);
    kt_json_add_real(x, "value", q->value);
    kt_json_add_real(x, "low", q->low);
    kt_json_add_real(x, "high", q->high);
}

static void get_q(const cJSON *o, const char *name, kt_serving_q *q)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, name);
    q->value = kt_json_get_real(x, "value", NAN);
    q->low = kt_json_get_real(x, "low", NAN);
    q->high = kt_json_get_real(x, "high", NAN);
}

cJSON *kt_serving_to_json(const kt_serving *s)
{
    if (!s->present)
        return NULL;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "starts", s->starts);
    kt_json_add_real(o, "startup_s", s->startup_s);
    kt_json_add_real(o, "cold_ms", s->cold_ms);
    cJSON_AddNumberToObject(o, "rounds", s->rounds);
    add_q(o, "p50_ms", &s->p50);
    add_q(o, "p90_ms", &s->p90);
    add_q(o, "p99_ms", &s->p99);
    kt_json_add_real(o, "e2e_p50_ms", s->e2e_p50_ms);
    kt_json_add_real(o, "ttft_p50_ms", s->ttft_p50_ms);
    kt_json_add_real(o, "tpot_p50_ms", s->tpot_p50_ms);
    kt_json_add_real(o, "requests_per_s", s->requests_per_s);
    kt_json_add_real(o, "tokens_per_s", s->tokens_per_s);
    cJSON_AddNumberToObject(o, "requests", (double)s->requests);
    cJSON_AddNumberToObject(o, "errors", (double)s->errors);
    kt_json_add_real(o, "error_rate", s->error_rate);
    cJSON_AddStringToObject(o, "error_kinds", s->error_kinds);
    kt_json_add_real(o, "peak_rss_mib", s->peak_rss_mib);
    kt_json_add_real(o, "cpu_s", s->cpu_s);
    add_q(o, "p99_ratio", &s->p99_ratio);
    add_q(o, "throughput_ratio", &s->throughput_ratio);
    cJSON_AddStringToObject(o, "stderr_tail", s->stderr_tail);
    cJSON *changed = cJSON_AddArrayToObject(o, "changed_tasks");
    char copy[sizeof(s->changed)];
    snprintf(copy, sizeof(copy), "%s", s->changed);
    for (char *save = NULL, *t = strtok_r(copy, ", ", &save); t; t = strtok_r(NULL, ", ", &save))
        cJSON_AddItemToArray(changed, cJSON_CreateString(t));
    return o;
}

void kt_serving_from_json(kt_serving *s, const cJSON *o)
{
    kt_serving_init(s);
    if (!cJSON_IsObject(o))
        return;
    s->present = 1;
    s->starts = (int)kt_json_get_real(o, "starts", 0);
    s->startup_s = kt_json_get_real(o, "startup_s", NAN);
    s->cold_ms = kt_json_get_real(o, "cold_ms", NAN);
    s->rounds = (int)kt_json_get_real(o, "rounds", 0);
    get_q(o, "p50_ms", &s->p50);
    get_q(o, "p90_ms", &s->p90);
    get_q(o, "p99_ms", &s->p99);
    s->e2e_p50_ms = kt_json_get_real(o, "e2e_p50_ms", NAN);
    s->ttft_p50_ms = kt_json_get_real(o, "ttft_p50_ms", NAN);
    s->tpot_p50_ms = kt_json_get_real(o, "tpot_p50_ms", NAN);
    s->requests_per_s = kt_json_get_real(o, "requests_per_s", NAN);
    s->tokens_per_s = kt_json_get_real(o, "tokens_per_s", NAN);
    s->requests = (long long)kt_json_get_real(o, "requests", 0);
    s->errors = (long long)kt_json_get_real(o, "errors", 0);
    s->error_rate = kt_json_get_real(o, "error_rate", NAN);
    kt_json_get_str(o, "error_kinds", s->error_kinds, sizeof(s->error_kinds));
    s->peak_rss_mib = kt_json_get_real(o, "peak_rss_mib", NAN);
    s->cpu_s = kt_json_get_real(o, "cpu_s", NAN);
    kt_json_get_str(o, "stderr_tail", s->stderr_tail, sizeof(s->stderr_tail));
    get_q(o, "p99_ratio", &s->p99_ratio);
    get_q(o, "throughput_ratio", &s->throughput_ratio);
    const cJSON *x, *changed = cJSON_GetObjectItemCaseSensitive(o, "changed_tasks");
    cJSON_ArrayForEach(x, changed)
    {
        if (!cJSON_IsString(x))
            continue;
        size_t len = strlen(s->changed);
        snprintf(s->changed + len, sizeof(s->changed) - len, "%s%s", len ? ", " : "",
                 x->valuestring);
        s->n_changed++;
    }
}
