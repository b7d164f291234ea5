/* loadgen_round.c - one round of the load generator (kt_loadgen_round): requests started when
 * due (open loop: at their offsets; closed loop: as a slot frees), driven by libcurl's multi
 * interface on one thread, each response timed as its bytes arrive, SSE events parsed, and each
 * ending classified. Every latency counts from the request's scheduled time. */
#include "arm/service/loadgen_internal.h"

#include "kernel.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KT_LG_POLL_MAX_MS 50 /* how often *interrupted is looked at, at least */

/* usage.completion_tokens of a JSON text, -1 when it has none; *no_choices is set to 1 when
 * the text is an object whose "choices" is an empty array (a usage-only chunk). */
static long usage_tokens(const char *json, size_t len, int *no_choices)
{
    long t = -1;
    cJSON *doc = cJSON_ParseWithLength(json, len);
    if (!doc)
        return -1;
    const cJSON *usage = cJSON_GetObjectItemCaseSensitive(doc, "usage");
    const cJSON *ct = cJSON_GetObjectItemCaseSensitive(usage, "completion_tokens");
    if (cJSON_IsNumber(ct) && ct->valuedouble >= 0)
        t = (long)ct->valuedouble;
    const cJSON *choices = cJSON_GetObjectItemCaseSensitive(doc, "choices");
    if (no_choices && cJSON_IsArray(choices) && cJSON_GetArraySize(choices) == 0)
        *no_choices = 1;
    cJSON_Delete(doc);
    return t;
}

static int on_event(void *ctx, const char *data, size_t len)
{
    kt_lg_xfer *x = ctx;
    if (x->done_seen)
        return 0; /* nothing counts after the end marker */
    if (kt_sse_is_done(data, len)) {
        x->done_seen = 1;
        return 0;
    }
    if (memmem(data, len, "\"usage\"", 7)) {
        int no_choices = 0;
        long t = usage_tokens(data, len, &no_choices);
        if (t >= 0)
            x->usage_tokens = t;
        if (no_choices)
            return 0; /* a usage-only chunk is not a token */
    }
    if (x->rec->events == 0)
        x->first_ev = x->now;
    x->last_ev = x->now;
    x->rec->events++;
    return 0;
}

/* Keeps up to max_body_bytes of the body in the record. */
static int keep(kt_lg_xfer *x, const char *p, size_t len)
{
    kt_loadgen_record *r = x->rec;
    size_t max = x->lg->cfg.max_body_bytes;
    size_t room = r->body_len < max ? max - r->body_len : 0;
    size_t take = len < room ? len : room;
    if (take < len)
        r->body_truncated = 1;
    if (take == 0)
        return 0;
    if (r->body_len + take + 1 > x->body_cap) {
        size_t cap = x->body_cap ? x->body_cap : 512;
        while (cap < r->body_len + take + 1)
            cap *= 2;
        char *b = realloc(r->body, cap);
        if (!b)
            return -1;
        r->body = b;
        x->body_cap = cap;
    }
    memcpy(r->body + r->body_len, p, take);
    r->body_len += take;
    r->body[r->body_len] = '\0';
    return 0;
}

static size_t on_write(char *p, size_t size, size_t n, void *ctx)
{
    kt_lg_xfer *x = ctx;
    size_t len = size * n;
    x->now = kt_lg_now();
    if (x->first_byte == 0)
        x->first_byte = x->now;
    if (keep(x, p, len) < 0 ||
        (x->lg->cfg.stream == KT_LOADGEN_STREAM_SSE && kt_sse_feed(&x->sse, p, len) < 0)) {
        x->write_failed = 1;
        return 0; /* libcurl ends the transfer with CURLE_WRITE_ERROR */
    }
    return len;
}

