/* spec.h - an experiment spec, loaded, checked and resolved against the registry.
 *
 * kt_spec_load() runs the three stages of docs/spec.md (YAML syntax and its traps, the
 * JSON Schema, meaning against the registry and catalog) and reports every problem it finds
 * into 'diag' with file:line:col. On success the spec is fully resolved: op, variants and
 * param values are looked up, defaults filled in, and the backend is a concrete name. */
#ifndef KT_SPEC_H
#define KT_SPEC_H

#include "util/diag.h"
#include "util/limits.h"
#include "kernel.h"

#include <stddef.h>
#include <stdint.h>

/* util/ knows nothing of kernels/: its name limit is written as a number, held to kernel.h's. */
_Static_assert(KT_LIMIT_NAME_LEN == KT_NAME_MAX - 1, "KT_LIMIT_NAME_LEN must be KT_NAME_MAX - 1");

#define KT_SPEC_MAX_BYTES KT_LIMIT_SPEC_BYTES

typedef enum { KT_ORDER_RANDOM = 0, KT_ORDER_ALTERNATE, KT_ORDER_GROUPED } kt_order;
typedef enum { KT_AGGREGATE_ALL = 0, KT_AGGREGATE_GEOMEAN } kt_aggregate;
/* threads_affinity: none (the scheduler places threads) or compact (one per CPU, in order). */
typedef enum { KT_SPEC_AFFINITY_NONE = 0, KT_SPEC_AFFINITY_COMPACT } kt_spec_affinity;

const char *kt_order_name(kt_order o);
const char *kt_aggregate_name(kt_aggregate a);

/* The baseline or one candidate: a variant of the op on the spec's backend, with params. */
typedef struct kt_arm {
    char name[KT_NAME_MAX]; /* "baseline" for the baseline; the candidate's name otherwise */
    const kt_variant *variant;
    kt_param_value params[KT_MAX_PARAMS]; /* resolved: defaults where the spec says nothing */
    int line, col;                        /* where it is declared */
} kt_arm;

/* One entry of the spec's 'plugins:' list. */
typedef struct kt_spec_plugin {
    char *path;      /* as written */
    char *resolved;  /* relative to the spec's folder */
    int index;       /* kt_plugin_load's index; -1 when loading failed */
    char sha256[65]; /* of the file as loaded */
    long long size;  /* bytes */
    int line, col;   /* the entry's place */
} kt_spec_plugin;

/* An exclude or include entry: a partial point (only the keys it names are set). */
typedef struct kt_matrix_rule {
    unsigned axes; /* KT_AXIS_* named by the entry */
    kt_point point;
    int line, col;
} kt_matrix_rule;

/* Numerics thresholds; a NAN double means "not set". */
typedef struct kt_numerics_limits {
    double max_rel_l2;
    double min_cosine;
    double max_abs;
    double max_error_vs_baseline;
    int bitwise_repeatable;
} kt_numerics_limits;

struct kt_node;

