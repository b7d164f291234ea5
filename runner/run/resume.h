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

#endif
