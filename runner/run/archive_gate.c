/* archive_gate.c - an archive checked before a command reads it (see archive_gate.h). */
#include "run/archive_gate.h"

#include "run/exit_code.h"

#include <stdio.h>

int kt_archive_gate(kt_archive *a, const char *path, int force)
{
    if (kt_archive_check(a, path) < 0) {
        fprintf(stderr, "error: '%s': %s\n", path, kt_error_last());
        return KT_EXIT_DATAERR;
    }
    kt_problems_print(stderr, a->dir, &a->problems, force);
    return a->problems.n && !force ? KT_EXIT_DATAERR : 0;
}
