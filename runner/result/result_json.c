/* result_json.c - a point's results as JSON and back (points.jsonl and result.json share
 * it), and the per-candidate verdicts as JSON. */
#include "result/result_json.h"
#include "util/json.h"
#include "spec/spec_json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cJSON *summary_json(const kt_summary *s)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "n", (double)s->n);
    kt_json_add_real(o, "median_ns", s->median);
    kt_json_add_real(o, "mean_ns", s->mean);
    kt_json_add_real(o, "p10_ns", s->p10);
    kt_json_add_real(o, "p90_ns", s->p90);
    kt_json_add_real(o, "min_ns", s->min);
    kt_json_add_real(o, "max_ns", s->max);
    kt_json_add_real(o, "mad_ns", s->mad);
    cJSON_AddNumberToObject(o, "outliers_mild", (double)s->outliers_mild);
    cJSON_AddNumberToObject(o, "outliers_severe", (double)s->outliers_severe);
    return o;
}

static void summary_from_json(kt_summary *s, const cJSON *o)
{
    memset(s, 0, sizeof(*s));
    s->n = (size_t)kt_json_get_real(o, "n", 0);
    s->median = kt_json_get_real(o, "median_ns", NAN);
    s->mean = kt_json_get_real(o, "mean_ns", NAN);
    s->p10 = kt_json_get_real(o, "p10_ns", NAN);
    s->p90 = kt_json_get_real(o, "p90_ns", NAN);
    s->min = kt_json_get_real(o, "min_ns", NAN);
    s->max = kt_json_get_real(o, "max_ns", NAN);
    s->mad = kt_json_get_real(o, "mad_ns", NAN);
    s->outliers_mild = (size_t)kt_json_get_real(o, "outliers_mild", 0);
    s->outliers_severe = (size_t)kt_json_get_real(o, "outliers_severe", 0);
}

/* The profiling pass of an arm: counters per call (or why a counter is unsupported, never a
 * zero), energy per call (or why there is none), wall time per call. */
static cJSON *profile_json(const kt_counter_values *v)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "calls", v->calls);
    cJSON_AddNumberToObject(o, "threads", v->threads);
    kt_json_add_real(o, "wall_ns_per_call", v->wall_ns);
    cJSON *c = cJSON_AddObjectToObject(o, "counters");
    for (int i = 0; i < v->n; i++) {
        if (v->c[i].supported)
            kt_json_add_real(c, v->c[i].name, v->c[i].value);
        else
            cJSON_AddStringToObject(cJSON_AddObjectToObject(c, v->c[i].name), "unsupported",
                                    v->c[i].unsupported);
    }
    cJSON *e = cJSON_AddObjectToObject(o, "energy");
    if (v->energy_unavailable[0]) {
        cJSON_AddStringToObject(e, "unavailable", v->energy_unavailable);
    } else {
        kt_json_add_real(e, "package_j_per_call", v->energy_j[0]);
        kt_json_add_real(e, "dram_j_per_call", v->energy_j[1]);
    }
    kt_gpu_energy_to_json(e, &v->gpu);
    if (v->gpu.counters_done || v->gpu.counters_unavailable[0])
        cJSON_AddItemToObject(o, "gpu_counters", kt_gpu_counters_to_json(&v->gpu));
    return o;
}

