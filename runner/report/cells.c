/* cells.c - the cells of the summary table: times, speedups, p values, throughput
 * against the machine's roofline, each "—" when it was not measured, padded by display
 * width (so the 3-byte "—" lines up). */
#include "report/cells.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const kt_cell_none = "\xe2\x80\x94"; /* "—" */

void kt_cell_put(FILE *out, const char *text, int width, int right)
{
    int shown = 0;
    for (const unsigned char *s = (const unsigned char *)text; *s; s++)
        shown += (*s & 0xc0) != 0x80; /* count code points, not bytes */
    int pad = width > shown ? width - shown : 0;
    fprintf(out, "%*s%s%*s", right ? pad : 0, "", text, right ? 0 : pad, "");
}

const char *kt_cell_time(char *buf, size_t len, double ns)
{
    if (!(ns > 0) || !isfinite(ns))
        snprintf(buf, len, "%s", kt_cell_none);
    else if (ns < 1e3)
        snprintf(buf, len, "%.0f ns", ns);
    else if (ns < 1e6)
        snprintf(buf, len, "%.2f us", ns / 1e3);
    else if (ns < 1e9)
        snprintf(buf, len, "%.2f ms", ns / 1e6);
    else
        snprintf(buf, len, "%.3f s", ns / 1e9);
    return buf;
}

const char *kt_cell_median(char *buf, size_t len, double sample, const char *metric, int higher)
{
    if (!metric || strcmp(metric, "wall") == 0)
        return kt_cell_time(buf, len, sample);
    double value = higher ? 1e9 / sample : sample;
    if (!(sample > 0) || !isfinite(value))
        snprintf(buf, len, "%s", kt_cell_none);
    else if (value >= 1e3 && value < 1e9)
        snprintf(buf, len, "%.0f", value); /* 48210, never 4.821e+04 */
    else
        snprintf(buf, len, "%.4g", value);
    return buf;
}

const char *kt_cell_p(char *buf, size_t len, double p)
{
    if (!isfinite(p))
        snprintf(buf, len, "%s", kt_cell_none);
    else if (p < 0.001)
        snprintf(buf, len, "<0.001");
    else
        snprintf(buf, len, "%.3f", p);
    return buf;
}

double kt_p_adjusted(double p, double confidence, double confidence_used)
{
    if (!isfinite(p) || !(confidence_used < 1) || !(confidence < 1))
        return p;
    double factor = (1 - confidence) / (1 - confidence_used);
    return fmin(1.0, p * (factor > 1 ? factor : 1));
}

int kt_roofline_parse(kt_roofline *r, const char *text)
{
    char *end;
    r->gflops = r->gbps = NAN;
    if (!text || !*text)
        return -1;
    double f = strtod(text, &end);
    if (end == text || *end != ':' || !(f > 0))
        return -1;
    const char *b = end + 1;
    double g = strtod(b, &end);
    if (end == b || *end || !(g > 0))
        return -1;
    r->gflops = f;
    r->gbps = g;
    return 0;
}

const char *kt_cell_throughput(char *buf, size_t len, double flops, double bytes, double ns,
                               const kt_roofline *roof)
{
    if (!(ns > 0) || !isfinite(ns) || (!(flops > 0) && !(bytes > 0))) {
        snprintf(buf, len, "%s", kt_cell_none);
        return buf;
    }
    int n = flops > 0 ? snprintf(buf, len, "%.4g GFLOP/s", flops / ns)
                      : snprintf(buf, len, "%.4g GB/s", bytes / ns);
    if (roof && roof->gflops > 0 && n > 0 && (size_t)n < len) {
        /* the attainable time on the roofline: the slower of compute and memory */
        double best_ns =
            fmax(flops > 0 ? flops / roof->gflops : 0, bytes > 0 ? bytes / roof->gbps : 0);
        snprintf(buf + n, len - (size_t)n, " (%.0f%%)", 100 * best_ns / ns);
    }
    return buf;
}
