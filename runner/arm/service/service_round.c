/* service_round.c - one round of a service arm: the same requests at the same offsets to its
 * server (kt_loadgen_round), each request's metric (e2e, TTFT or TPOT, from its scheduled send
 * time), the errors by kind, the tokens, and each task's answer: archived per task and round,
 * and compared as text with the task's expect file or else with the baseline's answer. */
#include "arm/service/service_run.h"
#include "arm/service/loadgen_sse.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Appends the text of one completion chunk or response (choices[0].text, or its message or
 * delta content) to 'acc'; a body that is no such JSON is appended as it is. */
static void append_text(char **acc, size_t *len, const char *data, size_t n)
{
    const char *text = NULL;
    cJSON *doc = cJSON_ParseWithLength(data, n);
    const cJSON *choices = cJSON_GetObjectItemCaseSensitive(doc, "choices");
    const cJSON *c0 = cJSON_IsArray(choices) ? cJSON_GetArrayItem(choices, 0) : NULL;
    int structured = doc && cJSON_IsArray(choices);
    if (c0) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(c0, "text");
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(c0, "message");
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(c0, "delta");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(m ? m : d, "content");
        text = cJSON_IsString(t)         ? t->valuestring
               : cJSON_IsString(content) ? content->valuestring
                                         : NULL;
    }
    size_t add = text ? strlen(text) : structured ? 0 : n;
    char *grown = realloc(*acc, *len + add + 1);
    if (grown) {
        memcpy(grown + *len, text ? text : data, add);
        *len += add;
        grown[*len] = '\0';
        *acc = grown;
    }
    cJSON_Delete(doc);
}

typedef struct text_acc {
    char *s;
    size_t len;
} text_acc;

static int on_event(void *ctx, const char *data, size_t len)
{
    text_acc *t = ctx;
    if (!kt_sse_is_done(data, len))
        append_text(&t->s, &t->len, data, len);
    return 0;
}

/* The answer's text of a response body (SSE events joined, or the one JSON body). */
static char *answer_text(const svc *s, const kt_loadgen_record *r)
{
    text_acc t = {calloc(1, 1), 0};
    if (s->ss->sse) {
        kt_sse_parser p;
        kt_sse_init(&p, on_event, &t);
        kt_sse_feed(&p, r->body ? r->body : "", r->body_len);
        kt_sse_finish(&p);
        kt_sse_free(&p);
    } else {
        append_text(&t.s, &t.len, r->body ? r->body : "", r->body_len);
    }
    return t.s;
}

/* The record's metric in ms; a request without one (an error, one token for TPOT) counts its
 * e2e, and one never answered the request timeout. */
static double metric_ms(const svc *s, const kt_loadgen_record *r)
{
    double v = s->ss->metric == KT_SERVICE_TTFT   ? r->ttft_s
               : s->ss->metric == KT_SERVICE_TPOT ? r->tpot_s
                                                  : r->e2e_s;
    if (!(v > 0))
        v = r->e2e_s;
    if (!(v > 0))
        v = s->ss->request_timeout_s;
    return v * 1e3;
}

/* Compares task 'task''s answer with its reference and keeps it in the archive. */
static void judge_answer(svc *s, int arm, int round, const kt_loadgen_record *r)
{
    svc_arm *a = &s->arms[arm];
    int task = r->task;
    char *text = answer_text(s, r);
    if (!text)
        return;
    if (s->env.keep) {
        char name[160];
        snprintf(name, sizeof(name), "%s.round%d.body", s->ss->tasks[task].name, round);
        s->env.keep(s->env.ctx, s->env.point->id, svc_arm_name(s, arm), name, NULL,
                    r->body ? r->body : "");
    }
    const char *ref = s->expect[task] ? s->expect[task] : arm ? s->arms[0].text[task] : NULL;
    if (ref && strcmp(ref, text) != 0)
        a->changed[task] = 1;
    if (arm == 0 && !a->text[task])
        a->text[task] = text;
    else
        free(text);
}

