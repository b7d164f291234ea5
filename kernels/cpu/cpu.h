/* cpu.h - private to kernels/cpu: the CPU backend and its variants. */
#ifndef KT_CPU_H
#define KT_CPU_H

#include "../kernel.h"

extern const kt_backend_iface kt_backend_cpu;
extern const kt_variant kt_variant_cpu_attention_dense;
extern const kt_variant kt_variant_cpu_attention_ffd;

#endif
