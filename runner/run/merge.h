/* merge.h - the shards of one sharded run become one archive with one verdict, formed over all
 * points exactly as an unsharded run forms it ('ktrial merge').
 *
 * The shards must come from the same spec (sha256), the same code state (commit, dirty diff)
 * and the same plugins (sha256), unless --force; together they must hold every point of the
 * spec's matrix exactly once, whatever --force says. */
#ifndef KT_RUN_MERGE_H
#define KT_RUN_MERGE_H

#include "decide/aggregate.h"
#include "measure/trial.h"
#include "spec/spec.h"
#include "util/json.h"

typedef struct kt_merge_shard {
    const char *dir;
    cJSON *doc;
    kt_point_result *points;
    size_t n_points;
    int index, count; /* from provenance.run.shard "I/N" */
} kt_merge_shard;

typedef struct kt_merge {
    kt_merge_shard *shards; /* the caller's, 'n' of them with their 'dir' set */
    int n;
    const char *out_dir;
    int force;
    int problems; /* coverage and identity problems found */
    /* the result */
    kt_spec *spec;     /* the first shard's spec.yaml, as the run parsed it */
    kt_run_result run; /* every point, in the matrix's order, with the verdicts */
    char *text;        /* the merged result.json as written */
} kt_merge;

/* Loads and checks the shards and writes the merged archive into m->out_dir (errors and
 * warnings on stderr). 0, or the exit code after printing the error. */
int kt_merge_execute(kt_merge *m);

/* Frees what kt_merge_execute loaded, and m->shards. */
void kt_merge_free(kt_merge *m);

#endif
