/* loadgen.c - the load generator's set-up and small services (loadgen.h): the config checked and
 * copied, the loopback rule, libcurl's multi handle, readiness probes, open-loop schedules, the
 * names of the error kinds. A round itself is loadgen_round.c. */
#include "arm/service/loadgen_internal.h"

#include "kernel.h"

#include <arpa/inet.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

double kt_lg_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

const char *kt_loadgen_error_name(kt_loadgen_error e)
{
    switch (e) {
    case KT_LOADGEN_OK:
        return "none";
    case KT_LOADGEN_ERR_HTTP:
        return "http";
    case KT_LOADGEN_ERR_TIMEOUT:
        return "timeout";
    case KT_LOADGEN_ERR_CONNECT:
        return "connect";
    case KT_LOADGEN_ERR_BROKEN:
        return "broken-stream";
    case KT_LOADGEN_ERR_CANCELLED:
        return "cancelled";
    case KT_LOADGEN_ERR_OTHER:
        break;
    }
    return "other";
}

/* 'host' without the brackets of an IPv6 literal, into out. */
static void bare_host(const char *host, char *out, size_t cap)
{
    size_t n = strlen(host);
    if (n >= 2 && host[0] == '[' && host[n - 1] == ']')
        snprintf(out, cap, "%.*s", (int)(n - 2), host + 1);
    else
        snprintf(out, cap, "%s", host);
}

