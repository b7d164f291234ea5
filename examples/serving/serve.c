/* serve.c - kt_serve: a small OpenAI-compatible completions server on libmicrohttpd whose
 * per-token work is this project's decode step (the decoder_layer op's CPU 'layer' variant,
 * attention dense or ffd) on a catalog model's shapes. It is the test server for service
 * trials (issue 40): two builds or two flags of it are the baseline and candidate servers.
 *
 *   kt_serve --port PORT [--host 127.0.0.1] [--attention dense|ffd] [--model NAME]
 *            [--layers N] [--threads N] [--context N] [--max-inflight N] [--seed N]
 *            [--fail-rate P] [--stall-ms N] [--die-after N] [--never-ready]
 *
 * --port 0 takes a free port. It listens on --host (loopback by default), prints
 * "kt_serve: listening on HOST:PORT" on stderr, then prepares the weights and the KV cache
 * (GET /health answers 503 until then, 200 {"status":"ok"} after). POST /v1/completions takes
 * {"prompt", "max_tokens" (16), "stream" (false), "stream_options": {"include_usage"}, "seed"
 * (0)}, all optional; each token is one
 * decode step of --layers blocks over a KV cache of --context tokens (serve_model.h says how
 * the text follows from the outputs). Requests run on libmicrohttpd's thread per connection,
 * each with its own generator (its own cache copy); the weights are shared read-only; over
 * --max-inflight (8) completions at once answer 503; prompt words + max_tokens over --context
 * answer 400. SIGTERM or SIGINT stops it: exit 0.
 *
 * Fault flags, for the tests of service trials:
 *   --fail-rate P   answers 500 to a share P of the completions (draws seeded by --seed)
 *   --stall-ms N    the 10th, 20th, ... completion waits N ms before its first token
 *   --die-after N   exits with status 3 (no cleanup) once N completions were answered in full
 *   --never-ready   /health (and completions) stay 503 after the weights are prepared
 * Exit status: 0 stopped by a signal, 1 a failure (model, port), 2 bad flags, 3 --die-after. */
#include "serve.h"
#include "spec/catalog.h"

#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int usage(const char *why)
{
    if (why)
        fprintf(stderr, "kt_serve: %s\n", why);
    fprintf(stderr, "usage: kt_serve --port PORT [--host 127.0.0.1] [--attention dense|ffd] "
                    "[--model NAME] [--layers N] [--threads N] [--context N] "
                    "[--max-inflight N] [--seed N] [--fail-rate P] [--stall-ms N] "
                    "[--die-after N] [--never-ready]\n");
    return 2;
}

static int parse_flags(kt_serve_opts *o, int argc, char **argv)
{
    *o = (kt_serve_opts){.host = "127.0.0.1",
                         .attention = "dense",
                         .model = "llama-3.2-1b",
                         .port = -1,
                         .layers = 2,
                         .threads = 1,
                         .max_inflight = 8,
                         .context = 1024,
                         .seed = 1};
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (strcmp(f, "--never-ready") == 0) {
            o->never_ready = 1;
            continue;
        }
        if (i + 1 >= argc)
            return usage("a flag lacks its value");
        const char *v = argv[++i];
        char *end = NULL;
        double num = strtod(v, &end);
        int numeric = end != v && *end == '\0';
        if (strcmp(f, "--host") == 0)
            o->host = v;
        else if (strcmp(f, "--attention") == 0)
            o->attention = v;
        else if (strcmp(f, "--model") == 0)
            o->model = v;
        else if (!numeric)
            return usage("a flag is unknown or its value is not a number");
        else if (strcmp(f, "--port") == 0 && num >= 0 && num <= 65535)
            o->port = (int)num;
        else if (strcmp(f, "--layers") == 0 && num >= 1 && num <= 64)
            o->layers = (int)num;
        else if (strcmp(f, "--threads") == 0 && num >= 1 && num <= 256)
            o->threads = (int)num;
        else if (strcmp(f, "--context") == 0 && num >= 1 && num <= 1 << 20)
            o->context = (long)num;
        else if (strcmp(f, "--max-inflight") == 0 && num >= 1 && num <= 1024)
            o->max_inflight = (int)num;
        else if (strcmp(f, "--seed") == 0 && num >= 0)
            o->seed = (uint64_t)num;
        else if (strcmp(f, "--fail-rate") == 0 && num >= 0 && num <= 1)
            o->fail_rate = num;
        else if (strcmp(f, "--stall-ms") == 0 && num >= 0 && num <= 3600e3)
            o->stall_ms = (int)num;
        else if (strcmp(f, "--die-after") == 0 && num >= 1)
            o->die_after = (long)num;
        else
            return usage("a flag is unknown or its value is out of range");
    }
    if (o->port < 0)
        return usage("--port is required (0 takes a free one)");
    if (strcmp(o->attention, "dense") != 0 && strcmp(o->attention, "ffd") != 0)
        return usage("--attention must be dense or ffd");
    return 0;
}

