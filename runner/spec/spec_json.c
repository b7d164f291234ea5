/* spec_json.c - what was run, after defaults: the parsed copy kept in result.json. */
#include "spec/spec_json.h"
#include "spec/spec_plugins.h"
#include "util/json.h"
#include "spec/command_spec.h"
#include "spec/service_spec.h"

#include <math.h>

cJSON *kt_params_to_json(const kt_param_def *defs, int n, const kt_param_value *values)
{
    cJSON *o = cJSON_CreateObject();
    for (int i = 0; i < n; i++) {
        const kt_param_def *d = &defs[i];
        char buf[64];
        if (d->type == KT_PARAM_BOOL)
            cJSON_AddBoolToObject(o, d->name, values[i].num != 0);
        else if (d->type == KT_PARAM_ENUM)
            cJSON_AddStringToObject(
                o, d->name, kt_param_choice_name(buf, sizeof(buf), d->choices, (int)values[i].num));
        else
            kt_json_add_real(o, d->name, values[i].num);
    }
    return o;
}

static cJSON *arm_json(const kt_spec *spec, const kt_arm *a)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", a->name);
    cJSON_AddStringToObject(o, "variant", a->variant->name);
    const kt_spec_plugin *from = kt_spec_plugin_of(spec, kt_variant_plugin(a->variant));
    if (from) {
        cJSON *p = cJSON_AddObjectToObject(o, "plugin");
        cJSON_AddStringToObject(p, "path", from->path);
        cJSON_AddStringToObject(p, "sha256", from->sha256);
    }
    cJSON_AddItemToObject(o, "params",
                          kt_params_to_json(a->variant->params, a->variant->n_params, a->params));
    return o;
}

static void add_optional(cJSON *o, const char *key, double v)
{
    if (isnan(v))
        cJSON_AddNullToObject(o, key);
    else
        kt_json_add_real(o, key, v);
}

