/* cmd_validate.c - 'ktrial validate SPEC... [--plan] [--backend B]': every stage of spec
 * validation without running anything; --plan adds each matrix point's estimated cost. */
#include "archive/archive.h"
#include "spec/catalog.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "util/json.h"
#include "kernel.h"
#include "spec/yaml_tree.h"
#include "spec/matrix.h"
#include "spec/plan.h"
#include "arm/arm.h"
#include "spec/spec.h"
#include "util/memory.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GIB (1024.0 * 1024.0 * 1024.0)

static void print_plan(const kt_spec *spec, const kt_matrix *m)
{
    kt_plan plan;
    const kt_arm_kind *k = kt_arm_kind_of(spec);
    if (k->calibrate && m->n > 0) /* a command's cost is known only by running it */
        printf("  calibrated with one call per arm at %s: %d of %zu succeeded\n", m->points[0].id,
               k->calibrate(spec, &m->points[0]), spec->n_candidates + 1);
    if (kt_plan_estimate(&plan, spec, m) != KT_OK) {
        fprintf(stderr, "%s: cannot estimate the plan: %s\n", spec->path, kt_error_last());
        return;
    }
    printf("  backend %s, %zu point%s, up to %.0f calls per point\n", spec->backend, m->n,
           m->n == 1 ? "" : "s", plan.calls_per_point);
    printf("  %-48s %14s %14s\n", "point", "estimate (s)", "memory (GiB)");
    double most = 0;
    for (size_t i = 0; i < m->n; i++) {
        printf("  %-48s %14.3f %14.3f\n", m->points[i].id, plan.point_seconds[i],
               plan.point_bytes[i] / GIB);
        most = fmax(most, plan.point_bytes[i]);
    }
    printf("  total: estimate %.1f s = %.2f min, of which %.1f s start-up (inputs and float64 "
           "references, at rates measured on this host); every candidate is counted at "
           "max_repetitions = %d pairs per point, at most max_seconds_per_point = %g s\n",
           plan.total_seconds, plan.total_seconds / 60.0, plan.startup_seconds,
           spec->max_repetitions, spec->max_seconds_per_point);
    char what[64];
    double avail = kt_memory_available(what, sizeof(what));
    if (most > 0)
        printf("  memory: at least %.3f GiB at the largest point (every input set's inputs, "
               "outputs and float64 reference; the arms' own buffers come on top); %s here: "
               "%.1f GiB%s\n",
               most / GIB, what, avail / GIB,
               most > avail ? ", too little: run refuses it without --force" : "");
    if (isnan(spec->budget_minutes))
        printf("  budget: none (budget.max_minutes is not set)\n");
    else /* validation holds the budget to the idle estimate: the load must not decide validity */
        printf("  budget: %g min: %s on an idle host (%.2f min, the estimate validation checks); "
               "%s at this host's load now (%.2f min)\n",
               spec->budget_minutes,
               plan.idle_seconds / 60.0 <= spec->budget_minutes ? "within" : "over",
               plan.idle_seconds / 60.0,
               plan.total_seconds / 60.0 <= spec->budget_minutes ? "within" : "over",
               plan.total_seconds / 60.0);
    kt_plan_free(&plan);
}

/* The path of a schema or meaning message ("trials.min_repetitions: expected ..."): the part
 * before the first ": " when it reads as a key path (no spaces), else none. */
static cJSON *problem_json(const kt_diag_item *it)
{
    cJSON *o = cJSON_CreateObject();
    const char *msg = it->message, *sep = strstr(msg, ": ");
    size_t plen = sep ? (size_t)(sep - msg) : 0;
    int is_path = plen > 0 && plen < 128 && strcspn(msg, " '\"") >= plen;
    static const char *const severities[] = {"error", "warning", "note"};
    kt_json_add_str_or_null(o, "file", it->file);
    if (it->line > 0) {
        cJSON_AddNumberToObject(o, "line", it->line);
        cJSON_AddNumberToObject(o, "col", it->col);
    } else {
        cJSON_AddNullToObject(o, "line");
        cJSON_AddNullToObject(o, "col");
    }
    if (is_path) {
        char path[128];
        snprintf(path, sizeof(path), "%.*s", (int)plen, msg);
        cJSON_AddStringToObject(o, "path", path);
        cJSON_AddStringToObject(o, "message", sep + 2);
    } else {
        cJSON_AddNullToObject(o, "path");
        cJSON_AddStringToObject(o, "message", msg);
    }
    cJSON_AddStringToObject(o, "severity", severities[it->severity]);
    return o;
}

/* Appends {path, kind, ok, problems} for one file to 'out' and returns it. */
static cJSON *spec_entry(cJSON *out, const char *path, const char *kind, const kt_diag *diag)
{
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "path", path);
    cJSON_AddStringToObject(e, "kind", kind);
    cJSON_AddBoolToObject(e, "ok", diag->n_errors == 0);
    cJSON *problems = cJSON_AddArrayToObject(e, "problems");
    for (size_t i = 0; i < diag->n; i++)
        cJSON_AddItemToArray(problems, problem_json(&diag->items[i]));
    cJSON_AddItemToArray(out, e);
    return e;
}

