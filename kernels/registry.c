/* registry.c - the static tables of ops, backends and variants, followed by what plugins
 * register at run time (each entry its own allocation, so pointers stay valid). */
#include "kernel.h"
#include "ops/ops.h"
#include "ops/decoder_layer.h"
#include "cpu/cpu.h"
#include "sim/sim.h"
#include "process/process.h"
#include "cuda/cuda_backend.h" /* its caps are known to every build */
#ifdef KT_HAVE_PYTHON
#include "python/torch_variants.h"
#endif

#include <stdlib.h>
#include <string.h>

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const kt_op *const ops[] = {
    &kt_op_synthetic,     &kt_op_gemm,    &kt_op_swiglu_mlp, &kt_op_attention_decode,
    &kt_op_decoder_layer, &kt_op_command, &kt_op_service,    &kt_op_pymodule,
};

#ifdef KT_HAVE_CUDA
#define CUDA_IFACE (&kt_backend_cuda)
#else
#define CUDA_IFACE NULL
#endif

/* The one table of backend names: every backend ktrial knows, built or not. */
static const struct {
    const char *name;
    const kt_backend_iface *iface; /* NULL: this build left it out */
    const kt_backend_caps *caps;
    const char *build_hint; /* how to get it built, said when it is not */
} backends[] = {
    {"cpu", &kt_backend_cpu, &kt_backend_cpu_caps, NULL},
    {"cuda", CUDA_IFACE, &kt_backend_cuda_caps, " (configure with -DKT_CUDA=ON)"},
    {"sim", &kt_backend_sim, &kt_backend_sim_caps, NULL},
    {"process", &kt_backend_process, &kt_backend_process_caps, NULL},
};

static const kt_variant *const variants[] = {
    &kt_variant_sim_lognormal,          &kt_variant_sim_decoder_layer,
    &kt_variant_cpu_gemm_blas,          &kt_variant_cpu_gemm_tiled,
    &kt_variant_cpu_gemm_deterministic, &kt_variant_cpu_swiglu_unfused,
    &kt_variant_cpu_swiglu_fused,       &kt_variant_cpu_attention_dense,
    &kt_variant_cpu_attention_ffd,      &kt_variant_cpu_decoder_layer,
    &kt_variant_process_exec,           &kt_variant_process_serve,
    &kt_variant_cpu_pymodule,
#ifdef KT_HAVE_ONEDNN
    &kt_variant_cpu_gemm_onednn,
#endif
#ifdef KT_HAVE_PYTHON
    &kt_variant_cpu_gemm_torch,         &kt_variant_cpu_attention_torch,
    &kt_variant_cpu_swiglu_torch,
#endif
#ifdef KT_HAVE_CUDA
    &kt_variant_cuda_gemm_cublaslt,     &kt_variant_cuda_gemm_deterministic,
    &kt_variant_cuda_attention_dense,   &kt_variant_cuda_attention_ffd,
    &kt_variant_cuda_swiglu_unfused,    &kt_variant_cuda_swiglu_fused,
    &kt_variant_cuda_decoder_layer,
#endif
};

/* Registered by plugins, in load order. */
typedef struct plugin_entry {
    const void *item; /* a kt_op or a kt_variant, owned by the plugin loader */
    int plugin;
} plugin_entry;

static plugin_entry *plugin_ops, *plugin_variants;
static int n_plugin_ops, n_plugin_variants;

static int append(plugin_entry **list, int *n, const void *item, int plugin)
{
    plugin_entry *grown = realloc(*list, (size_t)(*n + 1) * sizeof(**list));
    if (!grown)
        return kt_error_code(KT_ENOMEM, "out of memory");
    grown[*n].item = item;
    grown[*n].plugin = plugin;
    *list = grown;
    (*n)++;
    return KT_OK;
}

int kt_registry_add_op(const kt_op *op, int plugin)
{
    return append(&plugin_ops, &n_plugin_ops, op, plugin);
}

int kt_registry_add_variant(const kt_variant *variant, int plugin)
{
    return append(&plugin_variants, &n_plugin_variants, variant, plugin);
}

int kt_op_plugin(const kt_op *op)
{
    for (int i = 0; i < n_plugin_ops; i++)
        if (plugin_ops[i].item == op)
            return plugin_ops[i].plugin;
    return -1;
}

