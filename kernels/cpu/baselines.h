/* baselines.h - the identity of the baseline libraries the CPU variants call (OpenBLAS, and
 * oneDNN where it was found at configure time), for provenance, and the check that OpenBLAS's
 * run-time core choice uses the vector extensions this CPU has.
 *
 * Debian's OpenBLAS is built with DYNAMIC_ARCH and picks its kernels from the CPU's model at
 * load time. On CPUs it does not recognise (virtual machines reporting a generic model name,
 * new AMD parts) it falls back to an older core: "Prescott" runs SSE3 kernels on an AVX-512
 * CPU at a fraction of its rate. ktrial never changes that choice itself; it records it and
 * names the environment variable (OPENBLAS_CORETYPE) that changes it. */
#ifndef KT_CPU_BASELINES_H
#define KT_CPU_BASELINES_H

#include "../kernel.h"

#include <stddef.h>

/* The widest x86 vector extension a core's kernels (or a CPU) use. */
typedef enum {
    KT_ISA_UNKNOWN = -1,
    KT_ISA_SSE = 0, /* SSE2/SSE3/SSSE3/SSE4 */
    KT_ISA_AVX,
    KT_ISA_AVX2, /* AVX2 + FMA */
    KT_ISA_AVX512
} kt_isa_level;

const char *kt_isa_level_name(kt_isa_level level);
/* The widest extension of this CPU (cpuid, as __builtin_cpu_supports sees it). */
kt_isa_level kt_cpu_isa_level(void);
/* The widest extension OpenBLAS's kernels for core 'corename' (openblas_get_corename(), case
 * ignored) use; KT_ISA_UNKNOWN for a name this table does not know. */
kt_isa_level kt_openblas_core_isa(const char *corename);
/* When OpenBLAS's core 'corename' uses a narrower extension than 'cpu' has, writes a one-line
 * warning naming OPENBLAS_CORETYPE and the core to set into 'out' and returns 1; else writes
 * "" and returns 0. */
int kt_openblas_core_warning(char *out, size_t len, const char *corename, kt_isa_level cpu);

/* Writes into 'out' the warning that OpenBLAS's idle threads spin after each call, taking CPU
 * from whatever is timed next, when OpenBLAS runs more than one thread and 'timeout' (the
 * OPENBLAS_THREAD_TIMEOUT value, or NULL when unset) leaves its default spin. Returns 1 when
 * it wrote one, else 0 (out empty). */
int kt_openblas_spin_warning(char *out, size_t len, int threads, const char *timeout);
/* The same for oneDNN's OpenMP threads (Debian's oneDNN runs on libgomp): with 'policy' (the
 * OMP_WAIT_POLICY value) neither "passive" nor set to anything else, and 'spincount'
 * (GOMP_SPINCOUNT) unset, libgomp's idle threads spin 300,000 pauses, milliseconds, after each
 * parallel region. Empty values count as unset; "active" spins longer still and warns too. */
int kt_omp_spin_warning(char *out, size_t len, int threads, const char *policy,
                        const char *spincount);
/* Adds openblas_config, openblas_core, openblas_core_isa, cpu_isa, openblas_warning (only
 * when there is one), openblas_thread_timeout, openblas_threads_warning (only when there is
 * one), and onednn_version, onednn_isa, omp_wait_policy, gomp_spincount and
 * onednn_threads_warning (only when there is one) (oneDNN builds) to 'info'. */
void kt_baselines_describe(kt_device_info *info);
#ifdef KT_HAVE_ONEDNN
/* oneDNN's effective ISA, e.g. "avx512_core_bf16" (gemm_onednn.c). */
const char *kt_onednn_isa_name(void);
#endif

#endif