static void profile_from_json(kt_counter_values *v, const cJSON *o)
{
    memset(v, 0, sizeof(*v));
    v->calls = (int)kt_json_get_real(o, "calls", 0);
    v->threads = (int)kt_json_get_real(o, "threads", 0);
    v->wall_ns = kt_json_get_real(o, "wall_ns_per_call", NAN);
    const cJSON *counters = cJSON_GetObjectItemCaseSensitive(o, "counters");
    for (int i = 0; kt_counter_name(i) && v->n < KT_COUNTER_MAX; i++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(counters, kt_counter_name(i));
        if (!x)
            continue;
        kt_counter *c = &v->c[v->n++];
        c->name = kt_counter_name(i);
        c->supported = !cJSON_IsObject(x);
        c->value = c->supported ? kt_json_real_value(x, NAN) : NAN;
        if (!c->supported)
            kt_json_get_str(x, "unsupported", c->unsupported, sizeof(c->unsupported));
    }
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "energy");
    kt_json_get_str(e, "unavailable", v->energy_unavailable, sizeof(v->energy_unavailable));
    v->energy_j[0] = kt_json_get_real(e, "package_j_per_call", NAN);
    v->energy_j[1] = kt_json_get_real(e, "dram_j_per_call", NAN);
    kt_gpu_counters_from_json(&v->gpu, cJSON_GetObjectItemCaseSensitive(o, "gpu_counters"), e);
}

static cJSON *arm_json(const kt_arm_result *a, const kt_arm *spec_arm)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", a->name);
    cJSON_AddStringToObject(o, "variant", a->variant);
    if (spec_arm)
        cJSON_AddItemToObject(o, "params",
                              kt_params_to_json(spec_arm->variant->params,
                                                spec_arm->variant->n_params, spec_arm->params));
    cJSON_AddBoolToObject(o, "failed", a->failed);
    kt_json_add_str_or_null(o, "failure", a->failed ? a->failure : NULL);
    cJSON *sets = cJSON_AddArrayToObject(o, "numerics");
    for (int s = 0; s < a->n_sets; s++) {
        const kt_numerics *n = &a->numerics[s];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddNumberToObject(x, "input_set", s);
        cJSON_AddNumberToObject(x, "elems", (double)n->elems);
        cJSON_AddNumberToObject(x, "unwritten", (double)n->unwritten);
        cJSON_AddNumberToObject(x, "nonfinite", (double)n->nonfinite);
        kt_json_add_real(x, "max_abs", n->max_abs);
        kt_json_add_real(x, "max_rel", n->max_rel);
        kt_json_add_real(x, "rel_l2", n->rel_l2);
        kt_json_add_real(x, "cosine", n->cosine);
        cJSON_AddBoolToObject(x, "inputs_modified", n->inputs_modified);
        cJSON_AddItemToArray(sets, x);
    }
    if (a->repeatable < 0)
        cJSON_AddNullToObject(o, "repeatable");
    else
        cJSON_AddBoolToObject(o, "repeatable", a->repeatable);
    kt_json_add_real(o, "bytes", a->bytes);
    kt_json_add_real(o, "variant_bytes", a->variant_bytes);
    kt_json_add_real(o, "prepare_ns", a->prepare_ns);
    cJSON_AddNumberToObject(o, "placements", a->placements);
    if (a->program[0]) {
        cJSON *p = cJSON_AddObjectToObject(o, "program");
        cJSON_AddStringToObject(p, "path", a->program);
        kt_json_add_str_or_null(p, "sha256", a->program_sha256[0] ? a->program_sha256 : NULL);
    }
    cJSON *checks = cJSON_AddObjectToObject(o, "call_checks");
    cJSON_AddNumberToObject(checks, "calls", (double)a->checked_calls);
    cJSON_AddNumberToObject(checks, "full", (double)a->full_checks);
    kt_json_add_real(checks, "seconds", a->check_s);
    cJSON *m = cJSON_AddObjectToObject(o, "metrics");
    for (int i = 0; i < a->n_metrics; i++) {
        cJSON *x = cJSON_AddObjectToObject(m, a->metric_names[i]);
        kt_json_add_real(x, "value", a->metric_values[i]);
        cJSON_AddStringToObject(x, "unit", a->metric_units[i]);
    }
    if (a->profiled)
        cJSON_AddItemToObject(o, "usage", profile_json(&a->profile));
    cJSON *profile = kt_stage_stats_to_json(&a->stages);
    if (profile)
        cJSON_AddItemToObject(o, "profile", profile);
    cJSON *serving = kt_serving_to_json(&a->serving);
    if (serving)
        cJSON_AddItemToObject(o, "service", serving);
    return o;
}