/* A transfer of the pool not in use, or a new one with the options every request shares. */
static kt_lg_xfer *take_xfer(kt_loadgen *lg)
{
    for (size_t i = 0; i < lg->n_pool; i++)
        if (!lg->pool[i]->in_use)
            return lg->pool[i];
    kt_lg_xfer **pool = realloc(lg->pool, (lg->n_pool + 1) * sizeof *pool);
    if (!pool)
        return NULL;
    lg->pool = pool;
    kt_lg_xfer *x = calloc(1, sizeof *x);
    CURL *e = x ? curl_easy_init() : NULL;
    if (!e) {
        free(x);
        return NULL;
    }
    x->easy = e;
    x->lg = lg;
    curl_easy_setopt(e, CURLOPT_URL, lg->url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, lg->headers);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(e, CURLOPT_PRIVATE, x);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->errbuf);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PROXY, ""); /* never through a proxy of the environment */
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)ceil(lg->cfg.timeout_s * 1000));
    lg->pool[lg->n_pool++] = x;
    return x;
}

static int start(kt_loadgen *lg, const kt_loadgen_request *req, kt_loadgen_record *rec,
                 double sched_rel, double t0)
{
    kt_lg_xfer *x = take_xfer(lg);
    if (!x)
        return kt_error_code(KT_ENOMEM, "out of memory for a request");
    x->req = req;
    x->rec = rec;
    x->sched_abs = t0 + sched_rel;
    x->first_byte = x->first_ev = x->last_ev = 0;
    x->done_seen = x->write_failed = 0;
    x->usage_tokens = -1;
    x->body_cap = 0;
    x->errbuf[0] = '\0';
    kt_sse_free(&x->sse);
    kt_sse_init(&x->sse, on_event, x);
    CURL *e = x->easy;
    int has_body = req->body && req->body_len;
    const char *m = lg->method;
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L); /* resets an earlier request's body */
    if (has_body || strcmp(m, "POST") == 0) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
                         (curl_off_t)(has_body ? req->body_len : 0));
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, has_body ? req->body : "");
    }
    int custom = strcmp(m, "GET") != 0 && strcmp(m, "POST") != 0;
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, custom ? m : NULL);
    if (strcmp(m, "HEAD") == 0) /* no body follows, whatever Content-Length says */
        curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    rec->scheduled_s = sched_rel;
    double sent = kt_lg_now() - t0;
    rec->sent_s = sent > sched_rel ? sent : sched_rel;
    if (curl_multi_add_handle(lg->multi, e) != CURLM_OK)
        return kt_error_set("libcurl refused a request to %s", lg->url);
    x->in_use = 1;
    return 0;
}

/* The first line of a body, cut, for messages. */
static void snippet(const kt_loadgen_record *r, char *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; r->body && i < r->body_len && n + 1 < cap && n < 100; i++)
        out[n++] = r->body[i] == '\n' || r->body[i] == '\r' ? ' ' : r->body[i];
    out[n] = '\0';
}

