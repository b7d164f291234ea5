/* baselines.c - the identity of the baseline libraries (see baselines.h). */
#include "baselines.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#ifdef KT_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#endif

const char *kt_isa_level_name(kt_isa_level level)
{
    switch (level) {
    case KT_ISA_SSE:
        return "sse";
    case KT_ISA_AVX:
        return "avx";
    case KT_ISA_AVX2:
        return "avx2";
    case KT_ISA_AVX512:
        return "avx512";
    default:
        return "unknown";
    }
}

kt_isa_level kt_cpu_isa_level(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
        return KT_ISA_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return KT_ISA_AVX2;
    if (__builtin_cpu_supports("avx"))
        return KT_ISA_AVX;
    return KT_ISA_SSE;
#else
    return KT_ISA_UNKNOWN;
#endif
}

/* OpenBLAS 0.3.21's x86-64 DYNAMIC_ARCH cores (driver/others/dynamic.c) by the widest
 * extension their kernels use. */
static const struct {
    const char *core;
    kt_isa_level isa;
} core_isa[] = {
    {"prescott", KT_ISA_SSE},
    {"core2", KT_ISA_SSE},
    {"penryn", KT_ISA_SSE},
    {"dunnington", KT_ISA_SSE},
    {"nehalem", KT_ISA_SSE},
    {"atom", KT_ISA_SSE},
    {"opteron", KT_ISA_SSE},
    {"opteron_sse3", KT_ISA_SSE},
    {"barcelona", KT_ISA_SSE},
    {"bobcat", KT_ISA_SSE},
    {"katmai", KT_ISA_SSE},
    {"coppermine", KT_ISA_SSE},
    {"northwood", KT_ISA_SSE},
    {"banias", KT_ISA_SSE},
    {"generic", KT_ISA_SSE},
    {"sandybridge", KT_ISA_AVX},
    {"bulldozer", KT_ISA_AVX},
    {"piledriver", KT_ISA_AVX},
    {"steamroller", KT_ISA_AVX},
    {"excavator", KT_ISA_AVX},
    {"haswell", KT_ISA_AVX2},
    {"zen", KT_ISA_AVX2},
    {"skylakex", KT_ISA_AVX512},
    {"cooperlake", KT_ISA_AVX512},
    {"sapphirerapids", KT_ISA_AVX512},
};

kt_isa_level kt_openblas_core_isa(const char *corename)
{
    for (size_t i = 0; corename && i < sizeof(core_isa) / sizeof(core_isa[0]); i++)
        if (strcasecmp(corename, core_isa[i].core) == 0)
            return core_isa[i].isa;
    return KT_ISA_UNKNOWN;
}

/* The OPENBLAS_CORETYPE value whose kernels use 'isa'. */
static const char *core_for(kt_isa_level isa)
{
    switch (isa) {
    case KT_ISA_AVX512:
        return "SkylakeX";
    case KT_ISA_AVX2:
        return "Haswell";
    case KT_ISA_AVX:
        return "Sandybridge";
    default:
        return "Nehalem";
    }
}

int kt_openblas_core_warning(char *out, size_t len, const char *corename, kt_isa_level cpu)
{
    kt_isa_level core = kt_openblas_core_isa(corename);
    if (len > 0)
        out[0] = '\0';
    if (cpu == KT_ISA_UNKNOWN || (core != KT_ISA_UNKNOWN && core >= cpu))
        return 0;
    if (core == KT_ISA_UNKNOWN)
        return 0; /* a core this table does not know: recorded, not judged */
    snprintf(out, len,
             "OpenBLAS runs its %s kernels (%s) on a CPU with %s: the blas baseline is slowed; "
             "OPENBLAS_CORETYPE=%s selects the %s kernels",
             corename, kt_isa_level_name(core), kt_isa_level_name(cpu), core_for(cpu),
             kt_isa_level_name(cpu));
    return 1;
}

int kt_openblas_spin_warning(char *out, size_t len, int threads, const char *timeout)
{
    if (len > 0)
        out[0] = '\0';
    if (threads <= 1 || (timeout && *timeout))
        return 0;
    snprintf(out, len,
             "OpenBLAS's %d threads spin about 0.1 s after each call, taking CPU from the "
             "arm timed next; OPENBLAS_THREAD_TIMEOUT=16 makes them sleep after about 30 us",
             threads);
    return 1;
}

int kt_omp_spin_warning(char *out, size_t len, int threads, const char *policy,
                        const char *spincount)
{
    if (len > 0)
        out[0] = '\0';
    if (threads <= 1 || (spincount && *spincount) || (policy && strcasecmp(policy, "passive") == 0))
        return 0;
    snprintf(out, len,
             "oneDNN's %d OpenMP threads spin for milliseconds after each call, taking CPU from "
             "the arm timed next; GOMP_SPINCOUNT=2000 makes them sleep after about 20 us",
             threads);
    return 1;
}

void kt_baselines_describe(kt_device_info *info)
{
    const char *core = openblas_get_corename();
    kt_isa_level cpu = kt_cpu_isa_level();
    char warning[160], spin[160];
    kt_device_info_add(info, "cpu_isa", "%s", kt_isa_level_name(cpu));
    kt_device_info_add(info, "openblas_config", "%s", openblas_get_config());
    kt_device_info_add(info, "openblas_core", "%s", core);
    kt_device_info_add(info, "openblas_core_isa", "%s",
                       kt_isa_level_name(kt_openblas_core_isa(core)));
    if (kt_openblas_core_warning(warning, sizeof(warning), core, cpu))
        kt_device_info_add(info, "openblas_warning", "%s", warning);
    const char *timeout = getenv("OPENBLAS_THREAD_TIMEOUT");
    kt_device_info_add(info, "openblas_thread_timeout", "%s", timeout ? timeout : "unset");
    if (kt_openblas_spin_warning(spin, sizeof(spin), openblas_get_num_threads(), timeout))
        kt_device_info_add(info, "openblas_threads_warning", "%s", spin);
#ifdef KT_HAVE_ONEDNN
    const dnnl_version_t *v = dnnl_version();
    kt_device_info_add(info, "onednn_version", "%d.%d.%d (%s)", v->major, v->minor, v->patch,
                       v->hash);
    kt_device_info_add(info, "onednn_isa", "%s", kt_onednn_isa_name());
    const char *policy = getenv("OMP_WAIT_POLICY"), *spincount = getenv("GOMP_SPINCOUNT");
    kt_device_info_add(info, "omp_wait_policy", "%s", policy && *policy ? policy : "unset");
    kt_device_info_add(info, "gomp_spincount", "%s", spincount && *spincount ? spincount : "unset");
    if (kt_omp_spin_warning(spin, sizeof(spin), omp_get_max_threads(), policy, spincount))
        kt_device_info_add(info, "onednn_threads_warning", "%s", spin);
#endif
}
