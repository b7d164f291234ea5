/* cmd_compare.c - 'ktrial compare OLD NEW': the same experiment at two code states. Per point
 * and candidate, the change of the candidate's within-run speedup (its paired log ratios in
 * OLD against NEW: two-sample Hodges-Lehmann shift with its interval, the error budget split
 * across the rows), numerics changes and verdict flips; the baseline's absolute time change
 * is shown as machine/baseline drift and never decides. Exit 1 on a regression. */
#include "cli/commands.h"
#include "run/archive_gate.h"
#include "report/cells.h"
#include "cli/options.h"
#include "util/json.h"
#include "result/result_json.h"
#include "archive/run_archive.h"
#include "archive/provenance_plugin.h"
#include "decide/compare.h"
#include "decide/stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct compare_options {
    const char *old_path, *new_path;
    double threshold, confidence;
    int json;
    int force; /* compare across changed plugin files */
} compare_options;

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
    char point[192], candidate[KT_NAME_MAX];
    double speedup_old, speedup_new;
    kt_speed_change sc;
    double old_rel_l2, new_rel_l2;
    char old_verdict[16], new_verdict[16];
} row;

static int parse(compare_options *o, int argc, char **argv)
{
    memset(o, 0, sizeof(*o));
    o->threshold = 0.01;
    o->confidence = 0.95;
    kt_opt_parser p;
    const kt_option *opt;
    const char *v;
    int more;
    kt_opt_init(&p, "compare", argc, argv);
    while ((more = kt_opt_next(&p, &opt, &v)) > 0) {
        if (kt_opt_is(opt, "--threshold")) {
            char *end;
            o->threshold = strtod(v, &end);
            if (end == v || *end || !(o->threshold >= 0) || o->threshold >= 1) /* '' too */
                return kt_usage_error("compare", "'--threshold' needs a fraction in [0, 1)");
        } else if (kt_opt_is(opt, "--confidence")) {
            char *end;
            o->confidence = strtod(v, &end);
            if (end == v || *end || !(o->confidence > 0) || o->confidence >= 1)
                return kt_usage_error("compare", "'--confidence' needs a number in (0, 1)");
        } else if (kt_opt_is(opt, "--json")) {
            o->json = 1;
        } else if (kt_opt_is(opt, "--force")) {
            o->force = 1;
        } else if (!o->old_path) {
            o->old_path = v;
        } else if (!o->new_path) {
            o->new_path = v;
        } else {
            return kt_usage_error("compare", "unexpected argument '%s'", v);
        }
    }
    if (more < 0)
        return KT_EXIT_USAGE;
    if (!o->new_path)
        return kt_usage_error("compare", "needs two results, OLD and NEW");
    return 0;
}

/* The same experiment? Same op and dtype, the same name unless --force, and at least one point
 * and candidate in common. */
static int same_experiment(const cJSON *old_doc, const cJSON *new_doc, int force)
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
    char a[KT_NAME_MAX], b[KT_NAME_MAX];
    kt_json_get_str(po, "name", a, sizeof(a));
    kt_json_get_str(pn, "name", b, sizeof(b));
    if (strcmp(a, b) == 0)
        return 1;
    fprintf(stderr, "%s: not the same experiment: '%s' in OLD, '%s' in NEW\n",
            force ? "warning" : "error", a, b);
    if (!force)
        fprintf(stderr, "hint: use --force to compare anyway\n");
    return force;
}

/* Says why two runs that pass same_experiment have nothing to compare, if they have not. */
static int something_to_compare(const kt_run_result *old_run, const kt_run_result *new_run,
                                size_t common, size_t cut, size_t rows, const compare_options *o)
{
    const char *empty = !old_run->n_points ? o->old_path : !new_run->n_points ? o->new_path : NULL;
    if (empty)
        fprintf(stderr, "error: '%s' has no finished point in its result.json\n", empty);
    else if (!common)
        fprintf(stderr, "error: not the same experiment: OLD and NEW share no point\n");
    else if (common == cut)
        fprintf(stderr, "error: every point OLD and NEW share was cut short in one of them\n");
    else if (!rows)
        fprintf(stderr, "error: OLD and NEW share no candidate at the points they share\n");
    return rows > 0;
}

/* The same plugin files? A plugin whose sha256 changed makes the comparison one of two
 * plugin builds, not of two ktrial runs; --force compares anyway. */
static int same_plugins(const cJSON *old_doc, const cJSON *new_doc, int force)
{
    const cJSON *po = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(old_doc, "provenance"), "plugins");
    const cJSON *pn = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(new_doc, "provenance"), "plugins");
    char msg[256];
    if (!kt_provenance_plugin_changes(msg, sizeof(msg), po, pn))
        return 1;
    fprintf(stderr, "%s: %s\n", force ? "warning" : "error", msg);
    if (!force)
        fprintf(stderr, "hint: use --force to compare anyway\n");
    return force;
}

