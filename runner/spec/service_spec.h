/* service_spec.h - the parts of a spec only op 'service' has: tasks (request bodies), each
 * arm's server (setup argv with '{port}', ready probe, teardown), the request, the load, the
 * metric, and whether servers run one at a time. The schema has checked the shapes; this layer
 * checks what the schema cannot (placeholders, a metric that needs a stream, a load mode
 * without its rate or concurrency) with file:line:col errors. */
#ifndef KT_SERVICE_SPEC_H
#define KT_SERVICE_SPEC_H

#include "spec/command_spec.h"
#include "util/diag.h"

#include <stddef.h>

struct kt_node;
struct cJSON;

#define KT_SERVICE_DEFAULT_READY_S   60.0
#define KT_SERVICE_DEFAULT_TIMEOUT_S 30.0
#define KT_SERVICE_DEFAULT_ROUND     20

typedef enum { KT_SERVICE_E2E = 0, KT_SERVICE_TTFT, KT_SERVICE_TPOT } kt_service_metric;

typedef struct kt_service_arm {
    kt_argv setup, teardown; /* teardown: n == 0 when absent */
    char ready_path[1024];   /* ready.http_get */
    double ready_timeout_s;
} kt_service_arm;

typedef struct kt_service_spec {
    kt_command_task *tasks; /* at least one: "default" with an empty body without 'tasks' */
    size_t n_tasks;
    kt_service_arm baseline;
    kt_service_arm *candidates; /* in the order of spec->candidates */
    size_t n_candidates;
    char method[8];
    char path[1024];
    int sse;                  /* request.stream: sse */
    double request_timeout_s; /* request.timeout_s */
    int closed;               /* load.mode: closed */
    double rate_per_s;        /* open */
    int concurrency;          /* closed */
    int requests_per_round;
    kt_service_metric metric;
    int exclusive;
    int allow_remote;
    char dir[4096]; /* the spec's folder: the servers' working directory */
} kt_service_spec;

/* Reads the service parts of 'root' (the spec at 'spec_path'); every problem goes to 'diag' at
 * its line:col. Returns 0 with *out set, or -1. */
int kt_service_spec_parse(kt_service_spec **out, const struct kt_node *root, const char *spec_path,
                          kt_diag *diag);
void kt_service_spec_free(kt_service_spec *s);
/* The metric's name: "e2e", "ttft" or "tpot". */
const char *kt_service_metric_name(kt_service_metric m);
/* result.json's spec.parsed.service. */
struct cJSON *kt_service_spec_to_json(const kt_service_spec *s);
/* Substitutes '{port}' (and '{arm}') into a new string (*out, free it). */
int kt_service_expand(char **out, const char *tmpl, int port, const char *arm);

#endif
