/* cmd_kernels.c - 'ktrial kernels': ops, backends, variants and their params; with --plugin,
 * what one or more plugin libraries provide. */
#include "cli/commands.h"
#include "cli/options.h"
#include "util/json.h"
#include "kernel.h"
#include "python/py_variant.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *param_type_name(kt_param_type t)
{
    static const char *const names[] = {"int", "float", "bool", "enum"};
    return names[t];
}

/* 'x' as an integer when it is one (16777216, never 1.67772e+07), else with 6 digits. */
static const char *format_number(char *buf, size_t len, double x)
{
    if (isfinite(x) && x == floor(x) && fabs(x) < 1e15)
        snprintf(buf, len, "%.0f", x);
    else
        snprintf(buf, len, "%.6g", x);
    return buf;
}

static void print_param(const kt_param_def *p)
{
    char def[64], range[96];
    if (p->type == KT_PARAM_ENUM) {
        kt_param_choice_name(def, sizeof(def), p->choices, (int)p->def);
        snprintf(range, sizeof(range), "%s", p->choices);
    } else if (p->type == KT_PARAM_BOOL) {
        snprintf(def, sizeof(def), "%s", p->def != 0 ? "true" : "false");
        snprintf(range, sizeof(range), "true|false");
    } else {
        char lo[32], hi[32];
        format_number(def, sizeof(def), p->def);
        snprintf(range, sizeof(range), "[%s, %s]", format_number(lo, sizeof(lo), p->min),
                 format_number(hi, sizeof(hi), p->max));
    }
    printf("      %-18s %-5s default %-8s %-22s %s\n", p->name, param_type_name(p->type), def,
           range, p->doc);
}

static cJSON *param_json(const kt_param_def *p)
{
    cJSON *o = cJSON_CreateObject();
    char buf[64];
    cJSON_AddStringToObject(o, "name", p->name);
    cJSON_AddStringToObject(o, "type", param_type_name(p->type));
    if (p->type == KT_PARAM_ENUM) {
        cJSON_AddStringToObject(o, "default",
                                kt_param_choice_name(buf, sizeof(buf), p->choices, (int)p->def));
        cJSON *choices = cJSON_AddArrayToObject(o, "choices");
        for (int i = 0; kt_param_choice_name(buf, sizeof(buf), p->choices, i)[0]; i++)
            cJSON_AddItemToArray(choices, cJSON_CreateString(buf));
    } else if (p->type == KT_PARAM_BOOL) {
        cJSON_AddBoolToObject(o, "default", p->def != 0);
    } else {
        kt_json_add_real(o, "default", p->def);
        kt_json_add_real(o, "min", p->min);
        kt_json_add_real(o, "max", p->max);
    }
    cJSON_AddStringToObject(o, "doc", p->doc ? p->doc : "");
    return o;
}

static cJSON *params_json(const kt_param_def *params, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(a, param_json(&params[i]));
    return a;
}

/* Whether entry 'plugin' is to be shown: everything without --plugin, else only what the
 * named plugins provide. */
static int listed(int plugin, const int *plugins, int n_plugins)
{
    if (n_plugins == 0)
        return 1;
    for (int i = 0; i < n_plugins; i++)
        if (plugins[i] == plugin)
            return 1;
    return 0;
}

static int load_plugins(int *plugins, int n, char **paths, int quiet)
{
    for (int i = 0; i < n; i++) {
        kt_error_clear();
        plugins[i] = kt_plugin_load(paths[i]);
        if (plugins[i] < 0) {
            fprintf(stderr, "error: %s: %s\n", paths[i], kt_error_last());
            return KT_EXIT_DATAERR;
        }
        uint32_t abi = kt_plugin_abi(plugins[i]);
        if (!quiet)
            printf("plugin %s (ABI %u.%u)\n", kt_plugin_path(plugins[i]), abi >> 16, abi & 0xffff);
    }
    return 0;
}

