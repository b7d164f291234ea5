/* run_archive.h - the files of one run folder, as 'run' writes and 'show'/'compare'/--resume
 * read them: result.json, spec.yaml, samples.csv, points.jsonl (and git.diff). */
#ifndef KT_RUN_ARCHIVE_H
#define KT_RUN_ARCHIVE_H

#include "result/result_json.h"
#include "result/samples_csv.h"

#include <cjson/cJSON.h>

/* Appends the point's line to points.jsonl and its timed calls to samples.csv, whose rows
 * carry 'ids' (see samples_csv.h). */
int kt_run_archive_point(const char *dir, const kt_point_result *p, const kt_spec *spec,
                         const kt_samples_ids *ids);
/* Rewrites samples.csv from 'points' alone (on --resume: drops the rows of a point that was
 * cut short between its samples and its points.jsonl line, and runs again). */
int kt_run_archive_rewrite_samples(const char *dir, const kt_point_result *points, size_t n,
                                   const kt_spec *spec, const kt_samples_ids *ids);
/* Says whether a stored point may be reused (1) or must be measured again (0). */
typedef int (*kt_point_filter)(const kt_point_result *p, void *ctx);
/* Reads points.jsonl: complete lines that parse and that 'keep' (if not NULL) accepts. With
 * a 'keep' (--resume), when any line is dropped (a torn last line, a point measured with
 * other candidates) the file is rewritten with the kept lines, so what is appended next
 * starts on a line of its own; without one the file is only read. */
int kt_run_archive_load_points(kt_point_result **out, size_t *n, const char *dir,
                               kt_point_filter keep, void *ctx);

/* Loads the spec.yaml archived in 'dir' as the run parsed it: with the backend the run resolved
 * (from its result.json 'doc'), and without the budget check (the run has started). Problems go
 * to 'diag'. */
int kt_run_archive_load_spec(kt_spec **out, const char *dir, const cJSON *doc, kt_diag *diag);

/* For a result 'doc' whose status is still "running" (a run in progress, or one killed: result.json
 * is written whole at the start and the end only), the points it finished, from points.jsonl,
 * put into 'run' with the candidates' verdicts over them (kt_run_aggregate by the archived
 * spec); '*not_run' gets the points of its matrix (or its shard's share) not finished. Returns
 * the number of points read; 'run' and '*not_run' are left as they were when none was or the
 * archived spec does not load. */
size_t kt_run_archive_load_unfinished(kt_run_result *run, size_t *not_run, const char *dir,
                                      const cJSON *doc);

/* The ids of the points of the archived matrix (its shard's share, from 'doc') that 'run' does
 * not hold: those the run never started. '*ids' gets a malloc'd array of malloc'd strings
 * (kt_run_archive_ids_free); returns their number, 0 with '*ids' NULL when the archived spec
 * does not load. */
size_t kt_run_archive_not_run_ids(char ***ids, const kt_run_result *run, const char *dir,
                                  const cJSON *doc);
void kt_run_archive_ids_free(char **ids, size_t n);

/* Result files are read with a size cap and a cap on their JSON values (counted before
 * parsing), so a hostile file costs bounded memory: ktrial's own results stay far below. */
#define KT_RESULT_MAX_BYTES  ((size_t)256 << 20)
#define KT_RESULT_MAX_VALUES 6000000

/* Loads result.json from a folder or a file path (within the caps above). */
int kt_run_archive_load_result(cJSON **out, const char *path);
/* Parses result text already in memory, within the same caps; 'what' names it in messages. */
int kt_run_archive_parse_result(cJSON **out, const char *text, size_t len, const char *what);
/* Reads the points and candidate verdicts of a result document back into 'run'. */
int kt_run_result_from_json(kt_run_result *run, const cJSON *doc);

/* Writes 'doc' (freed) as DIR/result.json, sealed (archive/seal.h) unless its status is
 * "running"; with 'text' non-NULL the caller gets the text
 * written (to free). 0 or -1, message set. */
int kt_result_write(const char *dir, cJSON *doc, char **text);

#endif
