/* registry.c - the static tables of ops, backends and variants. */
#include "kernel.h"
#include "ops/ops.h"
#include "cpu/cpu.h"
#include "sim/sim.h"
#ifdef KT_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif

#include <string.h>

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const kt_op *const ops[] = {
    &kt_op_synthetic,
    &kt_op_gemm,
    &kt_op_swiglu_mlp,
    &kt_op_attention_decode,
};

static const kt_backend_iface *const backends[] = {
    &kt_backend_cpu,
#ifdef KT_HAVE_CUDA
    &kt_backend_cuda,
#endif
    &kt_backend_sim,
};

static const kt_variant *const variants[] = {
    &kt_variant_sim_lognormal,        &kt_variant_cpu_gemm_blas,
    &kt_variant_cpu_gemm_tiled,       &kt_variant_cpu_gemm_deterministic,
    &kt_variant_cpu_swiglu_unfused,   &kt_variant_cpu_swiglu_fused,
    &kt_variant_cpu_attention_dense,  &kt_variant_cpu_attention_ffd,
#ifdef KT_HAVE_CUDA
    &kt_variant_cuda_gemm_cublaslt,   &kt_variant_cuda_gemm_deterministic,
    &kt_variant_cuda_attention_dense, &kt_variant_cuda_attention_ffd,
    &kt_variant_cuda_swiglu_unfused,  &kt_variant_cuda_swiglu_fused,
#endif
};

int kt_op_count(void)
{
    return COUNT(ops);
}

const kt_op *kt_op_at(int i)
{
    return i >= 0 && i < COUNT(ops) ? ops[i] : NULL;
}

const kt_op *kt_op_find(const char *name)
{
    for (int i = 0; i < COUNT(ops); i++)
        if (strcmp(ops[i]->name, name) == 0)
            return ops[i];
    return NULL;
}

int kt_backend_count(void)
{
    return COUNT(backends);
}

const kt_backend_iface *kt_backend_at(int i)
{
    return i >= 0 && i < COUNT(backends) ? backends[i] : NULL;
}

const kt_backend_iface *kt_backend_find(const char *name)
{
    for (int i = 0; i < COUNT(backends); i++)
        if (strcmp(backends[i]->name, name) == 0)
            return backends[i];
    return NULL;
}

int kt_variant_count(void)
{
    return COUNT(variants);
}

const kt_variant *kt_variant_at(int i)
{
    return i >= 0 && i < COUNT(variants) ? variants[i] : NULL;
}

const kt_variant *kt_variant_find(const char *op, const char *backend, const char *name)
{
    for (int i = 0; i < COUNT(variants); i++) {
        const kt_variant *v = variants[i];
        if (strcmp(v->op, op) == 0 && strcmp(v->backend, backend) == 0 &&
            strcmp(v->name, name) == 0)
            return v;
    }
    return NULL;
}

int kt_backend_open(kt_backend **out, const char *name, int threads, uint64_t seed)
{
    const kt_backend_iface *iface = kt_backend_find(name);
    if (!iface)
        return kt_error_code(KT_EINVAL, "unknown backend '%s'", name);
    return kt_backend_open_iface(out, iface, threads, seed);
}
