/* aggregate.h - the verdict of each candidate over a run's points (by the spec's aggregate),
 * and the run's overall verdict (result/run.h holds them). */
#ifndef KT_AGGREGATE_H
#define KT_AGGREGATE_H

#include "result/run.h"
#include "spec/spec.h"

/* Per-candidate verdicts by spec->aggregate, and the overall verdict. */
int kt_run_aggregate(kt_run_result *run, const kt_spec *spec);

#endif
