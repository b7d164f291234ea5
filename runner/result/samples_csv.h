/* samples_csv.h - samples.csv: one tidy row per timed call.
 *
 * Columns: run_id, commit, backend, op, dtype (whose run and what it measured), point, model,
 * phase, role, batch_size, context_length (the point and its axes: an axis the op does not
 * use is an empty cell, never 0), pair_candidate (the candidate of the pair), repetition,
 * input_set, position (0 first in the pair, 1 second), arm (baseline | candidate), arm_name,
 * variant (the arm's variant), ns, noise, throttled (0/1), placement (the index of the arms'
 * prepared states the pair ran on). */
#ifndef KT_SAMPLES_CSV_H
#define KT_SAMPLES_CSV_H

#include "result/point.h"
#include "spec/spec.h"

/* Whose rows these are: the archive's run id (provenance.run.id) and the code's commit
 * ("" outside git). */
typedef struct kt_samples_ids {
    const char *run_id;
    const char *commit;
} kt_samples_ids;

#define KT_SAMPLES_HEADER                                                                          \
    "run_id,commit,backend,op,dtype,point,model,phase,role,batch_size,context_length,"             \
    "pair_candidate,repetition,input_set,position,arm,arm_name,variant,ns,noise,throttled,"        \
    "placement\n"

/* Appends the rows of one point's timed calls to '*buf' (length '*len', capacity '*cap',
 * grown as needed). Returns 0, or a negative code (out of memory). */
int kt_samples_format(char **buf, size_t *len, size_t *cap, const kt_point_result *p,
                      const kt_spec *spec, const kt_samples_ids *ids);

#endif
