/* cmd_show.c - 'ktrial show RESULT': the summary of an archived run, as 'run' printed it,
 * and its provenance in a few lines. */
#include "cli/show_command.h"
#include "archive/archive.h"
#include "cli/commands.h"
#include "util/json.h"
#include "archive/result_json.h"
#include "cli/summary.h"
#include "archive/run_archive.h"
#include "report/report.h"

#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static void print_provenance(const cJSON *doc)
{
    char a[256], b[256], c[256], d[64];
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(doc, "spec");
    const cJSON *prov = cJSON_GetObjectItemCaseSensitive(doc, "provenance");
    const cJSON *git = cJSON_GetObjectItemCaseSensitive(prov, "git");
    const cJSON *host = cJSON_GetObjectItemCaseSensitive(prov, "host");
    const cJSON *device = cJSON_GetObjectItemCaseSensitive(prov, "device");
    const cJSON *run = cJSON_GetObjectItemCaseSensitive(prov, "run");
    printf("spec:    %s (sha256 %.12s, status %s)\n", kt_json_get_str(spec, "path", a, sizeof(a)),
           kt_json_get_str(spec, "sha256", b, sizeof(b)),
           kt_json_get_str(doc, "status", d, sizeof(d)));
    if (kt_json_get_bool(git, "available", 0)) {
        int dirty = kt_json_get_bool(git, "dirty", 0);
        printf("git:     %s on %s%s%s\n", kt_json_get_str(git, "commit", a, sizeof(a)),
               kt_json_get_str(git, "branch", b, sizeof(b))[0] ? b : "(detached)",
               dirty ? ", dirty, diff " : "",
               dirty ? kt_json_get_str(git, "diff_blob_id", c, sizeof(c)) : "");
    } else {
        printf("git:     none (%s)\n", kt_json_get_str(git, "reason", a, sizeof(a)));
    }
    printf("host:    %s, %s, %d cores\n", kt_json_get_str(host, "hostname", a, sizeof(a)),
           kt_json_get_str(host, "cpu_model", b, sizeof(b)),
           (int)kt_json_get_real(host, "cores", 0));
    const cJSON *info = cJSON_GetObjectItemCaseSensitive(device, "info");
    printf("device:  %s (%s)\n", kt_json_get_str(device, "backend", a, sizeof(a)),
           kt_json_get_str(info, "name", b, sizeof(b)));
    printf("run:     %s to %s\n", kt_json_get_str(run, "start_utc", a, sizeof(a)),
           kt_json_get_str(run, "end_utc", b, sizeof(b))[0] ? b : "(unfinished)");
}

/* A run that did not finish: says so, and how to go on. Returns the exit code. */
static int incomplete(const char *status, const char *path, const kt_run_result *run,
                      const cJSON *doc)
{
    char spec[256];
    kt_json_get_str(cJSON_GetObjectItemCaseSensitive(doc, "spec"), "path", spec, sizeof(spec));
    if (strcmp(status, "interrupted") == 0) {
        printf("incomplete run: interrupted after %zu point%s; the verdicts above cover those "
               "only\ncontinue it with: ktrial run %s --resume %s\n",
               run->n_points, run->n_points == 1 ? "" : "s", spec, path);
        return KT_EXIT_INCONCLUSIVE;
    }
    if (strcmp(status, "running") == 0 && kt_archive_lock_held(path))
        printf("incomplete run: still running (a ktrial run holds the folder's lock); no "
               "decision yet\n");
    else if (strcmp(status, "running") == 0)
        printf("incomplete run: it stopped before finishing (killed, or the machine went "
               "down); no decision\ncontinue it with: ktrial run %s --resume %s\n",
               spec, path);
    else
        printf("incomplete run: status '%s'; no decision\n", status);
    return KT_EXIT_SOFTWARE;
}

int cmd_show(int argc, char **argv)
{
    const char *result = NULL, *junit = NULL, *markdown = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--junit") == 0 || strcmp(argv[i], "--markdown") == 0) {
            if (i + 1 >= argc)
                return kt_usage_error("show", "'%s' needs a file", argv[i]);
            *(argv[i][2] == 'j' ? &junit : &markdown) = argv[i + 1];
            i++;
        } else if (argv[i][0] == '-') {
            return kt_usage_error("show", "unknown option '%s'", argv[i]);
        } else if (result) {
            return kt_usage_error("show", "expected one RESULT");
        } else {
            result = argv[i];
        }
    }
    if (!result)
        return kt_usage_error("show", "no result given");
    cJSON *doc = NULL;
    kt_run_result run;
    memset(&run, 0, sizeof(run));
    int rc = KT_EXIT_KEEP;
    if (kt_run_archive_load_result(&doc, result) < 0 || kt_run_result_from_json(&run, doc) < 0) {
        fprintf(stderr, "error: %s\n", kt_error_last());
        rc = KT_EXIT_DATAERR;
        goto done;
    }
    char status[32], dir[PATH_MAX], copy[PATH_MAX];
    kt_json_get_str(doc, "status", status, sizeof(status));
    struct stat sb;
    snprintf(dir, sizeof(dir), "%s", result);
    if (stat(dir, &sb) == 0 && !S_ISDIR(sb.st_mode)) /* a result.json: its folder */
        snprintf(dir, sizeof(dir), "%s", dirname(strcpy(copy, dir)));
    if (strcmp(status, "complete") != 0 && strcmp(status, "interrupted") != 0) {
        print_provenance(doc);
        rc = incomplete(status, dir, &run, doc);
        goto done;
    }
    char baseline[64] = "baseline", aggregate[16];
    const cJSON *parsed =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "spec"), "parsed");
    kt_json_get_str(cJSON_GetObjectItemCaseSensitive(parsed, "baseline"), "name", baseline,
                    sizeof(baseline));
    const cJSON *decision = cJSON_GetObjectItemCaseSensitive(doc, "decision");
    kt_json_get_str(decision, "aggregate", aggregate, sizeof(aggregate));
    kt_print_summary(stdout, &run, baseline, aggregate,
                     kt_json_get_real(decision, "min_speedup", 1.0));
    kt_print_usage(stdout, &run);
    kt_print_command_tasks(stdout, doc, dir);
    printf("\n");
    print_provenance(doc);
    if (junit || markdown) {
        kt_report_input in;
        int bad = kt_report_load(&in, result) < 0 || kt_report_ci_files(&in, junit, markdown) < 0;
        kt_report_input_free(&in);
        if (bad) {
            fprintf(stderr, "error: %s\n", kt_error_last());
            rc = KT_EXIT_IOERR;
        }
    }
    if (strcmp(status, "interrupted") == 0 && rc == KT_EXIT_KEEP)
        rc = incomplete(status, dir, &run, doc);
done:
    kt_run_result_free(&run);
    cJSON_Delete(doc);
    return rc;
}
