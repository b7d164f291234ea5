/* cmd_validate.c - 'ktrial validate SPEC... [--plan] [--backend B]': every stage of spec
 * validation without running anything; --plan adds each matrix point's estimated cost. */
#include "archive/archive.h"
#include "spec/catalog.h"
#include "cli/commands.h"
#include "kernel.h"
#include "spec/yaml_tree.h"
#include "spec/matrix.h"
#include "spec/plan.h"
#include "measure/command.h"
#include "spec/spec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_plan(const kt_spec *spec, const kt_matrix *m)
{
    kt_plan plan;
    if (spec->command && m->n > 0) /* a command's cost is known only by running it */
        printf("  calibrated with one call per arm at %s: %d of %zu succeeded\n", m->points[0].id,
               kt_command_calibrate_spec(spec, &m->points[0]), spec->n_candidates + 1);
    if (kt_plan_estimate(&plan, spec, m) != KT_OK) {
        fprintf(stderr, "%s: cannot estimate the plan: %s\n", spec->path, kt_error_last());
        return;
    }
    printf("  backend %s, %zu points, up to %.0f calls per point\n", spec->backend, m->n,
           plan.calls_per_point);
    printf("  %-48s %14s\n", "point", "estimate (s)");
    for (size_t i = 0; i < m->n; i++)
        printf("  %-48s %14.3f\n", m->points[i].id, plan.point_seconds[i]);
    printf("  total: estimate %.1f s = %.2f min, of which %.1f s start-up (inputs and float64 "
           "references, at rates measured on this host); every candidate is counted at "
           "max_repetitions = %d pairs per point, at most max_seconds_per_point = %g s\n",
           plan.total_seconds, plan.total_seconds / 60.0, plan.startup_seconds,
           spec->max_repetitions, spec->max_seconds_per_point);
    if (isnan(spec->budget_minutes))
        printf("  budget: none (budget.max_minutes is not set)\n");
    else
        printf("  budget: %g min, %s\n", spec->budget_minutes,
               plan.total_seconds / 60.0 <= spec->budget_minutes ? "within" : "over");
    kt_plan_free(&plan);
}

/* A file whose top level has 'models' and no 'op' is a model catalog (experiments/models.yaml
 * sits beside the specs, so validating every yaml file of that folder checks it too). Returns 1
 * when 'path' was a catalog (and sets *rc), 0 when it is to be treated as a spec. */
static int validate_catalog(const char *path, int *rc)
{
    char *text = NULL;
    size_t len = 0;
    kt_node *root = NULL;
    kt_diag diag;
    kt_diag_init(&diag);
    int is_catalog = 0;
    if (kt_read_file(&text, &len, path, KT_SPEC_MAX_BYTES) == 0 &&
        kt_yaml_load(&root, path, text, len, &diag) == 0 && root->kind == KT_NODE_MAP &&
        kt_node_get(root, "models") && !kt_node_get(root, "op")) {
        kt_catalog cat;
        kt_diag_free(&diag);
        kt_diag_init(&diag);
        is_catalog = 1;
        *rc = kt_catalog_parse(&cat, path, text, len, &diag);
        kt_diag_print(&diag, stderr);
        if (*rc == 0)
            printf("ok: %s (model catalog, %zu models)\n", path, cat.n);
        kt_catalog_free(&cat);
    }
    kt_node_free(root);
    kt_diag_free(&diag);
    free(text);
    return is_catalog;
}

/* Validates one spec and prints the outcome; returns 0 when it has no error. */
static int validate_one(const char *path, const kt_spec_options *opts, int show_plan)
{
    int catalog_rc;
    if (validate_catalog(path, &catalog_rc))
        return catalog_rc;
    kt_diag diag;
    kt_diag_init(&diag);
    kt_spec *spec = NULL;
    int rc = kt_spec_load(&spec, path, opts, &diag);
    kt_diag_print(&diag, stderr);
    kt_diag_free(&diag);
    if (rc != 0)
        return -1;
    /* A spec that loaded has its matrix expanded once; its warnings were printed above. */
    const kt_matrix *m = spec->matrix;
    printf("ok: %s (%zu point%s, %zu candidate%s)\n", path, m->n, m->n == 1 ? "" : "s",
           spec->n_candidates, spec->n_candidates == 1 ? "" : "s");
    if (show_plan)
        print_plan(spec, m);
    kt_spec_free(spec);
    return rc;
}

int cmd_validate(int argc, char **argv)
{
    kt_spec_options opts = {NULL, 0};
    int show_plan = 0, n_specs = 0, options_done = 0;
    char **specs = calloc((size_t)argc, sizeof(*specs));
    if (!specs)
        return KT_EXIT_SOFTWARE;
    int rc = KT_EXIT_KEEP;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (options_done || a[0] != '-') {
            specs[n_specs++] = argv[i];
        } else if (strcmp(a, "--") == 0) {
            options_done = 1;
        } else if (strcmp(a, "--plan") == 0) {
            show_plan = 1;
        } else if (strcmp(a, "--backend") == 0 && i + 1 < argc) {
            opts.backend = argv[++i];
        } else if (strncmp(a, "--backend=", 10) == 0) {
            opts.backend = a + 10;
        } else {
            rc = kt_usage_error(
                "validate", "%s '%s'",
                strcmp(a, "--backend") == 0 ? "missing value for" : "unknown option", a);
            goto done;
        }
    }
    if (opts.backend && strcmp(opts.backend, "auto") != 0 && strcmp(opts.backend, "cpu") != 0 &&
        strcmp(opts.backend, "cuda") != 0 && strcmp(opts.backend, "sim") != 0 &&
        strcmp(opts.backend, "process") != 0) {
        rc = kt_usage_error("validate",
                            "unknown backend '%s' (choose auto, cpu, cuda, sim or process)",
                            opts.backend);
        goto done;
    }
    if (n_specs == 0) {
        rc = kt_usage_error("validate", "no spec given");
        goto done;
    }
    for (int i = 0; i < n_specs; i++)
        if (validate_one(specs[i], &opts, show_plan) != 0)
            rc = KT_EXIT_DATAERR;
done:
    free(specs);
    return rc;
}
