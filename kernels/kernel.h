/*
 * kernel.h - the one interface between the runner and the kernel library.
 *
 * Three things live behind it, in the style of ggml-backend:
 *   - ops (kernels/ops/): what is computed. An op turns a matrix point into a
 *     problem (tensor shapes, flop and byte counts), generates seeded inputs in
 *     the storage dtype, and computes the float64 reference from those inputs.
 *   - backends (kernels/cpu, kernels/cuda, kernels/sim, kernels/process): where it
 *     runs. A vtable of memory, copies, a timer around one call, a cache flush, and
 *     the capabilities the runner reads instead of the backend's name; the public
 *     wrappers below count allocated bytes. The registry holds the one table of
 *     backend names.
 *   - variants: how it is computed. One op on one backend, a table of params,
 *     prepare (untimed) / run (timed) / release, and optional extra metrics.
 *
 * What a kernel author needs (errors, dtypes, points, params, problems, ops, variants) is the
 * public, versioned include/ktrial/plugin.h, included here; this header adds the backend
 * vtable and the registry.
 * The runner includes only this header; kernels never include runner headers.
 * Functions return KT_OK (0) or a negative KT_E* code; the message is set once,
 * where the failure happens, with kt_error_set() and read with kt_error_last().
 */
#ifndef KT_KERNEL_H
#define KT_KERNEL_H

#define KT_PLUGIN_HOST 1 /* the host does not carry a plugin ABI tag */
#include "ktrial/plugin.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The last message, or when the failing function set none (a plugin that returned a code
 * without kt_error_set) a sentence naming 'code': "returned -4 (KT_EINVAL) without a
 * message". For reports of a kernel's failure, where an empty reason helps nobody. */
const char *kt_error_or_code(int code);

/* The model fields (KT_MODEL_*) a projection of role 'role' reads: qkv the width and every head
 * field, o the width, heads and head_dim, gate_up and down the width and intermediate size; 0
 * for KT_ROLE_NONE. An op with a role axis needs of a model only its roles' fields. */
unsigned kt_role_model_fields(kt_role role);

/* op->shape and, for a plugin's op (which may make anything), a check of the problem it
 * made: at least one output, KT_MAX_TENSORS tensors at most, each named with 1 to 4 dims of
 * at least 1 and 2^48 elements at most, a storage dtype, finite flops and bytes. A shape that
 * fails without a message is named by its code. Every caller outside an op goes through
 * this. */
int kt_op_shape(const kt_op *op, kt_problem *out, const kt_point *point, kt_dtype dtype,
                const kt_param_value *input_params);

/* ---- backends ----------------------------------------------------------- */

#define KT_INFO_MAX 32

/* A backend's description of its device as key/value pairs, for provenance. */
typedef struct kt_device_info {
    int available;    /* 1 when the probe found a usable device */
    char reason[256]; /* why not, when !available ("no CUDA device: ...") */
    int n;
    struct {
        char key[32];
        char value[160];
    } items[KT_INFO_MAX];
} kt_device_info;

