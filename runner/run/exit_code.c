/* exit_code.c - a finished run's exit code (the codes are in exit_code.h, picked by the run
 * engine and returned by the commands), and the options a resume of it repeats. */
#include "run/exit_code.h"
#include "decide/aggregate.h"

#include <stdio.h>

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
