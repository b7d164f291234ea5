/* spec_meaning.h - the third validation stage: a schema-valid spec against the registry,
 * the model catalog, the matrix and the budget (private to spec.c). */
#ifndef KT_SPEC_MEANING_H
#define KT_SPEC_MEANING_H

#include "util/diag.h"
#include "spec/spec.h"

/* Fills 'spec' from spec->root (already valid against the experiment schema) and reports
 * every problem of meaning into 'diag'. Returns 0 when it added no error, -1 otherwise. */
int kt_spec_check_meaning(kt_spec *spec, const kt_spec_options *opts, kt_diag *diag);

#endif
