/* cmd_models.c - 'ktrial models': the model catalog as a table. */
#include "spec/catalog.h"
#include "cli/commands.h"

#include <stdio.h>

int cmd_models(int argc, char **argv)
{
    if (argc > 1)
        return kt_usage_error("models", "unexpected argument '%s'", argv[1]);
    kt_diag diag;
    kt_diag_init(&diag);
    kt_catalog cat;
    if (kt_catalog_load(&cat, &diag) != 0) {
        kt_diag_print(&diag, stderr);
        kt_diag_free(&diag);
        return KT_EXIT_SOFTWARE;
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
