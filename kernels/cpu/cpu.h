/* cpu.h - private to kernels/cpu: the CPU backend and its variants. */
#ifndef KT_CPU_H
#define KT_CPU_H

#include "../kernel.h"

extern const kt_backend_iface kt_backend_cpu;
extern const kt_variant kt_variant_cpu_gemm_blas;
extern const kt_variant kt_variant_cpu_gemm_tiled;
extern const kt_variant kt_variant_cpu_gemm_deterministic;
extern const kt_variant kt_variant_cpu_swiglu_unfused;
extern const kt_variant kt_variant_cpu_swiglu_fused;
extern const kt_variant kt_variant_cpu_attention_dense;
extern const kt_variant kt_variant_cpu_attention_ffd;
extern const kt_variant kt_variant_cpu_decoder_layer;
/* Why the CPU 'layer' variant with 'params' cannot run 'phase' (attention 'ffd' on a prefill
 * chunk), or NULL; '*param' gets the index of the 'attention' param. */
const char *kt_dl_cpu_phase_refusal(const kt_param_value *params, kt_phase phase, int *param);
#ifdef KT_HAVE_ONEDNN
extern const kt_variant kt_variant_cpu_gemm_onednn;
#endif

#endif