typedef struct prep {
    kt_serve *s;
    kt_model shape;
    int failed;
} prep;

/* The prepare thread: the weights and the cache, then ready (or a SIGTERM to stop on failure). */
static void *prepare(void *arg)
{
    prep *pr = arg;
    kt_serve *s = pr->s;
    if (kt_serve_model_open(&s->model, &pr->shape, s->o.attention, s->o.layers, s->o.threads,
                            s->o.context, s->o.seed) < 0) {
        fprintf(stderr, "kt_serve: cannot prepare the model: %s\n", kt_error_last());
        pr->failed = 1;
        kill(getpid(), SIGTERM);
        return NULL;
    }
    fprintf(stderr, "kt_serve: prepared %s, %d layers, context %ld, attention %s\n", s->o.model,
            s->o.layers, s->o.context, s->o.attention);
    if (s->o.never_ready)
        fprintf(stderr, "kt_serve: --never-ready: /health stays 503\n");
    else
        atomic_store(&s->ready, 1);
    return NULL;
}

static int find_shape(kt_model *out, const char *name)
{
    kt_catalog cat;
    kt_diag diag;
    kt_diag_init(&diag);
    int err = kt_catalog_load(&cat, &diag);
    kt_diag_free(&diag);
    if (err < 0) {
        fprintf(stderr, "kt_serve: cannot load the model catalog\n");
        return 1;
    }
    const kt_model *m = kt_catalog_find(&cat, name);
    if (m)
        *out = *m;
    else
        fprintf(stderr, "kt_serve: no model '%s' in the catalog (experiments/models.yaml)\n", name);
    kt_catalog_free(&cat);
    return m ? 0 : 2;
}

int main(int argc, char **argv)
{
    static kt_serve s;
    int rc = parse_flags(&s.o, argc, argv);
    prep pr;
    memset(&pr, 0, sizeof(pr));
    pr.s = &s;
    if (rc != 0 || (rc = find_shape(&pr.shape, s.o.model)) != 0)
        return rc;
    struct sockaddr_in addr = {0};
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)s.o.port);
    if (inet_pton(AF_INET, s.o.host, &addr.sin_addr) != 1)
        return usage("--host must be an IPv4 address");
    pthread_mutex_init(&s.faults_lock, NULL);
    kt_rng_seed(&s.faults, kt_seed_mix(s.o.seed, 0x6661756c));
    /* every thread started below inherits the mask: the signals reach sigwait alone */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG, 0,
        NULL, NULL, kt_serve_handle, &s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
        MHD_OPTION_NOTIFY_COMPLETED, kt_serve_completed, &s, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)256, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "kt_serve: cannot listen on %s:%d\n", s.o.host, s.o.port);
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    fprintf(stderr, "kt_serve: listening on %s:%u\n", s.o.host,
            info ? (unsigned)info->port : (unsigned)s.o.port);
    pthread_t th;
    if (pthread_create(&th, NULL, prepare, &pr) != 0) {
        fprintf(stderr, "kt_serve: cannot start the prepare thread\n");
        MHD_stop_daemon(d);
        return 1;
    }
    int sig = 0;
    sigwait(&set, &sig);
    atomic_store(&s.stopping, 1);
    pthread_join(th, NULL);
    MHD_stop_daemon(d);
    kt_serve_model_close(&s.model);
    pthread_mutex_destroy(&s.faults_lock);
    if (!pr.failed)
        fprintf(stderr, "kt_serve: stopped by signal %d\n", sig);
    return pr.failed ? 1 : 0;
}