static void arm_from_json(kt_arm_result *a, const cJSON *o)
{
    memset(a, 0, sizeof(*a));
    kt_json_get_str(o, "name", a->name, sizeof(a->name));
    kt_json_get_str(o, "variant", a->variant, sizeof(a->variant));
    a->failed = kt_json_get_bool(o, "failed", 0);
    kt_json_get_str(o, "failure", a->failure, sizeof(a->failure));
    const cJSON *sets = cJSON_GetObjectItemCaseSensitive(o, "numerics"), *x;
    cJSON_ArrayForEach(x, sets)
    {
        if (a->n_sets >= KT_MAX_SETS)
            break;
        kt_numerics *n = &a->numerics[a->n_sets++];
        n->elems = (int64_t)kt_json_get_real(x, "elems", 0);
        n->unwritten = (int64_t)kt_json_get_real(x, "unwritten", 0);
        n->nonfinite = (int64_t)kt_json_get_real(x, "nonfinite", 0);
        n->max_abs = kt_json_get_real(x, "max_abs", NAN);
        n->max_rel = kt_json_get_real(x, "max_rel", NAN);
        n->rel_l2 = kt_json_get_real(x, "rel_l2", NAN);
        n->cosine = kt_json_get_real(x, "cosine", NAN);
        n->inputs_modified = kt_json_get_bool(x, "inputs_modified", 0);
    }
    const cJSON *rep = cJSON_GetObjectItemCaseSensitive(o, "repeatable");
    a->repeatable = cJSON_IsBool(rep) ? cJSON_IsTrue(rep) : -1;
    a->bytes = kt_json_get_real(o, "bytes", NAN);
    a->variant_bytes = kt_json_get_real(o, "variant_bytes", NAN);
    a->prepare_ns = kt_json_get_real(o, "prepare_ns", NAN);
    a->placements = (int)kt_json_get_real(o, "placements", 1);
    const cJSON *prog = cJSON_GetObjectItemCaseSensitive(o, "program");
    kt_json_get_str(prog, "path", a->program, sizeof(a->program));
    kt_json_get_str(prog, "sha256", a->program_sha256, sizeof(a->program_sha256));
    const cJSON *checks = cJSON_GetObjectItemCaseSensitive(o, "call_checks");
    a->checked_calls = (int64_t)kt_json_get_real(checks, "calls", 0);
    a->full_checks = (int64_t)kt_json_get_real(checks, "full", 0);
    a->check_s = kt_json_get_real(checks, "seconds", 0);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "metrics");
    cJSON_ArrayForEach(x, m)
    {
        if (a->n_metrics >= KT_MAX_METRICS)
            break;
        int i = a->n_metrics++;
        snprintf(a->metric_names[i], sizeof(a->metric_names[i]), "%s", x->string);
        a->metric_values[i] = kt_json_get_real(x, "value", NAN);
        kt_json_get_str(x, "unit", a->metric_units[i], sizeof(a->metric_units[i]));
    }
    const cJSON *prof = cJSON_GetObjectItemCaseSensitive(o, "usage");
    if (cJSON_IsObject(prof)) {
        a->profiled = 1;
        profile_from_json(&a->profile, prof);
    }
    kt_stage_stats_from_json(&a->stages, cJSON_GetObjectItemCaseSensitive(o, "profile"));
    kt_serving_from_json(&a->serving, cJSON_GetObjectItemCaseSensitive(o, "service"));
}

