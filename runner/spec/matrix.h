/* matrix.h - the experiment matrix: axes product, then exclude, then include. */
#ifndef KT_MATRIX_H
#define KT_MATRIX_H

#include "util/diag.h"
#include "util/limits.h"
#include "spec/spec.h"

#define KT_MATRIX_MAX_POINTS KT_LIMIT_POINTS

typedef struct kt_matrix {
    kt_point *points; /* stable order: model, phase, role, batch, context (axes the op uses) */
    size_t n;
} kt_matrix;

/* Expands 'spec' into points, each with its readable id. Warns (into 'diag') about an
 * exclude or include entry that matches nothing; errors when the matrix is empty or has
 * more than KT_MATRIX_MAX_POINTS points. */
int kt_matrix_expand(kt_matrix *out, const kt_spec *spec, kt_diag *diag);
void kt_matrix_free(kt_matrix *m);

#endif