static int is_loopback(const char *host)
{
    char h[256];
    bare_host(host, h, sizeof h);
    if (strcasecmp(h, "localhost") == 0 || strcasecmp(h, "localhost.") == 0)
        return 1;
    struct in_addr a4;
    if (inet_pton(AF_INET, h, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    struct in6_addr a6;
    if (inet_pton(AF_INET6, h, &a6) == 1) {
        if (IN6_IS_ADDR_LOOPBACK(&a6))
            return 1;
        return IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127;
    }
    return 0;
}

int kt_loadgen_check_target(const char *host, int allow_remote)
{
    if (!host || !*host)
        return kt_error_code(KT_EINVAL, "the service has no host to send requests to");
    if (strlen(host) >= 256)
        return kt_error_code(KT_EINVAL, "the service host is %zu characters long (at most 255)",
                             strlen(host));
    if (allow_remote || is_loopback(host))
        return 0;
    return kt_error_code(KT_EINVAL,
                         "the service host '%s' is not a loopback address (127.0.0.0/8, ::1, "
                         "localhost): ktrial sends load only to this machine unless the spec "
                         "sets 'allow_remote: true'",
                         host);
}

/* A header line is "Name: value" with no line breaks. */
static int check_header(const char *h)
{
    const char *colon = h ? strchr(h, ':') : NULL;
    if (!colon || colon == h || strpbrk(h, "\r\n"))
        return kt_error_code(KT_EINVAL, "request header '%s' is not one line 'Name: value'",
                             h ? h : "(null)");
    return 0;
}

static int check_config(const kt_loadgen_config *c)
{
    int rc = kt_loadgen_check_target(c->host, c->allow_remote);
    if (rc < 0)
        return rc;
    if (c->port < 1 || c->port > 65535)
        return kt_error_code(KT_EINVAL, "service port %d is not in 1..65535", c->port);
    const char *m = c->method ? c->method : "POST";
    size_t mn = strlen(m);
    if (mn == 0 || mn >= 16 || strspn(m, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != mn)
        return kt_error_code(KT_EINVAL, "request method '%s' is not an HTTP method", m);
    if (!c->path || c->path[0] != '/' || strlen(c->path) >= 1024 || strpbrk(c->path, " \r\n\t"))
        return kt_error_code(KT_EINVAL, "request path '%s' must start with '/', without spaces",
                             c->path ? c->path : "(null)");
    if (c->n_headers < 0 || c->n_headers > KT_LOADGEN_MAX_HEADERS)
        return kt_error_code(KT_EINVAL, "%d request headers (at most %d)", c->n_headers,
                             KT_LOADGEN_MAX_HEADERS);
    for (int i = 0; i < c->n_headers; i++)
        if ((rc = check_header(c->headers[i])) < 0)
            return rc;
    if (c->stream != KT_LOADGEN_STREAM_NONE && c->stream != KT_LOADGEN_STREAM_SSE)
        return kt_error_code(KT_EINVAL, "unknown stream kind %d", (int)c->stream);
    if (c->mode == KT_LOADGEN_CLOSED && c->concurrency < 1)
        return kt_error_code(KT_EINVAL, "closed-loop concurrency %d (at least 1)", c->concurrency);
    if (c->mode != KT_LOADGEN_CLOSED && c->mode != KT_LOADGEN_OPEN)
        return kt_error_code(KT_EINVAL, "unknown load mode %d", (int)c->mode);
    if (c->max_inflight < 0)
        return kt_error_code(KT_EINVAL, "max_inflight %d (0 or more)", c->max_inflight);
    if (!(c->timeout_s > 0) || !isfinite(c->timeout_s) || c->timeout_s > 86400)
        return kt_error_code(KT_EINVAL, "request timeout %g s (more than 0, at most a day)",
                             c->timeout_s);
    return 0;
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;
static void curl_init(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int kt_loadgen_open(const kt_loadgen_config *cfg, kt_loadgen **out)
{
    *out = NULL;
    int rc = check_config(cfg);
    if (rc < 0)
        return rc;
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != CURLE_OK)
        return kt_error_set("libcurl failed to start: %s", curl_easy_strerror(curl_init_rc));
    kt_loadgen *lg = calloc(1, sizeof *lg);
    if (!lg)
        return kt_error_code(KT_ENOMEM, "out of memory for a load generator");
    lg->cfg = *cfg;
    snprintf(lg->host, sizeof lg->host, "%s", cfg->host);
    snprintf(lg->method, sizeof lg->method, "%s", cfg->method ? cfg->method : "POST");
    snprintf(lg->path, sizeof lg->path, "%s", cfg->path);
    lg->cfg.host = lg->host;
    lg->cfg.method = lg->method;
    lg->cfg.path = lg->path;
    if (lg->cfg.max_inflight == 0)
        lg->cfg.max_inflight = KT_LOADGEN_INFLIGHT_DEF;
    if (lg->cfg.max_body_bytes == 0)
        lg->cfg.max_body_bytes = KT_LOADGEN_BODY_DEFAULT;
    int v6 = strchr(lg->host, ':') && lg->host[0] != '[';
    snprintf(lg->base_url, sizeof lg->base_url, "http://%s%s%s:%d", v6 ? "[" : "", lg->host,
             v6 ? "]" : "", cfg->port);
    snprintf(lg->url, sizeof lg->url, "%s%s", lg->base_url, lg->path);

    /* no "Expect: 100-continue" round trip; JSON unless the caller names a Content-Type */
    int has_type = 0;
    struct curl_slist *h = curl_slist_append(NULL, "Expect:");
    for (int i = 0; h && i < cfg->n_headers; i++) {
        lg->header_text[i] = strdup(cfg->headers[i]);
        lg->cfg.headers[i] = lg->header_text[i];
        if (!lg->header_text[i]) {
            curl_slist_free_all(h);
            h = NULL;
            break;
        }
        has_type |= strncasecmp(cfg->headers[i], "content-type:", 13) == 0;
        struct curl_slist *nh = curl_slist_append(h, cfg->headers[i]);
        if (!nh) {
            curl_slist_free_all(h);
            h = NULL;
        }
        h = nh;
    }
    if (h && !has_type) {
        struct curl_slist *nh = curl_slist_append(h, "Content-Type: application/json");
        if (!nh)
            curl_slist_free_all(h);
        h = nh;
    }
    lg->headers = h;
    lg->multi = curl_multi_init();
    if (!h || !lg->multi) {
        kt_loadgen_close(lg);
        return kt_error_code(KT_ENOMEM, "out of memory setting up libcurl");
    }
    long conns = cfg->mode == KT_LOADGEN_CLOSED ? cfg->concurrency : lg->cfg.max_inflight;
    curl_multi_setopt(lg->multi, CURLMOPT_MAXCONNECTS, conns + 4);
    *out = lg;
    return 0;
}

void kt_loadgen_close(kt_loadgen *lg)
{
    if (!lg)
        return;
    for (size_t i = 0; i < lg->n_pool; i++) {
        kt_lg_xfer *x = lg->pool[i];
        if (x->in_use)
            curl_multi_remove_handle(lg->multi, x->easy);
        curl_easy_cleanup(x->easy);
        kt_sse_free(&x->sse);
        free(x);
    }
    free(lg->pool);
    if (lg->multi)
        curl_multi_cleanup(lg->multi);
    curl_slist_free_all(lg->headers);
    for (int i = 0; i < KT_LOADGEN_MAX_HEADERS; i++)
        free(lg->header_text[i]);
    free(lg);
}

static size_t discard(char *p, size_t size, size_t n, void *ctx)
{
    (void)p;
    (void)ctx;
    return size * n;
}

int kt_loadgen_probe(kt_loadgen *lg, const char *path, double timeout_s, long *status)
{
    *status = 0;
    if (!path || path[0] != '/' || strlen(path) >= 1024)
        return kt_error_code(KT_EINVAL, "probe path '%s' must start with '/'",
                             path ? path : "(null)");
    char url[1400];
    snprintf(url, sizeof url, "%s%s", lg->base_url, path);
    CURL *e = curl_easy_init();
    if (!e)
        return kt_error_code(KT_ENOMEM, "out of memory for a probe");
    long ms = timeout_s > 0 ? (long)ceil(timeout_s * 1000) : 1000;
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(e, CURLOPT_PROXY, "");
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, ms);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
    if (curl_easy_perform(e) == CURLE_OK)
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, status);
    curl_easy_cleanup(e);
    return 0;
}

void kt_loadgen_schedule(kt_loadgen_request *requests, size_t n, double rate_per_s, uint64_t seed)
{
    kt_rng rng;
    kt_rng_seed(&rng, seed);
    double t = 0;
    for (size_t i = 0; i < n; i++) {
        if (seed == 0) {
            requests[i].offset_s = (double)i / rate_per_s;
            continue;
        }
        requests[i].offset_s = t;
        t += -log(1.0 - kt_rng_uniform(&rng)) / rate_per_s;
    }
}

void kt_loadgen_records_free(kt_loadgen_record *records, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(records[i].body);
        memset(&records[i], 0, sizeof records[i]);
    }
}
