/* command_spec.h - the parts of a spec only op 'command' has: tasks, each arm's argv lists
 * (run, setup, teardown), env, cwd and timeout, what a call measures and how outputs are
 * compared. Argv items are templates: '{name}' placeholders are checked when the spec is
 * loaded (an unknown name is an error at its line:col) and substituted per call. */
#ifndef KT_COMMAND_SPEC_H
#define KT_COMMAND_SPEC_H

#include "util/diag.h"
#include "util/limits.h"
#include "kernel.h"

#include <stddef.h>

struct kt_node;

#define KT_COMMAND_DEFAULT_TIMEOUT_S 60.0
#define KT_COMMAND_MAX_TASKS         64

typedef enum {
    KT_OUTPUT_NONE = 0,
    KT_OUTPUT_F32,
    KT_OUTPUT_F64,
    KT_OUTPUT_JSON_NUMBERS,
    KT_OUTPUT_TEXT
} kt_output_format;

typedef struct kt_argv {
    char **items; /* templates, owned */
    size_t n;
} kt_argv;

typedef struct kt_command_arm {
    kt_argv run, setup, teardown; /* setup/teardown: n == 0 when absent */
    kt_argv env;                  /* "NAME=value" templates */
    char *cwd;                    /* resolved against the spec's folder, owned */
    double timeout_s;
} kt_command_arm;

typedef struct kt_command_task {
    char name[KT_NAME_MAX];
    char *input;  /* resolved path, NULL when the task has none */
    char *expect; /* resolved path, NULL when the task has none */
} kt_command_task;

typedef struct kt_command_spec {
    kt_command_task *tasks; /* at least one: a spec without 'tasks' has one named "default" */
    size_t n_tasks;
    kt_command_arm baseline;
    kt_command_arm *candidates; /* in the order of spec->candidates */
    size_t n_candidates;
    char metric[64]; /* "wall" or a name the command reports */
    int higher;      /* measure.better: higher */
    kt_output_format format;
    int compare_expect; /* outputs.compare_to: expect */
    /* seconds of one call of each arm (0 baseline, k+1 candidate k), measured by one
     * calibration call (kt_command_calibrate_spec); 0 until then */
    double call_seconds[1 + KT_LIMIT_CANDIDATES];
    /* an arm whose calibration call (or its setup) failed, and the seconds that failure took:
     * a failing arm stops at its first failure, so a point pays that once (a failed baseline
     * fails the point) */
    int call_failed[1 + KT_LIMIT_CANDIDATES];
    double fail_seconds[1 + KT_LIMIT_CANDIDATES];
} kt_command_spec;

/* Reads the command parts of the document 'root' of the spec at 'spec_path'; reports every
 * problem into 'diag' at its line:col. Returns 0 with *out set, or -1. */
int kt_command_spec_parse(kt_command_spec **out, const struct kt_node *root, const char *spec_path,
                          kt_diag *diag);
void kt_command_spec_free(kt_command_spec *c);

struct cJSON;
/* The command parts as result.json's spec.parsed.command: task names, metric, better, output
 * format (null without outputs) and compare_to. */
struct cJSON *kt_command_spec_to_json(const kt_command_spec *c);

/* The values of a call's placeholders; NULL members are unknown here ("{input}" of a task
 * without an input expands to an error). */
typedef struct kt_command_vars {
    const char *values[16]; /* indexed like kt_command_placeholder_names */
} kt_command_vars;

/* The placeholder names, NULL-terminated: batch_size, context_length, dtype, task, ... */
extern const char *const kt_command_placeholder_names[];
/* Index of 'name' (length 'len') in kt_command_placeholder_names, or -1. */
int kt_command_placeholder(const char *name, size_t len);
/* Sets the value of placeholder 'name' in 'vars'. */
void kt_command_vars_set(kt_command_vars *vars, const char *name, const char *value);

/* Substitutes every '{name}' of 'tmpl' into a new string (*out, free it). Text between
 * braces that is no placeholder name (a JSON argument) is kept as written. Returns 0, or
 * KT_EINVAL when a placeholder has no value here. */
int kt_command_expand(char **out, const char *tmpl, const kt_command_vars *vars);

#endif