typedef struct kt_spec {
    char *path;  /* as given */
    char *bytes; /* the exact file contents, NUL-terminated */
    size_t len;

    int version;
    char name[KT_NAME_MAX];  /* [a-z0-9._-]+ */
    char *description;       /* may be NULL */
    kt_spec_plugin *plugins; /* 'plugins:', loaded before anything is resolved */
    size_t n_plugins;
    const kt_op *op;
    char backend_requested[16]; /* as written: auto | cpu | cuda | sim (or the override) */
    char backend[16];           /* resolved: cpu | cuda | sim */
    kt_dtype dtype;
    int threads;                       /* 0 = all cores */
    kt_spec_affinity threads_affinity; /* how the CPU kernels' threads are placed */

    kt_model *models; /* resolved from the catalog or inline */
    size_t n_models;
    int64_t *batch_sizes;
    size_t n_batch_sizes;
    int64_t *context_lengths;
    size_t n_context_lengths;
    kt_phase *phases;
    size_t n_phases;
    kt_role *roles;
    size_t n_roles;
    kt_matrix_rule *exclude;
    size_t n_exclude;
    kt_matrix_rule *include;
    size_t n_include;

    kt_distribution distribution;
    uint64_t seed;
    int input_sets;
    kt_param_value input_params[KT_MAX_PARAMS]; /* the op's input params, resolved */

    kt_arm baseline;
    kt_arm *candidates;
    size_t n_candidates;

    int warmup;
    int min_repetitions;
    int max_repetitions;
    double max_seconds_per_point;
    double max_startup_seconds; /* NAN = scale with the problem (worker watchdog) */
    kt_order order;
    int flush_cache;
    int profile;                /* trials.profile: the profiling pass after each point's verdict */
    int allow_grouped_verdicts; /* order: grouped may KEEP/REJECT (default false) */

    kt_numerics_limits numerics;
    double min_speedup;            /* default 1.0 */
    double confidence;             /* default 0.95 */
    double max_memory_ratio;       /* NAN = not set */
    double max_setup_seconds;      /* thresholds.setup.max_seconds, NAN = not set */
    double max_setup_memory_ratio; /* thresholds.setup.max_memory_ratio, NAN = not set */
    double max_energy_ratio;       /* thresholds.energy.max_ratio, NAN = not set */
    double max_p99_ratio;          /* thresholds.latency.max_p99_ratio, NAN = not set */
    double max_error_rate;         /* thresholds.errors.max_rate (op service: default 0) */
    double min_throughput_ratio;   /* thresholds.throughput.min_ratio, NAN = not set */
    double usd_per_hour;           /* costs.usd_per_hour, NAN = no costs */
    int tokens_per_call;           /* costs.tokens_per_call, 0 = auto */
    kt_aggregate aggregate;

    double budget_minutes; /* NAN = no budget */

    struct kt_node *root; /* the parsed document (owned), for places in later messages */
    /* The points, expanded once by the meaning checks (owned; NULL when the spec has
     * errors), so the matrix's warnings are printed once per command. */
    struct kt_matrix *matrix;
    /* op 'command' only: tasks, argv lists, metric and outputs (spec/command_spec.h) */
    struct kt_command_spec *command;
    /* op 'service' only: tasks, servers, request, load (spec/service_spec.h) */
    struct kt_service_spec *service;
} kt_spec;

typedef struct kt_spec_options {
    const char *backend; /* overrides the spec's backend when not NULL ("auto" allowed) */
    int skip_budget;     /* --force: do not refuse a plan over budget.max_minutes */
} kt_spec_options;

/* Whether the looks at a point of 'spec' can ever decide: 0, or a negative code with the reason
 * in kt_error_last(). The looks are planned by runner/decide, which this layer must not call, so
 * the command line registers decide's kt_design_check at start-up; without it (unit tests) the
 * meaning stage does not ask. */
typedef int (*kt_spec_design_check_fn)(const kt_spec *spec);
void kt_spec_use_design_check(kt_spec_design_check_fn fn);

/* Reads 'path' (refusing files over KT_SPEC_MAX_BYTES) and parses it. */
int kt_spec_load(kt_spec **out, const char *path, const kt_spec_options *opts, kt_diag *diag);
/* Parses spec text already in memory; 'path' is used in messages only. */
int kt_spec_parse(kt_spec **out, const char *path, const char *bytes, size_t len,
                  const kt_spec_options *opts, kt_diag *diag);
void kt_spec_free(kt_spec *spec);

/* The seed of everything random at a point: inputs, order coin, sim durations. */
uint64_t kt_point_seed(const kt_spec *spec, const kt_point *point);

/* Resolves a requested backend name ("auto", "cpu", "cuda", "sim") for 'op' into 'out'
 * (auto: the op's only backend, else cuda when built and a device answers, else cpu).
 * Returns 0, or -1 with the reason in 'why' (an unknown name, a backend not built, a
 * backend the op does not run on). */
int kt_spec_resolve_backend(char *out, size_t out_len, const kt_op *op, const char *requested,
                            char *why, size_t why_len);

#endif
