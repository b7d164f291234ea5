/* pymodule_spec.c - reads op pymodule's keys (pymodule_spec.h): problem, globals, framework,
 * and the class and file of each arm, with file:line:col errors for a file that cannot be read
 * or a key that does not fit. */
#include "spec/pymodule_spec.h"

#include "spec/yaml_tree.h"

#include <cjson/cJSON.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const kt_pymodule_keys[] = {"problem", "globals", "framework", NULL};
const char *const kt_pymodule_arm_keys[] = {"class", "file", NULL};

typedef struct pctx {
    const char *path;
    char dir[4096];
    kt_diag *diag;
} pctx;

/* Every message goes to the diagnostics at the node's place; errors are counted there. */
#define report(c, at, ...)                                                                         \
    kt_diag_error((c)->diag, (c)->path, (at) ? (at)->line : 0, (at) ? (at)->col : 0, __VA_ARGS__)

/* 'rel' against the spec's folder, checked readable; NULL (reported at 'at') when it is not. */
static char *readable(pctx *c, const kt_node *at, const char *key, const char *rel)
{
    char *out = NULL;
    if (rel[0] == '/' ? !(out = strdup(rel)) : asprintf(&out, "%s/%s", c->dir, rel) < 0) {
        report(c, at, "out of memory");
        return NULL;
    }
    if (access(out, R_OK) != 0) {
        report(c, at, "%s: cannot read '%s' (resolved against the spec's folder: %s)", key, rel,
               out);
        free(out);
        return NULL;
    }
    return out;
}

static void read_arm(pctx *c, const kt_node *node, const char *where, int baseline,
                     const char *problem, kt_pymodule_arm *arm)
{
    if (!node)
        return;
    arm->line = node->line;
    arm->col = node->col;
    const kt_node *cls = kt_node_get(node, "class"), *file = kt_node_get(node, "file");
    snprintf(arm->cls, sizeof(arm->cls), "%s",
             kt_node_str(cls) ? kt_node_str(cls)
             : baseline       ? "Model"
                              : "ModelNew");
    if (file && kt_node_str(file)) {
        char key[64];
        snprintf(key, sizeof(key), "%s.file", where);
        arm->file = readable(c, file, key, kt_node_str(file));
    } else if (baseline || problem) {
        arm->file = problem ? strdup(problem) : NULL; /* the problem file's own class */
    }
    static const char *const other[] = {"variant", "plugin", "run", "python", NULL};
    for (int i = 0; other[i]; i++)
        if (kt_node_get(node, other[i]))
            report(c, node, "%s: op pymodule arms are a class ('class', 'file'), not '%s'", where,
                   other[i]);
}

int kt_pymodule_spec_parse(kt_pymodule_spec **out, const kt_node *root, const char *spec_path,
                           kt_diag *diag)
{
    pctx c = {0};
    size_t errors = diag->n_errors;
    c.path = spec_path;
    c.diag = diag;
    char *copy = strdup(spec_path), *real = copy ? realpath(dirname(copy), NULL) : NULL;
    snprintf(c.dir, sizeof(c.dir), "%s", real ? real : ".");
    free(real);
    free(copy);
    *out = NULL;
    kt_pymodule_spec *p = calloc(1, sizeof(*p));
    if (!p)
        return kt_diag_error(diag, spec_path, 0, 0, "out of memory");
    const kt_node *problem = kt_node_get(root, "problem");
    if (!problem || !kt_node_str(problem))
        report(&c, root, "op pymodule needs 'problem': the problem file (KernelBench's layout)");
    else
        p->problem = readable(&c, problem, "problem", kt_node_str(problem));
    const kt_node *globals = kt_node_get(root, "globals");
    cJSON *g = globals ? kt_node_to_json(globals) : cJSON_CreateObject();
    p->globals_json = g ? cJSON_PrintUnformatted(g) : NULL;
    cJSON_Delete(g);
    const char *fw = kt_node_str(kt_node_get(root, "framework"));
    snprintf(p->framework, sizeof(p->framework), "%s", fw ? fw : "torch");
    read_arm(&c, kt_node_get(root, "baseline"), "baseline", 1, p->problem, &p->baseline);
    const kt_node *list = kt_node_get(root, "candidates");
    size_t n = list && list->kind == KT_NODE_SEQ ? list->n : 0;
    p->candidates = calloc(n ? n : 1, sizeof(*p->candidates));
    for (size_t i = 0; p->candidates && i < n; i++) {
        char where[64];
        snprintf(where, sizeof(where), "candidates[%zu]", i);
        read_arm(&c, list->items[i], where, 0, NULL, &p->candidates[i]);
        if (!p->candidates[i].file && !kt_node_get(list->items[i], "file"))
            report(&c, list->items[i], "%s: a pymodule candidate needs 'file': its solution file",
                   where);
        p->n_candidates++;
    }
    if (diag->n_errors > errors || !p->globals_json || !p->candidates) {
        kt_pymodule_spec_free(p);
        return -1;
    }
    *out = p;
    return 0;
}

void kt_pymodule_spec_free(kt_pymodule_spec *p)
{
    if (!p)
        return;
    free(p->problem);
    free(p->globals_json);
    free(p->baseline.file);
    for (size_t i = 0; i < p->n_candidates; i++)
        free(p->candidates[i].file);
    free(p->candidates);
    free(p);
}