int kt_variant_plugin(const kt_variant *variant)
{
    for (int i = 0; i < n_plugin_variants; i++)
        if (plugin_variants[i].item == variant)
            return plugin_variants[i].plugin;
    return -1;
}

int kt_op_count(void)
{
    return COUNT(ops) + n_plugin_ops;
}

const kt_op *kt_op_at(int i)
{
    if (i >= 0 && i < COUNT(ops))
        return ops[i];
    i -= COUNT(ops);
    return i >= 0 && i < n_plugin_ops ? plugin_ops[i].item : NULL;
}

const kt_op *kt_op_find(const char *name)
{
    for (int i = 0; i < kt_op_count(); i++)
        if (strcmp(kt_op_at(i)->name, name) == 0)
            return kt_op_at(i);
    return NULL;
}

int kt_backend_count(void)
{
    int n = 0;
    for (int i = 0; i < COUNT(backends); i++)
        n += backends[i].iface != NULL;
    return n;
}

const kt_backend_iface *kt_backend_at(int i)
{
    for (int k = 0; k < COUNT(backends); k++)
        if (backends[k].iface && i-- == 0)
            return backends[k].iface;
    return NULL;
}

static int backend_index(const char *name)
{
    for (int i = 0; name && i < COUNT(backends); i++)
        if (strcmp(backends[i].name, name) == 0)
            return i;
    return -1;
}

const kt_backend_iface *kt_backend_find(const char *name)
{
    int i = backend_index(name);
    return i >= 0 ? backends[i].iface : NULL;
}

int kt_backend_name_count(void)
{
    return COUNT(backends);
}

const char *kt_backend_name_at(int i)
{
    return i >= 0 && i < COUNT(backends) ? backends[i].name : NULL;
}

const kt_backend_caps *kt_backend_caps_of(const char *name)
{
    static const kt_backend_caps host = {0};
    int i = backend_index(name);
    return i >= 0 ? backends[i].caps : &host;
}

const char *kt_backend_build_hint(const char *name)
{
    int i = backend_index(name);
    return i >= 0 && !backends[i].iface && backends[i].build_hint ? backends[i].build_hint : "";
}

static int answers(const kt_backend_iface *iface)
{
    kt_device_info info;
    memset(&info, 0, sizeof(info));
    return iface->probe(&info) == KT_OK && info.available;
}

const kt_backend_iface *kt_backend_auto(unsigned filter)
{
    const kt_backend_iface *best = NULL;
    for (int i = 0; i < COUNT(backends); i++) {
        const kt_backend_iface *b = backends[i].iface;
        if (!b || b->caps->auto_rank <= 0 || (best && b->caps->auto_rank <= best->caps->auto_rank))
            continue;
        int device = b->caps->needs_device;
        if ((filter & KT_AUTO_HOST && device) || (filter & KT_AUTO_DEVICE && !device))
            continue;
        if (filter & KT_AUTO_PROBE && device && !answers(b))
            continue;
        best = b;
    }
    return best;
}

int kt_variant_count(void)
{
    return COUNT(variants) + n_plugin_variants;
}

const kt_variant *kt_variant_at(int i)
{
    if (i >= 0 && i < COUNT(variants))
        return variants[i];
    i -= COUNT(variants);
    return i >= 0 && i < n_plugin_variants ? plugin_variants[i].item : NULL;
}

const kt_variant *kt_variant_find_in(const char *op, const char *backend, const char *name,
                                     int plugin)
{
    for (int i = 0; i < kt_variant_count(); i++) {
        const kt_variant *v = kt_variant_at(i);
        if (strcmp(v->op, op) == 0 && strcmp(v->backend, backend) == 0 &&
            strcmp(v->name, name) == 0 &&
            (plugin == KT_PLUGIN_ANY || kt_variant_plugin(v) == plugin))
            return v;
    }
    return NULL;
}

const kt_variant *kt_variant_find(const char *op, const char *backend, const char *name)
{
    return kt_variant_find_in(op, backend, name, KT_PLUGIN_ANY);
}

int kt_backend_open(kt_backend **out, const char *name, int threads, uint64_t seed)
{
    const kt_backend_iface *iface = kt_backend_find(name);
    if (!iface)
        return kt_error_code(KT_EINVAL, "unknown backend '%s'", name);
    return kt_backend_open_iface(out, iface, threads, seed);
}