/* A backend the listing shows, its probe in 'info'; 0 when --backend names another. */
static int backend_shown(kt_device_info *info, const kt_backend_iface *be, const char *only)
{
    if (only && strcmp(be->name, only) != 0)
        return 0;
    be->probe(info);
    return 1;
}

/* Whether PyTorch can be imported here (asked once, in a throwaway child); 'why' when not. */
static int torch_found(const char **why)
{
    static int found = -1;
    static char reason[256];
    if (found < 0) {
        found = kt_py_module_available("torch");
        snprintf(reason, sizeof(reason), "%s", found ? "" : kt_error_last());
    }
    *why = reason;
    return found;
}

/* A variant of 'op' the listing shows: on the --backend asked for, from a listed plugin; a
 * torch variant only where torch is found. */
static int variant_shown(const kt_variant *var, const kt_op *op, const char *only,
                         const int *plugins, int n_plugins)
{
    const char *why;
    return strcmp(var->op, op->name) == 0 && (!only || strcmp(var->backend, only) == 0) &&
           listed(kt_variant_plugin(var), plugins, n_plugins) &&
           (!kt_py_is_variant(var) || torch_found(&why));
}

/* The Python arms' state: embedded or not, torch found or not, and the bridge's own cost per
 * call (an empty function over 3 tensors, measured in throwaway children). */
static void print_python(void)
{
    const char *why;
    if (!kt_py_built()) {
        printf("\npython arms: not built: %s\n", kt_py_missing_reason());
        return;
    }
    int torch = torch_found(&why);
    printf("\npython arms (python: FILE.py:FUNCTION, framework: numpy|torch): embedded; torch "
           "%s%s\n",
           torch ? "found" : "not found: ", torch ? "" : why);
    /* numpy's alone: the per-call path is the same for torch (tensors are made once per
     * buffer), and importing torch would cost every listing seconds; 'run' measures the
     * framework its arms use */
    double np = kt_py_bridge_cost_ns(KT_PY_NUMPY, 3);
    if (isfinite(np))
        printf("  bridge cost per call (an empty function, 3 numpy arrays): %.2f us (median of "
               "2000 calls; in every timed call of a Python arm; 'run' measures its arms' "
               "framework)\n",
               np / 1e3);
    else
        printf("  bridge cost per call: not measured: %s\n", kt_error_last());
}

/* The plugin a registry entry came from (its path), or null when built in. */
static void add_origin(cJSON *o, int plugin)
{
    kt_json_add_str_or_null(o, "plugin", plugin >= 0 ? kt_plugin_path(plugin) : NULL);
}

/* The spec keys of the matrix axes 'op' uses, in point-id order; returns how many. */
static int axis_keys(const kt_op *op, const char *keys[5])
{
    static const struct {
        unsigned axis;
        const char *key;
    } axes[] = {{KT_AXIS_MODEL, "models"},
                {KT_AXIS_PHASE, "phases"},
                {KT_AXIS_ROLE, "roles"},
                {KT_AXIS_BATCH, "batch_sizes"},
                {KT_AXIS_CONTEXT, "context_lengths"}};
    int n = 0;
    for (size_t i = 0; i < sizeof(axes) / sizeof(axes[0]); i++)
        if (op->axes & axes[i].axis)
            keys[n++] = axes[i].key;
    return n;
}

/* "  axes: models, phases, ..." with the context's reach where the op has phases. */
static void print_axes(const kt_op *op)
{
    const char *keys[5];
    int n = axis_keys(op, keys);
    printf("  axes:");
    for (int i = 0; i < n; i++)
        printf("%s %s", i ? "," : "", keys[i]);
    if ((op->axes & KT_AXIS_PHASE) && (op->axes & KT_AXIS_CONTEXT))
        printf(" (context_lengths %s)", op->axes & KT_AXIS_DECODE_CONTEXT
                                            ? "at decode too: a KV cache"
                                            : "at prefill only: decode rows are the batch");
    printf("\n");
}

