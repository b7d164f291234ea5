/* test_loadgen_faults.c - the load generator (runner/arm/service/loadgen.h) against a tiny HTTP
 * server in a thread of this test, whose every answer is chosen by the request's body: a JSON
 * answer with usage, an SSE stream, a stream with no [DONE], a stream cut mid-way, a 500, a
 * stall. Checks the error kinds (http, timeout, connect, broken-stream), the SSE timing fields'
 * order, token counts, keep-alive reuse, that open-loop lateness is charged (a stalled request
 * makes the requests scheduled behind it count their wait), closed loop's concurrency, and an
 * interrupted round. Only orders and inequalities of times are asserted, never durations. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "arm/service/loadgen.h"
#include "kernel.h"

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int listen_fd = -1;
static int port;
static int connections; /* accepted so far */
static int inflight, max_inflight_seen;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void send_all(int fd, const char *s, size_t n)
{
    while (n) {
        ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

static void send_str(int fd, const char *s)
{
    send_all(fd, s, strlen(s));
}

static void chunk(int fd, const char *s)
{
    char head[32];
    snprintf(head, sizeof head, "%zx\r\n", strlen(s));
    send_str(fd, head);
    send_str(fd, s);
    send_str(fd, "\r\n");
}

static void sse_head(int fd)
{
    send_str(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                 "Transfer-Encoding: chunked\r\n\r\n");
}

/* Answers one request whose body is 'body'; returns 0 to keep the connection, -1 to close. */
static int answer(int fd, const char *body)
{
    int keep = 0;
    if (strncmp(body, "hold:", 5) == 0) /* past the client's timeout: not counted in flight */
        usleep((useconds_t)atoi(body + 5) * 1000);
    pthread_mutex_lock(&lock);
    if (++inflight > max_inflight_seen)
        max_inflight_seen = inflight;
    pthread_mutex_unlock(&lock);
    if (strncmp(body, "stall:", 6) == 0)
        usleep((useconds_t)atoi(body + 6) * 1000);
    pthread_mutex_lock(&lock); /* out of the count before the client can see the answer */
    inflight--;
    pthread_mutex_unlock(&lock);
    if (strcmp(body, "500") == 0) {
        send_str(fd, "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\n\r\noops");
    } else if (strcmp(body, "sse") == 0 || strcmp(body, "nodone") == 0) {
        sse_head(fd);
        chunk(fd, ": a comment\n\ndata: {\"choices\":[{\"text\":\"a\"}]}\n\n");
        usleep(2000);
        chunk(fd, "data: {\"choices\":[{\"text\":\"b\"}]}\r\n\r\n");
        usleep(2000);
        chunk(fd, "data: {\"choices\":[{\"text\":\"c\"}]}\n\n");
        if (strcmp(body, "sse") == 0)
            chunk(fd, "data: {\"choices\":[],\"usage\":{\"completion_tokens\":3}}\n\ndata: "
                      "[DONE]\n\n");
        send_str(fd, "0\r\n\r\n");
    } else if (strcmp(body, "cut") == 0) {
        sse_head(fd);
        chunk(fd, "data: {\"choices\":[{\"text\":\"a\"}]}\n\n");
        keep = -1; /* closed before the last chunk */
    } else {
        const char *json = "{\"choices\":[{\"text\":\"ok\"}],\"usage\":{\"completion_tokens\":5}}";
        char head[128];
        snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n", strlen(json));
        send_str(fd, head);
        send_str(fd, json);
    }
    return keep;
}

/* One connection: requests with Content-Length bodies, kept alive until the client closes. */
static void *serve_conn(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[8192];
    size_t have = 0;
    for (;;) {
        char *end = NULL;
        while (!(end = memmem(buf, have, "\r\n\r\n", 4))) {
            ssize_t r = recv(fd, buf + have, sizeof buf - have - 1, 0);
            if (r <= 0)
                goto out;
            have += (size_t)r;
        }
        buf[have] = '\0';
        size_t head = (size_t)(end + 4 - buf);
        const char *cl = strcasestr(buf, "content-length:");
        size_t len = cl && cl < end ? (size_t)atol(cl + 15) : 0;
        while (have < head + len) {
            ssize_t r = recv(fd, buf + have, sizeof buf - have - 1, 0);
            if (r <= 0)
                goto out;
            have += (size_t)r;
        }
        char body[256];
        snprintf(body, sizeof body, "%.*s", (int)len, buf + head);
        if (answer(fd, body) < 0)
            break;
        memmove(buf, buf + head + len, have - head - len);
        have -= head + len;
    }
out:
    close(fd);
    return NULL;
}

static void *accept_loop(void *arg)
{
    (void)arg;
    for (;;) {
        int fd = accept(listen_fd, NULL, NULL);
        if (fd < 0)
            return NULL;
        pthread_mutex_lock(&lock);
        connections++;
        pthread_mutex_unlock(&lock);
        pthread_t t;
        pthread_create(&t, NULL, serve_conn, (void *)(intptr_t)fd);
        pthread_detach(t);
    }
}

static int start_server(void **state)
{
    (void)state;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t n = sizeof a;
    listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&a, sizeof a) < 0 ||
        listen(listen_fd, 64) < 0 || getsockname(listen_fd, (struct sockaddr *)&a, &n) < 0)
        return -1;
    port = ntohs(a.sin_port);
    pthread_t t;
    pthread_create(&t, NULL, accept_loop, NULL);
    pthread_detach(t);
    return 0;
}

