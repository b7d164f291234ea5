/* serve_http.c - kt_serve's routes: GET /health, POST /v1/completions (a JSON completion, or
 * with "stream": true Server-Sent Events flushed per token, with "stream_options":
 * {"include_usage": true} a chunk of no choices and the usage, then "data: [DONE]"), JSON errors
 * (400 bad body or limits, 404 path, 405 method, 413 body over 1 MiB, 500 a --fail-rate draw or
 * a failed step, 503 not ready or over --max-inflight). Every request has its own context
 * (body, generator); it is freed in kt_serve_completed, which also counts completions for
 * --die-after. */
#include "serve.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { MAX_BODY = 1 << 20 };

typedef struct req {
    kt_serve *s;
    char *body;
    size_t len, cap;
    int too_big;
    int counted;   /* holds an inflight slot */
    int streaming; /* an SSE response: the slot is held until its last token */
    int ok;        /* answered 200 (a stream: reached [DONE]) */
    kt_serve_gen gen;
    int gen_open;
    int max_tokens, produced, prompt_tokens, stall_ms, finished;
    int include_usage, usage_sent; /* stream_options.include_usage: a usage chunk before [DONE] */
    long id, created;
    char *out; /* the SSE bytes not yet handed to libmicrohttpd */
    size_t out_len, out_off;
} req;

static enum MHD_Result respond(struct MHD_Connection *c, unsigned status, const char *json,
                               const char *allow)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(json), (void *)json, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "application/json");
    if (allow)
        MHD_add_response_header(r, "Allow", allow);
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result error(struct MHD_Connection *c, unsigned status, const char *allow,
                             const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static enum MHD_Result error(struct MHD_Connection *c, unsigned status, const char *allow,
                             const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    cJSON *root = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(root, "error");
    cJSON_AddStringToObject(e, "message", msg);
    cJSON_AddStringToObject(e, "type", status < 500 ? "invalid_request_error" : "server_error");
    cJSON_AddNumberToObject(e, "code", status);
    char *text = cJSON_PrintUnformatted(root);
    enum MHD_Result ret = respond(c, status, text ? text : "{}", allow);
    cJSON_free(text);
    cJSON_Delete(root);
    return ret;
}

/* The fields every completion object and chunk share, with one choice of 'text'. */
static cJSON *completion(const req *q, const char *text, const char *finish)
{
    char id[48];
    snprintf(id, sizeof(id), "cmpl-kt%ld", q->id);
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "id", id);
    cJSON_AddStringToObject(root, "object", "text_completion");
    cJSON_AddNumberToObject(root, "created", (double)q->created);
    cJSON_AddStringToObject(root, "model", q->s->o.model);
    cJSON *choice = cJSON_CreateObject();
    cJSON_AddStringToObject(choice, "text", text);
    cJSON_AddNumberToObject(choice, "index", 0);
    cJSON_AddNullToObject(choice, "logprobs");
    if (finish)
        cJSON_AddStringToObject(choice, "finish_reason", finish);
    else
        cJSON_AddNullToObject(choice, "finish_reason");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(root, "choices"), choice);
    return root;
}

static void add_usage(cJSON *root, const req *q)
{
    cJSON *usage = cJSON_AddObjectToObject(root, "usage");
    cJSON_AddNumberToObject(usage, "prompt_tokens", q->prompt_tokens);
    cJSON_AddNumberToObject(usage, "completion_tokens", q->produced);
    cJSON_AddNumberToObject(usage, "total_tokens", q->prompt_tokens + q->produced);
}

