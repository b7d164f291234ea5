/*
 * ktrial/plugin.h - the public, versioned interface for kernels that live outside ktrial.
 *
 * A plugin is a shared library that exports one function,
 *
 *     int kt_plugin_init(kt_plugin_registrar *r);
 *
 * which calls r->add_op(r, &op) for any op it brings and r->add_variant(r, &variant) for each
 * variant, and returns 0 (or a negative KT_E* code after kt_error_set()). The structs passed
 * must stay valid for the life of the process (static storage). ktrial runs kt_plugin_init
 * first in a throwaway child process, so a plugin that crashes or fails while loading costs
 * a validation error, never the run; prepare/run/release/metrics, generate and reference run
 * in the per-point worker process, where a crash is charged to that candidate alone.
 *
 * Build a plugin against the installed header only:
 *
 *     cc -O2 -shared -fPIC $(pkg-config --cflags ktrial-plugin) mine.c -o libmine.so
 *
 * The functions declared here are provided by the ktrial executable at load time; do not
 * link anything for them.
 *
 * Versioning: KT_PLUGIN_ABI_VERSION is (major << 16) | minor. Including this header puts the
 * version the plugin was compiled against into the library (kt_plugin_abi_version). ktrial
 * refuses a plugin whose major differs from its own, or whose minor is newer than its own.
 * A change to the layout of any struct below, or to the meaning of a field, bumps the major;
 * minors only add functions or append fields a host may ignore.
 *
 * Functions return KT_OK (0) or a negative KT_E* code; the message is set once, where the
 * failure happens, with kt_error_set() and read with kt_error_last().
 */
#ifndef KTRIAL_PLUGIN_H
#define KTRIAL_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KT_PLUGIN_ABI_MAJOR   1
#define KT_PLUGIN_ABI_MINOR   0
#define KT_PLUGIN_ABI_VERSION ((uint32_t)((KT_PLUGIN_ABI_MAJOR << 16) | KT_PLUGIN_ABI_MINOR))

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
    KT_AXIS_ROLE = 1 << 4,
    /* with KT_AXIS_PHASE: decode points keep their context too (a KV cache shapes them);
     * without it a decode point's shape ignores the context and it is dropped */
    KT_AXIS_DECODE_CONTEXT = 1 << 5
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

#define KT_MAX_TENSORS 12

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
    /* decoder_layer: blocks in the step (k = hidden, n = intermediate, attention fields as
     * above with 'context' the tokens already in the cache). */
    int64_t layers;
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
    /* Fills 'out' for 'point' in storage type 'dtype'. 'input_params' (never NULL) holds
     * the spec's inputs.params, the defaults where it gives none. */
    int (*shape)(kt_problem *out, const kt_point *point, kt_dtype dtype,
                 const kt_param_value *input_params);
    /* Fills the host input tensors (storage type) deterministically from cfg->seed. */
    int (*generate)(const kt_problem *p, void *const *inputs, const kt_input_config *cfg);
    /* Computes every output in float64 from the stored (already rounded) inputs. */
    int (*reference)(const kt_problem *p, const void *const *inputs, double *const *outputs);
} kt_op;

/* ---- backends, as a variant sees them ---------------------------------- */

/* An open backend (cpu, cuda or sim). Variants allocate device memory through it so that
 * ktrial counts every variant's bytes (thresholds.memory). */
typedef struct kt_backend kt_backend;

int kt_backend_alloc(kt_backend *b, void **ptr, size_t bytes);
/* 'bytes' must be the size given to kt_backend_alloc. */
void kt_backend_free(kt_backend *b, void *ptr, size_t bytes);
int kt_backend_upload(kt_backend *b, void *dst, const void *src, size_t bytes);
int kt_backend_download(kt_backend *b, void *dst, const void *src, size_t bytes);
int kt_backend_synchronize(kt_backend *b);
/* The backend's name: "cpu", "cuda" or "sim". */
const char *kt_backend_name(const kt_backend *b);

/* ---- variants ----------------------------------------------------------- */