static void classify(kt_lg_xfer *x, CURLcode res)
{
    kt_loadgen_record *r = x->rec;
    const char *why = x->errbuf[0] ? x->errbuf : curl_easy_strerror(res);
    size_t cap = sizeof r->message;
    if (x->write_failed) {
        r->error = KT_LOADGEN_ERR_OTHER;
        snprintf(r->message, cap, "out of memory keeping the response");
    } else if (res == CURLE_OK && (r->http_status < 200 || r->http_status > 299)) {
        char body[104];
        snippet(r, body, sizeof body);
        r->error = KT_LOADGEN_ERR_HTTP;
        snprintf(r->message, cap, "HTTP %ld: %s", r->http_status, body);
    } else if (res == CURLE_OK) {
        int sse = x->lg->cfg.stream == KT_LOADGEN_STREAM_SSE;
        if (sse && !x->done_seen && !x->lg->cfg.sse_done_optional) {
            r->error = KT_LOADGEN_ERR_BROKEN;
            snprintf(r->message, cap,
                     "the event stream ended after %ld events without "
                     "'data: [DONE]'",
                     r->events);
        }
    } else if (res == CURLE_OPERATION_TIMEDOUT) {
        r->error = KT_LOADGEN_ERR_TIMEOUT;
        snprintf(r->message, cap, "no complete response within %g s (%zu bytes, %ld events)",
                 x->lg->cfg.timeout_s, r->body_len, r->events);
    } else if (res == CURLE_COULDNT_CONNECT || res == CURLE_COULDNT_RESOLVE_HOST) {
        r->error = KT_LOADGEN_ERR_CONNECT;
        snprintf(r->message, cap, "%s", why);
    } else if (res == CURLE_GOT_NOTHING || res == CURLE_RECV_ERROR || res == CURLE_SEND_ERROR ||
               res == CURLE_PARTIAL_FILE) {
        r->error = KT_LOADGEN_ERR_BROKEN;
        snprintf(r->message, cap, "%s (after %zu bytes, %ld events)", why, r->body_len, r->events);
    } else {
        r->error = KT_LOADGEN_ERR_OTHER;
        snprintf(r->message, cap, "%s", why);
    }
}

/* Records a transfer that ended at 'now' with 'res', and frees it for the next request. */
static void finish(kt_loadgen *lg, kt_lg_xfer *x, CURLcode res, double now)
{
    kt_loadgen_record *r = x->rec;
    int sse = lg->cfg.stream == KT_LOADGEN_STREAM_SSE;
    if (sse && res == CURLE_OK && !x->write_failed)
        kt_sse_finish(&x->sse);
    curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &r->http_status);
    r->e2e_s = now - x->sched_abs;
    if (sse)
        r->ttft_s = r->events ? x->first_ev - x->sched_abs : NAN;
    else
        r->ttft_s = x->first_byte ? x->first_byte - x->sched_abs : NAN;
    r->tpot_s = r->events >= 2 ? (x->last_ev - x->first_ev) / (double)(r->events - 1) : NAN;
    if (!sse && res == CURLE_OK && r->body && strstr(r->body, "\"usage\""))
        x->usage_tokens = usage_tokens(r->body, r->body_len, NULL);
    if (x->usage_tokens >= 0) {
        r->tokens = x->usage_tokens;
        r->tokens_from = KT_LOADGEN_TOKENS_USAGE;
    } else if (sse) {
        r->tokens = r->events;
        r->tokens_from = KT_LOADGEN_TOKENS_EVENTS;
    }
    classify(x, res);
    curl_multi_remove_handle(lg->multi, x->easy);
    x->in_use = 0;
    x->rec = NULL;
}

/* Cuts every transfer in flight and marks every request not finished as cancelled. */
static void cancel_all(kt_loadgen *lg, kt_loadgen_record *records, size_t n, double now)
{
    for (size_t i = 0; i < lg->n_pool; i++) {
        kt_lg_xfer *x = lg->pool[i];
        if (!x->in_use)
            continue;
        x->rec->e2e_s = now - x->sched_abs;
        x->rec->error = KT_LOADGEN_ERR_CANCELLED;
        snprintf(x->rec->message, sizeof x->rec->message, "interrupted before its response ended");
        curl_multi_remove_handle(lg->multi, x->easy);
        x->in_use = 0;
        x->rec = NULL;
    }
    for (size_t i = 0; i < n; i++)
        if (isnan(records[i].sent_s)) {
            records[i].error = KT_LOADGEN_ERR_CANCELLED;
            snprintf(records[i].message, sizeof records[i].message,
                     "interrupted before it was sent");
        }
}

/* Reads the transfers that ended; pushes their end times (round-relative) on 'freed'. */
static int drain(kt_loadgen *lg, double t0, double *freed, size_t *n_freed)
{
    int ended = 0;
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(lg->multi, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        kt_lg_xfer *x = NULL;
        CURLcode res = m->data.result;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
        double now = kt_lg_now();
        finish(lg, x, res, now);
        freed[(*n_freed)++] = now - t0;
        ended++;
    }
    return ended;
}

