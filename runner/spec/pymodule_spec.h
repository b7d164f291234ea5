/* pymodule_spec.h - the parts of a spec only op 'pymodule' has: the KernelBench-layout problem
 * file, the module-level names set before its get_inputs()/get_init_inputs() run, the
 * framework, and each arm's class and file (the baseline's file is the problem file). Paths are
 * resolved against the spec's folder; a file that cannot be read is an error at its key's
 * line:col. Importing the files is left to the arm kind (runner/arm/pymodule/). */
#ifndef KT_PYMODULE_SPEC_H
#define KT_PYMODULE_SPEC_H

#include "util/diag.h"

#include <stddef.h>

struct kt_node;

typedef struct kt_pymodule_arm {
    char *file;    /* resolved path of the file holding the class (owned) */
    char cls[64];  /* the class: Model, ModelNew, ... */
    int line, col; /* the arm's place */
} kt_pymodule_arm;

typedef struct kt_pymodule_spec {
    char *problem;      /* resolved path (owned) */
    char *globals_json; /* {"name": value, ...} as JSON text (owned), "{}" without 'globals' */
    char framework[16]; /* "torch" */
    kt_pymodule_arm baseline;
    kt_pymodule_arm *candidates; /* in the order of spec->candidates */
    size_t n_candidates;
} kt_pymodule_spec;

/* Reads the pymodule parts of the document 'root' of the spec at 'spec_path'; reports every
 * problem into 'diag' at its line:col. Returns 0 with *out set, or -1. */
int kt_pymodule_spec_parse(kt_pymodule_spec **out, const struct kt_node *root,
                           const char *spec_path, kt_diag *diag);
void kt_pymodule_spec_free(kt_pymodule_spec *p);

/* The keys only op pymodule has, top-level and per arm (NULL-terminated), for the check that
 * other ops do not use them. */
extern const char *const kt_pymodule_keys[];
extern const char *const kt_pymodule_arm_keys[];

#endif