static cJSON *axes_json(const kt_point *p, unsigned axes)
{
    cJSON *o = cJSON_CreateObject();
    if (axes & KT_AXIS_MODEL)
        cJSON_AddStringToObject(o, "model", p->model.name);
    if (axes & KT_AXIS_PHASE)
        cJSON_AddStringToObject(o, "phase", kt_phase_name(p->phase));
    if (axes & KT_AXIS_ROLE)
        cJSON_AddStringToObject(o, "role", kt_role_name(p->role));
    if (axes & KT_AXIS_BATCH)
        cJSON_AddNumberToObject(o, "batch_size", (double)p->batch_size);
    /* an axis the point does not use (decode has no context length) is absent, never 0 */
    if ((axes & KT_AXIS_CONTEXT) && p->context_length > 0)
        cJSON_AddNumberToObject(o, "context_length", (double)p->context_length);
    return o;
}

static void axes_from_json(kt_point *p, const cJSON *o)
{
    char buf[64];
    kt_json_get_str(o, "model", p->model.name, sizeof(p->model.name));
    p->phase = strcmp(kt_json_get_str(o, "phase", buf, sizeof(buf)), "prefill") == 0
                   ? KT_PHASE_PREFILL
                   : KT_PHASE_DECODE;
    kt_json_get_str(o, "role", buf, sizeof(buf));
    for (int r = KT_ROLE_QKV; r <= KT_ROLE_DOWN; r++)
        if (strcmp(buf, kt_role_name((kt_role)r)) == 0)
            p->role = (kt_role)r;
    p->batch_size = (int64_t)kt_json_get_real(o, "batch_size", 0);
    p->context_length = (int64_t)kt_json_get_real(o, "context_length", 0);
}

/* One timed pair as an object with named fields (see the schema's "pair"). */
static cJSON *pair_json(const kt_pair *p)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "repetition", p->rep);
    cJSON_AddNumberToObject(o, "input_set", p->input_set);
    cJSON_AddBoolToObject(o, "candidate_first", p->candidate_first);
    cJSON_AddItemToObject(o, "baseline_ns", kt_json_real(p->base_ns));
    cJSON_AddItemToObject(o, "candidate_ns", kt_json_real(p->cand_ns));
    cJSON_AddItemToObject(o, "baseline_noise", kt_json_real(p->base_noise));
    cJSON_AddItemToObject(o, "candidate_noise", kt_json_real(p->cand_noise));
    cJSON_AddBoolToObject(o, "throttled", p->throttled);
    cJSON_AddNumberToObject(o, "placement", p->placement);
    return o;
}

static cJSON *pairs_json(const kt_candidate_result *c)
{
    cJSON *rows = cJSON_CreateArray();
    for (size_t i = 0; i < c->n_pairs; i++)
        cJSON_AddItemToArray(rows, pair_json(&c->pairs[i]));
    return rows;
}

/* A flag written as a boolean, or as 0/1 by older results. */
static int flag_value(const cJSON *item)
{
    if (cJSON_IsBool(item))
        return cJSON_IsTrue(item);
    return kt_json_real_value(item, 0) != 0;
}

/* Reads one pair: an object with named fields, or the positional 8-array of results written
 * before pairs had names ([repetition, input_set, candidate_first, baseline_ns, candidate_ns,
 * baseline_noise, candidate_noise, throttled]). Returns 0, or -1 on any other shape. */
static int pair_from_json(kt_pair *p, const cJSON *row)
{
    static const char *const names[8] = {"repetition",      "input_set",    "candidate_first",
                                         "baseline_ns",     "candidate_ns", "baseline_noise",
                                         "candidate_noise", "throttled"};
    const cJSON *f[8];
    if (cJSON_IsObject(row)) {
        for (int i = 0; i < 8; i++)
            f[i] = cJSON_GetObjectItemCaseSensitive(row, names[i]);
    } else if (cJSON_IsArray(row) && cJSON_GetArraySize(row) == 8) {
        for (int i = 0; i < 8; i++)
            f[i] = cJSON_GetArrayItem(row, i);
    } else {
        return -1;
    }
    p->rep = (int)kt_json_real_value(f[0], 0);
    p->input_set = (int)kt_json_real_value(f[1], 0);
    p->candidate_first = flag_value(f[2]);
    p->base_ns = kt_json_real_value(f[3], NAN);
    p->cand_ns = kt_json_real_value(f[4], NAN);
    p->base_noise = kt_json_real_value(f[5], 0);
    p->cand_noise = kt_json_real_value(f[6], 0);
    p->throttled = flag_value(f[7]);
    p->placement = (int)kt_json_get_real(row, "placement", 0); /* 0 in older results */
    return 0;
}

