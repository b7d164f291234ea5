/* exit_code.c - a finished run's exit code (the codes are in exit_code.h, picked by the run
 * engine and returned by the commands), and the options a resume of it repeats. */
#include "run/exit_code.h"
#include "decide/aggregate.h"

#include <stdio.h>
#include <string.h>

int kt_run_exit_code(const kt_run_result *run)
{
    if (run->point_errors)
        return KT_EXIT_SOFTWARE;
    switch (run->verdict) {
    case KT_VERDICT_KEEP:
        return KT_EXIT_KEEP;
    case KT_VERDICT_REJECT:
        return KT_EXIT_REJECT;
    default:
        return KT_EXIT_INCONCLUSIVE;
    }
}

int kt_run_ended_exit_code(const kt_run_result *run, const char *status, int shard_count)
{
    int interrupted = strcmp(status, "interrupted") == 0;
    int over_budget = strcmp(status, "over_budget") == 0;
    if (!interrupted && !over_budget && strcmp(status, "complete") != 0)
        return -1;
    if (interrupted)
        return KT_EXIT_INTERRUPTED;
    if (shard_count > 1)
        return over_budget ? KT_EXIT_INCONCLUSIVE : KT_EXIT_KEEP;
    int rc = kt_run_exit_code(run);
    return over_budget && rc == KT_EXIT_KEEP ? KT_EXIT_INCONCLUSIVE : rc;
}

const char *kt_resume_flags(char *buf, size_t len, int shard_index, int shard_count, int quick)
{
    int n = 0;
    buf[0] = '\0';
    if (shard_count > 1)
        n = snprintf(buf, len, " --shard %d/%d", shard_index, shard_count);
    if (quick && n >= 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, " --quick");
    return buf;
}
