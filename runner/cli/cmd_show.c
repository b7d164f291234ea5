/* cmd_show.c - 'ktrial show RESULT': the summary of an archived run, as 'run' printed it,
 * with its state (status, exit code, --quick, shard) and its provenance in a few lines; with
 * --json the same facts as one document (schemas/show.schema.json). The writers are rows of
 * report/writers.c; here the options, how to go on with a run that did not finish, and the
 * exit code. */
#include "archive/archive.h"
#include "result/result_json.h"
#include "archive/run_archive.h"
#include "cli/commands.h"
#include "run/archive_gate.h"
#include "cli/options.h"
#include "report/writers.h"
#include "util/json.h"

#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The options the run's resume must repeat, as it was run: " --shard I/N --quick", or "". */
static const char *resume_flags(char *buf, size_t len, const cJSON *doc)
{
    int si, sc;
    kt_result_shard(doc, &si, &sc);
    return kt_resume_flags(buf, len, si, sc,
                           kt_json_get_bool(kt_json_at_path(doc, "provenance.run"), "quick", 0));
}

/* A run that did not finish: says so, and how to go on ('n_pts': the points.jsonl lines of a
 * run still 'running'). Returns the exit code. */
static int incomplete(const char *status, const char *path, const kt_run_result *run,
                      const cJSON *doc, size_t n_pts)
{
    char spec[256], flags[64];
    kt_json_get_str(cJSON_GetObjectItemCaseSensitive(doc, "spec"), "path", spec, sizeof(spec));
    resume_flags(flags, sizeof(flags), doc);
    if (strcmp(status, "interrupted") == 0) {
        size_t done = kt_run_finished_points(run), cut = run->n_points - done;
        size_t not_run =
            (size_t)kt_json_get_real(cJSON_GetObjectItemCaseSensitive(doc, "timing"), "not_run", 0);
        printf("incomplete run: interrupted after %zu of %zu point%s (%zu cut short, %zu not "
               "started); the verdicts above cover the finished ones only\ncontinue it with: "
               "ktrial run %s --resume %s%s\n",
               done, run->n_points + not_run, run->n_points + not_run == 1 ? "" : "s", cut, not_run,
               spec, path, flags);
        return KT_EXIT_INCONCLUSIVE;
    }
    if (strcmp(status, "running") == 0 && kt_archive_lock_held(path))
        printf("incomplete run: still running (a ktrial run holds the folder's lock); %zu "
               "point%s finished so far (points.jsonl); no decision yet\n",
               n_pts, n_pts == 1 ? "" : "s");
    else if (strcmp(status, "running") == 0)
        printf("incomplete run: it stopped before finishing (killed, or the machine went "
               "down) after %zu finished point%s, kept in points.jsonl; no decision\n"
               "continue it with (the finished points are reused): ktrial run %s --resume %s%s\n",
               n_pts, n_pts == 1 ? "" : "s", spec, path, flags);
    else
        printf("incomplete run: status '%s'; no decision\n", status);
    return KT_EXIT_SOFTWARE;
}

