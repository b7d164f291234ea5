/* run.h - the run engine behind 'ktrial run': from checked options to an archived run. It loads
 * and checks the spec, takes the run folder (new, or --resume's), plans the points of its
 * shard, measures them one by one under the budget and the signals, archives each as it
 * finishes, and writes result.json. What it prints is diagnostics on stderr (errors, warnings,
 * progress); the summary, the reports and the exit code are the command's.
 *
 * The engine's jobs live in one file each: signals.c, folder.c (the folder and its lock),
 * resume.c, checks.c (git, backend, memory, load), budget.c (the plan), progress.c, points.c
 * (the point loop), state.c (facts read from this struct) and run.c (the order of the steps);
 * result.json is built by result/result_doc.c. Beside the run: merge.c (shards into one
 * run), slurm_jobs.c (a sharded run's Slurm jobs) and exit_code.c. */
#ifndef KT_RUN_RUN_H
#define KT_RUN_RUN_H

#include "archive/provenance.h"
#include "result/samples_csv.h"
#include "decide/aggregate.h"
#include "measure/trial.h"
#include "report/writers.h"
#include "spec/matrix.h"
#include "spec/plan.h"
#include "spec/spec.h"
#include "util/diag.h"
#include "util/json.h"

#include <limits.h>
#include <signal.h>
#include <time.h>

typedef struct kt_run_options {
    const char *spec_path;
    const char *out_dir;
    const char *backend;
    const char *resume_dir;
    int quick, require_clean, force, json, report, no_profile, profile;
    int relock;                   /* --relock: a spec that left its lock runs, locked again */
    kt_ci_files ci;               /* --junit FILE, --markdown FILE: written at the end */
    int shard_index, shard_count; /* 1-based index of count */
} kt_run_options;

/* A run, as the engine leaves it for the command to report. */
typedef struct kt_run {
    kt_run_options opt;
    kt_spec *spec;
    const kt_matrix *matrix; /* the spec's (expanded once, when it loaded) */
    kt_git_state git;
    char dir[PATH_MAX];
    char spec_sha[65];
    char run_id[KT_RUN_ID_LEN]; /* new, or the resumed archive's */
    time_t started;
    kt_run_result run;
    kt_point_result *done; /* --resume: the points already archived, reused by id */
    size_t n_done;
    int interrupted;
    int argc;
    char **argv;
    const char *status; /* what result.json says at the end: complete, interrupted, over_budget */
    /* progress */
    int tty;
    size_t point_index, n_todo;
    const char *current_id;
    double start_s;
    /* the plan and the budget */
    kt_plan plan;
    double estimate_s;      /* the plan's seconds for the points this run started with */
    double left_estimate_s; /* re-estimated after each point */
    double elapsed_s;       /* of the points loop */
    int over_budget;        /* budget.max_minutes passed: no new point was started */
    size_t not_run;
    int resumed_other_code; /* --resume --force across another commit or work tree */
    cJSON *sessions;        /* --resume: provenance.run.sessions before this one */
    cJSON *specs;           /* --resume: the specs the points were measured under, or NULL */
    cJSON *limits;          /* provenance.limits (run/limits.h) */
    size_t n_archived;      /* points this session added to points.jsonl */
    /* the signal handlers before the run's, put back by kt_run_free */
    struct sigaction old_int, old_term;
    int signals_set;
} kt_run;

/* Runs the spec as 'opt' says ('argc', 'argv': the command line, recorded in provenance).
 * Returns 0 when the run ended, complete, interrupted or over budget, with result.json written
 * (st->status says which); else the exit code after printing the error. Either way the run's
 * signal handlers stay until kt_run_free, which the caller calls once in every case. */
int kt_run_execute(kt_run *st, const kt_run_options *opt, int argc, char **argv);

/* The exit code of a run that ended: 130 interrupted; a shard 0 (or 2 over budget); else the
 * verdict's, with 2 for points left over budget unless a candidate was rejected. */
int kt_run_outcome_code(const kt_run *st);

/* Frees the run and puts the signal handlers back. */
void kt_run_free(kt_run *st);

/* The index of the point 'id' in 'points', or -1. */
int kt_run_find_point(const kt_point_result *points, size_t n, const char *id);

/* Whether the matrix point 'i' is in this run's shard. */
int kt_run_in_shard(const kt_run *st, size_t i);

/* Whose rows samples.csv holds: this archive's run id and the code's commit. */
kt_samples_ids kt_run_samples_ids(const kt_run *st);

/* The kernels' threads: the spec's, or every online core for 0. */
int kt_run_threads(const kt_spec *spec);

#endif
