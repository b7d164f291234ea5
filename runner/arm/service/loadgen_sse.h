/* loadgen_sse.h - an incremental parser of Server-Sent Events (text/event-stream), as the load
 * generator reads a streamed response, and as a caller reads an archived one back.
 *
 * The bytes may arrive cut anywhere. Lines end in "\n", "\r\n" or "\r"; a line "data: X" (one
 * optional space after the colon) appends X to the event's data, several data lines joined by
 * "\n"; a blank line dispatches the event when it has data; comment lines (":...") and the other
 * fields (event, id, retry) are skipped. kt_sse_finish dispatches a last event that had data
 * but no blank line after it (a stream cut short; the caller decides whether that is an error). */
#ifndef KT_ARM_SERVICE_LOADGEN_SSE_H
#define KT_ARM_SERVICE_LOADGEN_SSE_H

#include <stddef.h>

/* Called with one event's data (NUL-terminated, 'len' bytes); returns 0 to go on, nonzero to
 * stop the parser (kt_sse_feed then returns that value). */
typedef int (*kt_sse_event_fn)(void *ctx, const char *data, size_t len);

typedef struct kt_sse_parser {
    kt_sse_event_fn on_event;
    void *ctx;
    char *line; /* the line being read */
    size_t line_len, line_cap;
    char *data; /* the event's data so far */
    size_t data_len, data_cap;
    int has_data;
    int after_cr; /* the last byte was '\r': a following '\n' ends nothing */
} kt_sse_parser;

void kt_sse_init(kt_sse_parser *p, kt_sse_event_fn on_event, void *ctx);
/* Feeds bytes; 0, KT_ENOMEM, or the nonzero value an event callback returned. */
int kt_sse_feed(kt_sse_parser *p, const char *bytes, size_t n);
/* Ends the stream: dispatches a pending event; returns as kt_sse_feed. */
int kt_sse_finish(kt_sse_parser *p);
/* Frees the buffers; the parser may be initialised again. */
void kt_sse_free(kt_sse_parser *p);

/* 1 when an event's data is the end-of-stream marker "[DONE]" (OpenAI's convention). */
int kt_sse_is_done(const char *data, size_t len);

#endif
