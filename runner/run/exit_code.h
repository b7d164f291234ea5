/* exit_code.h - the exit codes ktrial's commands return (sysexits.h numbering for the errors;
 * documented in README.md), a finished run's code, and the options a resume of it repeats. The
 * run engine picks the codes; the commands return them. */
#ifndef KT_RUN_EXIT_CODE_H
#define KT_RUN_EXIT_CODE_H

#include <stddef.h>

enum {
    KT_EXIT_KEEP = 0,         /* every candidate kept, or success */
    KT_EXIT_REJECT = 1,       /* some candidate rejected; compare found a regression */
    KT_EXIT_INCONCLUSIVE = 2, /* nothing rejected, something undecided */
    KT_EXIT_USAGE = 64,
    KT_EXIT_DATAERR = 65,
    KT_EXIT_UNAVAILABLE = 69,
    KT_EXIT_SOFTWARE = 70,
    KT_EXIT_IOERR = 74,
    KT_EXIT_INTERRUPTED = 130
};

struct kt_run_result;
/* The exit code of a finished run: 70 when a point could not be measured, else by verdict. */
int kt_run_exit_code(const struct kt_run_result *run);
/* The exit code a run that ended as 'status' (complete, interrupted, over_budget) records in
 * decision.exit_code: 130 interrupted; a shard of 'shard_count' > 1 exits 0, or 2 over budget
 * (merge forms the verdict); else kt_run_exit_code, 2 instead of 0 over budget. -1 for a status
 * that records no decision. */
int kt_run_ended_exit_code(const struct kt_run_result *run, const char *status, int shard_count);
/* The options a resume of a run must repeat, as it was run: " --shard I/N --quick" (each only
 * where it applies), or "". Returns 'buf'. */
const char *kt_resume_flags(char *buf, size_t len, int shard_index, int shard_count, int quick);

#endif
