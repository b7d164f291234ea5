/* bench_loadgen.c - the service trials' load generator (runner/arm/service/loadgen.h) alone,
 * against one running server, in closed or open loop: what bench_service_wrk.sh compares with
 * wrk. Sends one round of --requests requests (after --warmup untimed ones on the same
 * connections), or as many as complete within --duration seconds (then the requests still out
 * are cut and not counted, as wrk -d counts; --requests, 10000 by default then, must be more than
 * the window holds), and prints one line of key=value figures:
 *
 *   loadgen mode=closed concurrency=4 requests=200 completed=200 errors=0 duration_s=...
 *           rate_per_s=... p50_ms=... p90_ms=... p99_ms=... mean_ms=... tokens_per_s=...
 *
 * Latencies are e2e from each request's scheduled send (closed loop: when its slot freed);
 * --raw FILE also writes each successful request's e2e in microseconds, one a line.
 *
 * usage: bench_loadgen --port N [--host H] [--method M] [--path P] [--body JSON] [--stream
 * none|sse]
 *                      [--concurrency N | --rate R] [--requests N | --duration S] [--warmup N]
 *                      [--timeout S] [--raw FILE] */
#include "arm/service/loadgen.h"
#include "bench/bench_common.h"
#include "kernel.h"

#include <math.h>
#include <signal.h>
#include <sys/time.h>

static volatile sig_atomic_t window_over;

static void on_alarm(int sig)
{
    (void)sig;
    window_over = 1;
}