/* Parses the body into q's limits; fills 'why' and returns -1 when it is not a valid request. */
static int parse(req *q, const cJSON *root, const char **prompt, int *stream, uint64_t *seed,
                 char *why, size_t n)
{
    *prompt = "";
    *stream = 0;
    *seed = 0;
    q->max_tokens = 16;
    if (!cJSON_IsObject(root))
        return snprintf(why, n, "the body must be a JSON object"), -1;
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "prompt");
    if (cJSON_IsArray(p) && cJSON_GetArraySize(p) == 1)
        p = cJSON_GetArrayItem(p, 0);
    if (p && !cJSON_IsString(p))
        return snprintf(why, n, "'prompt' must be a string (or an array of one string)"), -1;
    if (p)
        *prompt = p->valuestring;
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "max_tokens");
    if (mt && (!cJSON_IsNumber(mt) || mt->valuedouble != (double)(long)mt->valuedouble ||
               mt->valuedouble < 1 || mt->valuedouble > 1e6))
        return snprintf(why, n, "'max_tokens' must be a positive integer"), -1;
    if (mt)
        q->max_tokens = (int)mt->valuedouble;
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(root, "stream");
    if (st && !cJSON_IsBool(st) && !cJSON_IsNull(st))
        return snprintf(why, n, "'stream' must be true or false"), -1;
    *stream = cJSON_IsTrue(st);
    const cJSON *so = cJSON_GetObjectItemCaseSensitive(root, "stream_options");
    if (so && !cJSON_IsNull(so) && !cJSON_IsObject(so))
        return snprintf(why, n, "'stream_options' must be an object"), -1;
    q->include_usage = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(so, "include_usage"));
    const cJSON *sd = cJSON_GetObjectItemCaseSensitive(root, "seed");
    if (sd && !cJSON_IsNull(sd) &&
        (!cJSON_IsNumber(sd) || sd->valuedouble != (double)(long long)sd->valuedouble))
        return snprintf(why, n, "'seed' must be an integer"), -1;
    if (sd && cJSON_IsNumber(sd))
        *seed = (uint64_t)(long long)sd->valuedouble;
    q->prompt_tokens = kt_serve_prompt_tokens(*prompt);
    long context = q->s->o.context;
    if ((long)q->prompt_tokens + q->max_tokens > context)
        return snprintf(why, n,
                        "this model's context is %ld tokens; the prompt (%d) and max_tokens (%d) "
                        "need %ld",
                        context, q->prompt_tokens, q->max_tokens,
                        (long)q->prompt_tokens + q->max_tokens),
               -1;
    return 0;
}

static void stall(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* Releases the request's generator and its inflight slot as soon as it is answered (a stream:
 * its last token is made), before the client can read the answer, so that the client's next
 * request finds the slot free. */
static void finish(req *q)
{
    if (q->gen_open)
        kt_serve_gen_close(&q->gen);
    q->gen_open = 0;
    if (q->counted)
        atomic_fetch_sub(&q->s->inflight, 1);
    q->counted = 0;
}

/* "data: JSON\n\n" of 'chunk' (deleted), or NULL when out of memory. */
static char *sse(cJSON *chunk)
{
    char *text = cJSON_PrintUnformatted(chunk), *out = NULL;
    cJSON_Delete(chunk);
    if (text && (out = malloc(strlen(text) + 9)))
        sprintf(out, "data: %s\n\n", text);
    cJSON_free(text);
    return out;
}

/* The next SSE event of a stream into q->out: a token's chunk, then [DONE]. */
static int next_event(req *q)
{
    free(q->out);
    q->out = NULL;
    q->out_len = q->out_off = 0;
    if (q->produced == q->max_tokens && q->include_usage && !q->usage_sent) {
        finish(q);
        cJSON *chunk = completion(q, "", NULL);
        cJSON_ReplaceItemInObjectCaseSensitive(chunk, "choices", cJSON_CreateArray());
        add_usage(chunk, q);
        q->out = sse(chunk);
        q->usage_sent = 1;
    } else if (q->produced == q->max_tokens) {
        finish(q);
        q->out = strdup("data: [DONE]\n\n");
        q->finished = 1;
        q->ok = 1;
    } else {
        const char *word;
        if (q->produced == 0 && q->stall_ms)
            stall(q->stall_ms);
        if (atomic_load(&q->s->stopping) || kt_serve_gen_next(&q->gen, &word) < 0) {
            finish(q);
            return -1;
        }
        q->produced++;
        q->out = sse(completion(q, word, q->produced == q->max_tokens ? "length" : NULL));
    }
    if (!q->out)
        return -1;
    q->out_len = strlen(q->out);
    return 0;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    req *q = cls;
    if (q->out_off == q->out_len) {
        if (q->finished)
            return MHD_CONTENT_READER_END_OF_STREAM;
        if (next_event(q) < 0)
            return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    size_t n = q->out_len - q->out_off < max ? q->out_len - q->out_off : max;
    memcpy(buf, q->out + q->out_off, n);
    q->out_off += n;
    return (ssize_t)n;
}

static enum MHD_Result complete(req *q, struct MHD_Connection *c, int stream)
{
    if (!stream) {
        size_t cap = (size_t)q->max_tokens * 16 + 1, len = 0;
        char *text = malloc(cap);
        if (!text)
            return error(c, 500, NULL, "out of memory");
        text[0] = '\0';
        if (q->stall_ms)
            stall(q->stall_ms);
        for (; q->produced < q->max_tokens; q->produced++) {
            const char *word;
            if (atomic_load(&q->s->stopping)) {
                free(text);
                return error(c, 503, NULL, "the server is shutting down");
            }
            if (kt_serve_gen_next(&q->gen, &word) < 0) {
                free(text);
                return error(c, 500, NULL, "decode step: %s", kt_error_last());
            }
            len += (size_t)snprintf(text + len, cap - len, "%s", word);
        }
        cJSON *root = completion(q, text, "length");
        free(text);
        add_usage(root, q);
        char *body = cJSON_PrintUnformatted(root);
        cJSON_Delete(root);
        q->ok = 1;
        enum MHD_Result ret = respond(c, 200, body ? body : "{}", NULL);
        cJSON_free(body);
        return ret;
    }
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, q, NULL);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "text/event-stream");
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    q->streaming = 1;
    enum MHD_Result ret = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result completions(req *q, struct MHD_Connection *c)
{
    kt_serve *s = q->s;
    if (!atomic_load(&s->ready))
        return error(c, 503, NULL, "the model is not ready");
    if (q->too_big)
        return error(c, 413, NULL, "the body is over %d bytes", MAX_BODY);
    if (atomic_fetch_add(&s->inflight, 1) >= s->o.max_inflight) {
        atomic_fetch_sub(&s->inflight, 1);
        return error(c, 503, NULL, "over --max-inflight %d requests", s->o.max_inflight);
    }
    q->counted = 1;
    cJSON *root = cJSON_ParseWithLength(q->body ? q->body : "", q->len);
    if (!root)
        return error(c, 400, NULL, "the body is not valid JSON");
    const char *prompt;
    int stream;
    uint64_t seed;
    char why[256];
    if (parse(q, root, &prompt, &stream, &seed, why, sizeof(why)) < 0) {
        cJSON_Delete(root);
        return error(c, 400, NULL, "%s", why);
    }
    pthread_mutex_lock(&s->faults_lock);
    int fail = s->o.fail_rate > 0 && kt_rng_uniform(&s->faults) < s->o.fail_rate;
    long n = fail ? -1 : s->started++;
    pthread_mutex_unlock(&s->faults_lock);
    q->stall_ms = s->o.stall_ms > 0 && n % 10 == 9 ? s->o.stall_ms : 0;
    q->id = atomic_fetch_add(&s->ids, 1);
    q->created = (long)time(NULL);
    int err = fail ? 0 : kt_serve_gen_open(&q->gen, &s->model, prompt, seed);
    cJSON_Delete(root);
    if (fail)
        return error(c, 500, NULL, "--fail-rate %g: this request fails", s->o.fail_rate);
    if (err < 0)
        return error(c, 500, NULL, "prepare: %s", kt_error_last());
    q->gen_open = 1;
    return complete(q, c, stream);
}

