/* service_spec.c - reads the op 'service' parts of a spec (service_spec.h). The schema has
 * checked their types and ranges; here: every placeholder of a server's argv, '{port}' in each
 * setup, a ready probe per arm, a load mode with its rate or concurrency, and a metric the
 * request's stream can give. */
#include "spec/service_spec.h"
#include "spec/yaml_tree.h"
#include "kernel.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct sctx {
    const char *path;
    kt_diag *diag;
    int errors;
    kt_service_spec *s;
} sctx;

static void fail(sctx *c, const kt_node *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fail(sctx *c, const kt_node *at, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    kt_diag_error(c->diag, c->path, at ? at->line : 0, at ? at->col : 0, "%s", msg);
    c->errors++;
}

const char *kt_service_metric_name(kt_service_metric m)
{
    return m == KT_SERVICE_TTFT ? "ttft" : m == KT_SERVICE_TPOT ? "tpot" : "e2e";
}

/* The length of a '{name}' placeholder at 's' ([a-z_]+ between braces), or 0. */
static size_t brace_name(const char *s)
{
    size_t n = 0;
    while (islower((unsigned char)s[1 + n]) || s[1 + n] == '_')
        n++;
    return n > 0 && s[1 + n] == '}' ? n : 0;
}

int kt_service_expand(char **out, const char *tmpl, int port, const char *arm)
{
    char portbuf[16];
    snprintf(portbuf, sizeof(portbuf), "%d", port);
    size_t cap = strlen(tmpl) + 1;
    for (const char *p = tmpl; *p; p++)
        if (*p == '{')
            cap += 16 + strlen(arm);
    char *s = malloc(cap);
    if (!s)
        return kt_error_code(KT_ENOMEM, "out of memory");
    size_t len = 0;
    for (const char *p = tmpl; *p;) {
        size_t n = *p == '{' ? brace_name(p) : 0;
        const char *v = n == 4 && strncmp(p + 1, "port", 4) == 0  ? portbuf
                        : n == 3 && strncmp(p + 1, "arm", 3) == 0 ? arm
                                                                  : NULL;
        if (!v) {
            s[len++] = *p++;
            continue;
        }
        memcpy(s + len, v, strlen(v));
        len += strlen(v);
        p += n + 2;
    }
    s[len] = '\0';
    *out = s;
    return KT_OK;
}

/* An argv list: its items kept, its placeholders checked ({port} and {arm} only). Returns how
 * many items name '{port}'. */
static int read_list(sctx *c, const kt_node *list, const char *where, kt_argv *out)
{
    int ports = 0;
    if (!list || list->kind != KT_NODE_SEQ)
        return 0;
    out->items = calloc(list->n ? list->n : 1, sizeof(*out->items));
    for (size_t i = 0; out->items && i < list->n; i++) {
        const kt_node *item = list->items[i];
        const char *s = kt_node_str(item);
        s = s ? s : "";
        if (i == 0 && !s[0])
            fail(c, item, "%s[0]: the program is empty; name one (a path or a name on PATH)",
                 where);
        for (const char *p = s; *p; p++) {
            size_t n = *p == '{' ? brace_name(p) : 0;
            if (!n)
                continue;
            if (n == 4 && strncmp(p + 1, "port", 4) == 0)
                ports++;
            else if (!(n == 3 && strncmp(p + 1, "arm", 3) == 0)) {
                kt_node here = *item;
                if (!strchr(s, '\n'))
                    here.col = item->col + (item->quoted ? 1 : 0) + (int)(p - s);
                fail(c, &here,
                     "%s[%zu]: unknown placeholder '{%.*s}' (op service knows: port, arm)", where,
                     i, (int)n, p + 1);
            }
            p += n + 1;
        }
        out->items[out->n++] = strdup(s);
    }
    return ports;
}

static void read_arm(sctx *c, const kt_node *node, const char *where, kt_service_arm *arm)
{
    char sub[96];
    arm->ready_timeout_s = KT_SERVICE_DEFAULT_READY_S;
    if (!node)
        return;
    static const char *const foreign[] = {"run",     "env",    "cwd",   "timeout_s",
                                          "variant", "plugin", "params"};
    for (size_t i = 0; i < sizeof(foreign) / sizeof(foreign[0]); i++) {
        const kt_node *k = kt_node_get(node, foreign[i]);
        if (k)
            fail(c, k, "%s.%s: op 'service' arms have setup, ready and teardown, not '%s'", where,
                 foreign[i], foreign[i]);
    }
    const kt_node *setup = kt_node_get(node, "setup");
    snprintf(sub, sizeof(sub), "%s.setup", where);
    if (!setup)
        fail(c, node, "%s: op 'service' needs 'setup', the argv that starts the server", where);
    else if (read_list(c, setup, sub, &arm->setup) == 0)
        fail(c, setup,
             "%s: no '{port}': the server must listen on the free loopback port ktrial picks "
             "(e.g. [\"./server\", \"--port\", \"{port}\"])",
             sub);
    snprintf(sub, sizeof(sub), "%s.teardown", where);
    read_list(c, kt_node_get(node, "teardown"), sub, &arm->teardown);
    const kt_node *ready = kt_node_get(node, "ready");
    const char *probe = kt_node_str(kt_node_get(ready, "http_get"));
    if (!ready)
        fail(c, node,
             "%s: op 'service' needs 'ready: {http_get: /health}', the path polled until the "
             "server answers 2xx",
             where);
    snprintf(arm->ready_path, sizeof(arm->ready_path), "%s", probe ? probe : "/");
    double t;
    if (kt_node_double(kt_node_get(ready, "timeout_s"), &t) == 0)
        arm->ready_timeout_s = t;
}

static void read_tasks(sctx *c, const kt_node *root, const char *dir)
{
    kt_service_spec *s = c->s;
    const kt_node *list = kt_node_get(root, "tasks");
    size_t n = list && list->kind == KT_NODE_SEQ ? list->n : 0;
    s->tasks = calloc(n ? n : 1, sizeof(*s->tasks));
    if (!s->tasks)
        return;
    if (n == 0) {
        snprintf(s->tasks[0].name, sizeof(s->tasks[0].name), "default");
        s->n_tasks = 1;
    }
    for (size_t i = 0; i < n; i++) {
        const kt_node *t = list->items[i];
        kt_command_task *task = &s->tasks[s->n_tasks++];
        const char *name = kt_node_str(kt_node_get(t, "name"));
        snprintf(task->name, sizeof(task->name), "%s", name ? name : "");
        for (size_t j = 0; j + 1 < s->n_tasks; j++)
            if (strcmp(s->tasks[j].name, task->name) == 0)
                fail(c, kt_node_get(t, "name"), "tasks[%zu].name: '%s' is also task %zu", i,
                     task->name, j);
        const char *keys[2] = {"input", "expect"};
        char **dst[2] = {&task->input, &task->expect};
        for (int k = 0; k < 2; k++) {
            const char *v = kt_node_str(kt_node_get(t, keys[k]));
            if (v &&
                asprintf(dst[k], "%s%s%s", v[0] == '/' ? "" : dir, v[0] == '/' ? "" : "/", v) < 0)
                *dst[k] = NULL;
        }
    }
}

static void read_request_load(sctx *c, const kt_node *root)
{
    kt_service_spec *s = c->s;
    const kt_node *req = kt_node_get(root, "request");
    const char *method = kt_node_str(kt_node_get(req, "method"));
    const char *path = kt_node_str(kt_node_get(req, "path"));
    const char *stream = kt_node_str(kt_node_get(req, "stream"));
    snprintf(s->method, sizeof(s->method), "%s", method ? method : "POST");
    snprintf(s->path, sizeof(s->path), "%s", path ? path : "/");
    s->sse = stream && strcmp(stream, "sse") == 0;
    s->request_timeout_s = KT_SERVICE_DEFAULT_TIMEOUT_S;
    kt_node_double(kt_node_get(req, "timeout_s"), &s->request_timeout_s);

    const kt_node *load = kt_node_get(root, "load");
    if (!load)
        fail(c, root,
             "op 'service' needs 'load': {mode: open, rate_per_s: R} or {mode: closed, "
             "concurrency: C}");
    const char *mode = kt_node_str(kt_node_get(load, "mode"));
    s->closed = mode && strcmp(mode, "closed") == 0;
    const kt_node *rate = kt_node_get(load, "rate_per_s"), *conc = kt_node_get(load, "concurrency");
    int64_t v = KT_SERVICE_DEFAULT_ROUND;
    kt_node_int(kt_node_get(load, "requests_per_round"), &v);
    s->requests_per_round = (int)v;
    if (load && !s->closed && !rate)
        fail(c, load, "load: mode open needs rate_per_s (requests started per second)");
    if (load && s->closed && !conc)
        fail(c, load, "load: mode closed needs concurrency (requests in flight at once)");
    if (s->closed && rate)
        fail(c, rate,
             "load.rate_per_s: mode closed has no rate (it sends as fast as answers "
             "come); use mode open or remove it");
    if (!s->closed && conc)
        fail(c, conc,
             "load.concurrency: mode open has no concurrency (arrivals follow the "
             "rate); use mode closed or remove it");
    s->rate_per_s = 1.0;
    kt_node_double(rate, &s->rate_per_s);
    s->concurrency = 1;
    if (kt_node_int(conc, &v) == 0)
        s->concurrency = (int)v;
}

static void read_measure(sctx *c, const kt_node *root)
{
    kt_service_spec *s = c->s;
    const kt_node *m = kt_node_get(root, "measure");
    const kt_node *mn = kt_node_get(m, "metric"), *bn = kt_node_get(m, "better");
    const char *metric = kt_node_str(mn), *better = kt_node_str(bn);
    if (metric && strcmp(metric, "ttft") == 0)
        s->metric = KT_SERVICE_TTFT;
    else if (metric && strcmp(metric, "tpot") == 0)
        s->metric = KT_SERVICE_TPOT;
    else if (metric && strcmp(metric, "e2e") != 0)
        fail(c, mn, "measure.metric: op 'service' measures e2e, ttft or tpot, not '%s'", metric);
    if (s->metric != KT_SERVICE_E2E && !s->sse)
        fail(c, mn, "measure.metric: %s needs request.stream: sse (a token is an event)",
             kt_service_metric_name(s->metric));
    if (better && strcmp(better, "higher") == 0)
        fail(c, bn, "measure.better: %s is a time; lower is better",
             kt_service_metric_name(s->metric));
    if (kt_node_get(m, "report"))
        fail(c, kt_node_get(m, "report"), "measure.report: op 'service' measures requests itself");
}

int kt_service_spec_parse(kt_service_spec **out, const kt_node *root, const char *spec_path,
                          kt_diag *diag)
{
    *out = NULL;
    kt_service_spec *s = calloc(1, sizeof(*s));
    if (!s)
        return kt_diag_error(diag, spec_path, 0, 0, "out of memory");
    sctx c = {spec_path, diag, 0, s};
    char *copy = strdup(spec_path), *real = copy ? realpath(dirname(copy), NULL) : NULL;
    snprintf(s->dir, sizeof(s->dir), "%s", real ? real : ".");
    free(real);
    free(copy);
    read_tasks(&c, root, s->dir);
    read_request_load(&c, root);
    read_measure(&c, root);
    int b;
    if (kt_node_bool(kt_node_get(root, "exclusive"), &b) == 0)
        s->exclusive = b;
    if (kt_node_bool(kt_node_get(root, "allow_remote"), &b) == 0)
        s->allow_remote = b;
    read_arm(&c, kt_node_get(root, "baseline"), "baseline", &s->baseline);
    const kt_node *list = kt_node_get(root, "candidates");
    size_t n = list && list->kind == KT_NODE_SEQ ? list->n : 0;
    s->candidates = calloc(n ? n : 1, sizeof(*s->candidates));
    for (size_t i = 0; s->candidates && i < n; i++) {
        char where[64];
        snprintf(where, sizeof(where), "candidates[%zu]", i);
        read_arm(&c, list->items[i], where, &s->candidates[s->n_candidates++]);
    }
    if (c.errors || !s->tasks || !s->candidates) {
        kt_service_spec_free(s);
        return -1;
    }
    *out = s;
    return 0;
}

static void free_list(kt_argv *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->items[i]);
    free(a->items);
}