/* "1.234 -> 1.301", with — for a side that has no speedup. */
static void speedup_pair(char *buf, size_t len, double old_s, double new_s)
{
    char a[24], b[24];
    snprintf(a, sizeof(a), "%.3f", old_s);
    snprintf(b, sizeof(b), "%.3f", new_s);
    snprintf(buf, len, "%s -> %s", isfinite(old_s) ? a : kt_cell_none,
             isfinite(new_s) ? b : kt_cell_none);
}

static void print_rows(const row *rows, size_t n, const compare_options *o, double row_conf)
{
    printf("%-28s %-12s %15s %-25s %9s %9s  %-8s %s\n", "point", "candidate", "speedup old->new",
           "change [CI]", "p", "pairs", "change", "verdict");
    for (size_t i = 0; i < n; i++) {
        const row *r = &rows[i];
        char sp[48], ci[48], pairs[24], p[16];
        speedup_pair(sp, sizeof(sp), r->speedup_old, r->speedup_new);
        snprintf(ci, sizeof(ci), "%s", kt_cell_none);
        if (isfinite(r->sc.ratio))
            snprintf(ci, sizeof(ci), "%.3f [%.3f, %.3f]", r->sc.ratio, r->sc.low, r->sc.high);
        snprintf(pairs, sizeof(pairs), "%zu/%zu", r->sc.n_old, r->sc.n_new);
        kt_cell_p(p, sizeof(p), r->sc.p);
        printf("%-28s %-12s ", r->point, r->candidate);
        kt_cell_put(stdout, sp, 15, 1);
        putchar(' ');
        kt_cell_put(stdout, ci, 25, 0);
        putchar(' ');
        kt_cell_put(stdout, p, 9, 1);
        printf(" %9s  %-8s %s -> %s%s\n", pairs, kt_change_name(r->sc.change), r->old_verdict,
               r->new_verdict, r->sc.regression ? "  REGRESSION" : "");
        if (r->sc.quality_regression)
            printf("    newly rejected on numerics, memory or a failure\n");
        if (isfinite(r->old_rel_l2) && isfinite(r->new_rel_l2) &&
            (r->new_rel_l2 > 2 * r->old_rel_l2 || r->old_rel_l2 > 2 * r->new_rel_l2))
            printf("    rel_l2 changed: %.3g -> %.3g\n", r->old_rel_l2, r->new_rel_l2);
        if (isfinite(r->sc.base_drift))
            printf("    machine/baseline drift: baseline median time x%.3f, candidate x%.3f "
                   "(not a regression by itself)\n",
                   r->sc.base_drift, r->sc.cand_drift);
    }
    printf("\nchange = NEW speedup / OLD speedup (paired log ratios, two-sample Hodges-Lehmann), "
           "interval at %.4g per row (%.3g split over %zu rows); 'worse' means it lies below "
           "%.3f\n",
           row_conf, o->confidence, n, 1 - o->threshold);
}

static cJSON *rows_json(const row *rows, size_t n, const compare_options *o, double row_conf,
                        int regressions)
{
    cJSON *doc = cJSON_CreateObject();
    kt_json_add_real(doc, "threshold", o->threshold);
    kt_json_add_real(doc, "confidence", o->confidence);
    kt_json_add_real(doc, "row_confidence", row_conf);
    cJSON_AddNumberToObject(doc, "regressions", regressions);
    cJSON *arr = cJSON_AddArrayToObject(doc, "rows");
    for (size_t i = 0; i < n; i++) {
        const row *r = &rows[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "point", r->point);
        cJSON_AddStringToObject(j, "candidate", r->candidate);
        kt_json_add_real(j, "speedup_old", r->speedup_old);
        kt_json_add_real(j, "speedup_new", r->speedup_new);
        kt_json_add_real(j, "speedup_change", r->sc.ratio);
        cJSON *ci = cJSON_AddArrayToObject(j, "ci");
        cJSON_AddItemToArray(ci, kt_json_real(r->sc.low));
        cJSON_AddItemToArray(ci, kt_json_real(r->sc.high));
        kt_json_add_real(j, "p_value", r->sc.p);
        cJSON_AddNumberToObject(j, "placement_var", r->sc.placement_var);
        cJSON_AddNumberToObject(j, "pairs_old", (double)r->sc.n_old);
        cJSON_AddNumberToObject(j, "pairs_new", (double)r->sc.n_new);
        cJSON_AddStringToObject(j, "change", kt_change_name(r->sc.change));
        kt_json_add_real(j, "baseline_drift", r->sc.base_drift);
        kt_json_add_real(j, "candidate_drift", r->sc.cand_drift);
        kt_json_add_real(j, "rel_l2_old", r->old_rel_l2);
        kt_json_add_real(j, "rel_l2_new", r->new_rel_l2);
        cJSON_AddStringToObject(j, "verdict_old", r->old_verdict);
        cJSON_AddStringToObject(j, "verdict_new", r->new_verdict);
        cJSON_AddBoolToObject(j, "quality_regression", r->sc.quality_regression);
        cJSON_AddBoolToObject(j, "regression", r->sc.regression);
        cJSON_AddItemToArray(arr, j);
    }
    return doc;
}

