/* diag.h - diagnostics: every problem found, with its place, carried up to the command,
 * which alone prints them and picks the exit code. */
#ifndef KT_DIAG_H
#define KT_DIAG_H

#include <stddef.h>
#include <stdio.h>

typedef enum { KT_DIAG_ERROR = 0, KT_DIAG_WARNING, KT_DIAG_NOTE } kt_severity;

typedef struct kt_diag_item {
    kt_severity severity;
    char *file;    /* may be NULL */
    int line, col; /* 1-based; 0 when unknown */
    char *message; /* git style: lower-case, no final period, the subject quoted */
} kt_diag_item;

typedef struct kt_diag {
    kt_diag_item *items;
    size_t n, cap;
    size_t n_errors;
} kt_diag;

void kt_diag_init(kt_diag *d);
void kt_diag_free(kt_diag *d);
/* Appends one item; returns -1 for errors (so 'return kt_diag_add(...)' propagates), 0 else. */
int kt_diag_add(kt_diag *d, kt_severity sev, const char *file, int line, int col, const char *fmt,
                ...) __attribute__((format(printf, 6, 7)));
int kt_diag_error(kt_diag *d, const char *file, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
int kt_diag_warning(kt_diag *d, const char *file, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Prints every item as "file:line:col: message" (errors) or "file:line:col: warning: message". */
void kt_diag_print(const kt_diag *d, FILE *out);
/* Sorts items by file, then line and column, keeping the order of equal places. */
void kt_diag_sort(kt_diag *d);

#endif