static kt_loadgen *open_lg(kt_loadgen_stream stream, kt_loadgen_mode mode, int n, double timeout)
{
    kt_loadgen_config c = {.host = "127.0.0.1",
                           .port = port,
                           .path = "/v1/completions",
                           .stream = stream,
                           .mode = mode,
                           .concurrency = n,
                           .max_inflight = n,
                           .timeout_s = timeout};
    kt_loadgen *lg = NULL;
    assert_int_equal(kt_loadgen_open(&c, &lg), 0);
    return lg;
}

static kt_loadgen_request req(const char *body, double offset)
{
    return (kt_loadgen_request){.body = body, .body_len = strlen(body), .offset_s = offset};
}

static void test_sse_fields_and_tokens(void **state)
{
    (void)state;
    kt_loadgen *lg = open_lg(KT_LOADGEN_STREAM_SSE, KT_LOADGEN_CLOSED, 1, 10);
    kt_loadgen_request q[2] = {req("sse", 0), req("nodone", 0)};
    kt_loadgen_record r[2] = {0};
    kt_loadgen_round_info info;
    assert_int_equal(kt_loadgen_round(lg, q, 2, r, &info, NULL), 0);
    assert_int_equal(r[0].error, KT_LOADGEN_OK);
    assert_int_equal(r[0].http_status, 200);
    assert_int_equal(r[0].events, 3); /* the usage-only chunk and [DONE] are not tokens */
    assert_int_equal(r[0].tokens, 3);
    assert_int_equal(r[0].tokens_from, KT_LOADGEN_TOKENS_USAGE);
    assert_true(r[0].scheduled_s <= r[0].sent_s);
    assert_true(r[0].ttft_s > 0 && r[0].ttft_s <= r[0].e2e_s);
    assert_true(r[0].tpot_s > 0 && r[0].tpot_s * 2 <= r[0].e2e_s - r[0].ttft_s + 1e-9);
    assert_non_null(strstr(r[0].body, "data: [DONE]"));
    /* a clean end without [DONE] is a broken stream, its tokens the events */
    assert_int_equal(r[1].error, KT_LOADGEN_ERR_BROKEN);
    assert_string_equal(kt_loadgen_error_name(r[1].error), "broken-stream");
    assert_int_equal(r[1].events, 3);
    assert_int_equal(r[1].tokens_from, KT_LOADGEN_TOKENS_EVENTS);
    /* closed loop: the second was due when the first ended */
    assert_true(r[1].scheduled_s >= r[0].scheduled_s + r[0].e2e_s - 1e-9);
    assert_int_equal(info.completed, 1);
    assert_int_equal(info.failed, 1);
    kt_loadgen_records_free(r, 2);
    kt_loadgen_close(lg);
}

static void test_errors_http_broken_timeout(void **state)
{
    (void)state;
    kt_loadgen *lg = open_lg(KT_LOADGEN_STREAM_SSE, KT_LOADGEN_CLOSED, 1, 0.3);
    kt_loadgen_request q[3] = {req("500", 0), req("cut", 0), req("hold:1500", 0)};
    kt_loadgen_record r[3] = {0};
    assert_int_equal(kt_loadgen_round(lg, q, 3, r, NULL, NULL), 0);
    assert_int_equal(r[0].error, KT_LOADGEN_ERR_HTTP);
    assert_int_equal(r[0].http_status, 500);
    assert_non_null(strstr(r[0].message, "500"));
    assert_int_equal(r[1].error, KT_LOADGEN_ERR_BROKEN);
    assert_int_equal(r[1].events, 1);
    assert_int_equal(r[2].error, KT_LOADGEN_ERR_TIMEOUT);
    assert_true(r[2].e2e_s >= 0.3 - 1e-3); /* bounded from below by its own timeout */
    assert_true(isnan(r[2].ttft_s));
    kt_loadgen_records_free(r, 3);
    kt_loadgen_close(lg);
}

static void test_connect_refused(void **state)
{
    (void)state;
    /* a port that was free a moment ago and has no listener */
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t n = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &n), 0);
    close(fd);
    kt_loadgen_config c = {.host = "localhost",
                           .port = ntohs(a.sin_port),
                           .path = "/",
                           .mode = KT_LOADGEN_CLOSED,
                           .concurrency = 1,
                           .timeout_s = 5};
    kt_loadgen *lg = NULL;
    assert_int_equal(kt_loadgen_open(&c, &lg), 0);
    kt_loadgen_request q = req("x", 0);
    kt_loadgen_record r = {0};
    assert_int_equal(kt_loadgen_round(lg, &q, 1, &r, NULL, NULL), 0);
    assert_int_equal(r.error, KT_LOADGEN_ERR_CONNECT);
    assert_int_equal(r.http_status, 0);
    long status = -1;
    assert_int_equal(kt_loadgen_probe(lg, "/health", 1, &status), 0);
    assert_int_equal(status, 0);
    kt_loadgen_records_free(&r, 1);
    kt_loadgen_close(lg);
}

