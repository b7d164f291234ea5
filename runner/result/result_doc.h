/* result_doc.h - the one builder of result.json, for run, resume and merge: the document's
 * sections in their order (schema_version, tool, status, spec, provenance, decision, timing,
 * points, candidates, and a merge's shards), the decision null while a run is running or
 * failed, the points and verdicts from the run result. What differs between the callers
 * (a new run's provenance, or a merge's taken from its first shard) comes in as parts. */
#ifndef KT_RESULT_RESULT_DOC_H
#define KT_RESULT_RESULT_DOC_H

#include "result/run.h"
#include "spec/spec.h"
#include "util/json.h"

typedef struct kt_result_parts {
    const char *status; /* running, failed, complete, interrupted, over_budget */
    const kt_run_result *run;
    const kt_spec *spec;
    int exit_code;     /* the decision's */
    cJSON *tool;       /* taken; NULL: this ktrial's (kt_result_tool_json) */
    cJSON *spec_json;  /* taken: the "spec" section (kt_result_spec_json); NULL: none */
    cJSON *provenance; /* taken */
    cJSON *timing;     /* taken; NULL: none */
    cJSON *shards;     /* taken; NULL: none (only a merged run has shards) */
} kt_result_parts;

/* The document; NULL when out of memory. The parts marked taken are the document's (or freed)
 * either way. */
cJSON *kt_result_document(kt_result_parts *parts);

/* {name, version, commit, dirty} of this ktrial. */
cJSON *kt_result_tool_json(void);

/* {path, sha256, bytes, parsed} of the spec whose bytes hash to 'sha256'. */
cJSON *kt_result_spec_json(const kt_spec *spec, const char *sha256);

#endif