static int pairs_from_json(kt_candidate_result *c, const cJSON *rows)
{
    int n = cJSON_GetArraySize(rows);
    c->pairs = calloc(n > 0 ? (size_t)n : 1, sizeof(kt_pair));
    if (!c->pairs)
        return -1;
    const cJSON *row;
    cJSON_ArrayForEach(row, rows)
    {
        if (pair_from_json(&c->pairs[c->n_pairs], row) < 0)
            return -1;
        c->n_pairs++;
    }
    return 0;
}

static cJSON *candidate_json(const kt_candidate_result *c, const kt_arm *spec_arm)
{
    cJSON *o = arm_json(&c->arm, spec_arm);
    cJSON_AddNumberToObject(o, "n_pairs", (double)c->n_pairs);
    kt_json_add_real(o, "speedup", c->speedup);
    cJSON *ci = cJSON_AddArrayToObject(o, "ci");
    cJSON_AddItemToArray(ci, kt_json_real(c->ci_low));
    cJSON_AddItemToArray(ci, kt_json_real(c->ci_high));
    kt_json_add_real(o, "confidence", c->confidence_used);
    kt_json_add_real(o, "ci_coverage", c->shift.achieved);
    kt_json_add_real(o, "p_value", c->shift.p_value);
    cJSON_AddBoolToObject(o, "exact", c->shift.exact);
    cJSON_AddNumberToObject(o, "looks", c->looks);
    cJSON_AddBoolToObject(o, "stopped_early", c->stopped_early);
    cJSON *ord = cJSON_AddObjectToObject(o, "order_effect");
    kt_json_add_real(ord, "p_value", c->order_p);
    kt_json_add_real(ord, "shift", c->order_shift);
    cJSON_AddBoolToObject(ord, "warning", c->order_warning);
    cJSON *sets = cJSON_AddObjectToObject(o, "set_effect");
    kt_json_add_real(sets, "p_value", c->set_p);
    kt_json_add_real(sets, "shift", c->set_shift);
    cJSON_AddBoolToObject(sets, "warning", c->set_warning);
    cJSON *pl = cJSON_AddObjectToObject(o, "placement_spread");
    cJSON_AddNumberToObject(pl, "clusters", c->placement_clusters);
    kt_json_add_real(pl, "tau2", c->placement_tau2);
    if (isfinite(c->state_ratio) && c->state_ratio > 0) { /* 0: never judged */
        cJSON *w = cJSON_AddObjectToObject(pl, "worst_state");
        cJSON_AddStringToObject(w, "arm", c->state_arm ? "candidate" : "baseline");
        cJSON_AddNumberToObject(w, "input_set", c->state_set);
        cJSON_AddNumberToObject(w, "placement", c->state_placement);
        kt_json_add_real(w, "time_ratio", c->state_ratio);
        cJSON_AddBoolToObject(w, "warning", c->state_warning);
    } else {
        cJSON_AddNullToObject(pl, "worst_state");
    }
    cJSON_AddNumberToObject(o, "noisy_pairs", c->noisy_pairs);
    cJSON *times = cJSON_AddObjectToObject(o, "times");
    cJSON_AddItemToObject(times, "baseline", summary_json(&c->base_time));
    cJSON_AddItemToObject(times, "candidate", summary_json(&c->cand_time));
    kt_json_add_real(o, "worst_rel_l2", c->worst_rel_l2);
    kt_json_add_real(o, "error_ratio", c->error_ratio);
    kt_json_add_real(o, "memory_ratio", c->memory_ratio);
    cJSON *setup = cJSON_AddObjectToObject(o, "setup");
    kt_json_add_real(setup, "prepare_s", c->arm.prepare_ns * 1e-9);
    kt_json_add_real(setup, "memory_bytes", c->arm.variant_bytes);
    kt_json_add_real(setup, "memory_fraction", c->setup_memory_fraction);
    kt_json_add_real(o, "energy_ratio", c->energy_ratio);
    if (kt_candidate_priced(c)) {
        cJSON *costs = cJSON_AddObjectToObject(o, "costs");
        kt_json_add_real(costs, "tokens_per_call", c->tokens_per_call);
        kt_json_add_real(costs, "baseline_usd_per_mtok", c->usd_per_mtok_base);
        kt_json_add_real(costs, "candidate_usd_per_mtok", c->usd_per_mtok_cand);
    }
    cJSON_AddStringToObject(o, "verdict", kt_verdict_name(c->verdict));
    cJSON *reasons = cJSON_AddArrayToObject(o, "reasons");
    for (int i = 0; i < c->n_reasons; i++)
        cJSON_AddItemToArray(reasons, cJSON_CreateString(c->reasons[i]));
    cJSON *codes = cJSON_AddArrayToObject(o, "reason_codes");
    for (int i = 0; i < c->n_reasons; i++)
        cJSON_AddItemToArray(codes, cJSON_CreateString(kt_reason_code_name(c->reason_codes[i])));
    cJSON_AddItemToObject(o, "pairs", pairs_json(c));
    return o;
}