cJSON *kt_spec_to_json(const kt_spec *spec)
{
    cJSON *o = cJSON_CreateObject();
    unsigned axes = spec->op->axes;
    cJSON_AddNumberToObject(o, "version", spec->version);
    cJSON_AddStringToObject(o, "name", spec->name);
    kt_json_add_str_or_null(o, "description", spec->description);
    if (spec->n_plugins) {
        cJSON *plugins = cJSON_AddArrayToObject(o, "plugins");
        for (size_t i = 0; i < spec->n_plugins; i++)
            cJSON_AddItemToArray(plugins, cJSON_CreateString(spec->plugins[i].path));
    }
    cJSON_AddStringToObject(o, "op", spec->op->name);
    cJSON_AddStringToObject(o, "backend_requested", spec->backend_requested);
    cJSON_AddStringToObject(o, "backend", spec->backend);
    cJSON_AddStringToObject(o, "dtype", kt_dtype_name(spec->dtype));
    cJSON_AddNumberToObject(o, "threads", spec->threads);
    cJSON_AddStringToObject(o, "threads_affinity",
                            spec->threads_affinity == KT_SPEC_AFFINITY_COMPACT ? "compact"
                                                                               : "none");
    if (axes & KT_AXIS_MODEL) {
        cJSON *models = cJSON_AddArrayToObject(o, "models");
        for (size_t i = 0; i < spec->n_models; i++) {
            const kt_model *m = &spec->models[i];
            cJSON *x = cJSON_CreateObject();
            cJSON_AddStringToObject(x, "name", m->name);
            cJSON_AddNumberToObject(x, "hidden", (double)m->hidden);
            cJSON_AddNumberToObject(x, "heads", (double)m->heads);
            cJSON_AddNumberToObject(x, "kv_heads", (double)m->kv_heads);
            cJSON_AddNumberToObject(x, "head_dim", (double)m->head_dim);
            cJSON_AddNumberToObject(x, "intermediate", (double)m->intermediate);
            cJSON_AddNumberToObject(x, "layers", (double)m->layers);
            cJSON_AddItemToArray(models, x);
        }
    }
    if (axes & KT_AXIS_BATCH) {
        cJSON *a = cJSON_AddArrayToObject(o, "batch_sizes");
        for (size_t i = 0; i < spec->n_batch_sizes; i++)
            cJSON_AddItemToArray(a, cJSON_CreateNumber((double)spec->batch_sizes[i]));
    }
    if (axes & KT_AXIS_CONTEXT) {
        /* no lengths given (decode only): the axis is absent, never [0] */
        cJSON *a = cJSON_CreateArray();
        for (size_t i = 0; i < spec->n_context_lengths; i++)
            if (spec->context_lengths[i] > 0)
                cJSON_AddItemToArray(a, cJSON_CreateNumber((double)spec->context_lengths[i]));
        if (cJSON_GetArraySize(a) > 0)
            cJSON_AddItemToObject(o, "context_lengths", a);
        else
            cJSON_Delete(a);
    }
    if (axes & KT_AXIS_PHASE) {
        cJSON *a = cJSON_AddArrayToObject(o, "phases");
        for (size_t i = 0; i < spec->n_phases; i++)
            cJSON_AddItemToArray(a, cJSON_CreateString(kt_phase_name(spec->phases[i])));
    }
    if (axes & KT_AXIS_ROLE) {
        cJSON *a = cJSON_AddArrayToObject(o, "roles");
        for (size_t i = 0; i < spec->n_roles; i++)
            cJSON_AddItemToArray(a, cJSON_CreateString(kt_role_name(spec->roles[i])));
    }
    cJSON *inputs = cJSON_AddObjectToObject(o, "inputs");
    cJSON_AddStringToObject(inputs, "distribution", kt_distribution_name(spec->distribution));
    kt_json_add_real(inputs, "seed", (double)spec->seed);
    cJSON_AddNumberToObject(inputs, "sets", spec->input_sets);
    cJSON_AddItemToObject(
        inputs, "params",
        kt_params_to_json(spec->op->input_params, spec->op->n_input_params, spec->input_params));
    cJSON_AddItemToObject(o, "baseline", arm_json(spec, &spec->baseline));
    cJSON *cands = cJSON_AddArrayToObject(o, "candidates");
    for (size_t k = 0; k < spec->n_candidates; k++)
        cJSON_AddItemToArray(cands, arm_json(spec, &spec->candidates[k]));
    cJSON *t = cJSON_AddObjectToObject(o, "trials");
    cJSON_AddNumberToObject(t, "warmup", spec->warmup);
    cJSON_AddNumberToObject(t, "min_repetitions", spec->min_repetitions);
    cJSON_AddNumberToObject(t, "max_repetitions", spec->max_repetitions);
    kt_json_add_real(t, "max_seconds_per_point", spec->max_seconds_per_point);
    if (!isnan(spec->max_startup_seconds))
        kt_json_add_real(t, "max_startup_seconds", spec->max_startup_seconds);
    cJSON_AddStringToObject(t, "order", kt_order_name(spec->order));
    cJSON_AddBoolToObject(t, "flush_cache", spec->flush_cache);
    cJSON_AddBoolToObject(t, "profile", spec->profile);
    cJSON *th = cJSON_AddObjectToObject(o, "thresholds");
    cJSON *num = cJSON_AddObjectToObject(th, "numerics");
    add_optional(num, "max_rel_l2", spec->numerics.max_rel_l2);
    add_optional(num, "min_cosine", spec->numerics.min_cosine);
    add_optional(num, "max_abs", spec->numerics.max_abs);
    add_optional(num, "max_error_vs_baseline", spec->numerics.max_error_vs_baseline);
    cJSON_AddBoolToObject(num, "bitwise_repeatable", spec->numerics.bitwise_repeatable);
    cJSON *lat = cJSON_AddObjectToObject(th, "latency");
    kt_json_add_real(lat, "min_speedup", spec->min_speedup);
    kt_json_add_real(lat, "confidence", spec->confidence);
    cJSON *mem = cJSON_AddObjectToObject(th, "memory");
    add_optional(mem, "max_ratio", spec->max_memory_ratio);
    cJSON *setup = cJSON_AddObjectToObject(th, "setup");
    add_optional(setup, "max_seconds", spec->max_setup_seconds);
    add_optional(setup, "max_memory_ratio", spec->max_setup_memory_ratio);
    add_optional(cJSON_AddObjectToObject(th, "energy"), "max_ratio", spec->max_energy_ratio);
    if (spec->service) { /* op service's limits */
        add_optional(lat, "max_p99_ratio", spec->max_p99_ratio);
        add_optional(cJSON_AddObjectToObject(th, "errors"), "max_rate", spec->max_error_rate);
        add_optional(cJSON_AddObjectToObject(th, "throughput"), "min_ratio",
                     spec->min_throughput_ratio);
    }
    cJSON_AddStringToObject(th, "aggregate", kt_aggregate_name(spec->aggregate));
    if (!isnan(spec->usd_per_hour)) {
        cJSON *costs = cJSON_AddObjectToObject(o, "costs");
        kt_json_add_real(costs, "usd_per_hour", spec->usd_per_hour);
        if (spec->tokens_per_call > 0)
            cJSON_AddNumberToObject(costs, "tokens_per_call", spec->tokens_per_call);
        else
            cJSON_AddStringToObject(costs, "tokens_per_call", "auto");
    }
    cJSON *budget = cJSON_AddObjectToObject(o, "budget");
    add_optional(budget, "max_minutes", spec->budget_minutes);
    if (spec->command)
        cJSON_AddItemToObject(o, "command", kt_command_spec_to_json(spec->command));
    if (spec->service)
        cJSON_AddItemToObject(o, "service", kt_service_spec_to_json(spec->service));
    return o;
}