static double quantile(const double *sorted, int n, double q)
{
    if (n == 0)
        return NAN;
    double pos = q * (n - 1);
    int lo = (int)floor(pos);
    int hi = lo + 1 < n ? lo + 1 : lo;
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

static int usage(void)
{
    fprintf(stderr,
            "usage: bench_loadgen --port N [--host H] [--method M] [--path P] [--body JSON] "
            "[--stream none|sse] [--concurrency N | --rate R] "
            "[--requests N | --duration S] [--warmup N] [--timeout S] [--raw FILE]\n");
    return 2;
}

int main(int argc, char **argv)
{
    kt_loadgen_config c = {.host = "127.0.0.1",
                           .path = "/v1/completions",
                           .mode = KT_LOADGEN_CLOSED,
                           .concurrency = 1,
                           .timeout_s = 60};
    const char *body = "{\"prompt\": \"measure the kernel inside the server\", "
                       "\"max_tokens\": 16, \"seed\": 1}";
    const char *raw = NULL;
    int n = -1, warmup = -1;
    double rate = 0, duration = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            return usage();
        i++;
        if (strcmp(a, "--port") == 0)
            c.port = atoi(v);
        else if (strcmp(a, "--host") == 0)
            c.host = v;
        else if (strcmp(a, "--method") == 0)
            c.method = v;
        else if (strcmp(a, "--path") == 0)
            c.path = v;
        else if (strcmp(a, "--body") == 0)
            body = v;
        else if (strcmp(a, "--stream") == 0)
            c.stream = strcmp(v, "sse") == 0 ? KT_LOADGEN_STREAM_SSE : KT_LOADGEN_STREAM_NONE;
        else if (strcmp(a, "--concurrency") == 0)
            c.concurrency = atoi(v);
        else if (strcmp(a, "--rate") == 0)
            rate = atof(v), c.mode = KT_LOADGEN_OPEN;
        else if (strcmp(a, "--requests") == 0)
            n = atoi(v);
        else if (strcmp(a, "--duration") == 0)
            duration = atof(v);
        else if (strcmp(a, "--warmup") == 0)
            warmup = atoi(v);
        else if (strcmp(a, "--raw") == 0)
            raw = v;
        else if (strcmp(a, "--timeout") == 0)
            c.timeout_s = atof(v);
        else
            return usage();
    }
    if (n < 0) /* a window's requests are at most this many */
        n = duration > 0 ? 10000 : 100;
    if (n < 1 || (c.mode == KT_LOADGEN_OPEN && !(rate > 0)))
        return usage();
    if (warmup < 0)
        warmup = c.concurrency; /* opens the connections before the timed round */
    kt_loadgen *lg = NULL;
    if (kt_loadgen_open(&c, &lg) < 0) {
        fprintf(stderr, "bench_loadgen: %s\n", kt_error_last());
        return 1;
    }
    int total = n > warmup ? n : warmup;
    kt_loadgen_request *q = calloc((size_t)total, sizeof *q);
    kt_loadgen_record *r = calloc((size_t)total, sizeof *r);
    memset(r, 0, (size_t)total * sizeof *r); /* touched now, not in the window */
    double *e2e = calloc((size_t)total, sizeof *e2e);
    for (int i = 0; i < total; i++)
        q[i] = (kt_loadgen_request){.body = body, .body_len = strlen(body)}; /* "": none */
    if (c.mode == KT_LOADGEN_OPEN)
        kt_loadgen_schedule(q, (size_t)n, rate, 0);
    kt_loadgen_round_info info;
    if (warmup > 0 && kt_loadgen_round(lg, q, (size_t)warmup, r, &info, NULL) < 0) {
        fprintf(stderr, "bench_loadgen: %s\n", kt_error_last());
        return 1;
    }
    double t0 = now_s();
    if (duration > 0) { /* the window starts with the round */
        struct sigaction sa = {.sa_handler = on_alarm};
        sigaction(SIGALRM, &sa, NULL);
        struct itimerval it = {
            .it_value = {(time_t)duration, (suseconds_t)((duration - floor(duration)) * 1e6)}};
        setitimer(ITIMER_REAL, &it, NULL);
    }
    if (kt_loadgen_round(lg, q, (size_t)n, r, &info, &window_over) < 0) {
        fprintf(stderr, "bench_loadgen: %s\n", kt_error_last());
        return 1;
    }
    int ok = 0;
    double sum = 0;
    /* the rate's window: the round's own span, or from the round's start (after it set up its
     * records) to the window's end, when the requests still out were cut (as wrk -d) */
    double window = duration > 0 ? now_s() - info.start_s : info.duration_s;
    fprintf(stderr, "bench_loadgen: the round set itself up in %.3f s (not in the window)\n",
            info.start_s - t0);
    if (duration > 0 && !info.interrupted) {
        fprintf(stderr,
                "bench_loadgen: all %d requests ended within the %g s window: raise "
                "--requests\n",
                n, duration);
        return 1;
    }
    int cut = 0;
    for (int i = 0; i < n; i++) {
        if (duration > 0 && r[i].error == KT_LOADGEN_ERR_CANCELLED) {
            cut++; /* out (or not yet sent) when the window closed */
            continue;
        }
        if (r[i].error != KT_LOADGEN_OK) {
            fprintf(stderr, "bench_loadgen: request %d: %s: %s\n", i,
                    kt_loadgen_error_name(r[i].error), r[i].message);
            continue;
        }
        e2e[ok++] = r[i].e2e_s * 1e3;
        sum += r[i].e2e_s * 1e3;
    }
    FILE *f = raw ? fopen(raw, "w") : NULL;
    if (raw && !f) {
        perror(raw);
        return 1;
    }
    for (int i = 0; f && i < ok; i++)
        fprintf(f, "%.1f\n", e2e[i] * 1e3);
    if (f)
        fclose(f);
    qsort(e2e, (size_t)ok, sizeof *e2e, cmp_double);
    n -= cut;
    printf("loadgen mode=%s concurrency=%d rate=%g requests=%d completed=%d errors=%d "
           "duration_s=%.3f rate_per_s=%.3f p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f mean_ms=%.3f "
           "tokens_per_s=%.2f\n",
           c.mode == KT_LOADGEN_OPEN ? "open" : "closed", c.concurrency, rate, n, ok, n - ok,
           window, ok / window, quantile(e2e, ok, 0.5), quantile(e2e, ok, 0.9),
           quantile(e2e, ok, 0.99), ok ? sum / ok : NAN, info.tokens / window);
    kt_loadgen_records_free(r, (size_t)total);
    kt_loadgen_close(lg);
    free(q);
    free(r);
    free(e2e);
    return ok == n ? 0 : 1;
}
