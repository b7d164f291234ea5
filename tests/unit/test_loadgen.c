/* test_loadgen.c - the load generator (runner/arm/service/loadgen.h) against the real example
 * server, examples/serving's kt_serve ($KT_BUILD_DIR/kt_serve, started here on free loopback
 * ports with a small model): its SSE stream (one event per token, the usage chunk, [DONE]) and
 * its JSON answer give ordered timing fields and the right token counts, --fail-rate 1 gives
 * errors of kind http, and --stall-ms past the request timeout an error of kind timeout on
 * exactly the stalled (10th) request; readiness probes answer 200. Skips (77) where kt_serve
 * was not built. Only orders of times are asserted, never durations. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "arm/service/loadgen.h"
#include "kernel.h"

#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

typedef struct server {
    pid_t pid;
    int port;
    char log[64];
} server;

enum { PLAIN, FAILING, STALLING, N_SERVERS };
static server servers[N_SERVERS];
static char serve_path[4096];

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Starts kt_serve with 'extra' flags; its stderr goes to a file, read for the port. */
static int start(server *s, const char *extra1, const char *extra2)
{
    snprintf(s->log, sizeof s->log, "/tmp/kt_test_loadgen_XXXXXX");
    int fd = mkstemp(s->log);
    if (fd < 0)
        return -1;
    close(fd);
    char *argv[] = {serve_path, "--port",    "0",  "--model",      "qwen2.5-0.5b", "--layers",
                    "1",        "--context", "64", (char *)extra1, (char *)extra2, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 2, s->log, O_WRONLY | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    int rc = posix_spawn(&s->pid, serve_path, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    return rc == 0 ? 0 : -1;
}

/* Reads the port from the server's "listening on" line. */
static int wait_port(server *s)
{
    for (int i = 0; i < 1200 && !s->port; i++) { /* up to 2 minutes on a loaded machine */
        char text[4096] = "";
        FILE *f = fopen(s->log, "r");
        size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
        if (f)
            fclose(f);
        text[n] = '\0';
        const char *at = strstr(text, "listening on 127.0.0.1:");
        if (at)
            s->port = atoi(at + strlen("listening on 127.0.0.1:"));
        else
            sleep_ms(100);
    }
    return s->port ? 0 : -1;
}

static kt_loadgen *open_lg(const server *s, kt_loadgen_stream stream, int conc, double timeout)
{
    kt_loadgen_config c = {.host = "127.0.0.1",
                           .port = s->port,
                           .path = "/v1/completions",
                           .stream = stream,
                           .mode = KT_LOADGEN_CLOSED,
                           .concurrency = conc,
                           .timeout_s = timeout};
    kt_loadgen *lg = NULL;
    assert_int_equal(kt_loadgen_open(&c, &lg), 0);
    return lg;
}

/* Polls /health until 200 (kt_serve answers 503 while it prepares). */
static int wait_ready(const server *s)
{
    kt_loadgen_config c = {.host = "localhost",
                           .port = s->port,
                           .path = "/health",
                           .mode = KT_LOADGEN_CLOSED,
                           .concurrency = 1,
                           .timeout_s = 5};
    kt_loadgen *lg = NULL;
    if (kt_loadgen_open(&c, &lg) < 0)
        return -1;
    long status = 0;
    for (int i = 0; i < 1200 && status != 200; i++) {
        if (kt_loadgen_probe(lg, "/health", 5, &status) < 0)
            break;
        if (status != 200)
            sleep_ms(100);
    }
    kt_loadgen_close(lg);
    return status == 200 ? 0 : -1;
}

static int stop_all(void **state)
{
    (void)state;
    for (int i = 0; i < N_SERVERS; i++) {
        if (servers[i].pid > 0) {
            kill(servers[i].pid, SIGTERM);
            waitpid(servers[i].pid, NULL, 0);
        }
        if (servers[i].log[0])
            unlink(servers[i].log);
    }
    return 0;
}

static int start_all(void **state)
{
    if (start(&servers[PLAIN], NULL, NULL) < 0 ||
        start(&servers[FAILING], "--fail-rate", "1") < 0 ||
        start(&servers[STALLING], "--stall-ms", "2500") < 0)
        goto fail;
    for (int i = 0; i < N_SERVERS; i++) /* the three prepare at once */
        if (wait_port(&servers[i]) < 0 || wait_ready(&servers[i]) < 0)
            goto fail;
    return 0;
fail:
    fprintf(stderr, "kt_serve did not start or get ready\n");
    stop_all(state);
    return -1;
}

static const char SSE_USAGE[] =
    "{\"prompt\": \"hello server\", \"max_tokens\": 5, \"stream\": true,"
    " \"stream_options\": {\"include_usage\": true}}";
static const char SSE_PLAIN[] =
    "{\"prompt\": \"hello server\", \"max_tokens\": 6, \"stream\": true}";
static const char JSON_3[] = "{\"prompt\": \"hello server\", \"max_tokens\": 3}";

static kt_loadgen_request req(const char *body)
{
    return (kt_loadgen_request){.body = body, .body_len = strlen(body)};
}

static void test_sse_stream_of_the_example_server(void **state)
{
    (void)state;
    kt_loadgen *lg = open_lg(&servers[PLAIN], KT_LOADGEN_STREAM_SSE, 2, 60);
    kt_loadgen_request q[4] = {req(SSE_USAGE), req(SSE_PLAIN), req(SSE_USAGE), req(SSE_PLAIN)};
    kt_loadgen_record r[4] = {0};
    kt_loadgen_round_info info;
    assert_int_equal(kt_loadgen_round(lg, q, 4, r, &info, NULL), 0);
    assert_int_equal(info.completed, 4);
    assert_int_equal(info.tokens, 5 + 6 + 5 + 6);
    for (int i = 0; i < 4; i++) {
        int usage = i % 2 == 0;
        assert_int_equal(r[i].error, KT_LOADGEN_OK);
        assert_int_equal(r[i].http_status, 200);
        assert_int_equal(r[i].events, usage ? 5 : 6); /* the usage chunk is not a token */
        assert_int_equal(r[i].tokens, r[i].events);
        assert_int_equal(r[i].tokens_from,
                         usage ? KT_LOADGEN_TOKENS_USAGE : KT_LOADGEN_TOKENS_EVENTS);
        assert_true(r[i].scheduled_s <= r[i].sent_s);
        assert_true(r[i].ttft_s <= r[i].e2e_s);
        assert_true(r[i].tpot_s >= 0 && !isnan(r[i].tpot_s));
        assert_true(r[i].tpot_s * (double)(r[i].events - 1) <= r[i].e2e_s - r[i].ttft_s + 1e-9);
        assert_non_null(strstr(r[i].body, "data: [DONE]"));
    }
    kt_loadgen_records_free(r, 4);
    kt_loadgen_close(lg);
}

static void test_json_answer_of_the_example_server(void **state)
{
    (void)state;
    kt_loadgen *lg = open_lg(&servers[PLAIN], KT_LOADGEN_STREAM_NONE, 1, 60);
    kt_loadgen_request q[2] = {req(JSON_3), req(JSON_3)};
    kt_loadgen_record r[2] = {0};
    assert_int_equal(kt_loadgen_round(lg, q, 2, r, NULL, NULL), 0);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(r[i].error, KT_LOADGEN_OK);
        assert_int_equal(r[i].tokens, 3);
        assert_int_equal(r[i].tokens_from, KT_LOADGEN_TOKENS_USAGE);
        assert_int_equal(r[i].events, 0);
        assert_true(r[i].ttft_s <= r[i].e2e_s);
        assert_true(isnan(r[i].tpot_s));
        assert_non_null(strstr(r[i].body, "\"choices\""));
    }
    /* the same prompt and seed: the same text */
    assert_string_equal(r[0].body + strcspn(r[0].body, "["), r[1].body + strcspn(r[1].body, "["));
    kt_loadgen_records_free(r, 2);
    kt_loadgen_close(lg);
}

static void test_server_errors_are_http(void **state)
{
    (void)state;
    kt_loadgen *lg = open_lg(&servers[FAILING], KT_LOADGEN_STREAM_SSE, 1, 60);
    kt_loadgen_request q[3] = {req(SSE_PLAIN), req(SSE_PLAIN), req(SSE_PLAIN)};
    kt_loadgen_record r[3] = {0};
    kt_loadgen_round_info info;
    assert_int_equal(kt_loadgen_round(lg, q, 3, r, &info, NULL), 0);
    assert_int_equal(info.failed, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(r[i].error, KT_LOADGEN_ERR_HTTP);
        assert_int_equal(r[i].http_status, 500);
        assert_string_equal(kt_loadgen_error_name(r[i].error), "http");
    }
    kt_loadgen_records_free(r, 3);
    kt_loadgen_close(lg);
}

/* kt_serve --stall-ms stalls its 10th completion before the first token: with a timeout well
 * under the stall, that request and no other ends as a timeout. */
static void test_stall_past_the_timeout(void **state)
{
    (void)state;
    kt_loadgen *lg = open_lg(&servers[STALLING], KT_LOADGEN_STREAM_SSE, 1, 1.0);
    kt_loadgen_request q[11];
    for (int i = 0; i < 11; i++)
        q[i] = req(SSE_PLAIN);
    kt_loadgen_record r[11] = {0};
    assert_int_equal(kt_loadgen_round(lg, q, 11, r, NULL, NULL), 0);
    for (int i = 0; i < 11; i++)
        assert_int_equal(r[i].error, i == 9 ? KT_LOADGEN_ERR_TIMEOUT : KT_LOADGEN_OK);
    assert_int_equal(r[9].events, 0);
    assert_true(isnan(r[9].ttft_s));
    assert_true(r[9].e2e_s >= 1.0 - 1e-3);
    assert_true(r[10].scheduled_s >= r[9].scheduled_s + r[9].e2e_s - 1e-9);
    kt_loadgen_records_free(r, 11);
    kt_loadgen_close(lg);
}

int main(void)
{
    const char *build = getenv("KT_BUILD_DIR");
    snprintf(serve_path, sizeof serve_path, "%s/kt_serve", build ? build : "");
    if (!build || access(serve_path, X_OK) != 0) {
        printf("skipping: no kt_serve in $KT_BUILD_DIR (libmicrohttpd-dev is missing)\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sse_stream_of_the_example_server),
        cmocka_unit_test(test_json_answer_of_the_example_server),
        cmocka_unit_test(test_server_errors_are_http),
        cmocka_unit_test(test_stall_past_the_timeout),
    };
    return cmocka_run_group_tests(tests, start_all, stop_all);
}
