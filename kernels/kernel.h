/*
 * kernel.h - the one interface between the runner and the kernel library.
 *
 * Three things live behind it, in the style of ggml-backend:
 *   - ops (kernels/ops/): what is computed. An op turns a matrix point into a
 *     problem (tensor shapes, flop and byte counts), generates seeded inputs in
 *     the storage dtype, and computes the float64 reference from those inputs.
 *   - backends (kernels/cpu, kernels/cuda, kernels/sim): where it runs. A vtable
 *     of memory, copies, a timer around one call, a cache flush; the public
 *     wrappers below count allocated bytes.
 *   - variants: how it is computed. One op on one backend, a table of params,
 *     prepare (untimed) / run (timed) / release, and optional extra metrics.
 *
 * The runner includes only this header; kernels never include runner headers.
 * Functions return KT_OK (0) or a negative KT_E* code; the message is set once,
 * where the failure happens, with kt_error_set() and read with kt_error_last().
 */
#ifndef KT_KERNEL_H
#define KT_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- errors ------------------------------------------------------------ */

enum {
    KT_OK = 0,
    KT_ERROR = -1,        /* generic failure; message set */
    KT_ENODEV = -2,       /* the backend has no usable device */
    KT_ENOMEM = -3,       /* an allocation failed */
    KT_EINVAL = -4,       /* bad argument or shape */
    KT_EUNSUPPORTED = -5, /* this variant cannot run this problem (dtype, shape) */
    KT_EIO = -6           /* a file could not be written or read */
};

