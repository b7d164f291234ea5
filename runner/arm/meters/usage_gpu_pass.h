/* usage_gpu_pass.h - the GPU half of an arm's profiling pass (cuda backend only). */
#ifndef KT_USAGE_GPU_PASS_H
#define KT_USAGE_GPU_PASS_H

#include "result/usage_gpu.h"

/* How long the energy loop runs at least: NVML's counter moves in steps of tens of ms. */
#define KT_GPU_ENERGY_SECONDS 1.0

/* Measures 'u' for an arm whose one call (finished on the device when it returns) is
 * 'once(arg)': GPU energy per call over calls spanning KT_GPU_ENERGY_SECONDS, then the counter
 * view of one call under CUPTI. Never fails: what cannot be measured gets its reason. */
void kt_usage_gpu_pass(kt_gpu_usage *u, int (*once)(void *arg), void *arg);

#endif