/* The plan of --plan --json: per point its estimate, the totals and the budget. */
static void add_plan_json(cJSON *entry, const kt_spec *spec, const kt_matrix *m)
{
    kt_plan plan;
    if (kt_plan_estimate(&plan, spec, m) != KT_OK)
        return;
    cJSON *o = cJSON_AddObjectToObject(entry, "plan");
    cJSON_AddStringToObject(o, "backend", spec->backend);
    kt_json_add_real(o, "calls_per_point", plan.calls_per_point);
    kt_json_add_real(o, "estimate_seconds", plan.total_seconds);
    kt_json_add_real(o, "startup_seconds", plan.startup_seconds);
    if (isnan(spec->budget_minutes))
        cJSON_AddNullToObject(o, "budget_seconds");
    else
        kt_json_add_real(o, "budget_seconds", spec->budget_minutes * 60.0);
    cJSON *points = cJSON_AddArrayToObject(o, "points");
    for (size_t i = 0; i < m->n; i++) {
        cJSON *pt = cJSON_CreateObject();
        cJSON_AddStringToObject(pt, "id", m->points[i].id);
        kt_json_add_real(pt, "estimate_seconds", plan.point_seconds[i]);
        kt_json_add_real(pt, "memory_bytes", plan.point_bytes[i]);
        cJSON_AddItemToArray(points, pt);
    }
    kt_plan_free(&plan);
}

/* A file whose top level has 'models' and no 'op' is a model catalog (experiments/models.yaml
 * sits beside the specs, so validating every yaml file of that folder checks it too). Returns 1
 * when 'path' was a catalog (and sets *rc), 0 when it is to be treated as a spec. */
static int validate_catalog(const char *path, int *rc, cJSON *out)
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
        if (out) {
            cJSON *entry = spec_entry(out, path, "catalog", &diag);
            if (*rc == 0)
                cJSON_AddNumberToObject(entry, "models", (double)cat.n);
        } else {
            kt_diag_print(&diag, stderr);
            if (*rc == 0)
                printf("ok: %s (model catalog, %zu models)\n", path, cat.n);
        }
        kt_catalog_free(&cat);
    }
    kt_node_free(root);
    kt_diag_free(&diag);
    free(text);
    return is_catalog;
}

/* Validates one spec and prints the outcome, or with 'out' appends it there as JSON; returns
 * 0 when it has no error. */
static int validate_one(const char *path, const kt_spec_options *opts, int show_plan, cJSON *out)
{
    int catalog_rc;
    if (validate_catalog(path, &catalog_rc, out))
        return catalog_rc;
    kt_diag diag;
    kt_diag_init(&diag);
    kt_spec *spec = NULL;
    int rc = kt_spec_load(&spec, path, opts, &diag);
    cJSON *entry = out ? spec_entry(out, path, "spec", &diag) : NULL;
    if (!out)
        kt_diag_print(&diag, stderr);
    kt_diag_free(&diag);
    if (rc != 0)
        return -1;
    if (entry) {
        cJSON_AddNumberToObject(entry, "points", (double)spec->matrix->n);
        cJSON_AddNumberToObject(entry, "candidates", (double)spec->n_candidates);
        if (show_plan)
            add_plan_json(entry, spec, spec->matrix);
        kt_spec_free(spec);
        return 0;
    }
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
    int show_plan = 0, n_specs = 0, json = 0;
    char **specs = calloc((size_t)argc, sizeof(*specs));
    if (!specs)
        return KT_EXIT_SOFTWARE;
    int rc = KT_EXIT_KEEP, more;
    kt_opt_parser p;
    const kt_option *opt;
    const char *v;
    kt_opt_init(&p, "validate", argc, argv);
    while ((more = kt_opt_next(&p, &opt, &v)) > 0) {
        if (kt_opt_is(opt, "--plan"))
            show_plan = 1;
        else if (kt_opt_is(opt, "--backend"))
            opts.backend = v;
        else if (kt_opt_is(opt, "--json"))
            json = 1;
        else
            specs[n_specs++] = (char *)v;
    }
    if (more < 0) {
        rc = KT_EXIT_USAGE;
        goto done;
    }
    if (opts.backend && (rc = kt_opt_check_backend("validate", opts.backend)))
        goto done;
    if (n_specs == 0) {
        rc = kt_usage_error("validate", "no spec given");
        goto done;
    }
    cJSON *doc = json ? cJSON_CreateObject() : NULL;
    cJSON *list = doc ? cJSON_AddArrayToObject(doc, "specs") : NULL;
    for (int i = 0; i < n_specs; i++)
        if (validate_one(specs[i], &opts, show_plan, list) != 0)
            rc = KT_EXIT_DATAERR;
    if (doc) {
        cJSON_AddBoolToObject(doc, "ok", rc == KT_EXIT_KEEP);
        char *text = kt_json_print(doc);
        printf("%s\n", text ? text : "{}");
        free(text);
        cJSON_Delete(doc);
    }
done:
    free(specs);
    return rc;
}
