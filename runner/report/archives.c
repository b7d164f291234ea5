/* archives.c - an archive as the reports read it: its result.json, its points and verdicts
 * (a run still 'running' with the points of its points.jsonl), and its label. */
#include "archive/run_archive.h"
#include "report/report.h"
#include "util/json.h"

#include <string.h>

int kt_report_load(kt_report_input *in, const char *path)
{
    memset(in, 0, sizeof(*in));
    size_t len = strlen(path);
    snprintf(in->dir, sizeof(in->dir), "%s", path);
    if (len > 12 && strcmp(path + len - 12, "/result.json") == 0)
        in->dir[len - 12] = '\0';
    else if (strcmp(path, "result.json") == 0)
        snprintf(in->dir, sizeof(in->dir), ".");
    if (kt_run_archive_load_result(&in->doc, path) < 0 ||
        kt_run_result_from_json(&in->run, in->doc) < 0)
        return -1;
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(in->doc, "status");
    if (cJSON_IsString(status) && strcmp(status->valuestring, "running") == 0)
        kt_run_archive_load_unfinished(&in->run, &in->unfinished_not_run, in->dir, in->doc);
    const cJSON *trials = kt_json_at_path(in->doc, "spec.parsed.trials");
    in->min_reps = (int)kt_json_get_real(trials, "min_repetitions", 10);
    in->max_reps = (int)kt_json_get_real(trials, "max_repetitions", 200);
    in->min_speedup =
        kt_json_get_real(cJSON_GetObjectItemCaseSensitive(in->doc, "decision"), "min_speedup", 1);
    return 0;
}

void kt_report_input_free(kt_report_input *in)
{
    kt_run_result_free(&in->run);
    cJSON_Delete(in->doc);
    in->doc = NULL;
}

void kt_report_label(char *out, size_t len, const kt_report_input *in)
{
    const cJSON *commit = kt_json_at_path(in->doc, "provenance.git.short_commit");
    const cJSON *start = kt_json_at_path(in->doc, "provenance.run.start_utc");
    snprintf(out, len, "%s %s", cJSON_IsString(commit) ? commit->valuestring : "nogit",
             cJSON_IsString(start) ? start->valuestring : "");
}
