/* writers.c - the one table of output formats, and writing a row to a stream or a file; the
 * CI files that run and show write on request (--junit FILE, --markdown FILE), and the HTML
 * report run --report leaves in the archive. */
#include "report/writers.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static const kt_writer table[] = {
#define KT_WRITER_ROW(name, writer, extension, option, step_summary)                               \
    {name, extension, option, step_summary, kt_write_##writer},
    KT_WRITER_TABLE(KT_WRITER_ROW)
#undef KT_WRITER_ROW
};
#define N_WRITERS (sizeof(table) / sizeof(table[0]))
_Static_assert(N_WRITERS <= KT_WRITERS_MAX, "kt_ci_files holds a path per row");

const kt_writer *kt_writer_find(const char *name)
{
    for (size_t i = 0; i < N_WRITERS; i++)
        if (strcmp(table[i].name, name) == 0)
            return &table[i];
    return NULL;
}

int kt_write(const char *name, FILE *out, const kt_output *o)
{
    const kt_writer *w = kt_writer_find(name);
    if (!w)
        return kt_error_set("no output format '%s'", name);
    return w->write(out, o);
}

int kt_write_file(const char *name, const char *path, const kt_output *o, int append)
{
    FILE *f = fopen(path, append ? "a" : "w");
    if (!f)
        return kt_error_set("cannot write '%s': %m", path);
    int rc = kt_write(name, f, o);
    if (fclose(f) != 0 && rc == 0)
        return kt_error_set("cannot write '%s': %m", path);
    return rc;
}

int kt_report_write_archive(const char *dir)
{
    kt_report_input in;
    char path[PATH_MAX + 16];
    int rc = kt_report_load(&in, dir);
    snprintf(path, sizeof(path), "%s/report.%s", dir, kt_writer_find("html")->extension);
    if (rc == 0)
        rc = kt_write_file("html", path, &(kt_output){.archives = &in, .n_archives = 1}, 0);
    kt_report_input_free(&in);
    return rc;
}

int kt_ci_files_ask(kt_ci_files *ci, const char *option, const char *path)
{
    for (size_t i = 0; i < N_WRITERS; i++)
        if (table[i].option && strcmp(table[i].option, option) == 0) {
            ci->path[i] = path;
            return 1;
        }
    return 0;
}

int kt_ci_files_write(const kt_ci_files *ci, const char *archive)
{
    size_t asked = 0;
    for (size_t i = 0; i < N_WRITERS; i++)
        asked += ci->path[i] != NULL;
    if (!asked)
        return 0;
    kt_report_input in;
    int rc = kt_report_load(&in, archive);
    kt_output o = {.archives = &in, .n_archives = 1};
    for (size_t i = 0; rc == 0 && i < N_WRITERS; i++)
        if (ci->path[i])
            rc = kt_write_file(table[i].name, ci->path[i], &o, 0);
    const char *summary = getenv("GITHUB_STEP_SUMMARY");
    for (size_t i = 0; rc == 0 && summary && summary[0] && i < N_WRITERS; i++)
        if (ci->path[i] && table[i].step_summary)
            rc = kt_write_file(table[i].name, summary, &o, 1);
    kt_report_input_free(&in);
    return rc;
}
