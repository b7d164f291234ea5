/* cmd_compare.c - 'ktrial compare OLD NEW': the same experiment at two code states. Per point
 * and variant, the latency change from the raw samples (Hodges-Lehmann shift of log times with
 * its interval, Mann-Whitney p), numerics changes and verdict flips; exit 1 on a regression. */
#include "cli/commands.h"
#include "util/json.h"
#include "archive/result_json.h"
#include "archive/run_archive.h"
#include "decide/stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { CHANGE_SAME = 0, CHANGE_FASTER, CHANGE_SLOWER, CHANGE_UNCLEAR } change_label;

static const char *label_name(change_label l)
{
    static const char *const names[] = {"same", "faster", "slower", "unclear"};
    return names[l];
}

typedef struct compare_options {
    const char *old_path, *new_path;
    double threshold;
    int json;
} compare_options;

/* Log times of one variant at one point: the baseline's from every candidate's pairs (each
 * baseline call is one sample), or one candidate's. */
static size_t collect_log_times(double **out, const kt_point_result *p, int cand)
{
    size_t n = 0;
    for (size_t k = 0; k < p->n_cands; k++)
        if (cand < 0 || (size_t)cand == k)
            n += p->cands[k].n_pairs;
    *out = malloc((n ? n : 1) * sizeof(double));
    if (!*out)
        return 0;
    size_t at = 0;
    for (size_t k = 0; k < p->n_cands; k++) {
        if (cand >= 0 && (size_t)cand != k)
            continue;
        for (size_t i = 0; i < p->cands[k].n_pairs; i++) {
            const kt_pair *q = &p->cands[k].pairs[i];
            (*out)[at++] = log(cand < 0 ? q->base_ns : q->cand_ns);
        }
    }
    return at;
}

static const kt_point_result *find_point(const kt_run_result *run, const char *id)
{
    for (size_t i = 0; i < run->n_points; i++)
        if (strcmp(run->points[i].point.id, id) == 0)
            return &run->points[i];
    return NULL;
}

static int find_candidate(const kt_point_result *p, const char *name)
{
    for (size_t k = 0; k < p->n_cands; k++)
        if (strcmp(p->cands[k].arm.name, name) == 0)
            return (int)k;
    return -1;
}

typedef struct row {
    char point[192], variant[KT_NAME_MAX];
    double ratio, low, high, p;
    size_t n_old, n_new;
    change_label label;
    double old_rel_l2, new_rel_l2;
    char old_verdict[16], new_verdict[16];
    int regression;
} row;

static void compare_variant(row *r, const kt_point_result *po, int co, const kt_point_result *pn,
                            int cn, double threshold)
{
    double *a = NULL, *b = NULL;
    r->n_old = collect_log_times(&a, po, co);
    r->n_new = collect_log_times(&b, pn, cn);
    kt_shift s;
    memset(&s, 0, sizeof(s));
    r->ratio = r->low = r->high = r->p = NAN;
    if (r->n_old >= 2 && r->n_new >= 2) {
        kt_stats_two_sample(&s, b, r->n_new, a, r->n_old, 0.95); /* new minus old */
        r->ratio = exp(s.estimate);
        r->low = exp(s.ci_low);
        r->high = exp(s.ci_high);
        r->p = s.p_value;
    }
    free(a);
    free(b);
    if (!isfinite(r->ratio))
        r->label = CHANGE_UNCLEAR;
    else if (r->low > 1 + threshold)
        r->label = CHANGE_SLOWER;
    else if (r->high < 1 - threshold)
        r->label = CHANGE_FASTER;
    else if (r->low >= 1 - threshold && r->high <= 1 + threshold)
        r->label = CHANGE_SAME;
    else
        r->label = CHANGE_UNCLEAR;
    r->regression = r->label == CHANGE_SLOWER;
}

static double worst_rel_l2(const kt_arm_result *a)
{
    double w = 0;
    for (int s = 0; s < a->n_sets; s++)
        w = fmax(w, a->numerics[s].rel_l2);
    return a->n_sets ? w : NAN;
}

