/* cuda_backend.h - the CUDA backend and its variants, as the registry sees them. */
#ifndef KT_CUDA_BACKEND_H
#define KT_CUDA_BACKEND_H

#include "../kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const kt_backend_iface kt_backend_cuda; /* in CUDA builds only */
/* In every build (caps.c): a CPU build still knows what a CUDA spec or archive means. */
extern const kt_backend_caps kt_backend_cuda_caps;

extern const kt_variant kt_variant_cuda_gemm_cublaslt;
extern const kt_variant kt_variant_cuda_gemm_deterministic;
extern const kt_variant kt_variant_cuda_attention_dense;
extern const kt_variant kt_variant_cuda_attention_ffd;
extern const kt_variant kt_variant_cuda_swiglu_unfused;
extern const kt_variant kt_variant_cuda_swiglu_fused;
extern const kt_variant kt_variant_cuda_decoder_layer;

/* Why the cuda decoder_layer cannot run 'phase' (prefill), or NULL: for validation. */
const char *kt_dl_cuda_phase_refusal(const kt_param_value *params, kt_phase phase, int *param);

#ifdef __cplusplus
}
#endif

#endif