/* Open loop with one request allowed out at a time: the stalled second request holds back the
 * three scheduled behind it, and each of their e2e reaches back to its scheduled time. A
 * generator that timed from the actual send would report them as fast as the first. */
static void test_open_loop_charges_lateness(void **state)
{
    (void)state;
    kt_loadgen *lg = open_lg(KT_LOADGEN_STREAM_NONE, KT_LOADGEN_OPEN, 1, 10);
    kt_loadgen_request q[5] = {req("ok", 0), req("stall:400", 0.01), req("ok", 0.02),
                               req("ok", 0.03), req("ok", 0.04)};
    kt_loadgen_record r[5] = {0};
    assert_int_equal(kt_loadgen_round(lg, q, 5, r, NULL, NULL), 0);
    double stall_end = r[1].scheduled_s + r[1].e2e_s;
    for (int i = 0; i < 5; i++) {
        assert_int_equal(r[i].error, KT_LOADGEN_OK);
        assert_int_equal(r[i].tokens, 5);
        assert_int_equal(r[i].tokens_from, KT_LOADGEN_TOKENS_USAGE);
        assert_true(r[i].scheduled_s == q[i].offset_s);
        assert_true(r[i].ttft_s <= r[i].e2e_s);
    }
    for (int i = 2; i < 5; i++) {
        assert_true(r[i].sent_s >= stall_end - 1e-6);
        assert_true(r[i].e2e_s >= stall_end - r[i].scheduled_s);
        assert_true(r[i].e2e_s > r[0].e2e_s);
    }
    kt_loadgen_records_free(r, 5);
    kt_loadgen_close(lg);
}

/* Closed loop keeps N out at once, over kept-alive connections reused across rounds. */
static void test_closed_loop_concurrency_and_reuse(void **state)
{
    (void)state;
    kt_loadgen *lg = open_lg(KT_LOADGEN_STREAM_NONE, KT_LOADGEN_CLOSED, 3, 10);
    kt_loadgen_request q[9];
    for (int i = 0; i < 9; i++)
        q[i] = req("stall:30", 0), q[i].task = i % 2;
    kt_loadgen_record r[9] = {0};
    pthread_mutex_lock(&lock);
    int before = connections;
    max_inflight_seen = 0;
    pthread_mutex_unlock(&lock);
    for (int round = 0; round < 2; round++) {
        kt_loadgen_round_info info;
        assert_int_equal(kt_loadgen_round(lg, q, 9, r, &info, NULL), 0);
        assert_int_equal(info.completed, 9);
        assert_int_equal(info.tokens, 45);
        for (int i = 0; i < 9; i++) {
            assert_int_equal(r[i].task, i % 2);
            assert_true(r[i].scheduled_s <= r[i].sent_s);
        }
        /* three due at the start, each later one when an earlier one ended */
        for (int i = 0; i < 3; i++)
            assert_true(r[i].scheduled_s == 0);
        for (int i = 3; i < 9; i++) {
            int freed_by_earlier = 0;
            for (int j = 0; j < i; j++)
                freed_by_earlier |= r[j].scheduled_s + r[j].e2e_s <= r[i].scheduled_s + 1e-9;
            assert_true(freed_by_earlier && r[i].scheduled_s > 0);
        }
    }
    pthread_mutex_lock(&lock);
    assert_true(max_inflight_seen >= 1 && max_inflight_seen <= 3);
    assert_true(connections - before <= 3); /* 18 requests, at most one connection per slot */
    pthread_mutex_unlock(&lock);
    kt_loadgen_records_free(r, 9);
    kt_loadgen_close(lg);
}

static void test_interrupted_round(void **state)
{
    (void)state;
    kt_loadgen *lg = open_lg(KT_LOADGEN_STREAM_NONE, KT_LOADGEN_OPEN, 4, 10);
    kt_loadgen_request q[3] = {req("ok", 0), req("ok", 0), req("ok", 60)};
    kt_loadgen_record r[3] = {0};
    volatile sig_atomic_t stop = 1;
    kt_loadgen_round_info info;
    assert_int_equal(kt_loadgen_round(lg, q, 3, r, &info, &stop), 0);
    assert_int_equal(info.interrupted, 1);
    for (int i = 0; i < 3; i++)
        assert_int_equal(r[i].error, KT_LOADGEN_ERR_CANCELLED);
    kt_loadgen_records_free(r, 3);
    kt_loadgen_close(lg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sse_fields_and_tokens),
        cmocka_unit_test(test_errors_http_broken_timeout),
        cmocka_unit_test(test_connect_refused),
        cmocka_unit_test(test_open_loop_charges_lateness),
        cmocka_unit_test(test_closed_loop_concurrency_and_reuse),
        cmocka_unit_test(test_interrupted_round),
    };
    return cmocka_run_group_tests(tests, start_server, NULL);
}
