/* catalog.c - the model catalog, parsed from the embedded experiments/models.yaml and checked
 * against the embedded schemas/models.schema.json on every load. */
#include "spec/catalog.h"
#include "spec/embedded.h"
#include "spec/schema.h"
#include "spec/yaml_tree.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CATALOG_FILE "experiments/models.yaml"

/* Reads one schema-valid model map into 'm'. */
static void read_model(kt_model *m, const kt_node *map)
{
    static const char *const fields[] = {"hidden",   "heads",        "kv_heads",
                                         "head_dim", "intermediate", "layers"};
    int64_t *out[] = {&m->hidden,   &m->heads,        &m->kv_heads,
                      &m->head_dim, &m->intermediate, &m->layers};
    memset(m, 0, sizeof(*m));
    const char *name = kt_node_str(kt_node_get(map, "name"));
    snprintf(m->name, sizeof(m->name), "%s", name ? name : "");
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        if (kt_node_int(kt_node_get(map, fields[i]), out[i]) != 0)
            *out[i] = 0;
}

int kt_catalog_load(kt_catalog *out, kt_diag *diag)
{
    return kt_catalog_parse(out, CATALOG_FILE, kt_embedded_models_yaml, kt_embedded_models_yaml_len,
                            diag);
}

int kt_catalog_parse(kt_catalog *out, const char *file, const char *text, size_t len, kt_diag *diag)
{
    int rc = -1;
    kt_node *root = NULL;
    size_t errors_before = diag->n_errors;
    memset(out, 0, sizeof(*out));
    cJSON *schema = cJSON_ParseWithLength(kt_embedded_models_schema, kt_embedded_models_schema_len);
    if (!schema)
        return kt_diag_error(diag, file, 0, 0,
                             "internal error: the embedded model schema is not JSON");
    if (kt_yaml_load(&root, file, text, len, diag) != 0)
        goto done;
    if (kt_schema_validate(schema, root, file, diag) != 0) {
        if (diag->n_errors == errors_before)
            kt_diag_error(diag, file, 0, 0, "internal error: the model schema is unusable");
        goto done;
    }
    const kt_node *list = kt_node_get(root, "models");
    out->models = calloc(list->n ? list->n : 1, sizeof(*out->models));
    if (!out->models) {
        kt_diag_error(diag, file, 0, 0, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < list->n; i++) {
        kt_model *m = &out->models[out->n];
        read_model(m, list->items[i]);
        if (kt_catalog_find(out, m->name)) {
            kt_diag_error(diag, file, list->items[i]->line, list->items[i]->col,
                          "models[%zu]: model '%s' is listed twice", i, m->name);
            goto done;
        }
        out->n++;
    }
    rc = 0;
done:
    if (rc != 0)
        kt_catalog_free(out);
    kt_node_free(root);
    cJSON_Delete(schema);
    return rc;
}

void kt_catalog_free(kt_catalog *c)
{
    if (!c)
        return;
    free(c->models);
    c->models = NULL;
    c->n = 0;
}

const kt_model *kt_catalog_find(const kt_catalog *c, const char *name)
{
    for (size_t i = 0; c && name && i < c->n; i++)
        if (strcmp(c->models[i].name, name) == 0)
            return &c->models[i];
    return NULL;
}
