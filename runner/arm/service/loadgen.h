/* loadgen.h - the load generator of service trials: sends a round of HTTP requests to one
 * server and records, per request, when it was due, when it went out, and what came back.
 *
 * It does not lie about latency:
 *  - every latency (TTFT, e2e) is measured from the request's *scheduled* send time on
 *    CLOCK_MONOTONIC, never from the moment the generator got round to sending it, so a server
 *    (or a generator) that falls behind is charged its queueing: no coordinated omission. In
 *    open loop the schedule is the requests' offsets; in closed loop a request is due the moment
 *    a slot frees (when the previous request of that slot completed);
 *  - open loop sends each request at its offset whether or not earlier ones have answered; only
 *    'max_inflight' bounds the requests outstanding at once (a request held back by it is late,
 *    and that lateness is in its latency);
 *  - every request is bounded by 'timeout_s' (from its actual send) and ends as an error kind;
 *  - connections are kept alive and reused across requests and rounds (one libcurl multi
 *    handle and a pool of easy handles per kt_loadgen, HTTP/1.1), never through a proxy;
 *  - the target must be a loopback address unless the caller sets 'allow_remote'.
 *
 * One kt_loadgen serves one server: open it once (kt_loadgen_open), send rounds
 * (kt_loadgen_round), close it. Single-threaded; the calls of one kt_loadgen must not overlap.
 * Functions return 0 or a negative KT_E* code with the message set (kt_error_set). */
#ifndef KT_ARM_SERVICE_LOADGEN_H
#define KT_ARM_SERVICE_LOADGEN_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#define KT_LOADGEN_MAX_HEADERS  16
#define KT_LOADGEN_MESSAGE_LEN  160
#define KT_LOADGEN_BODY_DEFAULT (1 << 20) /* bytes kept of a response when max_body_bytes is 0 */
#define KT_LOADGEN_INFLIGHT_DEF 256       /* open loop's max_inflight when it is 0 */

typedef enum kt_loadgen_stream {
    KT_LOADGEN_STREAM_NONE = 0, /* one response body; TTFT is its first byte */
    KT_LOADGEN_STREAM_SSE,      /* text/event-stream: one token per 'data:' event */
} kt_loadgen_stream;

typedef enum kt_loadgen_mode {
    KT_LOADGEN_OPEN = 0, /* each request sent at its scheduled offset (kt_loadgen_schedule) */
    KT_LOADGEN_CLOSED,   /* 'concurrency' requests outstanding, the next sent as one completes */
} kt_loadgen_mode;

/* How a request ended. A request is a success only with KT_LOADGEN_OK. */
typedef enum kt_loadgen_error {
    KT_LOADGEN_OK = 0,
    KT_LOADGEN_ERR_HTTP,      /* a complete response whose status is not 2xx */
    KT_LOADGEN_ERR_TIMEOUT,   /* not complete within timeout_s of its send */
    KT_LOADGEN_ERR_CONNECT,   /* no connection (refused, unreachable, unresolvable) */
    KT_LOADGEN_ERR_BROKEN,    /* the connection or stream broke: the server closed it early, a
                                 truncated chunked body, an SSE stream with no 'data: [DONE]'
                                 (unless sse_done_optional) */
    KT_LOADGEN_ERR_CANCELLED, /* not finished when *interrupted was set (never sent, or cut) */
    KT_LOADGEN_ERR_OTHER,     /* any other transfer failure (the message says which) */
} kt_loadgen_error;

/* The stable lowercase names of the kinds: "none", "http", "timeout", "connect",
 * "broken-stream", "cancelled", "other". */
const char *kt_loadgen_error_name(kt_loadgen_error e);

/* Where the tokens of a record were read from. */
typedef enum kt_loadgen_tokens_from {
    KT_LOADGEN_TOKENS_NONE = 0, /* unknown: a non-streaming response without 'usage' */
    KT_LOADGEN_TOKENS_EVENTS,   /* the SSE token events counted */
    KT_LOADGEN_TOKENS_USAGE,    /* the response's usage.completion_tokens (OpenAI's shape) */
} kt_loadgen_tokens_from;

/* What to send and how. Strings are copied by kt_loadgen_open; the caller's may go after it. */
typedef struct kt_loadgen_config {
    const char *host;   /* "127.0.0.1", "::1", "localhost", or a remote name with allow_remote */
    int port;           /* 1..65535 */
    const char *method; /* "POST", "GET", ...; NULL: "POST" */
    const char *path;   /* "/v1/completions"; must start with '/' */
    /* extra request headers, "Name: value"; a Content-Type of application/json is added when a
     * request has a body and none is given here */
    const char *headers[KT_LOADGEN_MAX_HEADERS];
    int n_headers;
    kt_loadgen_stream stream;
    int sse_done_optional; /* 1: an SSE stream may end cleanly without 'data: [DONE]' */
    kt_loadgen_mode mode;
    int concurrency;  /* closed loop: requests outstanding at once (>= 1) */
    int max_inflight; /* open loop: at most this many outstanding; 0: KT_LOADGEN_INFLIGHT_DEF */
    double timeout_s; /* per request, from its send (> 0) */
    size_t max_body_bytes; /* of each response body kept for the caller; 0: the default */
    int allow_remote;      /* 1: a non-loopback host is allowed (a user's own cluster) */
} kt_loadgen_config;