static void init_records(const kt_loadgen_request *requests, size_t n, kt_loadgen_record *rec)
{
    for (size_t i = 0; i < n; i++) {
        free(rec[i].body);
        memset(&rec[i], 0, sizeof rec[i]);
        rec[i].task = requests[i].task;
        rec[i].scheduled_s = rec[i].sent_s = NAN;
        rec[i].ttft_s = rec[i].e2e_s = rec[i].tpot_s = NAN;
    }
}

static void sum_up(const kt_loadgen_record *rec, size_t n, kt_loadgen_round_info *info)
{
    double end = 0;
    for (size_t i = 0; i < n; i++) {
        if (rec[i].error == KT_LOADGEN_OK)
            info->completed++;
        else
            info->failed++;
        info->tokens += rec[i].tokens;
        double e = rec[i].scheduled_s + rec[i].e2e_s;
        if (e > end)
            end = e;
    }
    info->duration_s = end;
}

int kt_loadgen_round(kt_loadgen *lg, const kt_loadgen_request *requests, size_t n,
                     kt_loadgen_record *records, kt_loadgen_round_info *info,
                     volatile sig_atomic_t *interrupted)
{
    kt_loadgen_round_info local;
    if (!info)
        info = &local;
    memset(info, 0, sizeof *info);
    init_records(requests, n, records);
    int closed = lg->cfg.mode == KT_LOADGEN_CLOSED;
    int limit = closed ? lg->cfg.concurrency : lg->cfg.max_inflight;
    /* closed loop: the times (round-relative) at which slots freed, first in first out */
    double *freed = malloc((n + (size_t)limit + 1) * sizeof *freed);
    if (!freed)
        return kt_error_code(KT_ENOMEM, "out of memory for a round of %zu requests", n);
    size_t n_freed = 0, used = 0;
    for (int i = 0; i < limit; i++)
        freed[n_freed++] = 0;
    double t0 = kt_lg_now();
    info->start_s = t0;
    size_t next = 0;
    int inflight = 0, rc = 0;
    for (;;) {
        if (interrupted && *interrupted) {
            cancel_all(lg, records, n, kt_lg_now());
            info->interrupted = 1;
            break;
        }
        double now = kt_lg_now();
        while (next < n && inflight < limit) {
            double due = closed ? freed[used] : requests[next].offset_s;
            if (!closed && t0 + due > now)
                break;
            if ((rc = start(lg, &requests[next], &records[next], due, t0)) < 0)
                break;
            used += closed;
            next++;
            inflight++;
        }
        if (rc < 0 || (next >= n && inflight == 0))
            break;
        int running = 0;
        CURLMcode mc = curl_multi_perform(lg->multi, &running);
        if (mc != CURLM_OK) {
            rc = kt_error_set("libcurl failed driving requests: %s", curl_multi_strerror(mc));
            break;
        }
        int ended = drain(lg, t0, freed, &n_freed);
        inflight -= ended;
        if (next >= n && inflight == 0)
            break;
        if (ended && next < n)
            continue; /* a slot may have freed: start what is due before waiting */
        int wait_ms = KT_LG_POLL_MAX_MS;
        if (!closed && next < n && inflight < limit) {
            double left_ms = (t0 + requests[next].offset_s - kt_lg_now()) * 1e3;
            /* under a millisecond to go: poll without waiting, not late by a rounding */
            wait_ms = left_ms <= 0 ? 0 : left_ms < wait_ms ? (int)left_ms : wait_ms;
        }
        curl_multi_poll(lg->multi, NULL, 0, wait_ms, NULL);
    }
    if (rc < 0)
        cancel_all(lg, records, n, kt_lg_now());
    free(freed);
    sum_up(records, n, info);
    return rc;
}