/* What the text listing shows, as one JSON document: backends, and per op its input params,
 * its variants with their params, and the variants this build left out. */
static cJSON *kernels_json(const char *only, const int *plugins, int n_plugins)
{
    cJSON *doc = cJSON_CreateObject();
    cJSON *backends = cJSON_AddArrayToObject(doc, "backends");
    for (int b = 0; b < kt_backend_count(); b++) {
        const kt_backend_iface *be = kt_backend_at(b);
        kt_device_info info;
        if (!backend_shown(&info, be, only))
            continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", be->name);
        cJSON_AddBoolToObject(o, "available", info.available);
        cJSON_AddStringToObject(o, "doc", be->doc);
        kt_json_add_str_or_null(o, "reason", info.available ? NULL : info.reason);
        cJSON_AddItemToArray(backends, o);
    }
    cJSON *ops = cJSON_AddArrayToObject(doc, "ops");
    for (int i = 0; i < kt_op_count(); i++) {
        const kt_op *op = kt_op_at(i);
        cJSON *o = cJSON_CreateObject(), *variants = cJSON_CreateArray();
        cJSON *missing = cJSON_CreateArray();
        for (int v = 0; v < kt_variant_count(); v++) {
            const kt_variant *var = kt_variant_at(v);
            if (!variant_shown(var, op, only, plugins, n_plugins))
                continue;
            cJSON *vo = cJSON_CreateObject();
            cJSON_AddStringToObject(vo, "backend", var->backend);
            cJSON_AddStringToObject(vo, "name", var->name);
            cJSON_AddStringToObject(vo, "doc", var->doc);
            add_origin(vo, kt_variant_plugin(var));
            cJSON_AddItemToObject(vo, "params", params_json(var->params, var->n_params));
            cJSON_AddItemToArray(variants, vo);
        }
        for (int v = 0; v < kt_missing_variant_count(); v++) {
            const kt_missing_variant *mv = kt_missing_variant_at(v);
            if (strcmp(mv->op, op->name) != 0 || (only && strcmp(mv->backend, only) != 0))
                continue;
            cJSON *mo = cJSON_CreateObject();
            cJSON_AddStringToObject(mo, "backend", mv->backend);
            cJSON_AddStringToObject(mo, "name", mv->name);
            cJSON_AddStringToObject(mo, "reason", mv->reason);
            cJSON_AddItemToArray(missing, mo);
        }
        if (cJSON_GetArraySize(variants) == 0) {
            cJSON_Delete(o);
            cJSON_Delete(variants);
            cJSON_Delete(missing);
            continue;
        }
        cJSON_AddStringToObject(o, "name", op->name);
        cJSON_AddStringToObject(o, "doc", op->doc);
        add_origin(o, kt_op_plugin(op));
        cJSON *axes = cJSON_AddArrayToObject(o, "axes");
        const char *keys[5];
        for (int i = 0, n = axis_keys(op, keys); i < n; i++)
            cJSON_AddItemToArray(axes, cJSON_CreateString(keys[i]));
        cJSON_AddBoolToObject(o, "decode_context",
                              !(op->axes & KT_AXIS_PHASE) || (op->axes & KT_AXIS_DECODE_CONTEXT));
        cJSON_AddItemToObject(o, "input_params", params_json(op->input_params, op->n_input_params));
        cJSON_AddItemToObject(o, "variants", variants);
        cJSON_AddItemToObject(o, "not_built", missing);
        cJSON_AddItemToArray(ops, o);
    }
    return doc;
}

/* The longest backend name, so that the states and notes after the names line up. */
static int backend_name_width(void)
{
    int width = 0;
    for (int b = 0; b < kt_backend_count(); b++) {
        int n = (int)strlen(kt_backend_at(b)->name);
        if (n > width)
            width = n;
    }
    return width;
}

/* --backend names one of this build's backends (not 'auto': the listing shows what is built);
 * a typo gets the "did you mean" that run's and validate's --backend give. */
