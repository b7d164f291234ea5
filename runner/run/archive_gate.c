/* archive_gate.c - an archive checked before a command reads it (see archive_gate.h). */
#include "run/archive_gate.h"

#include "run/exit_code.h"

#include <stdio.h>

int kt_archive_gate(kt_archive *a, const char *path, int force)
{
    if (kt_archive_check(a, path) < 0) {
        fprintf(stderr, "error: %s\n", kt_error_last());
        return KT_EXIT_DATAERR;
    }
    if (a->problems.n == 0)
        return 0;
    const char *level = force ? "warning" : "error";
    for (size_t i = 0; i < a->problems.n; i++)
        fprintf(stderr, "%s: %s: %s\n", level, a->dir, a->problems.lines[i]);
    fprintf(stderr, "%s: '%s' fails verification (%zu problem%s)%s\n", level, a->dir, a->problems.n,
            a->problems.n == 1 ? "" : "s",
            force ? "; read anyway (--force), with the verdicts its pairs give"
                  : "; --force reads it anyway, with the verdicts its pairs give");
    return force ? 0 : KT_EXIT_DATAERR;
}
