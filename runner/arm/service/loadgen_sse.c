/* loadgen_sse.c - the incremental Server-Sent Events parser (loadgen_sse.h): bytes in any cuts,
 * lines, 'data:' fields, events dispatched at blank lines. */
#include "arm/service/loadgen_sse.h"

#include "kernel.h"

#include <stdlib.h>
#include <string.h>

void kt_sse_init(kt_sse_parser *p, kt_sse_event_fn on_event, void *ctx)
{
    memset(p, 0, sizeof *p);
    p->on_event = on_event;
    p->ctx = ctx;
}

void kt_sse_free(kt_sse_parser *p)
{
    free(p->line);
    free(p->data);
    p->line = p->data = NULL;
    p->line_len = p->line_cap = p->data_len = p->data_cap = 0;
    p->has_data = 0;
}

int kt_sse_is_done(const char *data, size_t len)
{
    return len == 6 && memcmp(data, "[DONE]", 6) == 0;
}

/* Grows *buf to hold 'need' bytes plus a NUL. */
static int reserve(char **buf, size_t *cap, size_t need)
{
    if (need + 1 <= *cap)
        return 0;
    size_t c = *cap ? *cap : 256;
    while (c < need + 1)
        c *= 2;
    char *b = realloc(*buf, c);
    if (!b)
        return kt_error_code(KT_ENOMEM, "SSE parser: out of memory for %zu bytes", need);
    *buf = b;
    *cap = c;
    return 0;
}

static int dispatch(kt_sse_parser *p)
{
    if (!p->has_data)
        return 0;
    p->has_data = 0;
    size_t len = p->data_len;
    p->data_len = 0;
    p->data[len] = '\0';
    return p->on_event ? p->on_event(p->ctx, p->data, len) : 0;
}

/* One complete line (without its end). */
static int end_line(kt_sse_parser *p)
{
    const char *l = p->line ? p->line : "";
    size_t n = p->line_len;
    p->line_len = 0;
    if (n == 0)
        return dispatch(p);
    if (n >= 5 && memcmp(l, "data", 4) == 0 && l[4] == ':') {
        const char *v = l + 5;
        size_t vn = n - 5;
        if (vn && *v == ' ') {
            v++;
            vn--;
        }
        size_t sep = p->has_data ? 1 : 0;
        if (reserve(&p->data, &p->data_cap, p->data_len + sep + vn) < 0)
            return KT_ENOMEM;
        if (sep)
            p->data[p->data_len++] = '\n';
        memcpy(p->data + p->data_len, v, vn);
        p->data_len += vn;
        p->data[p->data_len] = '\0';
        p->has_data = 1;
    } else if (n == 4 && memcmp(l, "data", 4) == 0) { /* "data" alone: an empty data line */
        if (reserve(&p->data, &p->data_cap, p->data_len + 1) < 0)
            return KT_ENOMEM;
        if (p->has_data)
            p->data[p->data_len++] = '\n';
        p->has_data = 1;
    }
    return 0; /* comments and other fields are skipped */
}

int kt_sse_feed(kt_sse_parser *p, const char *bytes, size_t n)
{
    size_t i = 0;
    while (i < n) {
        char c = bytes[i];
        if (p->after_cr && c == '\n') { /* the '\n' of a "\r\n" */
            p->after_cr = 0;
            i++;
            continue;
        }
        p->after_cr = 0;
        if (c == '\n' || c == '\r') {
            p->after_cr = c == '\r';
            i++;
            int rc = end_line(p);
            if (rc)
                return rc;
            continue;
        }
        /* copy the run of bytes up to the next line end at once */
        size_t j = i;
        while (j < n && bytes[j] != '\n' && bytes[j] != '\r')
            j++;
        if (reserve(&p->line, &p->line_cap, p->line_len + (j - i)) < 0)
            return KT_ENOMEM;
        memcpy(p->line + p->line_len, bytes + i, j - i);
        p->line_len += j - i;
        p->line[p->line_len] = '\0';
        i = j;
    }
    return 0;
}

int kt_sse_finish(kt_sse_parser *p)
{
    if (p->line_len) {
        int rc = end_line(p);
        if (rc)
            return rc;
    }
    return dispatch(p);
}
