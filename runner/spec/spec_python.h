/* spec_python.h - an arm given as 'python: FILE.py:FUNCTION' (with 'framework: torch|numpy'):
 * a Python function as the arm's variant (docs/python.md). */
#ifndef KT_SPEC_PYTHON_H
#define KT_SPEC_PYTHON_H

#include "python/py_variant.h"
#include "spec/spec.h"
#include "util/diag.h"

struct kt_node;

/* Resolves the arm declared at 'node' (the baseline or a candidate map, reported under 'path')
 * whose 'python' key is set: the file relative to the spec's folder, imported and its function
 * tried in a throwaway child. Every problem is an error at its key's line and column (a build
 * without Python, a backend or dtype the framework cannot take, a file that does not import, a
 * missing function, a signature that does not take (inputs, outputs, problem)). Sets
 * arm->variant and returns 0, or returns -1 with the errors in 'diag'. */
int kt_spec_python_arm(kt_spec *spec, const struct kt_node *node, const char *path, kt_arm *arm,
                       kt_diag *diag);

#endif