int cmd_show(int argc, char **argv)
{
    const char *result = NULL, *v;
    kt_ci_files ci = {0};
    int json = 0, force = 0, more;
    kt_opt_parser p;
    const kt_option *opt;
    kt_opt_init(&p, "show", argc, argv);
    while ((more = kt_opt_next(&p, &opt, &v)) > 0) {
        if (opt && kt_ci_files_ask(&ci, opt->name, v))
            continue; /* --junit FILE, --markdown FILE */
        else if (kt_opt_is(opt, "--json"))
            json = 1;
        else if (kt_opt_is(opt, "--force"))
            force = 1;
        else if (result)
            return kt_usage_error("show", "expected one RESULT");
        else
            result = v;
    }
    if (more < 0)
        return KT_EXIT_USAGE;
    if (!result)
        return kt_usage_error("show", "no result given");
    /* the verdicts its pairs give, never the ones written (archive/archive_check.h) */
    kt_archive a;
    int rc = kt_archive_gate(&a, result, force);
    cJSON *doc = a.doc;
    kt_run_result *run = &a.run;
    char **not_run = NULL;
    size_t n_not_run = 0;
    if (rc)
        goto done;
    rc = KT_EXIT_KEEP;
    char status[32], *dir = a.dir;
    kt_json_get_str(doc, "status", status, sizeof(status));
    kt_run_state rf;
    kt_run_state_read(&rf, doc);
    int decided = strcmp(status, "complete") == 0 || strcmp(status, "interrupted") == 0 ||
                  strcmp(status, "over_budget") == 0;
    char baseline[64] = "baseline", aggregate[16] = "all";
    const cJSON *parsed =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "spec"), "parsed");
    kt_json_get_str(cJSON_GetObjectItemCaseSensitive(parsed, "baseline"), "name", baseline,
                    sizeof(baseline));
    /* a run still 'running' (or killed) has no decision yet: the spec's own settings */
    const cJSON *decision = cJSON_GetObjectItemCaseSensitive(doc, "decision");
    const cJSON *thresholds = cJSON_GetObjectItemCaseSensitive(parsed, "thresholds");
    const cJSON *latency = cJSON_GetObjectItemCaseSensitive(thresholds, "latency");
    int has = cJSON_IsObject(decision);
    kt_json_get_str(has ? decision : thresholds, "aggregate", aggregate, sizeof(aggregate));
    kt_summary_facts f;
    kt_summary_facts_init(&f, baseline, aggregate,
                          kt_json_get_real(has ? decision : latency, "min_speedup", 1.0),
                          kt_json_get_real(has ? decision : latency, "confidence", 0.95));
    kt_summary_facts_metric(&f, parsed);
    char checks[512];
    kt_json_get_str(kt_json_at_path(doc, "provenance.checks"), "line", checks, sizeof(checks));
    f.checks = checks[0] ? checks : NULL;
    f.status = status;
    f.quick = rf.quick;
    f.quick_max_repetitions = rf.quick_max;
    f.shard_index = rf.shard_index;
    f.shard_count = rf.shard_count;
    f.n_not_run = rf.not_run;
    size_t n_pts = 0;
    if (strcmp(status, "running") == 0) { /* its points.jsonl, read by the check */
        n_pts = run->n_points;
        f.n_not_run = a.not_run;
    }
    if (f.n_not_run) /* the rows NOT RUN, as 'run' printed them */
        n_not_run = kt_run_archive_not_run_ids(&not_run, run, dir, doc);
    if (n_not_run == f.n_not_run)
        f.not_run_ids = (const char *const *)not_run;
    kt_output o = {.run = run, .facts = &f, .dir = dir, .doc = doc, .exit_code = rf.exit_code};
    o.decided = decided;
    if (!decided && !json) {
        if (run->n_points) {
            kt_write("text", stdout, &o);
            printf("\n");
        }
        kt_write("state", stdout, &o);
        rc = incomplete(status, dir, run, doc, n_pts);
        goto done;
    }
    if (json) {
        if (kt_write("json", stdout, &o) < 0) {
            fprintf(stderr, "error: %s\n", kt_error_last());
            rc = KT_EXIT_SOFTWARE;
        }
        goto done;
    }
    char backend[32] = "";
    kt_json_get_str(parsed, "backend", backend, sizeof(backend));
    o.details = 1; /* the usage lines and a command run's tasks */
    o.virtual_clock = kt_backend_caps_of(backend)->clock == KT_CLOCK_VIRTUAL;
    kt_write("text", stdout, &o);
    printf("\n");
    kt_write("state", stdout, &o);
    if (kt_ci_files_write(&ci, result) < 0) {
        fprintf(stderr, "error: %s\n", kt_error_last());
        rc = KT_EXIT_IOERR;
    }
    if (strcmp(status, "interrupted") == 0 && rc == KT_EXIT_KEEP)
        rc = incomplete(status, dir, run, doc, n_pts);
done:
    kt_run_archive_ids_free(not_run, n_not_run);
    kt_archive_close(&a);
    return rc;
}
