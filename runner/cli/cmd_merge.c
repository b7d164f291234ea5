/* cmd_merge.c - 'ktrial merge SHARD_DIR... -o DIR': parse the options, merge the shards into
 * one archive with one verdict (run/merge.h), print its summary (or result.json under --json)
 * and exit with the verdict. */
#include "cli/commands.h"
#include "cli/options.h"
#include "report/writers.h"
#include "run/merge.h"
#include "arm/arm.h"
#include "util/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SHARDS 4096

static int parse_args(kt_merge *m, int *json, int argc, char **argv)
{
    m->shards = calloc((size_t)argc, sizeof(*m->shards));
    if (!m->shards) {
        fprintf(stderr, "error: out of memory\n");
        return KT_EXIT_SOFTWARE;
    }
    kt_opt_parser p;
    const kt_option *opt;
    const char *v;
    int more;
    kt_opt_init(&p, "merge", argc, argv);
    while ((more = kt_opt_next(&p, &opt, &v)) > 0) {
        if (kt_opt_is(opt, "--output")) {
            m->out_dir = v;
        } else if (kt_opt_is(opt, "--force")) {
            m->force = 1;
        } else if (kt_opt_is(opt, "--json")) {
            *json = 1;
        } else if (m->n < MAX_SHARDS) {
            m->shards[m->n++].dir = v;
        } else {
            return kt_usage_error("merge", "more than %d shards", MAX_SHARDS);
        }
    }
    if (more < 0)
        return KT_EXIT_USAGE;
    if (m->n == 0)
        return kt_usage_error("merge", "no shard folders given");
    if (!m->out_dir)
        return kt_usage_error("merge", "no output folder given (-o DIR)");
    return 0;
}

int cmd_merge(int argc, char **argv)
{
    kt_merge m;
    memset(&m, 0, sizeof(m));
    int json = 0;
    int rc = parse_args(&m, &json, argc, argv);
    if (rc || (rc = kt_merge_execute(&m)))
        goto done;
    if (json)
        printf("%s\n", m.text);
    else {
        const kt_spec *spec = m.spec;
        kt_summary_facts f;
        kt_summary_facts_init(&f, spec->baseline.name, kt_aggregate_name(spec->aggregate),
                              spec->min_speedup, spec->confidence);
        const kt_arm_kind *k = kt_arm_kind_of(spec);
        if (k->metric)
            f.metric = k->metric(spec, &f.metric_higher);
        const cJSON *as_run = kt_json_at_path(m.shards[0].doc, "provenance.run");
        f.quick = kt_json_get_bool(as_run, "quick", 0); /* every shard's, as checked */
        f.quick_max_repetitions = (int)kt_json_get_real(as_run, "quick_max_repetitions", 20);
        kt_write("text", stdout, &(kt_output){.run = &m.run, .facts = &f});
        printf("merged %d shard%s, %zu points: %s\n", m.n, m.n == 1 ? "" : "s", m.run.n_points,
               m.out_dir);
    }
    rc = kt_run_exit_code(&m.run);
done:
    kt_merge_free(&m);
    return rc;
}
