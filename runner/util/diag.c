/* diag.c - the list of problems a command reports. */
#include "util/diag.h"
#include "util/sanitize.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void kt_diag_init(kt_diag *d)
{
    memset(d, 0, sizeof(*d));
}

void kt_diag_free(kt_diag *d)
{
    for (size_t i = 0; i < d->n; i++) {
        free(d->items[i].file);
        free(d->items[i].message);
    }
    free(d->items);
    memset(d, 0, sizeof(*d));
}

static int diag_vadd(kt_diag *d, kt_severity sev, const char *file, int line, int col,
                     const char *fmt, va_list ap)
{
    int rc = sev == KT_DIAG_ERROR ? -1 : 0;
    if (sev == KT_DIAG_ERROR)
        d->n_errors++;
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 16;
        kt_diag_item *items = realloc(d->items, cap * sizeof(*items));
        if (!items)
            return rc; /* counted, not kept: the caller still sees the failure */
        d->items = items;
        d->cap = cap;
    }
    char *raw = NULL;
    if (vasprintf(&raw, fmt, ap) < 0)
        return rc;
    /* quoted values from a spec may hold control characters: never print them raw */
    char *message = kt_sanitize_dup(raw);
    free(raw);
    if (!message)
        return rc;
    kt_diag_item *it = &d->items[d->n++];
    it->severity = sev;
    it->file = file ? kt_sanitize_dup(file) : NULL;
    it->line = line;
    it->col = col;
    it->message = message;
    return rc;
}

int kt_diag_add(kt_diag *d, kt_severity sev, const char *file, int line, int col, const char *fmt,
                ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = diag_vadd(d, sev, file, line, col, fmt, ap);
    va_end(ap);
    return rc;
}

int kt_diag_error(kt_diag *d, const char *file, int line, int col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = diag_vadd(d, KT_DIAG_ERROR, file, line, col, fmt, ap);
    va_end(ap);
    return rc;
}

int kt_diag_warning(kt_diag *d, const char *file, int line, int col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = diag_vadd(d, KT_DIAG_WARNING, file, line, col, fmt, ap);
    va_end(ap);
    return rc;
}

void kt_diag_print(const kt_diag *d, FILE *out)
{
    static const char *const prefix[] = {"", "warning: ", "note: "};
    for (size_t i = 0; i < d->n; i++) {
        const kt_diag_item *it = &d->items[i];
        if (it->file && it->line > 0)
            fprintf(out, "%s:%d:%d: ", it->file, it->line, it->col);
        else if (it->file)
            fprintf(out, "%s: ", it->file);
        fprintf(out, "%s%s\n", prefix[it->severity], it->message);
    }
}

static int item_cmp(const void *a, const void *b)
{
    const kt_diag_item *x = a, *y = b;
    int c = strcmp(x->file ? x->file : "", y->file ? y->file : "");
    if (c)
        return c;
    if (x->line != y->line)
        return x->line < y->line ? -1 : 1;
    if (x->col != y->col)
        return x->col < y->col ? -1 : 1;
    return 0;
}

/* Insertion sort: stable, and diagnostics lists are short. */
void kt_diag_sort(kt_diag *d)
{
    for (size_t i = 1; i < d->n; i++) {
        kt_diag_item key = d->items[i];
        size_t j = i;
        while (j > 0 && item_cmp(&d->items[j - 1], &key) > 0) {
            d->items[j] = d->items[j - 1];
            j--;
        }
        d->items[j] = key;
    }
}
