/* test_loadgen_sse.c - the load generator's pure parts: the SSE parser (events cut at every
 * byte, CRLF and CR line ends, comments and other fields skipped, multi-line data, a last event
 * without its blank line, [DONE]), the loopback rule of targets, the checks of a config, the
 * open-loop schedules (evenly spaced, and seeded Poisson arrivals the same every time) and the
 * error kinds' names. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "arm/service/loadgen.h"
#include "arm/service/loadgen_sse.h"
#include "kernel.h"

#include <math.h>
#include <string.h>

typedef struct events {
    char all[1024]; /* the events' data, each followed by '|' */
    int n;
} events;

static int collect(void *ctx, const char *data, size_t len)
{
    events *e = ctx;
    assert_int_equal(strlen(data), len); /* NUL-terminated at len */
    strncat(e->all, data, sizeof e->all - strlen(e->all) - 2);
    strcat(e->all, "|");
    e->n++;
    return 0;
}

static const char STREAM[] = ": keep-alive comment\n"
                             "event: completion\n"
                             "data: {\"t\":\"a\"}\n\n"
                             "data:{\"t\":\"b\"}\r\n\r\n"
                             "id: 7\rdata: line1\rdata: line2\r\r"
                             "data\n\n"
                             "retry: 10\n\n"
                             "data: [DONE]\n\n";
static const char EXPECT[] = "{\"t\":\"a\"}|{\"t\":\"b\"}|line1\nline2||[DONE]|";

/* The same events whatever the cut of the bytes: whole, one byte at a time, and in two at
 * every position. */
static void test_sse_events_whatever_the_cuts(void **state)
{
    (void)state;
    size_t n = strlen(STREAM);
    for (size_t cut = 0; cut <= n + 1; cut++) {
        events e = {0};
        kt_sse_parser p;
        kt_sse_init(&p, collect, &e);
        if (cut == n + 1) {
            for (size_t i = 0; i < n; i++)
                assert_int_equal(kt_sse_feed(&p, STREAM + i, 1), 0);
        } else {
            assert_int_equal(kt_sse_feed(&p, STREAM, cut), 0);
            assert_int_equal(kt_sse_feed(&p, STREAM + cut, n - cut), 0);
        }
        assert_int_equal(kt_sse_finish(&p), 0);
        assert_string_equal(e.all, EXPECT);
        assert_int_equal(e.n, 5);
        kt_sse_free(&p);
    }
}

static void test_sse_last_event_without_blank_line(void **state)
{
    (void)state;
    events e = {0};
    kt_sse_parser p;
    kt_sse_init(&p, collect, &e);
    assert_int_equal(kt_sse_feed(&p, "data: one\n\ndata: two", 20), 0);
    assert_int_equal(e.n, 1);
    assert_int_equal(kt_sse_finish(&p), 0);
    assert_string_equal(e.all, "one|two|");
    kt_sse_free(&p);
    assert_true(kt_sse_is_done("[DONE]", 6));
    assert_false(kt_sse_is_done("[DONE] ", 7));
    assert_false(kt_sse_is_done("{\"done\":1}", 10));
}

static int stop_at_second(void *ctx, const char *data, size_t len)
{
    (void)data;
    (void)len;
    return ++*(int *)ctx == 2 ? 42 : 0;
}

static void test_sse_callback_stops_the_parser(void **state)
{
    (void)state;
    int seen = 0;
    kt_sse_parser p;
    kt_sse_init(&p, stop_at_second, &seen);
    const char *s = "data: 1\n\ndata: 2\n\ndata: 3\n\n";
    assert_int_equal(kt_sse_feed(&p, s, strlen(s)), 42);
    assert_int_equal(seen, 2);
    kt_sse_free(&p);
}

static void test_targets_loopback_only(void **state)
{
    (void)state;
    const char *local[] = {"127.0.0.1", "127.1.2.3", "localhost",       "LocalHost",
                           "::1",       "[::1]",     "::ffff:127.0.0.1"};
    for (size_t i = 0; i < sizeof local / sizeof *local; i++)
        assert_int_equal(kt_loadgen_check_target(local[i], 0), 0);
    const char *remote[] = {"10.0.0.1", "192.168.1.5",           "example.com", "128.0.0.1",
                            "::2",      "localhost.example.com", "0.0.0.0"};
    for (size_t i = 0; i < sizeof remote / sizeof *remote; i++) {
        assert_int_equal(kt_loadgen_check_target(remote[i], 0), KT_EINVAL);
        assert_non_null(strstr(kt_error_last(), remote[i]));
        assert_non_null(strstr(kt_error_last(), "allow_remote: true"));
        assert_int_equal(kt_loadgen_check_target(remote[i], 1), 0);
    }
    assert_int_equal(kt_loadgen_check_target("", 1), KT_EINVAL);
    /* a generator is never opened for a remote host without allow_remote */
    kt_loadgen_config c = {.host = "10.1.2.3", .port = 80, .path = "/", .timeout_s = 1};
    kt_loadgen *lg = (kt_loadgen *)&c;
    assert_int_equal(kt_loadgen_open(&c, &lg), KT_EINVAL);
    assert_null(lg);
    c.allow_remote = 1;
    assert_int_equal(kt_loadgen_open(&c, &lg), 0); /* no connection is made by open */
    kt_loadgen_close(lg);
}

