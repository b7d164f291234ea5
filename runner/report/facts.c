/* facts.c - what bounds a run's verdict (its state, --quick, a shard, the points not run,
 * the decision's settings), read from the run or its result.json, and the overall line's
 * words that the summary, the markdown, the HTML report and show --json all print. */
#include "report/facts.h"
#include "result/result_json.h"
#include "util/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void kt_summary_facts_init(kt_summary_facts *f, const char *baseline_name, const char *aggregate,
                           double min_speedup, double confidence)
{
    memset(f, 0, sizeof(*f));
    f->baseline_name = baseline_name;
    f->aggregate = aggregate;
    f->min_speedup = min_speedup;
    f->confidence = confidence;
    f->status = "complete";
    f->shard_index = f->shard_count = 1;
}

/* The string at 'key' of 'obj' as stored in it, or 'otherwise'. */
static const char *doc_str(const cJSON *obj, const char *key, const char *otherwise)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : otherwise;
}

void kt_summary_facts_from_doc(kt_summary_facts *f, const cJSON *doc)
{
    const cJSON *decision = cJSON_GetObjectItemCaseSensitive(doc, "decision");
    const cJSON *run = kt_json_at_path(doc, "provenance.run");
    kt_summary_facts_init(
        f, doc_str(kt_json_at_path(doc, "spec.parsed.baseline"), "name", "baseline"),
        doc_str(decision, "aggregate", "all"), kt_json_get_real(decision, "min_speedup", 1.0),
        kt_json_get_real(decision, "confidence", 0.95));
    f->status = doc_str(doc, "status", "complete");
    f->quick = kt_json_get_bool(run, "quick", 0);
    f->quick_max_repetitions = (int)kt_json_get_real(run, "quick_max_repetitions", 0);
    kt_result_shard(doc, &f->shard_index, &f->shard_count);
    f->n_not_run =
        (size_t)kt_json_get_real(cJSON_GetObjectItemCaseSensitive(doc, "timing"), "not_run", 0);
    kt_summary_facts_metric(f, kt_json_at_path(doc, "spec.parsed"));
}

void kt_summary_facts_metric(kt_summary_facts *f, const cJSON *parsed)
{
    const cJSON *command = cJSON_GetObjectItemCaseSensitive(parsed, "command");
    f->metric = doc_str(command, "metric", NULL);
    f->metric_higher = strcmp(doc_str(command, "better", "lower"), "higher") == 0;
}

int kt_summary_want_color(FILE *out)
{
    const char *no = getenv("NO_COLOR"), *term = getenv("TERM");
    return isatty(fileno(out)) && !(no && *no) && term && *term && strcmp(term, "dumb") != 0;
}

static const char *plural(size_t n)
{
    return n == 1 ? "" : "s";
}

/* Whether the run stopped before its end: interrupted, or still 'running' in result.json (a
 * run in progress, or one killed; 'show' prints the points it finished). */
int kt_summary_stopped(const kt_summary_facts *f)
{
    return strcmp(f->status, "interrupted") == 0 || strcmp(f->status, "running") == 0;
}

const char *kt_summary_overall(const kt_run_result *run, const kt_summary_facts *f)
{
    if (strcmp(f->status, "interrupted") == 0)
        return "INTERRUPTED";
    if (strcmp(f->status, "running") == 0)
        return "UNFINISHED";
    if (run->point_errors) /* exit 70: no verdict stands over points that could not be measured */
        return "ERROR";
    if (f->n_not_run && run->verdict == KT_VERDICT_KEEP)
        return "INCONCLUSIVE"; /* the points not run could still reject */
    return kt_verdict_name(run->verdict);
}

const char *kt_summary_overall_text(char *buf, size_t len, const kt_run_result *run,
                                    const kt_summary_facts *f)
{
    size_t measured = run->n_points, total = run->n_points + f->n_not_run, at = 0;
    /* a shard's own verdict, which the text says is not the experiment's */
    const char *word = f->shard_count > 1 && !kt_summary_stopped(f) ? kt_verdict_name(run->verdict)
                                                                    : kt_summary_overall(run, f);
    buf[0] = '\0';
    if (kt_summary_stopped(f))
        at = (size_t)snprintf(buf, len, "after %zu of %zu point%s; no verdict for the experiment",
                              kt_run_finished_points(run), total, plural(total));
    else if (run->point_errors && f->shard_count <= 1)
        at = (size_t)snprintf(buf, len,
                              "at %d of %zu point%s the baseline or the set-up failed (each "
                              "reason is given with its point); no verdict for the experiment",
                              run->point_errors, total, plural(total));
    else if (f->shard_count > 1)
        at = (size_t)snprintf(buf, len,
                              "over its %zu point%s; not the experiment's verdict ('ktrial "
                              "merge' forms it)",
                              measured, plural(measured));
    else if (f->n_not_run)
        at = (size_t)snprintf(buf, len, "over %zu point%s, %zu of %zu NOT RUN (budget)", measured,
                              plural(measured), f->n_not_run, total);
    else
        at = (size_t)snprintf(buf, len, "over %zu point%s", measured, plural(measured));
    if (at < len)
        at += (size_t)snprintf(buf + at, len - at, " (min_speedup %.3g, aggregate %s",
                               f->min_speedup, f->aggregate);
    if (f->quick && at < len)
        at += (size_t)snprintf(buf + at, len - at, "; --quick: at most %d pairs per point",
                               f->quick_max_repetitions);
    if (at < len)
        snprintf(buf + at, len - at, ")");
    return word;
}

const char *kt_summary_candidate_text(char *buf, size_t len, const kt_run_result *run, size_t k,
                                      const kt_summary_facts *f)
{
    const kt_candidate_verdict *cv = &run->cands[k];
    if (!kt_summary_stopped(f)) {
        snprintf(buf, len, "%s", cv->reason);
        return kt_verdict_name(cv->verdict);
    }
    size_t total = run->n_points + f->n_not_run;
    snprintf(buf, len,
             "decided at %d of %zu point%s (%d keep, %d reject, %d inconclusive); no verdict "
             "over the experiment",
             cv->keep + cv->reject + cv->inconclusive, total, plural(total), cv->keep, cv->reject,
             cv->inconclusive);
    return kt_summary_overall(run, f);
}