static int candidate_from_json(kt_candidate_result *c, const cJSON *o)
{
    char buf[32];
    arm_from_json(&c->arm, o);
    c->speedup = kt_json_get_real(o, "speedup", NAN);
    const cJSON *ci = cJSON_GetObjectItemCaseSensitive(o, "ci");
    c->ci_low = kt_json_real_value(cJSON_GetArrayItem(ci, 0), NAN);
    c->ci_high = kt_json_real_value(cJSON_GetArrayItem(ci, 1), NAN);
    c->confidence_used = kt_json_get_real(o, "confidence", NAN);
    c->shift.achieved = kt_json_get_real(o, "ci_coverage", NAN);
    c->shift.p_value = kt_json_get_real(o, "p_value", NAN);
    c->shift.exact = kt_json_get_bool(o, "exact", 0);
    c->shift.estimate = log(c->speedup);
    c->shift.ci_low = log(c->ci_low);
    c->shift.ci_high = log(c->ci_high);
    c->looks = (int)kt_json_get_real(o, "looks", 0);
    c->stopped_early = kt_json_get_bool(o, "stopped_early", 0);
    const cJSON *ord = cJSON_GetObjectItemCaseSensitive(o, "order_effect");
    c->order_p = kt_json_get_real(ord, "p_value", NAN);
    c->order_shift = kt_json_get_real(ord, "shift", NAN);
    c->order_warning = kt_json_get_bool(ord, "warning", 0);
    const cJSON *sets = cJSON_GetObjectItemCaseSensitive(o, "set_effect");
    c->set_p = kt_json_get_real(sets, "p_value", NAN);
    c->set_shift = kt_json_get_real(sets, "shift", NAN);
    c->set_warning = kt_json_get_bool(sets, "warning", 0);
    const cJSON *pl = cJSON_GetObjectItemCaseSensitive(o, "placement_spread");
    c->placement_clusters = (int)kt_json_get_real(pl, "clusters", 0);
    c->placement_tau2 = kt_json_get_real(pl, "tau2", NAN);
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(pl, "worst_state");
    char arm[16];
    c->state_arm = strcmp(kt_json_get_str(w, "arm", arm, sizeof(arm)), "candidate") == 0;
    c->state_set = (int)kt_json_get_real(w, "input_set", 0);
    c->state_placement = (int)kt_json_get_real(w, "placement", 0);
    c->state_ratio = kt_json_get_real(w, "time_ratio", NAN);
    c->state_warning = kt_json_get_bool(w, "warning", 0);
    c->noisy_pairs = (int)kt_json_get_real(o, "noisy_pairs", 0);
    const cJSON *times = cJSON_GetObjectItemCaseSensitive(o, "times");
    summary_from_json(&c->base_time, cJSON_GetObjectItemCaseSensitive(times, "baseline"));
    summary_from_json(&c->cand_time, cJSON_GetObjectItemCaseSensitive(times, "candidate"));
    c->worst_rel_l2 = kt_json_get_real(o, "worst_rel_l2", NAN);
    c->error_ratio = kt_json_get_real(o, "error_ratio", NAN);
    c->memory_ratio = kt_json_get_real(o, "memory_ratio", NAN);
    c->setup_memory_fraction =
        kt_json_get_real(cJSON_GetObjectItemCaseSensitive(o, "setup"), "memory_fraction", NAN);
    c->energy_ratio = kt_json_get_real(o, "energy_ratio", NAN);
    const cJSON *costs = cJSON_GetObjectItemCaseSensitive(o, "costs");
    c->tokens_per_call = kt_json_get_real(costs, "tokens_per_call", NAN);
    c->usd_per_mtok_base = kt_json_get_real(costs, "baseline_usd_per_mtok", NAN);
    c->usd_per_mtok_cand = kt_json_get_real(costs, "candidate_usd_per_mtok", NAN);
    int v = kt_verdict_parse(kt_json_get_str(o, "verdict", buf, sizeof(buf)));
    if (v < 0)
        return -1;
    c->verdict = (kt_verdict)v;
    const cJSON *r;
    cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(o, "reasons"))
    {
        if (c->n_reasons < 8 && cJSON_IsString(r))
            snprintf(c->reasons[c->n_reasons++], sizeof(c->reasons[0]), "%s", r->valuestring);
    }
    int i = 0;
    cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(o, "reason_codes"))
    {
        if (i < c->n_reasons && cJSON_IsString(r))
            c->reason_codes[i++] = kt_reason_code_parse(r->valuestring);
    }
    /* a failed arm's reason is its first; deciding again (merge) must keep its kind */
    if (c->arm.failed && i > 0)
        c->arm.failure_code = c->reason_codes[0];
    return pairs_from_json(c, cJSON_GetObjectItemCaseSensitive(o, "pairs"));
}