static void test_config_checks(void **state)
{
    (void)state;
    kt_loadgen_config ok = {.host = "127.0.0.1",
                            .port = 8080,
                            .path = "/v1/completions",
                            .mode = KT_LOADGEN_CLOSED,
                            .concurrency = 2,
                            .timeout_s = 5,
                            .n_headers = 1,
                            .headers = {"Authorization: Bearer x"}};
    kt_loadgen *lg = NULL;
    assert_int_equal(kt_loadgen_open(&ok, &lg), 0);
    kt_loadgen_close(lg);
    struct {
        kt_loadgen_config c;
        const char *words;
    } bad[] = {
        {ok, "port"},    {ok, "path"},   {ok, "path"},   {ok, "concurrency"},
        {ok, "timeout"}, {ok, "method"}, {ok, "header"}, {ok, "timeout"},
    };
    bad[0].c.port = 70000;
    bad[1].c.path = "v1";
    bad[2].c.path = "/a b";
    bad[3].c.concurrency = 0;
    bad[4].c.timeout_s = 0;
    bad[5].c.method = "get";
    bad[6].c.headers[0] = "no colon";
    bad[7].c.timeout_s = NAN;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        lg = NULL;
        assert_int_equal(kt_loadgen_open(&bad[i].c, &lg), KT_EINVAL);
        assert_null(lg);
        assert_non_null(strstr(kt_error_last(), bad[i].words));
    }
}

static void test_schedules(void **state)
{
    (void)state;
    kt_loadgen_request a[200], b[200];
    kt_loadgen_schedule(a, 4, 20, 0);
    for (int i = 0; i < 4; i++)
        assert_true(fabs(a[i].offset_s - i * 0.05) < 1e-12);
    kt_loadgen_schedule(a, 200, 20, 7);
    kt_loadgen_schedule(b, 200, 20, 7);
    double gaps = 0;
    assert_true(a[0].offset_s == 0);
    for (int i = 1; i < 200; i++) {
        assert_true(a[i].offset_s == b[i].offset_s); /* the same every round */
        assert_true(a[i].offset_s >= a[i - 1].offset_s);
        gaps += a[i].offset_s - a[i - 1].offset_s;
    }
    /* mean gap 1/20 s: 199 exponential gaps have a standard error of about 7% */
    assert_true(fabs(gaps / 199 - 0.05) < 0.05 * 0.35);
    kt_loadgen_schedule(b, 200, 20, 8);
    assert_true(b[5].offset_s != a[5].offset_s);
}

static void test_error_names(void **state)
{
    (void)state;
    assert_string_equal(kt_loadgen_error_name(KT_LOADGEN_OK), "none");
    assert_string_equal(kt_loadgen_error_name(KT_LOADGEN_ERR_HTTP), "http");
    assert_string_equal(kt_loadgen_error_name(KT_LOADGEN_ERR_TIMEOUT), "timeout");
    assert_string_equal(kt_loadgen_error_name(KT_LOADGEN_ERR_CONNECT), "connect");
    assert_string_equal(kt_loadgen_error_name(KT_LOADGEN_ERR_BROKEN), "broken-stream");
    assert_string_equal(kt_loadgen_error_name(KT_LOADGEN_ERR_CANCELLED), "cancelled");
    assert_string_equal(kt_loadgen_error_name(KT_LOADGEN_ERR_OTHER), "other");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sse_events_whatever_the_cuts),
        cmocka_unit_test(test_sse_last_event_without_blank_line),
        cmocka_unit_test(test_sse_callback_stops_the_parser),
        cmocka_unit_test(test_targets_loopback_only),
        cmocka_unit_test(test_config_checks),
        cmocka_unit_test(test_schedules),
        cmocka_unit_test(test_error_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
