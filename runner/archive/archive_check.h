/* archive_check.h - an archived run read back without trusting its verdicts: result.json,
 * spec.yaml, points.jsonl and samples.csv loaded, the seal compared with the files, every
 * point decided again from its pairs under the archived spec (measure/rejudge.h), the
 * candidates and the run aggregated again (decide/aggregate.h), and each disagreement listed.
 * The readers (show, report, compare, merge, history, verify) take the derived run and a
 * result document whose points, candidates and decision are the derived ones. */
#ifndef KT_ARCHIVE_CHECK_H
#define KT_ARCHIVE_CHECK_H

#include "archive/seal.h"
#include "measure/rejudge.h"
#include "result/run.h"
#include "result/samples_csv.h"

#include <limits.h>

typedef struct kt_archive {
    char dir[PATH_MAX];
    cJSON *doc;           /* result.json; points, candidates and decision.verdict derived */
    kt_run_result run;    /* the derived run (a run still 'running': its points.jsonl) */
    kt_spec *spec;        /* spec.yaml as the run parsed it; NULL when it does not load */
    int derived;          /* 1: the verdicts were decided again; 0: the stored ones are kept */
    size_t not_run;       /* a run still 'running': the points of its share not finished */
    kt_problems problems; /* every disagreement found, one sentence each */
} kt_archive;

/* Loads the archive at 'path' (its folder or its result.json) and checks it. Returns 0 (with
 * a->problems listing what disagrees, possibly nothing), or -1 with the message set when
 * result.json cannot be read as a result at all. kt_archive_close frees it either way. */
int kt_archive_check(kt_archive *a, const char *path);
void kt_archive_close(kt_archive *a);

/* How the exit code a run records (decision.exit_code) follows from its derived run, its status
 * and its shard count (run/exit_code.c's kt_run_ended_exit_code, registered by main.c at start:
 * the codes belong to a layer above). Unset, decision.exit_code is not checked. */
typedef int (*kt_exit_code_rule)(const kt_run_result *run, const char *status, int shard_count);
void kt_archive_check_use_exit_codes(kt_exit_code_rule rule);

/* Whether two stored reals agree (to 1e-9 relative; NaN agrees with NaN). */
int kt_check_same_real(double a, double b);

/* result.json's points ('doc_run') against points.jsonl's ('pts'): the same points, pairs,
 * numerics and failures; a point of result.json missing from points.jsonl is a problem unless
 * cut short by an interrupt or the run 'failed' (it stopped before archiving its last). */
void kt_points_cross_check(const kt_run_result *doc_run, const kt_point_result *pts, size_t n,
                           int failed, kt_problems *out);

/* samples.csv of 'dir' against the pairs of 'points' (points.jsonl's, in its order): every
 * row's point, candidate, repetition, arm and figures. Where a candidate's rows differ, its
 * verdict is decided again from the rows (with 'rj') and said when it differs. Adds problems. */
void kt_samples_check(const char *dir, const kt_point_result *points, size_t n,
                      const kt_rejudge *rj, kt_problems *out);

#endif