void kt_service_spec_free(kt_service_spec *s)
{
    if (!s)
        return;
    for (size_t i = 0; s->tasks && i < s->n_tasks; i++) {
        free(s->tasks[i].input);
        free(s->tasks[i].expect);
    }
    free(s->tasks);
    free_list(&s->baseline.setup);
    free_list(&s->baseline.teardown);
    for (size_t i = 0; i < s->n_candidates; i++) {
        free_list(&s->candidates[i].setup);
        free_list(&s->candidates[i].teardown);
    }
    free(s->candidates);
    free(s);
}

cJSON *kt_service_spec_to_json(const kt_service_spec *s)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *tasks = cJSON_AddArrayToObject(o, "tasks");
    for (size_t i = 0; i < s->n_tasks; i++)
        cJSON_AddItemToArray(tasks, cJSON_CreateString(s->tasks[i].name));
    cJSON_AddStringToObject(o, "metric", kt_service_metric_name(s->metric));
    cJSON_AddStringToObject(o, "method", s->method);
    cJSON_AddStringToObject(o, "path", s->path);
    cJSON_AddStringToObject(o, "stream", s->sse ? "sse" : "none");
    cJSON_AddStringToObject(o, "mode", s->closed ? "closed" : "open");
    if (s->closed)
        cJSON_AddNumberToObject(o, "concurrency", s->concurrency);
    else
        cJSON_AddNumberToObject(o, "rate_per_s", s->rate_per_s);
    cJSON_AddNumberToObject(o, "requests_per_round", s->requests_per_round);
    cJSON_AddBoolToObject(o, "exclusive", s->exclusive);
    cJSON_AddBoolToObject(o, "allow_remote", s->allow_remote);
    return o;
}
