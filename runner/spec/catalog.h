/* catalog.h - the model catalog (experiments/models.yaml, embedded in the binary). */
#ifndef KT_CATALOG_H
#define KT_CATALOG_H

#include "util/diag.h"
#include "kernel.h"

#include <stddef.h>

typedef struct kt_catalog {
    kt_model *models;
    size_t n;
} kt_catalog;

/* Loads the embedded catalog (validated against schemas/models.schema.json). */
int kt_catalog_load(kt_catalog *out, kt_diag *diag);
/* Parses a catalog file's text (same format and schema); 'file' names it in messages. */
int kt_catalog_parse(kt_catalog *out, const char *file, const char *text, size_t len,
                     kt_diag *diag);
void kt_catalog_free(kt_catalog *c);
const kt_model *kt_catalog_find(const kt_catalog *c, const char *name);

#endif
