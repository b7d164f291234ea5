/* archives.c - an archive as the reports read it: its result.json, its points and verdicts
 * (a run still 'running' with the points of its points.jsonl), and its label. */
#include "archive/archive_check.h"
#include "archive/run_archive.h"
#include "report/report.h"
#include "util/json.h"

#include <string.h>

int kt_report_load(kt_report_input *in, const char *path)
{
    memset(in, 0, sizeof(*in));
    kt_archive a; /* checked, its verdicts decided again from its pairs */
    if (kt_archive_check(&a, path) < 0) {
        kt_archive_close(&a);
        return -1;
    }
    snprintf(in->dir, sizeof(in->dir), "%s", a.dir);
    in->doc = a.doc;
    in->run = a.run;
    in->problems = a.problems;
    in->unfinished_not_run = a.not_run;
    a.doc = NULL;
    memset(&a.run, 0, sizeof(a.run));
    memset(&a.problems, 0, sizeof(a.problems));
    kt_archive_close(&a);
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
    kt_problems_free(&in->problems);
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
