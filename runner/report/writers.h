/* writers.h - every output format in one table (writers.c): its name, the extension of its
 * file or a stream, the option of run and show that names its file, and its writer, one file
 * each. 'run', 'show', 'merge', 'report' and 'history' write through the table; a new format
 * is one new file (its writer) and one row of KT_WRITER_TABLE below (a CI format that run and
 * show write on request also needs its option's rows in cli/options_table.c). */
#ifndef KT_WRITERS_H
#define KT_WRITERS_H

#include "report/history.h"
#include "report/report.h"
#include "report/summary.h"

#include <stdio.h>

/* What the writers read: each reads the fields its comment names; the rest may be zero. */
typedef struct kt_output {
    /* text, json: one run's result and the facts that bound it */
    const kt_run_result *run;
    const kt_summary_facts *facts;
    const char *dir;   /* json: the archive folder; text: where command outputs are kept */
    const cJSON *doc;  /* state; text: its result.json, for the command tasks (NULL: none) */
    int details;       /* text: the usage lines, and with 'doc' the command tasks */
    int virtual_clock; /* text: the medians are the sim backend's virtual time */
    int exit_code;     /* json: the exit code recorded, or -1 */
    int decided;       /* json: 0 for a run that never reached a decision */
    /* html (all of them), junit and markdown (the first): archives of one experiment */
    const kt_report_input *archives;
    size_t n_archives;
    /* history, history-json, history-html */
    const kt_history *history;
    const char *experiment;
} kt_output;

typedef struct kt_writer {
    const char *name;      /* "junit" */
    const char *extension; /* of the file it is written to ("xml"), NULL: printed to a stream */
    const char *option;    /* the option of run and show naming its file ("--junit"), or NULL */
    int step_summary;      /* also appended to $GITHUB_STEP_SUMMARY when that is set */
    int (*write)(FILE *out, const kt_output *o); /* 0, or -1 with the message set */
} kt_writer;

/* Every output format, once: X(name, writer, extension of its file or NULL for a stream,
 * the option of run and show naming its file or NULL, also appended to $GITHUB_STEP_SUMMARY).
 * The writer is kt_write_<writer>, in the file the comment names. */
#define KT_WRITER_TABLE(X)                                                                         \
    X("text", text, NULL, NULL, 0)                   /* summary.c, usage_lines.c */                \
    X("json", json, NULL, NULL, 0)                   /* show_json.c: show --json */                \
    X("state", state, NULL, NULL, 0)                 /* show_state.c: show's state lines */        \
    X("junit", junit, "xml", "--junit", 0)           /* junit.c */                                 \
    X("markdown", markdown, "md", "--markdown", 1)   /* markdown.c */                              \
    X("csv", csv, "csv", "--csv", 0)                 /* csv.c: a row per point and candidate */    \
    X("html", html, "html", NULL, 0)                 /* html_report.c, html_plots.c: report */     \
    X("history", history, NULL, NULL, 0)             /* history_text.c */                          \
    X("history-json", history_json, NULL, NULL, 0)   /* history_json.c */                          \
    X("history-html", history_html, "html", NULL, 0) /* history_html.c */

#define KT_DECLARE_WRITER(name, writer, extension, option, step_summary)                           \
    int kt_write_##writer(FILE *out, const kt_output *o);
KT_WRITER_TABLE(KT_DECLARE_WRITER)
#undef KT_DECLARE_WRITER

/* What bounds a run's verdict, read from its result.json (show_state.c). */
typedef struct kt_run_state {
    char status[32];
    int exit_code; /* -1: no decision recorded */
    int quick, quick_max;
    int shard_index, shard_count;
    size_t not_run;
    char verdict[16]; /* decision.verdict, "" without a decision */
} kt_run_state;
void kt_run_state_read(kt_run_state *state, const cJSON *doc);

/* The row named 'name', or NULL. */
const kt_writer *kt_writer_find(const char *name);

/* Writes format 'name' to 'out'. Returns 0 or -1 with the message set. */
int kt_write(const char *name, FILE *out, const kt_output *o);

/* Writes format 'name' into the file 'path' (at its end when 'append'). Returns 0 or -1 with
 * the message set. */
int kt_write_file(const char *name, const char *path, const kt_output *o, int append);

/* Writes DIR/report.html (the html row's extension) of the archive in 'dir' (run --report).
 * Returns 0 or -1 with the message set. */
int kt_report_write_archive(const char *dir);

/* The files CI reads, as run and show were asked for them (--junit FILE, --markdown FILE):
 * per row of the table, its file or NULL. */
#define KT_WRITERS_MAX 16
typedef struct kt_ci_files {
    const char *path[KT_WRITERS_MAX];
} kt_ci_files;

/* When 'option' ("--junit") names a row's file: keeps 'path' for it and returns 1; else 0. */
int kt_ci_files_ask(kt_ci_files *ci, const char *option, const char *path);

/* Writes each file asked for from the archive at 'archive' (its folder or result.json), then
 * appends the step-summary ones to $GITHUB_STEP_SUMMARY when that is set. Nothing asked for:
 * 0 without reading the archive. Returns 0 or -1 with the message set. */
int kt_ci_files_write(const kt_ci_files *ci, const char *archive);

#endif
