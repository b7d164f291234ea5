/* spec_plugins.c - the 'plugins:' key of a spec and the 'plugin:' field of an arm. */
#include "spec/spec_plugins.h"
#include "spec/yaml_tree.h"
#include "util/sha256.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

char *kt_spec_resolve_path(const char *spec_path, const char *written)
{
    char copy[PATH_MAX], out[PATH_MAX];
    if (written[0] == '/') {
        snprintf(out, sizeof(out), "%s", written);
    } else {
        snprintf(copy, sizeof(copy), "%s", spec_path);
        snprintf(out, sizeof(out), "%s/%s", dirname(copy), written);
    }
    return strdup(out);
}

/* sha256 and size of the file, read whole. */
static int hash_file(kt_spec_plugin *p)
{
    FILE *f = fopen(p->resolved, "rb");
    if (!f)
        return kt_error_code(KT_EIO, "cannot open: %s", strerror(errno));
    size_t cap = 1 << 20, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (len == cap) {
            char *grown = realloc(buf, cap * 2);
            if (!grown)
                break;
            buf = grown;
            cap *= 2;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0)
            break;
    }
    int bad = ferror(f) || !buf || len == cap;
    fclose(f);
    int rc = bad ? kt_error_code(KT_EIO, "cannot read the file") : KT_OK;
    if (rc == KT_OK)
        rc = kt_sha256_hex(p->sha256, buf, len);
    p->size = (long long)len;
    free(buf);
    return rc;
}

int kt_spec_load_plugins(kt_spec *spec, kt_diag *diag)
{
    const kt_node *list = kt_node_get(spec->root, "plugins");
    if (!list || list->kind != KT_NODE_SEQ || list->n == 0)
        return 0;
    size_t errors = diag->n_errors;
    spec->plugins = calloc(list->n, sizeof(*spec->plugins));
    if (!spec->plugins)
        return kt_diag_error(diag, spec->path, list->line, list->col, "plugins: out of memory");
    for (size_t i = 0; i < list->n; i++) {
        const kt_node *item = list->items[i];
        kt_spec_plugin *p = &spec->plugins[spec->n_plugins++];
        p->line = item->line;
        p->col = item->col;
        p->index = -1;
        p->path = strdup(kt_node_str(item) ? kt_node_str(item) : "");
        p->resolved = p->path ? kt_spec_resolve_path(spec->path, p->path) : NULL;
        if (!p->resolved) {
            kt_diag_error(diag, spec->path, p->line, p->col, "plugins[%zu]: out of memory", i);
            continue;
        }
        kt_error_clear();
        int index = kt_plugin_load(p->resolved);
        if (index >= 0 && hash_file(p) == KT_OK) {
            p->index = index;
            continue;
        }
        kt_diag_error(diag, spec->path, p->line, p->col, "plugins[%zu]: '%s': %s", i, p->path,
                      kt_error_last());
    }
    for (size_t i = 0; i < spec->n_plugins; i++)
        for (size_t j = 0; j < i; j++)
            if (spec->plugins[i].index >= 0 && spec->plugins[i].index == spec->plugins[j].index)
                kt_diag_error(diag, spec->path, spec->plugins[i].line, spec->plugins[i].col,
                              "plugins[%zu]: '%s' is the same file as plugins[%zu] '%s'", i,
                              spec->plugins[i].path, j, spec->plugins[j].path);
    return diag->n_errors == errors ? 0 : -1;
}

int kt_spec_uses_plugin(const kt_spec *spec, int plugin)
{
    return plugin == KT_PLUGIN_BUILTIN || kt_spec_plugin_of(spec, plugin) != NULL;
}

const kt_spec_plugin *kt_spec_plugin_of(const kt_spec *spec, int plugin)
{
    for (size_t i = 0; plugin >= 0 && i < spec->n_plugins; i++)
        if (spec->plugins[i].index == plugin)
            return &spec->plugins[i];
    return NULL;
}

const kt_spec_plugin *kt_spec_plugin_named(const kt_spec *spec, const char *written)
{
    for (size_t i = 0; i < spec->n_plugins; i++)
        if (strcmp(spec->plugins[i].path, written) == 0)
            return &spec->plugins[i];
    char *resolved = kt_spec_resolve_path(spec->path, written);
    struct stat a, b;
    const kt_spec_plugin *found = NULL;
    for (size_t i = 0; resolved && !found && i < spec->n_plugins; i++)
        if (stat(resolved, &a) == 0 && stat(spec->plugins[i].resolved, &b) == 0 &&
            a.st_dev == b.st_dev && a.st_ino == b.st_ino)
            found = &spec->plugins[i];
    free(resolved);
    return found;
}

const kt_variant *kt_spec_find_variant(const kt_spec *spec, const char *name,
                                       const kt_spec_plugin *from, kt_diag *diag, int *ambiguous)
{
    const char *op = spec->op->name, *backend = spec->backend;
    *ambiguous = 0;
    if (from)
        return from->index >= 0 ? kt_variant_find_in(op, backend, name, from->index) : NULL;
    const kt_variant *v = kt_variant_find_in(op, backend, name, KT_PLUGIN_BUILTIN);
    if (v)
        return v;
    const kt_spec_plugin *first = NULL;
    for (size_t i = 0; i < spec->n_plugins; i++) {
        const kt_spec_plugin *p = &spec->plugins[i];
        const kt_variant *here =
            p->index >= 0 ? kt_variant_find_in(op, backend, name, p->index) : NULL;
        if (!here)
            continue;
        if (!first) {
            first = p;
            v = here;
            continue;
        }
        *ambiguous = 1;
        kt_diag_error(diag, spec->path, p->line, p->col,
                      "plugins[%zu]: '%s': variant '%s' of op '%s' on %s is also provided by "
                      "'%s'; an arm that uses it must name its plugin (plugin: %s)",
                      i, p->path, name, op, backend, first->path, p->path);
    }
    return *ambiguous ? NULL : v;
}
