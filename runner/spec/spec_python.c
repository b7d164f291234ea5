/* spec_python.c - an arm's 'python: FILE.py:FUNCTION' and 'framework:' keys: checked at their
 * file:line:col (the file imported and the function's signature tried in a throwaway child,
 * as plugins are probed), then made a variant of the spec's op (python/py_variant.h). */
#include "spec/spec_python.h"
#include "spec/spec_plugins.h"
#include "spec/yaml_tree.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void report(kt_spec *spec, kt_diag *diag, const kt_node *at, const char *path,
                   const char *key, const char *fmt, const char *why)
{
    char msg[900];
    snprintf(msg, sizeof(msg), fmt, why);
    kt_diag_error(diag, spec->path, at->line, at->col, "%s.%s: %s", path, key, msg);
}

/* Why arms on this spec cannot be Python at all, or NULL. */
static const char *refusal(const kt_spec *spec, kt_py_framework fw)
{
    if (!kt_py_built())
        return kt_py_missing_reason();
    if (strcmp(spec->backend, "cpu") != 0 && strcmp(spec->backend, "cuda") != 0)
        return "Python arms run on the cpu and cuda backends only";
    if (strcmp(spec->backend, "cuda") == 0 && fw == KT_PY_NUMPY)
        return "numpy cannot reach the cuda backend's device memory (use framework: torch)";
    if (spec->dtype == KT_DTYPE_BF16 && fw == KT_PY_NUMPY)
        return "numpy has no bfloat16 arrays (dtype: bf16; use framework: torch)";
    return NULL;
}

int kt_spec_python_arm(kt_spec *spec, const kt_node *node, const char *path, kt_arm *arm,
                       kt_diag *diag)
{
    const kt_node *pnode = kt_node_get(node, "python"), *fnode = kt_node_get(node, "framework");
    const kt_node *other = kt_node_get(node, "variant");
    const char *written = kt_node_str(pnode);
    size_t errors = diag->n_errors;
    kt_py_framework fw = KT_PY_NUMPY;
    if (!other)
        other = kt_node_get(node, "plugin");
    if (!other)
        other = kt_node_get(node, "params");
    if (other)
        report(spec, diag, other, path, "python",
               "a Python arm takes no variant, plugin or params (%s)",
               "the function is the arm; give it another arm for another setting");
    if (fnode && kt_py_framework_parse(&fw, kt_node_str(fnode) ? kt_node_str(fnode) : "") < 0)
        report(spec, diag, fnode, path, "framework", "%s", kt_error_last());
    const char *colon = written ? strrchr(written, ':') : NULL;
    if (!colon || colon == written || !colon[1])
        report(spec, diag, pnode, path, "python", "'%s' is not FILE.py:FUNCTION",
               written ? written : "");
    if (diag->n_errors != errors)
        return -1;
    const char *why = refusal(spec, fw);
    if (why) {
        report(spec, diag, fnode && !kt_py_built() ? pnode : (fnode ? fnode : pnode), path,
               fnode && kt_py_built() ? "framework" : "python", "%s", why);
        return -1;
    }
    char file[1024], function[128];
    snprintf(file, sizeof(file), "%.*s", (int)(colon - written), written);
    snprintf(function, sizeof(function), "%s", colon + 1);
    char *resolved = kt_spec_resolve_path(spec->path, file);
    struct stat st;
    int err = 0;
    if (!resolved) {
        report(spec, diag, pnode, path, "python", "%s", "out of memory");
        return -1;
    }
    if (stat(resolved, &st) != 0 || !S_ISREG(st.st_mode)) {
        char msg[1200];
        snprintf(msg, sizeof(msg), "cannot open '%s': %s", file,
                 errno && !S_ISDIR(st.st_mode) ? strerror(errno) : "not a regular file");
        report(spec, diag, pnode, path, "python", "%s", msg);
        err = -1;
    }
    kt_py_def def = {resolved, NULL, NULL, function, fw};
    if (err == 0 && kt_py_probe(&def) < 0) {
        char msg[1200];
        snprintf(msg, sizeof(msg), "'%s': %s", written, kt_error_last());
        report(spec, diag, pnode, path, "python", "%s", msg);
        err = -1;
    }
    if (err == 0) {
        arm->variant = kt_py_variant_make(spec->op->name, spec->backend, written, &def);
        if (!arm->variant) {
            report(spec, diag, pnode, path, "python", "%s", kt_error_last());
            err = -1;
        }
    }
    free(resolved);
    return err;
}
