/* cpu.h - private to kernels/cpu: the CPU backend and its variants. */
#ifndef KT_CPU_H
#define KT_CPU_H

#include "../kernel.h"

extern const kt_backend_iface kt_backend_cpu;
extern const kt_backend_caps kt_backend_cpu_caps;
extern const kt_variant kt_variant_cpu_gemm_blas;
extern const kt_variant kt_variant_cpu_gemm_tiled;
extern const kt_variant kt_variant_cpu_gemm_deterministic;
extern const kt_variant kt_variant_cpu_swiglu_unfused;
extern const kt_variant kt_variant_cpu_swiglu_fused;
extern const kt_variant kt_variant_cpu_attention_dense;
extern const kt_variant kt_variant_cpu_attention_ffd;
extern const kt_variant kt_variant_cpu_decoder_layer;
/* Checks the shape constraints the CPU attention kernels share: head_dim a multiple of 8 and
 * at most KT_ATTN_MAX_HEAD_DIM (KT_EUNSUPPORTED), heads a multiple of kv_heads (KT_EINVAL).
 * Prepare calls it, and the registry for validation (kt_variant_check_problem). */
int kt_attn_check_problem(const kt_problem *p);
/* The CPU 'ffd' variant's limits: an int8 scan ('scan: int8') needs a block (check_params) and
 * a head_dim (check_problem, with kt_attn_check_problem's) that are multiples of 16. */
int kt_ffd_cpu_check_params(const kt_param_value *params, int *param);
int kt_ffd_cpu_check_problem(const kt_param_value *params, const kt_problem *p);
/* Why the CPU 'layer' variant with 'params' cannot run 'phase' (attention 'ffd' on a prefill
 * chunk), or NULL; '*param' gets the index of the 'attention' param. */
const char *kt_dl_cpu_phase_refusal(const kt_param_value *params, kt_phase phase, int *param);
/* KT_OK when the CPU 'layer' variant with 'params' can run problem 'p', else why: with fusion
 * none a decode step's attention stage has the attention variants' shape limits. */
int kt_dl_cpu_check_problem(const kt_param_value *params, const kt_problem *p);
/* KT_OK unless the CPU 'layer' variant's fusion runs its own kernels and a stage choice (a param
 * that applies with fusion none) is set: then why, with '*param' that param. */
int kt_dl_cpu_check_params(const kt_param_value *params, int *param);
/* KT_OK when the 'unfused' swiglu_mlp variant can run problem 'p' ([m, k] tokens, intermediate
 * n) with GEMM engine 'engine' (its 'engine' param's index): with oneDNN, both of its GEMMs must
 * have an implementation on this CPU (no fp16 matmul without the ISA, for one). */
int kt_swiglu_unfused_check_engine(int engine, const kt_problem *p);
int kt_swiglu_unfused_check_problem(const kt_param_value *params, const kt_problem *p);
#ifdef KT_HAVE_ONEDNN
extern const kt_variant kt_variant_cpu_gemm_onednn;
/* The 'onednn' gemm variant: KT_OK when oneDNN has its matmul for 'p' on this CPU. */
int kt_gemm_onednn_check_problem(const kt_param_value *params, const kt_problem *p);
#endif

#endif
