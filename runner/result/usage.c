/* usage.c - the names of the CPU counters of an arm's profile, as result.json keys them. */
#include "result/usage.h"

#include <stddef.h>

static const char *const names[] = {
    "task_clock_ns",    "context_switches", "page_faults",     "cycles",        "instructions",
    "cache_references", "cache_misses",     "llc_load_misses", "branch_misses",
};

const char *kt_counter_name(int i)
{
    return i >= 0 && i < (int)(sizeof(names) / sizeof(names[0])) ? names[i] : NULL;
}