static int check_backend(const char *name)
{
    const char *names[16];
    size_t n = 0;
    for (int b = 0; b < kt_backend_count() && n < sizeof(names) / sizeof(names[0]); b++)
        names[n++] = kt_backend_at(b)->name;
    return kt_opt_check_choice("kernels", "--backend", name, names, n);
}

int cmd_kernels(int argc, char **argv)
{
    const char *only = NULL;
    char *paths[16];
    int plugins[16], n_plugins = 0, json = 0, more;
    kt_opt_parser p;
    const kt_option *opt;
    const char *v;
    kt_opt_init(&p, "kernels", argc, argv);
    while ((more = kt_opt_next(&p, &opt, &v)) > 0) {
        if (kt_opt_is(opt, "--backend"))
            only = v;
        else if (kt_opt_is(opt, "--plugin") && n_plugins < 16)
            paths[n_plugins++] = (char *)v;
        else if (kt_opt_is(opt, "--json"))
            json = 1;
        else
            return kt_usage_error("kernels", "unexpected argument '%s'", v);
    }
    if (more < 0)
        return KT_EXIT_USAGE;
    int rc = load_plugins(plugins, n_plugins, paths, json);
    if (rc)
        return rc;
    if (only && (rc = check_backend(only)))
        return rc;
    if (json) {
        cJSON *doc = kernels_json(only, plugins, n_plugins);
        char *text = doc ? kt_json_print(doc) : NULL;
        rc = text ? KT_EXIT_KEEP : KT_EXIT_SOFTWARE;
        printf("%s\n", text ? text : "{}");
        free(text);
        cJSON_Delete(doc);
        return rc;
    }

    printf("%sbackends:\n", n_plugins ? "\n" : "");
    int width = backend_name_width();
    for (int b = 0; b < kt_backend_count(); b++) {
        const kt_backend_iface *be = kt_backend_at(b);
        kt_device_info info;
        if (!backend_shown(&info, be, only))
            continue;
        printf("  %-*s %-10s %s\n", width, be->name, info.available ? "available" : "no device",
               info.available ? be->doc : info.reason);
    }
    for (int o = 0; o < kt_op_count(); o++) {
        const kt_op *op = kt_op_at(o);
        int shown = 0;
        for (int v = 0; v < kt_variant_count(); v++) {
            const kt_variant *var = kt_variant_at(v);
            if (!variant_shown(var, op, only, plugins, n_plugins))
                continue;
            if (!shown++) {
                int from = kt_op_plugin(op);
                printf("\nop %s: %s%s%s%s\n", op->name, op->doc, from >= 0 ? " (from " : "",
                       from >= 0 ? kt_plugin_path(from) : "", from >= 0 ? ")" : "");
                print_axes(op);
                for (int i = 0; i < op->n_input_params; i++) {
                    if (i == 0)
                        printf("  input params (inputs.params):\n");
                    print_param(&op->input_params[i]);
                }
            }
            int from = kt_variant_plugin(var);
            printf("  %s/%s: %s%s%s%s\n", var->backend, var->name, var->doc,
                   from >= 0 ? " (plugin " : "", from >= 0 ? kt_plugin_path(from) : "",
                   from >= 0 ? ")" : "");
            for (int i = 0; i < var->n_params; i++)
                print_param(&var->params[i]);
        }
        for (int v = 0; v < kt_missing_variant_count(); v++) {
            const kt_missing_variant *mv = kt_missing_variant_at(v);
            if (strcmp(mv->op, op->name) == 0 && (!only || strcmp(mv->backend, only) == 0))
                printf("  %s/%s: not built: %s\n", mv->backend, mv->name, mv->reason);
        }
    }
    if (!n_plugins && (!only || strcmp(only, "cpu") == 0 || strcmp(only, "cuda") == 0))
        print_python();
    return KT_EXIT_KEEP;
}