/* Sets the calling thread's last error message (printf-style) and returns KT_ERROR. */
int kt_error_set(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Same, returning 'code' so a caller can write: return kt_error_code(KT_EINVAL, ...). */
int kt_error_code(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The calling thread's last message, or "" when none. */
const char *kt_error_last(void);
void kt_error_clear(void);

/* ---- random numbers (xoshiro256**, seeded through splitmix64) ------------ */

typedef struct kt_rng {
    uint64_t s[4];
} kt_rng;

void kt_rng_seed(kt_rng *r, uint64_t seed);
uint64_t kt_rng_next(kt_rng *r);
/* Uniform on [0, 1) with 53 random bits. */
double kt_rng_uniform(kt_rng *r);
/* Standard normal (Box-Muller, one value per two uniforms). */
double kt_rng_normal(kt_rng *r);
/* Mixes two 64-bit values into a well-spread seed (splitmix64 finaliser). */
uint64_t kt_seed_mix(uint64_t a, uint64_t b);

/* ---- storage types ----------------------------------------------------- */

typedef enum {
    KT_DTYPE_FP32 = 0,
    KT_DTYPE_FP16,
    KT_DTYPE_BF16,
    KT_DTYPE_FP8_E4M3 /* internal only (FFD residuals); never a spec dtype */
} kt_dtype;

size_t kt_dtype_size(kt_dtype dtype);
const char *kt_dtype_name(kt_dtype dtype);
/* Parses "fp32" | "fp16" | "bf16" into 'out'; returns KT_OK or KT_EINVAL. */
int kt_dtype_parse(kt_dtype *out, const char *name);
/* Unit roundoff of the storage type (2^-24, 2^-11, 2^-8, 2^-4). */
double kt_dtype_unit_roundoff(kt_dtype dtype);

/* Round-to-nearest-even conversions; NaN stays NaN, overflow gives Inf (fp8 e4m3,
 * which has no Inf, saturates to NaN as in the OCP spec's "fn" variant). */
uint16_t kt_fp32_to_bf16(float x);
float kt_bf16_to_fp32(uint16_t x);
uint16_t kt_fp32_to_fp16(float x);
float kt_fp16_to_fp32(uint16_t x);
uint8_t kt_fp32_to_fp8_e4m3(float x);
float kt_fp8_e4m3_to_fp32(uint8_t x);

/* Converts 'n' values between a storage type and double (host memory). */
void kt_dtype_to_double(double *dst, const void *src, kt_dtype dtype, size_t n);
void kt_dtype_from_double(void *dst, const double *src, kt_dtype dtype, size_t n);
/* Reads element 'i' of a storage-typed array as float. */
float kt_dtype_load(const void *src, kt_dtype dtype, size_t i);

/* ---- models and matrix points ----------------------------------------- */

#define KT_NAME_MAX 64

typedef struct kt_model {
    char name[KT_NAME_MAX];
    int64_t hidden;
    int64_t heads;
    int64_t kv_heads;
    int64_t head_dim;
    int64_t intermediate;
    int64_t layers; /* 0 when unknown (inline models may omit it) */
} kt_model;

/* Which model fields an op reads (kt_op.model_fields). */
enum {
    KT_MODEL_HIDDEN = 1 << 0,
    KT_MODEL_HEADS = 1 << 1,
    KT_MODEL_KV_HEADS = 1 << 2,
    KT_MODEL_HEAD_DIM = 1 << 3,
    KT_MODEL_INTERMEDIATE = 1 << 4
};

typedef enum { KT_PHASE_DECODE = 0, KT_PHASE_PREFILL } kt_phase;
typedef enum { KT_ROLE_NONE = 0, KT_ROLE_QKV, KT_ROLE_O, KT_ROLE_GATE_UP, KT_ROLE_DOWN } kt_role;

const char *kt_phase_name(kt_phase phase);
const char *kt_role_name(kt_role role);

/* The axes of the experiment matrix; an op says which ones it uses. */
enum {
    KT_AXIS_MODEL = 1 << 0,
    KT_AXIS_BATCH = 1 << 1,
    KT_AXIS_CONTEXT = 1 << 2,
    KT_AXIS_PHASE = 1 << 3,
    KT_AXIS_ROLE = 1 << 4
};

/* One point of the matrix. Fields of axes the op does not use are zero. */
typedef struct kt_point {
    kt_model model;
    int64_t batch_size;
    int64_t context_length;
    kt_phase phase;
    kt_role role;
    char id[192]; /* readable and stable, e.g. "llama-3.2-1b/decode/b4/t16384" */
} kt_point;

/* ---- params (variant params and op input params) ------------------------ */

typedef enum { KT_PARAM_INT = 0, KT_PARAM_FLOAT, KT_PARAM_BOOL, KT_PARAM_ENUM } kt_param_type;

typedef struct kt_param_def {
    const char *name;
    kt_param_type type;
    double def; /* default; for ENUM the index into 'choices' */
    double min; /* inclusive range for INT and FLOAT */
    double max;
    const char *choices; /* ENUM only: "none|error|nan" */
    const char *doc;     /* one line */
} kt_param_def;

/* A param's value: INT and FLOAT as numbers, BOOL as 0/1, ENUM as the choice index. */
typedef struct kt_param_value {
    double num;
} kt_param_value;

#define KT_MAX_PARAMS 16

/* Index of 'name' in 'defs', or -1. */
int kt_param_index(const kt_param_def *defs, int n, const char *name);
/* Index of 'choice' in the '|'-separated 'choices', or -1. */
int kt_param_choice_index(const char *choices, const char *choice);
/* Writes choice 'index' of 'choices' into 'buf'; returns buf ("" when out of range). */
const char *kt_param_choice_name(char *buf, size_t len, const char *choices, int index);
/* Fills 'values' with the defaults of 'defs'. */
void kt_param_defaults(kt_param_value *values, const kt_param_def *defs, int n);

/* ---- problems: what an op makes of a point ------------------------------ */

#define KT_MAX_TENSORS 8

typedef struct kt_tensor {
    const char *name; /* static string: "x", "w", "q", "k", "v", "y", "out" */
    int ndim;
    int64_t dims[4];
    kt_dtype dtype;
} kt_tensor;

int64_t kt_tensor_elems(const kt_tensor *t);
size_t kt_tensor_bytes(const kt_tensor *t);

struct kt_op;

typedef struct kt_problem {
    const struct kt_op *op;
    kt_dtype dtype; /* storage type of inputs and outputs */
    /* gemm: Y[m,n] = X[m,k] W[n,k]^T.  swiglu_mlp: m rows, k = hidden, n = intermediate. */
    int64_t m, n, k;
    /* attention_decode: q[batch,heads,head_dim], K,V[batch,kv_heads,context,head_dim]. */
    int64_t batch, heads, kv_heads, head_dim, context;
    /* synthetic: 'elems' outputs. */
    int64_t elems;
    int n_inputs;  /* tensors[0 .. n_inputs-1] are inputs */
    int n_outputs; /* tensors[n_inputs .. n_inputs+n_outputs-1] are outputs */
    kt_tensor tensors[KT_MAX_TENSORS];
    double flops; /* floating-point operations of one call */
    double bytes; /* compulsory bytes read and written by one call (roofline) */
} kt_problem;

/* ---- inputs ------------------------------------------------------------- */

typedef enum { KT_DIST_NORMAL = 0, KT_DIST_UNIFORM, KT_DIST_LLM } kt_distribution;

const char *kt_distribution_name(kt_distribution d);

typedef struct kt_input_config {
    kt_distribution distribution;
    uint64_t seed;                /* already mixed with the point and input set */
    const kt_param_value *params; /* the op's input params, one per def */
} kt_input_config;

/* ---- ops ---------------------------------------------------------------- */

typedef struct kt_op {
    const char *name;
    const char *doc;
    unsigned axes;                    /* KT_AXIS_* used by the op */
    unsigned model_fields;            /* KT_MODEL_* read by 'shape' */
    const char *backend_only;         /* NULL, or the one backend the op runs on ("sim") */
    const kt_param_def *input_params; /* knobs of the input generator, under inputs.params */
    int n_input_params;
    /* Fills 'out' for 'point' in storage type 'dtype'. */
    int (*shape)(kt_problem *out, const kt_point *point, kt_dtype dtype);
    /* Fills the host input tensors (storage type) deterministically from cfg->seed. */
    int (*generate)(const kt_problem *p, void *const *inputs, const kt_input_config *cfg);
    /* Computes every output in float64 from the stored (already rounded) inputs. */
    int (*reference)(const kt_problem *p, const void *const *inputs, double *const *outputs);
} kt_op;

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
    double noise;  /* CPU: involuntary context switches; CUDA: SM clock MHz; sim: 0 */
    int throttled; /* 1 when the backend judged the sample disturbed (GPU clock < 75%) */
} kt_timing;

typedef struct kt_backend_iface {
    const char *name;
    const char *doc;
    const char *noise_name; /* what kt_timing.noise means, e.g. "invol_csw" */
    /* Says whether a device answers and describes it; KT_ENODEV with info->reason if not. */
    int (*probe)(kt_device_info *info);
    int (*init)(void **ctx, int threads, uint64_t seed);
    void (*shutdown)(void *ctx);
    int (*alloc)(void *ctx, void **ptr, size_t bytes);
    void (*free)(void *ctx, void *ptr);
    int (*upload)(void *ctx, void *dst, const void *src, size_t bytes);
    int (*download)(void *ctx, void *dst, const void *src, size_t bytes);
    /* Evicts the last-level cache (CPU) or L2 (GPU): a write over >= 2x its size. */
    int (*flush_cache)(void *ctx);
    int (*timer_start)(void *ctx);
    int (*timer_stop)(void *ctx, kt_timing *out);
    int (*synchronize)(void *ctx);
    /* Optional: the timer's tick in ns when the backend knows it exactly (sim). NULL: it is
     * measured (kt_backend_timer_tick_ns). */
    double (*timer_tick_ns)(void *ctx);
} kt_backend_iface;

/* An open backend. Allocations go through kt_backend_alloc so bytes are counted. */
typedef struct kt_backend {
    const kt_backend_iface *iface;
    void *ctx;
    int threads;
    size_t bytes_current;
    size_t bytes_peak;
} kt_backend;

/* Opens the backend 'iface' (core.c knows no names). */
int kt_backend_open_iface(kt_backend **out, const kt_backend_iface *iface, int threads,
                          uint64_t seed);
/* Finds the backend called 'name' in the registry and opens it (registry.c). */
int kt_backend_open(kt_backend **out, const char *name, int threads, uint64_t seed);
void kt_backend_close(kt_backend *b);
int kt_backend_alloc(kt_backend *b, void **ptr, size_t bytes);
/* 'bytes' must be the size given to kt_backend_alloc. */
void kt_backend_free(kt_backend *b, void *ptr, size_t bytes);
int kt_backend_upload(kt_backend *b, void *dst, const void *src, size_t bytes);
int kt_backend_download(kt_backend *b, void *dst, const void *src, size_t bytes);
int kt_backend_flush_cache(kt_backend *b);
int kt_backend_timer_start(kt_backend *b);
int kt_backend_timer_stop(kt_backend *b, kt_timing *out);
int kt_backend_synchronize(kt_backend *b);
/* The timer's resolution: the backend's own figure when it has one, else the smallest
 * nonzero duration of 200 empty timed regions (the tick, or the timer's own cost when that
 * is larger). NAN when the timer fails. */
double kt_backend_timer_tick_ns(kt_backend *b);
/* Resets the peak to the current byte count (to measure one variant's footprint). */
void kt_backend_reset_peak(kt_backend *b);

/* ---- variants ----------------------------------------------------------- */

/* Everything a variant receives for one prepare or run. */
typedef struct kt_call {
    kt_backend *backend;
    const kt_problem *problem;
    const kt_param_value *params; /* one per variant param def, in def order */
    const void *const *inputs;    /* backend buffers, problem->n_inputs of them */
    void *const *outputs;         /* backend buffers, problem->n_outputs of them */
    int threads;                  /* CPU threads to use (>= 1) */
    int pair_position;            /* 0: first call of a pair, 1: second; -1: not in a pair */
    uint64_t seed;                /* for variants that draw random numbers (sim) */
} kt_call;

typedef struct kt_metric {
    const char *name; /* static string, e.g. "kept_fraction" */
    double value;
    const char *unit; /* static string, "" when dimensionless */
} kt_metric;

#define KT_MAX_METRICS 8

typedef struct kt_variant {
    const char *op;
    const char *name;
    const char *backend;
    const char *doc;
    const kt_param_def *params;
    int n_params;
    /* Untimed: allocate (through call->backend), preprocess. Sets *state. */
    int (*prepare)(void **state, const kt_call *call);
    /* The timed call: reads call->inputs, writes every element of call->outputs. */
    int (*run)(void *state, const kt_call *call);
    /* Frees what prepare allocated. May be called with the state of a failed prepare. */
    void (*release)(void *state, kt_backend *backend);
    /* Optional: extra metrics after the last run; returns how many were written. */
    int (*metrics)(void *state, kt_metric *out, int max);
} kt_variant;

/* ---- registry (static tables) ------------------------------------------- */

int kt_op_count(void);
const kt_op *kt_op_at(int i);
const kt_op *kt_op_find(const char *name);

int kt_backend_count(void);
const kt_backend_iface *kt_backend_at(int i);
const kt_backend_iface *kt_backend_find(const char *name);

int kt_variant_count(void);
const kt_variant *kt_variant_at(int i);
const kt_variant *kt_variant_find(const char *op, const char *backend, const char *name);

#ifdef __cplusplus
}
#endif

#endif
