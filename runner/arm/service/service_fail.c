/* service_fail.c - what every part of a service arm shares: the clock, the server's stderr
 * tail, and an arm's failure (a candidate's recorded in its result, the baseline's the point's
 * error), each with that tail. */
#include "arm/service/service_run.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

double kt_svc_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int kt_svc_fail(svc *s, int arm, kt_reason_code code, const char *fmt, ...)
{
    char why[400], tail[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    kt_svc_stderr_tail(s, arm, tail, sizeof(tail));
    if (s->out->error[0])
        return -2;
    if (arm == 0) {
        snprintf(s->out->error, sizeof(s->out->error), "baseline '%s': %s%s%s", svc_arm_name(s, 0),
                 why, tail[0] ? "; server stderr: " : "", tail);
        return -2;
    }
    kt_arm_result *a = svc_result(s, arm);
    if (!a->failed) {
        a->failed = 1;
        a->failure_code = code;
        snprintf(a->failure, sizeof(a->failure), "server '%s': %s%s%.200s", svc_arm_name(s, arm),
                 why, tail[0] ? "; server stderr: " : "", tail);
    }
    return -1;
}

void kt_svc_stderr_tail(const svc *s, int arm, char *buf, size_t len)
{
    buf[0] = '\0';
    FILE *f = fopen(s->arms[arm].srv.log_path, "rb");
    if (!f)
        return;
    char tail[512];
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    long from = size > (long)sizeof(tail) - 1 ? size - (long)sizeof(tail) + 1 : 0;
    fseek(f, from, SEEK_SET);
    size_t n = fread(tail, 1, sizeof(tail) - 1, f);
    fclose(f);
    tail[n] = '\0';
    while (n > 0 && (tail[n - 1] == '\n' || tail[n - 1] == '\r'))
        tail[--n] = '\0';
    const char *start = tail;
    /* the last few lines, joined with " | " */
    int lines = 0;
    for (size_t i = n; i > 0; i--)
        if (tail[i - 1] == '\n' && ++lines == 3) {
            start = tail + i;
            break;
        }
    size_t o = 0;
    for (const char *p = start; *p && o + 4 < len; p++) {
        if (*p == '\n') {
            o += (size_t)snprintf(buf + o, len - o, " | ");
        } else if ((unsigned char)*p >= 0x20 || *p == '\t') {
            buf[o++] = *p;
        }
    }
    buf[o < len ? o : len - 1] = '\0';
}