static enum MHD_Result route(req *q, struct MHD_Connection *c, const char *url, const char *method)
{
    if (strcmp(url, "/health") == 0) {
        if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
            return error(c, 405, "GET, HEAD", "%s %s: use GET", method, url);
        if (!atomic_load(&q->s->ready))
            return respond(c, 503, "{\"status\":\"loading\"}", NULL);
        return respond(c, 200, "{\"status\":\"ok\"}", NULL);
    }
    if (strcmp(url, "/v1/completions") == 0) {
        if (strcmp(method, "POST") != 0)
            return error(c, 405, "POST", "%s %s: use POST", method, url);
        enum MHD_Result ret = completions(q, c);
        if (!q->streaming)
            finish(q); /* answered: libmicrohttpd sends it once this handler returns */
        return ret;
    }
    return error(c, 404, NULL, "no route %s %s (GET /health, POST /v1/completions)", method, url);
}

enum MHD_Result kt_serve_handle(void *cls, struct MHD_Connection *c, const char *url,
                                const char *method, const char *version, const char *upload,
                                size_t *upload_size, void **con_cls)
{
    (void)version;
    req *q = *con_cls;
    if (!q) {
        if (!(q = calloc(1, sizeof(*q))))
            return MHD_NO;
        q->s = cls;
        *con_cls = q;
        return MHD_YES;
    }
    if (*upload_size) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (q->too_big || q->len + n > MAX_BODY) {
            q->too_big = 1;
            return MHD_YES;
        }
        if (q->len + n + 1 > q->cap) {
            size_t cap = (q->len + n + 1) * 2;
            char *body = realloc(q->body, cap);
            if (!body)
                return MHD_NO;
            q->body = body;
            q->cap = cap;
        }
        memcpy(q->body + q->len, upload, n);
        q->len += n;
        q->body[q->len] = '\0';
        return MHD_YES;
    }
    return route(q, c, url, method);
}

void kt_serve_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                        enum MHD_RequestTerminationCode toe)
{
    (void)c;
    kt_serve *s = cls;
    req *q = *con_cls;
    *con_cls = NULL;
    if (!q)
        return;
    int ok = q->ok && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK;
    finish(q);
    free(q->out);
    free(q->body);
    free(q);
    if (ok && s->o.die_after > 0 && atomic_fetch_add(&s->done, 1) + 1 >= s->o.die_after) {
        fprintf(stderr, "kt_serve: --die-after %ld: exiting with status 3\n", s->o.die_after);
        _exit(3);
    }
}