static int parse(compare_options *o, int argc, char **argv)
{
    memset(o, 0, sizeof(*o));
    o->threshold = 0.02;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threshold") == 0 && i + 1 < argc) {
            char *end;
            o->threshold = strtod(argv[++i], &end);
            if (*end || !(o->threshold >= 0) || o->threshold >= 1)
                return kt_usage_error("compare", "'--threshold' needs a fraction in [0, 1)");
        } else if (strcmp(argv[i], "--json") == 0) {
            o->json = 1;
        } else if (argv[i][0] == '-') {
            return kt_usage_error("compare", "unknown option '%s'", argv[i]);
        } else if (!o->old_path) {
            o->old_path = argv[i];
        } else if (!o->new_path) {
            o->new_path = argv[i];
        } else {
            return kt_usage_error("compare", "unexpected argument '%s'", argv[i]);
        }
    }
    if (!o->new_path)
        return kt_usage_error("compare", "needs two results, OLD and NEW");
    return 0;
}

/* The same experiment? Same op and dtype, and at least one point in common. */
static int same_experiment(const cJSON *old_doc, const cJSON *new_doc)
{
    static const char *const keys[] = {"op", "dtype"};
    const cJSON *po = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(old_doc, "spec"), "parsed");
    const cJSON *pn = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(new_doc, "spec"), "parsed");
    for (size_t i = 0; i < 2; i++) {
        char a[64], b[64];
        kt_json_get_str(po, keys[i], a, sizeof(a));
        kt_json_get_str(pn, keys[i], b, sizeof(b));
        if (strcmp(a, b) != 0) {
            fprintf(stderr, "error: not the same experiment: %s '%s' in OLD, '%s' in NEW\n",
                    keys[i], a, b);
            return 0;
        }
    }
    return 1;
}

static void print_rows(const row *rows, size_t n, double threshold)
{
    printf("%-36s %-12s %22s %9s %8s  %-11s %s\n", "point", "variant", "new/old time [95% CI]", "p",
           "pairs", "change", "verdict");
    for (size_t i = 0; i < n; i++) {
        const row *r = &rows[i];
        char ci[48] = "-", verdict[48] = "";
        if (isfinite(r->ratio))
            snprintf(ci, sizeof(ci), "%.3f [%.3f, %.3f]", r->ratio, r->low, r->high);
        if (r->old_verdict[0])
            snprintf(verdict, sizeof(verdict), "%s -> %s", r->old_verdict, r->new_verdict);
        printf("%-36s %-12s %22s %9.3g %3zu/%-4zu  %-11s %s\n", r->point, r->variant, ci, r->p,
               r->n_old, r->n_new, label_name(r->label), verdict);
        if (isfinite(r->old_rel_l2) && isfinite(r->new_rel_l2) &&
            (r->new_rel_l2 > 2 * r->old_rel_l2 || r->old_rel_l2 > 2 * r->new_rel_l2))
            printf("    rel_l2 changed: %.3g -> %.3g\n", r->old_rel_l2, r->new_rel_l2);
    }
    printf("\nthreshold %.3g: 'slower' means the interval lies above %.3f\n", threshold,
           1 + threshold);
}

static cJSON *rows_json(const row *rows, size_t n, double threshold, int regressions)
{
    cJSON *doc = cJSON_CreateObject();
    kt_json_add_real(doc, "threshold", threshold);
    cJSON_AddNumberToObject(doc, "regressions", regressions);
    cJSON *arr = cJSON_AddArrayToObject(doc, "rows");
    for (size_t i = 0; i < n; i++) {
        const row *r = &rows[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "point", r->point);
        cJSON_AddStringToObject(o, "variant", r->variant);
        kt_json_add_real(o, "time_ratio", r->ratio);
        cJSON *ci = cJSON_AddArrayToObject(o, "ci");
        cJSON_AddItemToArray(ci, kt_json_real(r->low));
        cJSON_AddItemToArray(ci, kt_json_real(r->high));
        kt_json_add_real(o, "p_value", r->p);
        cJSON_AddNumberToObject(o, "samples_old", (double)r->n_old);
        cJSON_AddNumberToObject(o, "samples_new", (double)r->n_new);
        cJSON_AddStringToObject(o, "change", label_name(r->label));
        kt_json_add_real(o, "rel_l2_old", r->old_rel_l2);
        kt_json_add_real(o, "rel_l2_new", r->new_rel_l2);
        kt_json_add_str_or_null(o, "verdict_old", r->old_verdict);
        kt_json_add_str_or_null(o, "verdict_new", r->new_verdict);
        cJSON_AddBoolToObject(o, "regression", r->regression);
        cJSON_AddItemToArray(arr, o);
    }
    return doc;
}

