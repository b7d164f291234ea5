/* serve.h - kt_serve's shared state between its main (serve.c: flags, daemon, signals) and its
 * request handler (serve_http.c: routes, completions, SSE). The model is read-only once 'ready'
 * is set; counters are atomic; the fault draws are under 'faults_lock'. */
#ifndef KT_SERVE_H
#define KT_SERVE_H

#include "serve_model.h"

#include <microhttpd.h>
#include <stdatomic.h>

typedef struct kt_serve_opts {
    const char *host, *attention, *model;
    int port, layers, threads, max_inflight, stall_ms, never_ready;
    long context, die_after;
    double fail_rate;
    uint64_t seed;
} kt_serve_opts;

typedef struct kt_serve {
    kt_serve_opts o;
    kt_serve_model model;
    atomic_int ready;    /* the weights and cache are prepared (never set with --never-ready) */
    atomic_int stopping; /* SIGTERM/SIGINT: generation loops stop at their next token */
    atomic_int inflight; /* completions being answered */
    atomic_long done;    /* completions answered 200 in full (--die-after) */
    pthread_mutex_t faults_lock;
    kt_rng faults;   /* --fail-rate draws, seeded by --seed */
    long started;    /* completions accepted, numbering them for --stall-ms */
    atomic_long ids; /* response ids */
} kt_serve;

/* libmicrohttpd's access handler and request-completed callback; 'cls' is the kt_serve. */
enum MHD_Result kt_serve_handle(void *cls, struct MHD_Connection *c, const char *url,
                                const char *method, const char *version, const char *upload,
                                size_t *upload_size, void **con_cls);
void kt_serve_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                        enum MHD_RequestTerminationCode toe);

#endif
