/* result_doc.c - the one builder of result.json (see result_doc.h). */
#include "result/result_doc.h"

#include "result/result_json.h"
#include "spec/spec_json.h"
#include "util/version.h"

#include <stdlib.h>
#include <string.h>

cJSON *kt_result_tool_json(void)
{
    cJSON *tool = cJSON_CreateObject();
    cJSON_AddStringToObject(tool, "name", "ktrial");
    cJSON_AddStringToObject(tool, "version", kt_version());
    cJSON_AddStringToObject(tool, "commit", kt_build_commit());
    cJSON_AddBoolToObject(tool, "dirty", kt_build_dirty());
    return tool;
}

cJSON *kt_result_spec_json(const kt_spec *spec, const char *sha256)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "path", spec->path);
    cJSON_AddStringToObject(o, "sha256", sha256);
    cJSON_AddNumberToObject(o, "bytes", (double)spec->len);
    cJSON_AddItemToObject(o, "parsed", kt_spec_to_json(spec));
    return o;
}

/* Adds 'item' under 'key' when there is one. */
static void add(cJSON *doc, const char *key, cJSON *item)
{
    if (item)
        cJSON_AddItemToObject(doc, key, item);
}

cJSON *kt_result_document(kt_result_parts *parts)
{
    const char *status = parts->status;
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddNumberToObject(doc, "schema_version", KT_RESULT_SCHEMA_VERSION);
    add(doc, "tool", parts->tool ? parts->tool : kt_result_tool_json());
    cJSON_AddStringToObject(doc, "status", status);
    add(doc, "spec", parts->spec_json);
    add(doc, "provenance", parts->provenance);
    if (strcmp(status, "running") == 0 || strcmp(status, "failed") == 0)
        /* no decision: a run that never finished must not read as one that decided */
        cJSON_AddNullToObject(doc, "decision");
    else
        cJSON_AddItemToObject(doc, "decision",
                              kt_decision_to_json(parts->run, parts->spec, parts->exit_code));
    add(doc, "timing", parts->timing);
    cJSON *points = cJSON_AddArrayToObject(doc, "points");
    for (size_t i = 0; i < parts->run->n_points; i++)
        cJSON_AddItemToArray(points, kt_point_result_to_json(&parts->run->points[i], parts->spec));
    cJSON_AddItemToObject(doc, "candidates", kt_candidate_verdicts_to_json(parts->run));
    add(doc, "shards", parts->shards);
    if (!doc) { /* the parts were not added to anything */
        cJSON_Delete(parts->tool);
        cJSON_Delete(parts->spec_json);
        cJSON_Delete(parts->provenance);
        cJSON_Delete(parts->timing);
        cJSON_Delete(parts->shards);
    }
    parts->tool = parts->spec_json = parts->provenance = parts->timing = parts->shards = NULL;
    return doc;
}