const kt_lookup kt_registry_lookup = {kt_op_find, kt_variant_find};

static const struct {
    const kt_variant *variant;
    const char *library;
} libraries[] = {
    {&kt_variant_cpu_gemm_blas, "openblas"},
#ifdef KT_HAVE_ONEDNN
    {&kt_variant_cpu_gemm_onednn, "onednn"},
#endif
};

const char *kt_variant_library(const kt_variant *v)
{
    for (int i = 0; i < COUNT(libraries); i++)
        if (libraries[i].variant == v)
            return libraries[i].library;
    return NULL;
}

/* Variants whose params can rule out a phase, and the function that says why. */
static const struct {
    const kt_variant *variant;
    const char *(*refusal)(const kt_param_value *params, kt_phase phase, int *param);
} phase_limits[] = {
    {&kt_variant_cpu_decoder_layer, kt_dl_cpu_phase_refusal},
#ifdef KT_HAVE_CUDA
    {&kt_variant_cuda_decoder_layer, kt_dl_cuda_phase_refusal},
#endif
};

const char *kt_variant_phase_refusal(const kt_variant *v, const kt_param_value *params,
                                     kt_phase phase, int *param)
{
    for (int i = 0; i < COUNT(phase_limits); i++)
        if (phase_limits[i].variant == v)
            return phase_limits[i].refusal(params, phase, param);
    return NULL;
}

/* Variants with params that rule each other out, and the function that says why. */
static const struct {
    const kt_variant *variant;
    int (*check)(const kt_param_value *params, int *param);
} param_limits[] = {
    {&kt_variant_cpu_attention_ffd, kt_ffd_cpu_check_params},
    {&kt_variant_cpu_decoder_layer, kt_dl_cpu_check_params},
};

int kt_variant_check_params(const kt_variant *v, const kt_param_value *params, int *param)
{
    *param = -1;
    for (int i = 0; i < COUNT(param_limits); i++)
        if (param_limits[i].variant == v)
            return param_limits[i].check(params, param);
    return KT_OK;
}

static int cpu_attention_check(const kt_param_value *params, const kt_problem *p)
{
    (void)params;
    return kt_attn_check_problem(p);
}

/* Variants whose kernels handle only some shapes of their op, and the function that says so. */
static const struct {
    const kt_variant *variant;
    int (*check)(const kt_param_value *params, const kt_problem *p);
} shape_limits[] = {
    {&kt_variant_cpu_attention_dense, cpu_attention_check},
    {&kt_variant_cpu_attention_ffd, kt_ffd_cpu_check_problem},
    {&kt_variant_cpu_decoder_layer, kt_dl_cpu_check_problem},
    {&kt_variant_cpu_swiglu_unfused, kt_swiglu_unfused_check_problem},
#ifdef KT_HAVE_ONEDNN
    {&kt_variant_cpu_gemm_onednn, kt_gemm_onednn_check_problem},
#endif
};

int kt_variant_check_problem(const kt_variant *v, const kt_param_value *params, const kt_problem *p)
{
    for (int i = 0; i < COUNT(shape_limits); i++)
        if (shape_limits[i].variant == v)
            return shape_limits[i].check(params, p);
    return KT_OK;
}

static const kt_missing_variant missing[] = {
#ifndef KT_HAVE_ONEDNN
    {"gemm", "onednn", "cpu",
     "oneDNN was not found when ktrial was built (apt-get install libdnnl-dev, reconfigure)"},
#endif
#ifndef KT_HAVE_PYTHON
#define NO_PYTHON                                                                                  \
    "Python was not found when ktrial was built (apt-get install libpython3-dev libdlpack-dev, "   \
    "reconfigure)"
    {"gemm", "torch", "cpu", NO_PYTHON},
    {"attention_decode", "torch", "cpu", NO_PYTHON},
    {"swiglu_mlp", "torch", "cpu", NO_PYTHON},
#endif
    {NULL, NULL, NULL, NULL}, /* keeps the table non-empty */
};

int kt_missing_variant_count(void)
{
    return COUNT(missing) - 1;
}

const kt_missing_variant *kt_missing_variant_at(int i)
{
    return i >= 0 && i < kt_missing_variant_count() ? &missing[i] : NULL;
}
