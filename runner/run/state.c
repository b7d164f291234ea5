/* state.c - facts of a run read from its state: which points are its shard's, where a point
 * is, whose rows samples.csv holds, how many threads the kernels get (see run.h). */
#include "run/run.h"

#include <string.h>
#include <unistd.h>

int kt_run_in_shard(const kt_run *st, size_t i)
{
    return (int)(i % (size_t)st->opt.shard_count) == st->opt.shard_index - 1;
}

int kt_run_find_point(const kt_point_result *done, size_t n_done, const char *id)
{
    for (size_t i = 0; i < n_done; i++)
        if (strcmp(done[i].point.id, id) == 0)
            return (int)i;
    return -1;
}

kt_samples_ids kt_run_samples_ids(const kt_run *st)
{
    kt_samples_ids ids = {st->run_id, st->git.available ? st->git.commit : ""};
    return ids;
}

/* threads: 0 means every online core. */
int kt_run_threads(const kt_spec *spec)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return spec->threads > 0 ? spec->threads : (cores > 0 ? (int)cores : 1);
}