cJSON *kt_point_result_to_json(const kt_point_result *p, const kt_spec *spec)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", p->point.id);
    cJSON_AddItemToObject(o, "axes", axes_json(&p->point, spec->op->axes));
    kt_json_add_real(o, "flops", p->flops);
    kt_json_add_real(o, "bytes", p->bytes);
    kt_json_add_str_or_null(o, "error", p->error);
    cJSON_AddNumberToObject(o, "repetitions", p->repetitions);
    kt_json_add_real(o, "elapsed_s", p->elapsed_s);
    kt_json_add_real(o, "timer_tick_ns", p->timer_tick_ns);
    cJSON_AddStringToObject(o, "stop_reason", p->stop_reason);
    cJSON_AddItemToObject(o, "baseline", arm_json(&p->baseline, &spec->baseline));
    cJSON *cands = cJSON_AddArrayToObject(o, "candidates");
    for (size_t k = 0; k < p->n_cands; k++) {
        cJSON *c = candidate_json(&p->cands[k], &spec->candidates[k]);
        cJSON *stages = kt_stage_compare_json(&p->baseline.stages, &p->cands[k].arm.stages);
        if (stages)
            cJSON_AddItemToObject(c, "stage_speedups", stages);
        cJSON_AddItemToArray(cands, c);
    }
    return o;
}