/* Adds a key/value pair to 'info' (printf-style value); silently drops past KT_INFO_MAX. */
void kt_device_info_add(kt_device_info *info, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* One timed call as the backend measured it. */
typedef struct kt_timing {
    double time_ns;
    double noise; /* CPU: run-queue wait of the process's threads, us; CUDA: SM clock MHz; sim: 0 */
    int throttled; /* 1 when the backend judged the sample disturbed (GPU clock < 75%) */
} kt_timing;

/* What a backend is, for the runner: read instead of comparing the backend's name. Every
 * backend name the registry knows has its capabilities, those of a backend this build left out
 * included (kt_backend_caps_of), so a CPU build still judges a CUDA spec or archive rightly. All
 * zero is a host backend's: the runner's default for a name it does not know. */
typedef enum kt_clock {
    KT_CLOCK_HOST,    /* the host's monotonic clock around the call */
    KT_CLOCK_DEVICE,  /* the device's own timer (CUDA events on the stream) */
    KT_CLOCK_VIRTUAL, /* simulated time: a call's duration is what its params say, and the
                       * host's load means nothing to it */
} kt_clock;

typedef enum kt_noise_kind {
    KT_NOISE_DISTURBANCE, /* 0 when undisturbed: any nonzero value marks the call disturbed (the
                           * CPU's run-queue wait) */
    KT_NOISE_LEVEL,       /* a level, never 0 (a GPU's SM clock): only 'throttled' marks a
                           * call disturbed */
    KT_NOISE_NONE,        /* always 0 */
} kt_noise_kind;

typedef enum kt_flush_kind {
    KT_FLUSH_EVICT,     /* evicts the lines of the backend's buffers from every cache level */
    KT_FLUSH_L2_SWEEP,  /* reads through a buffer of at least twice the device's L2 */
    KT_FLUSH_NOTHING,   /* flushes nothing: the call runs elsewhere (a child process) */
    KT_FLUSH_NO_CACHES, /* there are no caches to flush or to warm (a simulated device) */
} kt_flush_kind;

typedef struct kt_backend_caps {
    kt_clock clock;      /* the timer's clock; its resolution is kt_backend_timer_tick_ns */
    kt_noise_kind noise; /* what kt_timing.noise says of a call */
    kt_flush_kind flush; /* what flush_cache does */
    int device_memory;   /* 1: alloc'd buffers live in device memory, and upload/download copy
                          * between it and the host (the host keeps only its own copies) */
    int profile_opt_in;  /* 1: trials.profile defaults to off (counters perturb the clocks) */
    int needs_device;    /* 1: usable only where probe finds a device */
    int auto_rank;       /* backend auto prefers the higher rank (kt_backend_auto); 0: never */
    int gpus;            /* GPUs one open backend uses: what a Slurm task asks for, and the
                          * profiling pass reads their usage (energy, counters) */
    int calibrated;      /* 1: the plan measures an arm's steps in a child on this host and
                          * scales them by the host's roofline; 0: it keeps its call model */
} kt_backend_caps;

typedef struct kt_backend_iface {
    const char *name;
    const char *doc;
    const char *noise_name; /* what kt_timing.noise means, e.g. "runq_wait_us" */
    /* Says whether a device answers and describes it; KT_ENODEV with info->reason if not. */
    int (*probe)(kt_device_info *info);
    int (*init)(void **ctx, int threads, uint64_t seed);
    void (*shutdown)(void *ctx);
    int (*alloc)(void *ctx, void **ptr, size_t bytes);
    void (*free)(void *ctx, void *ptr);
    int (*upload)(void *ctx, void *dst, const void *src, size_t bytes);
    int (*download)(void *ctx, void *dst, const void *src, size_t bytes);
    /* Makes the next call cold. CPU: evicts every cache line of every buffer the backend
     * allocated (clflushopt, or clflush), from every level; it does not write over a buffer
     * sized to the last-level cache. GPU: a write over >= 2x the L2 size. Untimed. */
    int (*flush_cache)(void *ctx);
    int (*timer_start)(void *ctx);
    int (*timer_stop)(void *ctx, kt_timing *out);
    int (*synchronize)(void *ctx);
    /* Optional: the timer's tick in ns when the backend knows it exactly (sim). NULL: it is
     * measured (kt_backend_timer_tick_ns). */
    double (*timer_tick_ns)(void *ctx);
    /* Optional: places the threads the backend computes with in this process, one to a core
     * (compact = 1, threads_affinity: compact) or where the scheduler likes (0). NULL: it has no
     * threads of its own to place. */
    int (*place_threads)(int compact);
    const kt_backend_caps *caps; /* the same as kt_backend_caps_of(name) */
} kt_backend_iface;

/* An open backend (declared in ktrial/plugin.h with its memory functions). Allocations go
 * through kt_backend_alloc so bytes are counted. */
struct kt_backend {
    const kt_backend_iface *iface;
    void *ctx;
    int threads;
    size_t bytes_current;
    size_t bytes_peak;
};

/* Opens the backend 'iface' (core.c knows no names). */
int kt_backend_open_iface(kt_backend **out, const kt_backend_iface *iface, int threads,
                          uint64_t seed);
/* Finds the backend called 'name' in the registry and opens it (registry.c). */
int kt_backend_open(kt_backend **out, const char *name, int threads, uint64_t seed);
void kt_backend_close(kt_backend *b);
int kt_backend_flush_cache(kt_backend *b);
int kt_backend_timer_start(kt_backend *b);
int kt_backend_timer_stop(kt_backend *b, kt_timing *out);
/* The timer's resolution: the backend's own figure when it has one, else the smallest
 * nonzero duration of 200 empty timed regions (the tick, or the timer's own cost when that
 * is larger). NAN when the timer fails. */
double kt_backend_timer_tick_ns(kt_backend *b);
/* Resets the peak to the current byte count (to measure one variant's footprint). */
void kt_backend_reset_peak(kt_backend *b);
/* Places the backend's threads (its place_threads, nothing when it has none). */
int kt_backend_place_threads(kt_backend *b, int compact);

/* A variant this build left out, and why ("oneDNN was not found when ktrial was built"). */
typedef struct kt_missing_variant {
    const char *op;
    const char *name;
    const char *backend;
    const char *reason;
} kt_missing_variant;

/* ---- registry: static tables, then what plugins added -------------------- */

int kt_op_count(void);
const kt_op *kt_op_at(int i);
const kt_op *kt_op_find(const char *name);

/* The backends built into this ktrial. */
int kt_backend_count(void);
const kt_backend_iface *kt_backend_at(int i);
const kt_backend_iface *kt_backend_find(const char *name);

/* Every backend name ktrial knows, in the registry's order, those this build left out included
 * (the one table of backend names: options, spec checks and messages read it). */
int kt_backend_name_count(void);
const char *kt_backend_name_at(int i);
/* The capabilities of the backend called 'name', built or not; all zero (a host backend's) for
 * a name ktrial does not know. Never NULL. */
const kt_backend_caps *kt_backend_caps_of(const char *name);
/* How to get backend 'name' built, as the end of a sentence saying it is not: " (configure
 * with -DKT_CUDA=ON)" for a backend this build left out, "" for any other name. */
const char *kt_backend_build_hint(const char *name);

/* kt_backend_auto's filter. */
enum {
    KT_AUTO_PROBE = 1,  /* a backend that needs a device counts only where its probe answers */
    KT_AUTO_HOST = 2,   /* only backends that need no device */
    KT_AUTO_DEVICE = 4, /* only backends that need a device */
};
/* The backend 'auto' stands for: the built backend of highest auto_rank that passes 'filter',
 * or NULL when none does. With KT_AUTO_PROBE that is the GPU when one answers, else the CPU;
 * with 0 the GPU backend whenever this build has one. */
const kt_backend_iface *kt_backend_auto(unsigned filter);

int kt_variant_count(void);
const kt_variant *kt_variant_at(int i);
/* The first match: built-ins come before plugins, plugins in load order. */
const kt_variant *kt_variant_find(const char *op, const char *backend, const char *name);
/* kt_op_find and kt_variant_find, for kt_call.lookup. */
extern const kt_lookup kt_registry_lookup;

/* The baseline library 'v' calls ("openblas", "onednn"), or NULL; variants with an 'engine'
 * param call the library that param names. A run prints the backend's "<library>_warning"
 * device info item for each library its arms call. */
const char *kt_variant_library(const kt_variant *v);

/* Why variant 'v' with 'params' cannot run points of 'phase' (a decode-only stage kernel in a
 * staged variant): NULL when it can (and for every variant without such a limit), else the
 * reason, with '*param' the index of the param to blame. Lets validation refuse at the param's
 * line what prepare would refuse at run time. */
const char *kt_variant_phase_refusal(const kt_variant *v, const kt_param_value *params,
                                     kt_phase phase, int *param);

/* Whether variant 'v' can run with 'params' together, whatever the point: KT_OK, or an error
 * saying why (a combination its kernels refuse, such as FFD's int8 scan with a block that is not
 * a multiple of 16), with '*param' the index of the param to blame. Lets validation refuse at
 * the param's line what prepare would refuse at run time. */
int kt_variant_check_params(const kt_variant *v, const kt_param_value *params, int *param);

/* Whether variant 'v' with 'params' can run problem 'p': KT_OK, or an error saying why (a shape
 * its kernels do not handle, such as an attention head_dim that is not a multiple of 8). Lets
 * validation refuse at the model what prepare would refuse at run time. */
int kt_variant_check_problem(const kt_variant *v, const kt_param_value *params,
                             const kt_problem *p);

/* The untimed end of a call of 'v' on 'state': what a variant leaves to do after its timed run
 * (a Python variant's returned values checked for aliasing and copied into the outputs,
 * python/py_variant.h). KT_OK at once for every other variant. The runner calls it after each
 * run, after the timer stopped for a timed one; its failure fails the call as run's does. */
int kt_variant_finish(const kt_variant *v, void *state, const kt_call *call);
/* An untimed call: run, then kt_variant_finish. */
int kt_variant_call(const kt_variant *v, void *state, const kt_call *call);

int kt_missing_variant_count(void);
const kt_missing_variant *kt_missing_variant_at(int i);

/* ---- plugins (plugin.c; registry.c keeps their entries) ------------------ */

#define KT_PLUGIN_BUILTIN (-1) /* kt_variant_plugin / kt_op_plugin of a built-in */
#define KT_PLUGIN_ANY     (-2) /* kt_variant_find_in: from any source */

/* Loads the shared library at 'path': first in a throwaway child process (so a crash or a
 * hang while loading or in kt_plugin_init is only an error), then in this process, whose
 * forked workers inherit it. Checks the ABI version and everything registered (names,
 * NULL functions, params, clashes with built-ins and within the plugin). Returns the
 * plugin's index (>= 0; the same index when the same file is loaded again) or a negative
 * code with the reason set. */
int kt_plugin_load(const char *path);
int kt_plugin_count(void);
/* The real path the plugin at index 'i' was loaded from. */
const char *kt_plugin_path(int i);
/* The KT_PLUGIN_ABI_VERSION the plugin was built against. */
uint32_t kt_plugin_abi(int i);

/* Registry entries of plugin 'plugin' (called by the loader once a plugin is accepted). */
int kt_registry_add_op(const kt_op *op, int plugin);
int kt_registry_add_variant(const kt_variant *variant, int plugin);
/* The plugin a registry entry came from, or KT_PLUGIN_BUILTIN. */
int kt_op_plugin(const kt_op *op);
int kt_variant_plugin(const kt_variant *variant);
/* Like kt_variant_find, limited to one plugin (or KT_PLUGIN_BUILTIN, or KT_PLUGIN_ANY). */
const kt_variant *kt_variant_find_in(const char *op, const char *backend, const char *name,
                                     int plugin);

#ifdef __cplusplus
}
#endif

#endif
