/* cmd_kernels.c - 'ktrial kernels': ops, backends, variants and their params; with --plugin,
 * what one or more plugin libraries provide. */
#include "cli/commands.h"
#include "kernel.h"

#include <stdio.h>
#include <string.h>

static const char *param_type_name(kt_param_type t)
{
    static const char *const names[] = {"int", "float", "bool", "enum"};
    return names[t];
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
        snprintf(def, sizeof(def), "%.6g", p->def);
        snprintf(range, sizeof(range), "[%.6g, %.6g]", p->min, p->max);
    }
    printf("      %-18s %-5s default %-8s %-22s %s\n", p->name, param_type_name(p->type), def,
           range, p->doc);
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

static int load_plugins(int *plugins, int n, char **paths)
{
    for (int i = 0; i < n; i++) {
        kt_error_clear();
        plugins[i] = kt_plugin_load(paths[i]);
        if (plugins[i] < 0) {
            fprintf(stderr, "error: %s: %s\n", paths[i], kt_error_last());
            return KT_EXIT_DATAERR;
        }
        uint32_t abi = kt_plugin_abi(plugins[i]);
        printf("plugin %s (ABI %u.%u)\n", kt_plugin_path(plugins[i]), abi >> 16, abi & 0xffff);
    }
    return 0;
}

int cmd_kernels(int argc, char **argv)
{
    const char *only = NULL;
    char *paths[16];
    int plugins[16], n_plugins = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc)
            only = argv[++i];
        else if (strncmp(argv[i], "--backend=", 10) == 0)
            only = argv[i] + 10;
        else if (strcmp(argv[i], "--plugin") == 0 && i + 1 < argc && n_plugins < 16)
            paths[n_plugins++] = argv[++i];
        else if (strncmp(argv[i], "--plugin=", 9) == 0 && n_plugins < 16)
            paths[n_plugins++] = argv[i] + 9;
        else
            return kt_usage_error("kernels", "unexpected argument '%s'", argv[i]);
    }
    int rc = load_plugins(plugins, n_plugins, paths);
    if (rc)
        return rc;
    if (only && !kt_backend_find(only)) {
        fprintf(stderr, "error: unknown backend '%s' (this build has:", only);
        for (int b = 0; b < kt_backend_count(); b++)
            fprintf(stderr, " %s", kt_backend_at(b)->name);
        fprintf(stderr, ")\n");
        return KT_EXIT_USAGE;
    }

    printf("%sbackends:\n", n_plugins ? "\n" : "");
    for (int b = 0; b < kt_backend_count(); b++) {
        const kt_backend_iface *be = kt_backend_at(b);
        if (only && strcmp(be->name, only) != 0)
            continue;
        kt_device_info info;
        be->probe(&info);
        printf("  %-5s %-10s %s\n", be->name, info.available ? "available" : "no device",
               info.available ? be->doc : info.reason);
    }
    for (int o = 0; o < kt_op_count(); o++) {
        const kt_op *op = kt_op_at(o);
        int shown = 0;
        for (int v = 0; v < kt_variant_count(); v++) {
            const kt_variant *var = kt_variant_at(v);
            if (strcmp(var->op, op->name) != 0 || (only && strcmp(var->backend, only) != 0) ||
                !listed(kt_variant_plugin(var), plugins, n_plugins))
                continue;
            if (!shown++) {
                int from = kt_op_plugin(op);
                printf("\nop %s: %s%s%s%s\n", op->name, op->doc, from >= 0 ? " (from " : "",
                       from >= 0 ? kt_plugin_path(from) : "", from >= 0 ? ")" : "");
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
    return KT_EXIT_KEEP;
}
