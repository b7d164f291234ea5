/* exit_code.c - a finished run's exit code; exit codes live in the CLI layer only. */
#include "cli/commands.h"
#include "decide/aggregate.h"

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
