/* verdict.h - the verdict types: KEEP / REJECT / INCONCLUSIVE, and the typed codes of the
 * reasons behind them. Decisions read the codes; the reasons' text is for people only. */
#ifndef KT_RESULT_VERDICT_H
#define KT_RESULT_VERDICT_H

#include <stddef.h>

typedef enum { KT_VERDICT_KEEP = 0, KT_VERDICT_REJECT, KT_VERDICT_INCONCLUSIVE } kt_verdict;

const char *kt_verdict_name(kt_verdict v);
/* Parses "KEEP" | "REJECT" | "INCONCLUSIVE"; returns -1 when unknown. */
int kt_verdict_parse(const char *name);

/* Why a candidate got its verdict at a point. The numbers are stable: result.json stores
 * the names, and new codes are only ever appended. */
typedef enum kt_reason_code {
    KT_REASON_NONE = 0,
    KT_REASON_FAILED = 1,            /* could not run, crashed, hung, NaN, unwritten output */
    KT_REASON_NOT_MEASURED = 2,      /* the point itself could not be set up */
    KT_REASON_REL_L2 = 3,            /* above thresholds.numerics.max_rel_l2 */
    KT_REASON_COSINE = 4,            /* below min_cosine */
    KT_REASON_MAX_ABS = 5,           /* above max_abs */
    KT_REASON_ERROR_VS_BASELINE = 6, /* above max_error_vs_baseline */
    KT_REASON_NOT_REPEATABLE = 7,    /* bitwise_repeatable broken */
    KT_REASON_MEMORY = 8,            /* above thresholds.memory.max_ratio */
    KT_REASON_SLOWER = 9,            /* the speedup interval lies below min_speedup */
    KT_REASON_FASTER = 10,           /* the speedup interval lies strictly above min_speedup */
    KT_REASON_UNDECIDED = 11,        /* the interval includes min_speedup */
    KT_REASON_NO_PAIRS = 12,         /* nothing was timed */
    KT_REASON_SETUP = 13,            /* above thresholds.setup */
    KT_REASON_ENERGY = 14,           /* above thresholds.energy.max_ratio */
    KT_REASON_GROUPED = 15,          /* order: grouped without allow_grouped_verdicts */
    KT_REASON_NO_LOOK = 16,          /* stopped before the first planned look */
    KT_REASON_COMMAND_FAILED = 17, /* op command: a call exited non-zero, died, or never started */
    KT_REASON_TIMEOUT = 18,        /* op command: a call ran past its arm's timeout_s */
    KT_REASON_OUTPUT = 19,         /* op command: output missing, unreadable, of another length,
                                    * non-finite, or (text) differing */
    KT_REASON_METRIC_MISSING = 20, /* op command: measure.metric not reported on stdout */
    KT_REASON_P99 = 21,            /* op service: p99 ratio above latency.max_p99_ratio */
    KT_REASON_ERRORS = 22,         /* op service: failed requests above errors.max_rate */
    KT_REASON_THROUGHPUT = 23,     /* op service: throughput ratio below throughput.min_ratio */
    KT_REASON_SERVER = 24          /* op service: never ready, or died during a round */
} kt_reason_code;
#define KT_REASON_CODE_COUNT 25

/* "failed", "rel_l2", ..., or "unknown" for a number out of range. */
const char *kt_reason_code_name(kt_reason_code code);
/* Parses a name from kt_reason_code_name; returns KT_REASON_NONE when unknown. */
kt_reason_code kt_reason_code_parse(const char *name);
/* True for the reasons that reject on quality (numerics, memory, failure), as opposed to
 * speed: a geomean verdict never averages these away. */
int kt_reason_is_quality(kt_reason_code code);

/* 'value' for a reason that compares it with 'limit': 'digits' significant digits (or, when
 * 'fixed', decimals), and more where those would print it on the other side of the limit or
 * on it, so that no reason reads "rel_l2 0.01 above max_rel_l2 0.01". Returns 'buf'. */
const char *kt_format_apart(char *buf, size_t len, double value, double limit, int digits,
                            int fixed);
/* A limit as the spec gave it: %.*f with 'digits' decimals when 'fixed' and that reads back
 * as 'limit', else the shortest %g that does. Returns 'buf'. */
const char *kt_format_limit(char *buf, size_t len, double limit, int digits, int fixed);

#endif