int cmd_compare(int argc, char **argv)
{
    compare_options o;
    int rc = parse(&o, argc, argv);
    if (rc)
        return rc;
    cJSON *old_doc = NULL, *new_doc = NULL;
    kt_run_result old_run, new_run;
    memset(&old_run, 0, sizeof(old_run));
    memset(&new_run, 0, sizeof(new_run));
    row *rows = NULL;
    size_t n_rows = 0;
    if (kt_run_archive_load_result(&old_doc, o.old_path) < 0 ||
        kt_run_result_from_json(&old_run, old_doc) < 0 ||
        kt_run_archive_load_result(&new_doc, o.new_path) < 0 ||
        kt_run_result_from_json(&new_run, new_doc) < 0) {
        fprintf(stderr, "error: %s\n", kt_error_last());
        rc = KT_EXIT_DATAERR;
        goto done;
    }
    if (!same_experiment(old_doc, new_doc)) {
        rc = KT_EXIT_DATAERR;
        goto done;
    }
    size_t cap = 0;
    for (size_t i = 0; i < new_run.n_points; i++)
        cap += 1 + new_run.points[i].n_cands;
    rows = calloc(cap ? cap : 1, sizeof(*rows));
    int regressions = 0, common = 0;
    for (size_t i = 0; rows && i < new_run.n_points; i++) {
        const kt_point_result *pn = &new_run.points[i];
        const kt_point_result *po = find_point(&old_run, pn->point.id);
        if (!po)
            continue;
        common++;
        for (int k = -1; k < (int)pn->n_cands; k++) {
            const char *name = k < 0 ? pn->baseline.name : pn->cands[k].arm.name;
            int ko = k < 0 ? -1 : find_candidate(po, name);
            if (k >= 0 && ko < 0)
                continue;
            row *r = &rows[n_rows++];
            snprintf(r->point, sizeof(r->point), "%s", pn->point.id);
            snprintf(r->variant, sizeof(r->variant), "%s", name);
            compare_variant(r, po, ko, pn, k, o.threshold);
            const kt_arm_result *ao = k < 0 ? &po->baseline : &po->cands[ko].arm;
            const kt_arm_result *an = k < 0 ? &pn->baseline : &pn->cands[k].arm;
            r->old_rel_l2 = worst_rel_l2(ao);
            r->new_rel_l2 = worst_rel_l2(an);
            if (k >= 0) {
                snprintf(r->old_verdict, sizeof(r->old_verdict), "%s",
                         kt_verdict_name(po->cands[ko].verdict));
                snprintf(r->new_verdict, sizeof(r->new_verdict), "%s",
                         kt_verdict_name(pn->cands[k].verdict));
                if (po->cands[ko].verdict == KT_VERDICT_KEEP &&
                    pn->cands[k].verdict != KT_VERDICT_KEEP)
                    r->regression = 1;
            }
            regressions += r->regression;
        }
    }
    if (!common) {
        fprintf(stderr, "error: not the same experiment: OLD and NEW share no point\n");
        rc = KT_EXIT_DATAERR;
        goto done;
    }
    if (o.json) {
        cJSON *doc = rows_json(rows, n_rows, o.threshold, regressions);
        char *text = kt_json_print(doc);
        printf("%s\n", text ? text : "{}");
        free(text);
        cJSON_Delete(doc);
    } else {
        print_rows(rows, n_rows, o.threshold);
        printf("%d regression(s)\n", regressions);
    }
    rc = regressions ? KT_EXIT_REJECT : KT_EXIT_KEEP;
done:
    free(rows);
    kt_run_result_free(&old_run);
    kt_run_result_free(&new_run);
    cJSON_Delete(old_doc);
    cJSON_Delete(new_doc);
    return rc;
}