int cmd_compare(int argc, char **argv)
{
    compare_options o;
    int rc = parse(&o, argc, argv);
    if (rc)
        return rc;
    /* both checked and decided again from their pairs (archive/archive_check.h) */
    kt_archive old_a, new_a;
    memset(&new_a, 0, sizeof(new_a));
    row *rows = NULL;
    size_t n_rows = 0;
    if ((rc = kt_archive_gate(&old_a, o.old_path, o.force)) ||
        (rc = kt_archive_gate(&new_a, o.new_path, o.force)))
        goto done;
    const cJSON *old_doc = old_a.doc, *new_doc = new_a.doc;
    const kt_run_result *old_run = &old_a.run, *new_run = &new_a.run;
    if (!same_experiment(old_doc, new_doc, o.force) || !same_plugins(old_doc, new_doc, o.force)) {
        rc = KT_EXIT_DATAERR;
        goto done;
    }
    size_t cap = 0, common = 0, cut = 0;
    for (size_t i = 0; i < new_run->n_points; i++) {
        const kt_point_result *po = find_point(old_run, new_run->points[i].point.id);
        common += po != NULL;
        if (po && (kt_point_cut_short(po) || kt_point_cut_short(&new_run->points[i]))) {
            cut++; /* an interrupted run's last point: its pairs stopped mid-way */
            continue;
        }
        for (size_t k = 0; po && k < new_run->points[i].n_cands; k++)
            cap += find_candidate(po, new_run->points[i].cands[k].arm.name) >= 0;
    }
    rows = calloc(cap ? cap : 1, sizeof(*rows));
    if (!rows) {
        fprintf(stderr, "error: out of memory\n");
        rc = KT_EXIT_SOFTWARE;
        goto done;
    }
    /* every row is a chance of a false alarm: the rows share the error budget */
    double row_conf = 1.0 - (1.0 - o.confidence) / (double)(cap ? cap : 1);
    int regressions = 0;
    for (size_t i = 0; i < new_run->n_points; i++) {
        const kt_point_result *pn = &new_run->points[i];
        const kt_point_result *po = find_point(old_run, pn->point.id);
        if (po && (kt_point_cut_short(po) || kt_point_cut_short(pn)))
            continue;
        for (size_t k = 0; po && k < pn->n_cands; k++) {
            int ko = find_candidate(po, pn->cands[k].arm.name);
            if (ko < 0)
                continue;
            const kt_candidate_result *co = &po->cands[ko], *cn = &pn->cands[k];
            row *r = &rows[n_rows++];
            snprintf(r->point, sizeof(r->point), "%s", pn->point.id);
            snprintf(r->candidate, sizeof(r->candidate), "%s", cn->arm.name);
            if (kt_compare_candidate(&r->sc, co, cn, row_conf, o.threshold) < 0) {
                fprintf(stderr, "error: %s\n", kt_error_last());
                rc = KT_EXIT_SOFTWARE;
                goto done;
            }
            r->speedup_old = co->speedup;
            r->speedup_new = cn->speedup;
            r->old_rel_l2 = kt_arm_worst_rel_l2(&co->arm);
            r->new_rel_l2 = kt_arm_worst_rel_l2(&cn->arm);
            snprintf(r->old_verdict, sizeof(r->old_verdict), "%s", kt_verdict_name(co->verdict));
            snprintf(r->new_verdict, sizeof(r->new_verdict), "%s", kt_verdict_name(cn->verdict));
            regressions += r->sc.regression;
        }
    }
    if (cut)
        fprintf(stderr,
                "note: %zu shared point%s left out: cut short by an interrupt in OLD or NEW, "
                "with no finished measurement to compare (--resume finishes it)\n",
                cut, cut == 1 ? "" : "s");
    if (!something_to_compare(old_run, new_run, common, cut, n_rows, &o)) {
        rc = KT_EXIT_DATAERR;
        goto done;
    }
    if (o.json) {
        cJSON *doc = rows_json(rows, n_rows, &o, row_conf, regressions);
        char *text = kt_json_print(doc);
        printf("%s\n", text ? text : "{}");
        free(text);
        cJSON_Delete(doc);
    } else {
        print_rows(rows, n_rows, &o, row_conf);
        printf("%d regression(s)\n", regressions);
    }
    rc = regressions ? KT_EXIT_REJECT : KT_EXIT_KEEP;
done:
    free(rows);
    kt_archive_close(&old_a);
    kt_archive_close(&new_a);
    return rc;
}
