/* limits.h - every size limit of a spec and of a run's results, in one place. The spec's
 * limits must equal schemas/experiment.schema.json's (tests/unit/test_limits.c checks each
 * against the embedded schema), so the schema stage and the meaning stage never disagree. */
#ifndef KT_LIMITS_H
#define KT_LIMITS_H

/* ---- a spec ---------------------------------------------------------------------------- */
#define KT_LIMIT_SPEC_BYTES        (1024 * 1024) /* a spec file */
#define KT_LIMIT_NAME_LEN          63 /* experiment, arm, model, variant names: KT_NAME_MAX - 1 */
#define KT_LIMIT_CANDIDATES        16
#define KT_LIMIT_AXIS_VALUES       64 /* items in models, batch_sizes, context_lengths */
#define KT_LIMIT_INPUT_SETS        64
#define KT_LIMIT_THREADS           1024
#define KT_LIMIT_WARMUP            1000
#define KT_LIMIT_REPETITIONS       1000000
#define KT_LIMIT_SECONDS_PER_POINT 86400
#define KT_LIMIT_DIMENSION         1048576  /* a model dimension, a batch size */
#define KT_LIMIT_CONTEXT           16777216 /* a context length */
#define KT_LIMIT_POINTS            10000    /* points of the expanded matrix */

/* ---- a run's results ------------------------------------------------------------------- */
#define KT_LIMIT_LOOKS       64  /* planned looks at the data per point */
#define KT_LIMIT_REASONS     8   /* reasons kept per candidate and point */
#define KT_LIMIT_REASON_LEN  320 /* one reason, with its terminating NUL */
#define KT_LIMIT_FAILURE_LEN 512 /* an arm's failure or a point's error */

#endif
