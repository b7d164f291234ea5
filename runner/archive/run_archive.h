/* run_archive.h - the files of one run folder, as 'run' writes and 'show'/'compare'/--resume
 * read them: result.json, spec.yaml, samples.csv, points.jsonl (and git.diff). */
#ifndef KT_RUN_ARCHIVE_H
#define KT_RUN_ARCHIVE_H

#include "archive/result_json.h"

#include <cjson/cJSON.h>

/* Appends the point's line to points.jsonl and its timed calls to samples.csv. */
int kt_run_archive_point(const char *dir, const kt_point_result *p, const kt_spec *spec);
/* Rewrites samples.csv from 'points' alone (on --resume: drops the rows of a point that was
 * cut short between its samples and its points.jsonl line, and runs again). */
int kt_run_archive_rewrite_samples(const char *dir, const kt_point_result *points, size_t n);
/* Reads points.jsonl; complete lines only (a line cut by a crash is ignored). */
int kt_run_archive_load_points(kt_point_result **out, size_t *n, const char *dir);

/* Loads result.json from a folder or a file path. */
int kt_run_archive_load_result(cJSON **out, const char *path);
/* Reads the points and candidate verdicts of a result document back into 'run'. */
int kt_run_result_from_json(kt_run_result *run, const cJSON *doc);

#endif