/* One request of a round. The body is the caller's and must live through the round. */
typedef struct kt_loadgen_request {
    const char *body; /* NULL or empty: no body */
    size_t body_len;
    int task;        /* the caller's task index, copied into the record */
    double offset_s; /* open loop: due this long after the round's start; closed: ignored */
} kt_loadgen_request;

/* One request as it went. Times are seconds after the round's start (kt_loadgen_round_info's
 * start_s) on CLOCK_MONOTONIC; latencies are seconds from scheduled_s. NAN where it does not
 * apply (a request that never got an answer has no ttft). */
typedef struct kt_loadgen_record {
    int task;           /* from the request */
    double scheduled_s; /* when it was due: its offset (open), or when its slot freed (closed) */
    double sent_s;      /* when it was handed to the connection (>= scheduled_s); NAN: never */
    double ttft_s;      /* to the first token event (SSE) or the first body byte (none) */
    double e2e_s;       /* to the end of the response (or of the failure) */
    double tpot_s;      /* mean gap between token events after the first: (last - first) /
                           (events - 1); NAN with fewer than 2 events */
    long events;        /* SSE token events: 'data:' events other than '[DONE]' and other than
                           a usage-only chunk (one whose "choices" is empty) */
    long tokens;        /* completion tokens: usage.completion_tokens when the server sent it,
                           else 'events' (SSE), else 0 */
    kt_loadgen_tokens_from tokens_from;
    long http_status; /* 0: no response */
    kt_loadgen_error error;
    char message[KT_LOADGEN_MESSAGE_LEN]; /* why it failed, "" when it did not */
    char *body; /* the response body as received (an SSE stream raw), NUL-terminated,
                   at most max_body_bytes; owned by the record (kt_loadgen_records_free) */
    size_t body_len;
    int body_truncated; /* 1: the body was longer than max_body_bytes and was cut */
} kt_loadgen_record;

/* A round as a whole. */
typedef struct kt_loadgen_round_info {
    double start_s;    /* the round's start, CLOCK_MONOTONIC seconds (records count from it) */
    double duration_s; /* from the start to the last request's end */
    int completed;     /* requests that ended KT_LOADGEN_OK */
    int failed;        /* requests that ended with another kind (cancelled included) */
    int interrupted;   /* 1: *interrupted was set and the round stopped early */
    long tokens;       /* the sum of the records' tokens */
} kt_loadgen_round_info;

typedef struct kt_loadgen kt_loadgen;

/* 0 when 'host' is a loopback address (127.0.0.0/8, ::1, "localhost") or allow_remote is set;
 * otherwise KT_EINVAL with a message naming the host and the 'allow_remote: true' that would
 * permit it. Names other than "localhost" are not resolved: only literal addresses count. */
int kt_loadgen_check_target(const char *host, int allow_remote);

/* Opens a generator for one server: checks the config (target included) and sets up libcurl.
 * No connection is made until the first request. */
int kt_loadgen_open(const kt_loadgen_config *cfg, kt_loadgen **out);

/* Sends requests[0..n) as one round and fills records[0..n) (index i is request i).
 * 'records' must be zeroed or hold an earlier round's records (their bodies are freed first).
 * Returns 0 when the round ran, whatever the requests' errors; a negative code when it could
 * not run at all. When *interrupted becomes nonzero (checked at least every 50 ms), the
 * outstanding requests are cut, the rest not sent, both recorded as KT_LOADGEN_ERR_CANCELLED,
 * and info->interrupted is set. 'interrupted' and 'info' may be NULL. */
int kt_loadgen_round(kt_loadgen *lg, const kt_loadgen_request *requests, size_t n,
                     kt_loadgen_record *records, kt_loadgen_round_info *info,
                     volatile sig_atomic_t *interrupted);

/* One GET of 'path' on the generator's server, bounded by timeout_s, for readiness polls:
 * 0 with *status the HTTP status (0 when no connection could be made or it timed out). */
int kt_loadgen_probe(kt_loadgen *lg, const char *path, double timeout_s, long *status);

/* Frees the bodies of records[0..n) and zeroes them. */
void kt_loadgen_records_free(kt_loadgen_record *records, size_t n);

void kt_loadgen_close(kt_loadgen *lg);

/* Fills requests[0..n)'s offset_s for an open loop at rate_per_s (> 0): evenly spaced (i /
 * rate) when seed is 0, else Poisson arrivals (exponential gaps of mean 1 / rate) drawn from
 * 'seed', the same for every round given the same seed: the pairing of requests needs it. */
void kt_loadgen_schedule(kt_loadgen_request *requests, size_t n, double rate_per_s, uint64_t seed);

#endif
