/* loadgen_internal.h - what loadgen.c (set-up, targets, probes, schedules) and loadgen_round.c
 * (a round: transfers, timing, SSE, classification) share: the generator and its transfers.
 * Private to runner/arm/service/. */
#ifndef KT_ARM_SERVICE_LOADGEN_INTERNAL_H
#define KT_ARM_SERVICE_LOADGEN_INTERNAL_H

#include "arm/service/loadgen.h"
#include "arm/service/loadgen_sse.h"

#include <curl/curl.h>

typedef struct kt_lg_xfer {
    CURL *easy;
    struct kt_loadgen *lg;
    int in_use;
    /* the request it carries now */
    const kt_loadgen_request *req;
    kt_loadgen_record *rec;
    double sched_abs;  /* when it was due, monotonic seconds */
    double now;        /* when the bytes being handled arrived, monotonic seconds */
    double first_byte; /* monotonic seconds; 0: none yet */
    double first_ev, last_ev;
    int done_seen;
    long usage_tokens; /* -1: no usage seen */
    size_t body_cap;
    int write_failed; /* out of memory while keeping the body or parsing */
    kt_sse_parser sse;
    char errbuf[CURL_ERROR_SIZE];
} kt_lg_xfer;

struct kt_loadgen {
    kt_loadgen_config cfg; /* its strings point into the fields below */
    char host[256];
    char method[16];
    char path[1024];
    char *header_text[KT_LOADGEN_MAX_HEADERS];
    char base_url[300]; /* http://host:port */
    char url[1400];     /* base_url + path */
    struct curl_slist *headers;
    CURLM *multi;
    kt_lg_xfer **pool; /* transfers, each with its easy handle, reused across rounds */
    size_t n_pool;
};

/* CLOCK_MONOTONIC in seconds. */
double kt_lg_now(void);

#endif