static void count(svc *s, int arm, const kt_loadgen_record *r, int *first_of_task, int round,
                  int timed)
{
    svc_arm *a = &s->arms[arm];
    if (timed) {
        a->requests++;
        a->tokens += r->tokens;
        if (r->error != KT_LOADGEN_OK) {
            a->errors++;
            a->err_kinds[(unsigned)r->error < 8 ? r->error : 7]++;
        } else {
            a->completed++;
        }
    }
    if (r->error == KT_LOADGEN_OK && first_of_task && !first_of_task[r->task]) {
        first_of_task[r->task] = 1;
        judge_answer(s, arm, round, r);
    }
}

static int interrupted(const svc *s, const kt_loadgen_round_info *info)
{
    if (!info->interrupted && !(s->env.interrupted && *s->env.interrupted))
        return 0;
    snprintf(s->out->error, sizeof(s->out->error), "interrupted");
    return 1;
}

int kt_svc_one(svc *s, int arm, int task, double *ms)
{
    kt_loadgen_request req = {s->body[task], s->body_len[task], task, 0.0};
    kt_loadgen_record rec;
    kt_loadgen_round_info info;
    memset(&rec, 0, sizeof(rec));
    if (kt_loadgen_round(s->arms[arm].srv.lg, &req, 1, &rec, &info, s->env.interrupted) < 0)
        return kt_svc_fail(s, arm, KT_REASON_SERVER, "load generator: %s", kt_error_last());
    *ms = rec.e2e_s * 1e3;
    count(s, arm, &rec, NULL, 0, 0);
    kt_loadgen_records_free(&rec, 1);
    if (interrupted(s, &info))
        return -2;
    return kt_svc_alive(s, arm, "after a request");
}

int kt_svc_start_cold(svc *s, int arm)
{
    svc_arm *a = &s->arms[arm];
    double ready = NAN, cold = NAN;
    int rc = kt_svc_start(s, arm, &ready);
    if (rc == 0)
        rc = kt_svc_one(s, arm, 0, &cold);
    if (rc < 0)
        return rc;
    if (a->starts < (int)(sizeof(a->startup_s) / sizeof(a->startup_s[0]))) {
        a->startup_s[a->starts] = ready;
        a->cold_ms[a->starts] = cold;
    }
    a->starts++;
    return 0;
}

int kt_svc_round(svc *s, int arm, int round, double *ms, double *dur_s, int *done)
{
    svc_arm *a = &s->arms[arm];
    int rc = 0;
    if (s->ss->exclusive && (rc = kt_svc_start_cold(s, arm)) < 0)
        return rc;
    if ((rc = kt_svc_alive(s, arm, "before a round")) < 0)
        return rc;
    kt_loadgen_round_info info;
    if (kt_loadgen_round(a->srv.lg, s->reqs, (size_t)s->n, s->recs, &info, s->env.interrupted) < 0)
        return kt_svc_fail(s, arm, KT_REASON_SERVER, "load generator: %s", kt_error_last());
    if (interrupted(s, &info))
        return -2;
    int first_of_task[KT_COMMAND_MAX_TASKS] = {0};
    for (int i = 0; i < s->n; i++) {
        ms[i] = metric_ms(s, &s->recs[i]);
        count(s, arm, &s->recs[i], first_of_task, round, 1);
        if (a->n_values == a->cap_values) {
            size_t cap = a->cap_values ? 2 * a->cap_values : 256;
            double *v = realloc(a->values, 3 * cap * sizeof(double));
            if (!v)
                return kt_svc_fail(s, arm, KT_REASON_SERVER, "out of memory");
            a->values = v;
            a->cap_values = cap;
        }
        const kt_loadgen_record *r = &s->recs[i];
        double *v = a->values + 3 * a->n_values++;
        v[0] = r->error == KT_LOADGEN_OK ? r->e2e_s * 1e3 : NAN;
        v[1] = r->error == KT_LOADGEN_OK ? r->ttft_s * 1e3 : NAN;
        v[2] = r->error == KT_LOADGEN_OK ? r->tpot_s * 1e3 : NAN;
    }
    *dur_s = info.duration_s;
    *done = info.completed;
    a->busy_s += info.duration_s;
    kt_svc_sample_rss(s, arm);
    if ((rc = kt_svc_alive(s, arm, "during a round")) < 0)
        return rc;
    if (s->ss->exclusive)
        kt_svc_stop(s, arm);
    return 0;
}
