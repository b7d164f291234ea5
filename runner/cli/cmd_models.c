/* cmd_models.c - 'ktrial models': the model catalog as a table. */
#include "spec/catalog.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "util/json.h"

#include <stdio.h>
#include <stdlib.h>

static int print_json(const kt_catalog *cat)
{
    static const char *const keys[] = {"hidden",   "heads",        "kv_heads",
                                       "head_dim", "intermediate", "layers"};
    cJSON *doc = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(doc, "models");
    for (size_t i = 0; i < cat->n; i++) {
        const kt_model *m = &cat->models[i];
        const int64_t values[] = {m->hidden,   m->heads,        m->kv_heads,
                                  m->head_dim, m->intermediate, m->layers};
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", m->name);
        for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
            cJSON_AddNumberToObject(o, keys[k], (double)values[k]);
        cJSON_AddItemToArray(list, o);
    }
    char *text = kt_json_print(doc);
    int rc = text ? KT_EXIT_KEEP : KT_EXIT_SOFTWARE;
    printf("%s\n", text ? text : "{}");
    free(text);
    cJSON_Delete(doc);
    return rc;
}

int cmd_models(int argc, char **argv)
{
    int json, bad = kt_opt_parse_json_only(&json, "models", argc, argv);
    if (bad)
        return bad;
    kt_diag diag;
    kt_diag_init(&diag);
    kt_catalog cat;
    if (kt_catalog_load(&cat, &diag) != 0) {
        kt_diag_print(&diag, stderr);
        kt_diag_free(&diag);
        return KT_EXIT_SOFTWARE;
    }
    if (json) {
        int rc = print_json(&cat);
        kt_catalog_free(&cat);
        kt_diag_free(&diag);
        return rc;
    }
    printf("%-18s %7s %6s %9s %9s %13s %7s\n", "name", "hidden", "heads", "kv_heads", "head_dim",
           "intermediate", "layers");
    for (size_t i = 0; i < cat.n; i++) {
        const kt_model *m = &cat.models[i];
        printf("%-18s %7lld %6lld %9lld %9lld %13lld %7lld\n", m->name, (long long)m->hidden,
               (long long)m->heads, (long long)m->kv_heads, (long long)m->head_dim,
               (long long)m->intermediate, (long long)m->layers);
    }
    kt_catalog_free(&cat);
    kt_diag_free(&diag);
    return KT_EXIT_KEEP;
}
