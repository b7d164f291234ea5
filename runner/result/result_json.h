/* result_json.h - point results and candidate verdicts as JSON (points.jsonl and
 * result.json share the point form). */
#ifndef KT_RESULT_JSON_H
#define KT_RESULT_JSON_H

#include "result/run.h"

#include <cjson/cJSON.h>

#define KT_RESULT_SCHEMA_VERSION 1

cJSON *kt_point_result_to_json(const kt_point_result *p, const kt_spec *spec);
/* Reads a point back (for --resume, show and compare). Returns 0 or -1 when malformed. */
int kt_point_result_from_json(kt_point_result *out, const cJSON *json);
cJSON *kt_candidate_verdicts_to_json(const kt_run_result *run);
/* result.json's "decision": the overall verdict, how it was formed, and 'exit_code'. */
cJSON *kt_decision_to_json(const kt_run_result *run, const kt_spec *spec, int exit_code);
/* The shard a result.json was run as (provenance.run.shard, "I/N"). Returns 0 with '*index' and
 * '*count' set, or KT_EINVAL when the field is missing or not I/N with 1 <= I <= N, leaving them
 * at 1/1 (the whole matrix). */
int kt_result_shard(const cJSON *doc, int *index, int *count);

#endif
