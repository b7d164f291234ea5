/* resume.h - 'ktrial run --resume DIR': the checks that the folder's run is this one (the same
 * experiment, shard, --quick and backend always; the same spec bytes, code and plugins unless
 * --force), and the loading of the points it already archived, reused by id. */
#ifndef KT_RUN_RESUME_H
#define KT_RUN_RESUME_H

#include "run/run.h"

/* Checks st->dir's run against this one, takes its run id and sessions, and loads its
 * finished points into st->done (rewriting samples.csv to hold just those). 0, or the exit
 * code after printing the error. */
int kt_run_resume(kt_run *st);

/* After kt_run_resume: every point of st->done decided again under st->spec (resume_redecide.c),
 * each changed verdict said; when the spec's bytes changed, the old spec.yaml kept as
 * spec-<sha256 prefix>.yaml beside the new one and st->specs recording which points were
 * measured under it; points.jsonl rewritten when a verdict changed. 0, or the exit code. */
int kt_run_redecide_resumed(kt_run *st);

/* provenance.run.specs of a run whose spec changed on a resume ([{file, sha256, points}], the
 * spec in force last), or NULL when it never changed. */
cJSON *kt_run_specs_json(const kt_run *st);

#endif
