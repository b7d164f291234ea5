/* spec.c - loading an experiment spec: size limit, YAML, the embedded JSON Schema, then the
 * meaning checks of spec_meaning.c; one stage's problems are all reported, and a failed stage
 * stops the ones after it. */
#include "spec/spec.h"
#include "spec/command_spec.h"
#include "spec/service_spec.h"
#include "spec/embedded.h"
#include "spec/schema.h"
#include "spec/matrix.h"
#include "spec/spec_meaning.h"
#include "spec/yaml_tree.h"
#include "util/hash.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *kt_order_name(kt_order o)
{
    switch (o) {
    case KT_ORDER_ALTERNATE:
        return "alternate";
    case KT_ORDER_GROUPED:
        return "grouped";
    default:
        return "random";
    }
}

const char *kt_aggregate_name(kt_aggregate a)
{
    return a == KT_AGGREGATE_GEOMEAN ? "geomean" : "all";
}

uint64_t kt_point_seed(const kt_spec *spec, const kt_point *point)
{
    return kt_seed_mix(spec->seed, kt_hash_bytes(point->id, strlen(point->id)));
}

void kt_spec_free(kt_spec *spec)
{
    if (!spec)
        return;
    free(spec->path);
    free(spec->bytes);
    free(spec->description);
    for (size_t i = 0; i < spec->n_plugins; i++) {
        free(spec->plugins[i].path);
        free(spec->plugins[i].resolved);
    }
    free(spec->plugins);
    free(spec->models);
    free(spec->batch_sizes);
    free(spec->context_lengths);
    free(spec->phases);
    free(spec->roles);
    free(spec->exclude);
    free(spec->include);
    free(spec->candidates);
    kt_node_free(spec->root);
    if (spec->matrix)
        kt_matrix_free(spec->matrix);
    free(spec->matrix);
    kt_command_spec_free(spec->command);
    kt_service_spec_free(spec->service);
    free(spec);
}

/* Checks 'root' against the embedded experiment schema; returns the number of violations
 * (reported into 'diag'), or -1 when the embedded schema cannot be used. */
static int check_schema(const kt_node *root, const char *path, kt_diag *diag)
{
    cJSON *schema =
        cJSON_ParseWithLength(kt_embedded_experiment_schema, kt_embedded_experiment_schema_len);
    if (!schema)
        return kt_diag_error(diag, path, 0, 0, "internal error: the embedded schema is not JSON");
    int n = kt_schema_validate(schema, root, path, diag);
    if (n < 0)
        kt_diag_error(diag, path, 0, 0, "internal error: the embedded schema is unusable");
    cJSON_Delete(schema);
    return n;
}

int kt_spec_parse(kt_spec **out, const char *path, const char *bytes, size_t len,
                  const kt_spec_options *opts, kt_diag *diag)
{
    static const kt_spec_options no_options = {NULL, 0};
    int rc = -1;
    size_t errors_before = diag->n_errors;
    *out = NULL;
    if (!opts)
        opts = &no_options;
    if (len > KT_SPEC_MAX_BYTES)
        return kt_diag_error(diag, path, 0, 0, "spec is %zu bytes; the limit is %d", len,
                             KT_SPEC_MAX_BYTES);

    kt_spec *spec = calloc(1, sizeof(*spec));
    if (!spec)
        return kt_diag_error(diag, path, 0, 0, "out of memory");
    spec->path = strdup(path);
    spec->bytes = malloc(len + 1);
    if (!spec->path || !spec->bytes) {
        kt_diag_error(diag, path, 0, 0, "out of memory");
        goto done;
    }
    memcpy(spec->bytes, bytes, len);
    spec->bytes[len] = '\0';
    spec->len = len;

    if (kt_yaml_load(&spec->root, path, spec->bytes, len, diag) < 0 ||
        diag->n_errors > errors_before)
        goto done;
    if (check_schema(spec->root, path, diag) != 0 || diag->n_errors > errors_before)
        goto done;
    kt_spec_check_meaning(spec, opts, diag);
    if (diag->n_errors > errors_before)
        goto done;
    *out = spec;
    spec = NULL;
    rc = 0;
done:
    kt_spec_free(spec);
    kt_diag_sort(diag);
    return rc;
}

int kt_spec_load(kt_spec **out, const char *path, const kt_spec_options *opts, kt_diag *diag)
{
    int rc = -1;
    char *bytes = NULL;
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return kt_diag_error(diag, path, 0, 0, "cannot open: %s", strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0) {
        kt_diag_error(diag, path, 0, 0, "cannot stat: %s", strerror(errno));
        goto done;
    }
    if (!S_ISREG(st.st_mode)) {
        kt_diag_error(diag, path, 0, 0, "not a regular file");
        goto done;
    }
    if (st.st_size > KT_SPEC_MAX_BYTES) {
        kt_diag_error(diag, path, 0, 0, "spec is %lld bytes; the limit is %d",
                      (long long)st.st_size, KT_SPEC_MAX_BYTES);
        goto done;
    }
    /* Read one byte past the limit in case the file grew since fstat. */
    bytes = malloc(KT_SPEC_MAX_BYTES + 2);
    if (!bytes) {
        kt_diag_error(diag, path, 0, 0, "out of memory");
        goto done;
    }
    size_t len = fread(bytes, 1, KT_SPEC_MAX_BYTES + 1, f);
    if (ferror(f)) {
        kt_diag_error(diag, path, 0, 0, "cannot read: %s", strerror(errno));
        goto done;
    }
    rc = kt_spec_parse(out, path, bytes, len, opts, diag);
done:
    free(bytes);
    fclose(f);
    return rc;
}
