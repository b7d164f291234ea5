/* torch_variants.c - the 'torch' variants of gemm, attention_decode and swiglu_mlp on the cpu
 * backend: the functions of kernels/python/torch_ops.py (compiled into ktrial) called through
 * the Python bridge (py_variant.h), so a candidate can be measured against what PyTorch does. */
#include "python/torch_variants.h"

#include <stddef.h>

extern const char kt_embedded_torch_ops[];

#define DEF(fn)                                                                                    \
    {                                                                                              \
        NULL, kt_embedded_torch_ops, "torch_ops.py", fn, KT_PY_TORCH                               \
    }
static const kt_py_def defs[] = {DEF("gemm"), DEF("attention_decode"), DEF("swiglu_mlp")};

static int gemm_prepare(void **state, const kt_call *call)
{
    return kt_py_variant_prepare(&defs[0], state, call);
}

static int attention_prepare(void **state, const kt_call *call)
{
    return kt_py_variant_prepare(&defs[1], state, call);
}

static int swiglu_prepare(void **state, const kt_call *call)
{
    return kt_py_variant_prepare(&defs[2], state, call);
}

#define TORCH_VARIANT(op, prepare, doc)                                                            \
    {                                                                                              \
        op, "torch", "cpu", doc, NULL, 0, prepare, kt_py_variant_run, kt_py_variant_release, NULL  \
    }

const kt_variant kt_variant_cpu_gemm_torch =
    TORCH_VARIANT("gemm", gemm_prepare, "PyTorch's torch.matmul (kernels/python/torch_ops.py)");
const kt_variant kt_variant_cpu_attention_torch =
    TORCH_VARIANT("attention_decode", attention_prepare,
                  "PyTorch's attention on the KV layout, GQA batched per KV head (torch_ops.py)");
const kt_variant kt_variant_cpu_swiglu_torch =
    TORCH_VARIANT("swiglu_mlp", swiglu_prepare, "PyTorch's matmul, silu, matmul (torch_ops.py)");

const kt_py_def *kt_torch_variant_def(const kt_variant *v)
{
    if (v == &kt_variant_cpu_gemm_torch)
        return &defs[0];
    if (v == &kt_variant_cpu_attention_torch)
        return &defs[1];
    if (v == &kt_variant_cpu_swiglu_torch)
        return &defs[2];
    return NULL;
}
