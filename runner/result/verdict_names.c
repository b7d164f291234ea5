/* verdict_names.c - the names of the verdicts and of the reason codes (result.json stores the
 * names), which reasons reject on quality, and the numbers of a reason printed apart from
 * their limit. */
#include "result/verdict.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *kt_verdict_name(kt_verdict v)
{
    static const char *const names[] = {"KEEP", "REJECT", "INCONCLUSIVE"};
    return names[v];
}

int kt_verdict_parse(const char *name)
{
    for (int v = KT_VERDICT_KEEP; v <= KT_VERDICT_INCONCLUSIVE; v++)
        if (strcmp(name, kt_verdict_name((kt_verdict)v)) == 0)
            return v;
    return -1;
}

static const char *const reason_names[KT_REASON_CODE_COUNT] = {"none",
                                                               "failed",
                                                               "not_measured",
                                                               "rel_l2",
                                                               "cosine",
                                                               "max_abs",
                                                               "error_vs_baseline",
                                                               "not_repeatable",
                                                               "memory",
                                                               "slower",
                                                               "faster",
                                                               "undecided",
                                                               "no_pairs",
                                                               "setup",
                                                               "energy",
                                                               "grouped_order",
                                                               "no_look",
                                                               "command_failed",
                                                               "timeout",
                                                               "output",
                                                               "metric_missing",
                                                               "p99",
                                                               "errors",
                                                               "throughput",
                                                               "server"};

const char *kt_reason_code_name(kt_reason_code code)
{
    return (unsigned)code < KT_REASON_CODE_COUNT ? reason_names[code] : "unknown";
}

kt_reason_code kt_reason_code_parse(const char *name)
{
    for (int i = 0; name && i < KT_REASON_CODE_COUNT; i++)
        if (strcmp(name, reason_names[i]) == 0)
            return (kt_reason_code)i;
    return KT_REASON_NONE;
}

int kt_reason_is_quality(kt_reason_code code)
{
    switch (code) {
    case KT_REASON_FAILED:
    case KT_REASON_COMMAND_FAILED:
    case KT_REASON_TIMEOUT:
    case KT_REASON_OUTPUT:
    case KT_REASON_METRIC_MISSING:
    case KT_REASON_P99:
    case KT_REASON_ERRORS:
    case KT_REASON_THROUGHPUT:
    case KT_REASON_SERVER:
    case KT_REASON_REL_L2:
    case KT_REASON_COSINE:
    case KT_REASON_MAX_ABS:
    case KT_REASON_ERROR_VS_BASELINE:
    case KT_REASON_NOT_REPEATABLE:
    case KT_REASON_MEMORY:
    case KT_REASON_SETUP:
    case KT_REASON_ENERGY:
        return 1;
    default:
        return 0;
    }
}

/* -1, 0 or 1 as 'x' is below, at or above 'limit'. */
static int side_of(double x, double limit)
{
    return (x > limit) - (x < limit);
}

const char *kt_format_apart(char *buf, size_t len, double value, double limit, int digits,
                            int fixed)
{
    for (int d = digits; d <= 17; d++) {
        snprintf(buf, len, fixed ? "%.*f" : "%.*g", d, value);
        if (!isfinite(value) || side_of(strtod(buf, NULL), limit) == side_of(value, limit))
            break;
    }
    return buf;
}

const char *kt_format_limit(char *buf, size_t len, double limit, int digits, int fixed)
{
    if (fixed) {
        snprintf(buf, len, "%.*f", digits, limit);
        if (strtod(buf, NULL) == limit)
            return buf;
    }
    for (int d = 1; d <= 17; d++) {
        snprintf(buf, len, "%.*g", d, limit);
        if (!isfinite(limit) || strtod(buf, NULL) == limit)
            break;
    }
    return buf;
}
