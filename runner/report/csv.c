/* csv.c - the verdicts of an archive as CSV (RFC 4180), for spreadsheets and scripts: a header,
 * then one row per point and candidate in run order, with the figures behind each verdict.
 * Numbers are printed with %.6g ("" where there is none: NaN, no pairs); text fields are
 * quoted when they hold a comma, a quote or a line break, a quote doubled. The raw pairs are
 * samples.csv's; this is the decision table. */
#include "report/writers.h"
#include "util/json.h"

#include <math.h>
#include <string.h>

static void text(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void number(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.6g", v);
}

/* The candidate's reason codes joined by ';', then its reasons and the point's error. */
static void reasons(FILE *f, const kt_point_result *p, const kt_candidate_result *c)
{
    char codes[KT_LIMIT_REASONS * 32] = "", why[KT_LIMIT_REASONS * KT_LIMIT_REASON_LEN + 600] = "";
    for (int r = 0; r < c->n_reasons; r++) {
        size_t n = strlen(codes), m = strlen(why);
        snprintf(codes + n, sizeof(codes) - n, "%s%s", r ? ";" : "",
                 kt_reason_code_name(c->reason_codes[r]));
        snprintf(why + m, sizeof(why) - m, "%s%s", r ? "; " : "", c->reasons[r]);
    }
    if (p->error[0]) {
        size_t m = strlen(why);
        snprintf(why + m, sizeof(why) - m, "%s%s", why[0] ? "; " : "", p->error);
    }
    text(f, codes);
    fputc(',', f);
    text(f, why);
}

int kt_write_csv(FILE *f, const kt_output *o)
{
    const kt_report_input *in = &o->archives[0];
    const kt_run_result *run = &in->run;
    const cJSON *n = kt_json_at_path(in->doc, "spec.parsed.name");
    const char *experiment = cJSON_IsString(n) ? n->valuestring : "";
    fputs("experiment,point,candidate,variant,verdict,speedup,ci_low,ci_high,pairs,"
          "worst_rel_l2,memory_ratio,reason_codes,reasons\r\n",
          f);
    for (size_t i = 0; i < run->n_points; i++) {
        const kt_point_result *p = &run->points[i];
        for (size_t k = 0; k < p->n_cands; k++) {
            const kt_candidate_result *c = &p->cands[k];
            int timed = c->n_pairs > 0;
            text(f, experiment);
            fputc(',', f);
            text(f, p->point.id);
            fputc(',', f);
            text(f, c->arm.name);
            fputc(',', f);
            text(f, c->arm.variant);
            fprintf(f, ",%s,", kt_verdict_name(c->verdict));
            number(f, timed ? c->speedup : NAN);
            fputc(',', f);
            number(f, timed ? c->ci_low : NAN);
            fputc(',', f);
            number(f, timed ? c->ci_high : NAN);
            fprintf(f, ",%zu,", c->n_pairs);
            number(f, c->worst_rel_l2);
            fputc(',', f);
            number(f, c->memory_ratio);
            fputc(',', f);
            reasons(f, p, c);
            fputs("\r\n", f);
        }
    }
    return ferror(f) ? kt_error_set("cannot write the CSV") : 0;
}