/* Everything a variant receives for one prepare or run. */
/* Where the time of one call went, for variants made of stages (decoder_layer): each stage's
 * wall time on the variant's own cheap clock. Filled by the variant when kt_call.profile is
 * set; 'n' stays 0 for variants without stages. */
#define KT_MAX_STAGES 8

typedef struct kt_stage_profile {
    int n;
    const char *names[KT_MAX_STAGES]; /* static strings: "attention", "mlp", ... */
    double ns[KT_MAX_STAGES];
} kt_stage_profile;

/* The registry's lookups, for variants made of other variants (decoder_layer): the runner
 * passes them in, so no kernel refers to the registry that lists it. */
typedef struct kt_lookup {
    const struct kt_op *(*op)(const char *name);
    const struct kt_variant *(*variant)(const char *op, const char *backend, const char *name);
} kt_lookup;

typedef struct kt_call {
    kt_backend *backend;
    const kt_problem *problem;
    const kt_param_value *params; /* one per variant param def, in def order */
    const void *const *inputs;    /* backend buffers, problem->n_inputs of them */
    void *const *outputs;         /* backend buffers, problem->n_outputs of them */
    int threads;                  /* CPU threads to use (>= 1) */
    int pair_position;            /* 0: first call of a pair, 1: second; -1: not in a pair */
    uint64_t seed;                /* for variants that draw random numbers (sim) */
    kt_stage_profile *profile;    /* NULL, or where a staged variant records its stages */
    const kt_lookup *lookup;      /* the registry's lookups (kt_registry_lookup), or NULL */
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
    /* The timed call: reads call->inputs, writes every element of call->outputs. Returns KT_OK,
     * or a negative code that fails the arm (ktrial treats any value >= 0 as success). */
    int (*run)(void *state, const kt_call *call);
    /* Frees what prepare allocated. May be called with the state of a failed prepare. */
    void (*release)(void *state, kt_backend *backend);
    /* Optional: extra metrics after the last run; returns how many were written. */
    int (*metrics)(void *state, kt_metric *out, int max);
} kt_variant;

/* ---- the plugin entry point ------------------------------------------- */

typedef struct kt_plugin_registrar kt_plugin_registrar;

/* What ktrial hands to kt_plugin_init. Both add functions copy what they need and check it
 * (a NULL run, params with min > max, a name that clashes); they return KT_OK or a negative
 * code with the reason set, and kt_plugin_init should return that code. */
struct kt_plugin_registrar {
    uint32_t abi_version;     /* the KT_PLUGIN_ABI_VERSION ktrial was built with */
    const char *host_version; /* ktrial's version string, e.g. "0.1.0" */
    const char *path;         /* the path the plugin was loaded from */
    /* Adds an op (shape, input generator, float64 reference) before its variants. */
    int (*add_op)(kt_plugin_registrar *r, const kt_op *op);
    /* Adds a variant of a built-in op or of an op this plugin added. */
    int (*add_variant)(kt_plugin_registrar *r, const kt_variant *variant);
    void *host; /* ktrial's own state; do not touch */
};

#if defined(__GNUC__)
#define KT_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define KT_PLUGIN_EXPORT
#endif

/* The one function a plugin defines. */
KT_PLUGIN_EXPORT int kt_plugin_init(kt_plugin_registrar *r);

/* The ABI version a plugin was compiled against, read by ktrial before it calls
 * kt_plugin_init. Defined (weak, so every translation unit may include this header) in each
 * plugin; ktrial itself defines KT_PLUGIN_HOST and does not. */
#if !defined(KT_PLUGIN_HOST) && defined(__GNUC__)
#ifdef __cplusplus
#define KT_PLUGIN_ABI_LINKAGE extern /* a namespace-scope const is internal in C++ */
#else
#define KT_PLUGIN_ABI_LINKAGE
#endif
KT_PLUGIN_ABI_LINKAGE __attribute__((weak, visibility("default")))
const uint32_t kt_plugin_abi_version = KT_PLUGIN_ABI_VERSION;
#endif

#ifdef __cplusplus
}
#endif

#endif
