/* torch_variants.h - the built-in 'torch' variants (torch_variants.c), in builds with Python. */
#ifndef KT_TORCH_VARIANTS_H
#define KT_TORCH_VARIANTS_H

#include "python/py_variant.h"

extern const kt_variant kt_variant_cpu_gemm_torch;
extern const kt_variant kt_variant_cpu_attention_torch;
extern const kt_variant kt_variant_cpu_swiglu_torch;

/* The Python function behind a torch variant, or NULL for any other variant. */
const kt_py_def *kt_torch_variant_def(const kt_variant *v);

#endif
