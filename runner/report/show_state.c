/* show_state.c - the lines 'ktrial show' prints under the summary: the run's state (status,
 * exit code, --quick, shard, points not run), and its provenance (spec, git, host, device, the
 * run's time and, for a resumed run, each session). */
#include "result/result_json.h"
#include "report/writers.h"
#include "util/json.h"

#include <stdio.h>

void kt_run_state_read(kt_run_state *f, const cJSON *doc)
{
    const cJSON *run = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(doc, "provenance"), "run");
    const cJSON *decision = cJSON_GetObjectItemCaseSensitive(doc, "decision");
    kt_json_get_str(doc, "status", f->status, sizeof(f->status));
    f->exit_code = (int)kt_json_get_real(decision, "exit_code", -1);
    kt_json_get_str(decision, "verdict", f->verdict, sizeof(f->verdict));
    f->quick = kt_json_get_bool(run, "quick", 0);
    f->quick_max = (int)kt_json_get_real(run, "quick_max_repetitions", 0);
    kt_result_shard(doc, &f->shard_index, &f->shard_count);
    f->not_run =
        (size_t)kt_json_get_real(cJSON_GetObjectItemCaseSensitive(doc, "timing"), "not_run", 0);
}

/* "complete, exit code 0; --quick (at most 20 pairs per point); shard 3/16". */
static void print_state(FILE *out, const kt_run_state *f)
{
    fprintf(out, "state:   %s, ", f->status);
    if (f->exit_code >= 0)
        fprintf(out, "exit code %d", f->exit_code);
    else
        fprintf(out, "no exit code recorded (no decision)");
    if (f->quick)
        fprintf(out, "; --quick (at most %d pairs per point)", f->quick_max);
    if (f->shard_count > 1)
        fprintf(out, "; shard %d/%d, not the whole experiment", f->shard_index, f->shard_count);
    if (f->not_run)
        fprintf(out, "; %zu point%s not run", f->not_run, f->not_run == 1 ? "" : "s");
    fputc('\n', out);
}

/* A resumed run's sessions, a line each: "  session 2: <start> to <end>, commit abc1234, 3
 * points". Nothing for a run of one session (the run line says it all). */
static void print_sessions(FILE *out, const cJSON *sessions)
{
    int n = cJSON_GetArraySize(sessions), i = 0;
    const cJSON *s;
    if (n < 2)
        return;
    cJSON_ArrayForEach(s, sessions)
    {
        char a[64], b[64], c[64], d[64];
        const cJSON *points = cJSON_GetObjectItemCaseSensitive(s, "points");
        kt_json_get_str(s, "commit", c, sizeof(c));
        kt_json_get_str(s, "diff_blob_id", d, sizeof(d));
        fprintf(out, "  session %d: %s to %s, %s%.7s%s%.7s, ", ++i,
                kt_json_get_str(s, "start_utc", a, sizeof(a))[0] ? a : "(unknown)",
                kt_json_get_str(s, "end_utc", b, sizeof(b))[0] ? b : "(unfinished)",
                c[0] ? "commit " : "no git", c, d[0] ? " + diff " : "", d);
        if (cJSON_IsNumber(points))
            fprintf(out, "%d point%s\n", points->valueint, points->valueint == 1 ? "" : "s");
        else
            fprintf(out, "points not recorded\n");
    }
}

static void print_provenance(FILE *out, const cJSON *doc)
{
    char a[256], b[256], c[256];
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(doc, "spec");
    const cJSON *prov = cJSON_GetObjectItemCaseSensitive(doc, "provenance");
    const cJSON *git = cJSON_GetObjectItemCaseSensitive(prov, "git");
    const cJSON *host = cJSON_GetObjectItemCaseSensitive(prov, "host");
    const cJSON *device = cJSON_GetObjectItemCaseSensitive(prov, "device");
    const cJSON *run = cJSON_GetObjectItemCaseSensitive(prov, "run");
    fprintf(out, "spec:    %s (sha256 %.12s)\n", kt_json_get_str(spec, "path", a, sizeof(a)),
            kt_json_get_str(spec, "sha256", b, sizeof(b)));
    if (kt_json_get_bool(git, "available", 0)) {
        int dirty = kt_json_get_bool(git, "dirty", 0);
        fprintf(out, "git:     %s on %s%s%s\n", kt_json_get_str(git, "commit", a, sizeof(a)),
                kt_json_get_str(git, "branch", b, sizeof(b))[0] ? b : "(detached)",
                dirty ? ", dirty, diff " : "",
                dirty ? kt_json_get_str(git, "diff_blob_id", c, sizeof(c)) : "");
    } else {
        fprintf(out, "git:     none (%s)\n", kt_json_get_str(git, "reason", a, sizeof(a)));
    }
    fprintf(out, "host:    %s, %s, %d cores\n", kt_json_get_str(host, "hostname", a, sizeof(a)),
            kt_json_get_str(host, "cpu_model", b, sizeof(b)),
            (int)kt_json_get_real(host, "cores", 0));
    const cJSON *info = cJSON_GetObjectItemCaseSensitive(device, "info");
    fprintf(out, "device:  %s (%s)\n", kt_json_get_str(device, "backend", a, sizeof(a)),
            kt_json_get_str(info, "name", b, sizeof(b)));
    fprintf(out, "run:     %s to %s\n", kt_json_get_str(run, "start_utc", a, sizeof(a)),
            kt_json_get_str(run, "end_utc", b, sizeof(b))[0] ? b : "(unfinished)");
    print_sessions(out, cJSON_GetObjectItemCaseSensitive(run, "sessions"));
}

int kt_write_state(FILE *out, const kt_output *o)
{
    kt_run_state state;
    kt_run_state_read(&state, o->doc);
    print_state(out, &state);
    print_provenance(out, o->doc);
    return 0;
}