int kt_point_result_from_json(kt_point_result *out, const cJSON *o)
{
    memset(out, 0, sizeof(*out));
    if (!cJSON_IsObject(o))
        return -1;
    kt_json_get_str(o, "id", out->point.id, sizeof(out->point.id));
    axes_from_json(&out->point, cJSON_GetObjectItemCaseSensitive(o, "axes"));
    out->flops = kt_json_get_real(o, "flops", NAN);
    out->bytes = kt_json_get_real(o, "bytes", NAN);
    kt_json_get_str(o, "error", out->error, sizeof(out->error));
    out->repetitions = (int)kt_json_get_real(o, "repetitions", 0);
    out->elapsed_s = kt_json_get_real(o, "elapsed_s", NAN);
    out->timer_tick_ns = kt_json_get_real(o, "timer_tick_ns", NAN);
    kt_json_get_str(o, "stop_reason", out->stop_reason, sizeof(out->stop_reason));
    arm_from_json(&out->baseline, cJSON_GetObjectItemCaseSensitive(o, "baseline"));
    const cJSON *cands = cJSON_GetObjectItemCaseSensitive(o, "candidates"), *c;
    int n = cJSON_GetArraySize(cands);
    out->cands = calloc(n > 0 ? (size_t)n : 1, sizeof(*out->cands));
    if (!out->cands || !out->point.id[0])
        return -1;
    cJSON_ArrayForEach(c, cands)
    {
        if (candidate_from_json(&out->cands[out->n_cands++], c) < 0)
            return -1;
    }
    return 0;
}

cJSON *kt_candidate_verdicts_to_json(const kt_run_result *run)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t k = 0; k < run->n_cands; k++) {
        const kt_candidate_verdict *cv = &run->cands[k];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", cv->name);
        cJSON_AddStringToObject(o, "variant", cv->variant);
        cJSON_AddStringToObject(o, "verdict", kt_verdict_name(cv->verdict));
        cJSON *counts = cJSON_AddObjectToObject(o, "points");
        cJSON_AddNumberToObject(counts, "keep", cv->keep);
        cJSON_AddNumberToObject(counts, "reject", cv->reject);
        cJSON_AddNumberToObject(counts, "inconclusive", cv->inconclusive);
        kt_json_add_real(o, "geomean_speedup", cv->geomean_speedup);
        cJSON *ci = cJSON_AddArrayToObject(o, "geomean_ci");
        cJSON_AddItemToArray(ci, kt_json_real(cv->geomean_low));
        cJSON_AddItemToArray(ci, kt_json_real(cv->geomean_high));
        cJSON_AddStringToObject(o, "reason", cv->reason);
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

cJSON *kt_decision_to_json(const kt_run_result *run, const kt_spec *spec, int exit_code)
{
    cJSON *decision = cJSON_CreateObject();
    cJSON_AddStringToObject(decision, "verdict", kt_verdict_name(run->verdict));
    cJSON_AddStringToObject(decision, "aggregate", kt_aggregate_name(spec->aggregate));
    kt_json_add_real(decision, "min_speedup", spec->min_speedup);
    kt_json_add_real(decision, "confidence", spec->confidence);
    cJSON_AddNumberToObject(decision, "point_errors", run->point_errors);
    cJSON_AddNumberToObject(decision, "order_warnings", run->order_warnings);
    cJSON_AddNumberToObject(decision, "set_warnings", run->set_warnings);
    cJSON_AddNumberToObject(decision, "exit_code", exit_code);
    return decision;
}

int kt_result_shard(const cJSON *doc, int *index, int *count)
{
    const cJSON *v = kt_json_at_path(doc, "provenance.run.shard");
    int i = 0, n = 0, end = 0;
    *index = *count = 1;
    if (!cJSON_IsString(v) || sscanf(v->valuestring, "%d/%d%n", &i, &n, &end) != 2 ||
        v->valuestring[end] != '\0' || i < 1 || n < 1 || i > n)
        return KT_EINVAL;
    *index = i;
    *count = n;
    return 0;
}
