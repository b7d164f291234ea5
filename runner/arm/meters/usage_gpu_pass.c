/* usage_gpu_pass.c - NVML energy and CUPTI counters around an arm's extra calls. */
#include "arm/meters/usage_gpu_pass.h"

#include "arm/meters/nvml_energy.h"

#include <kernel.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#ifdef KT_HAVE_CUDA
#include <cuda/cupti_profile.h>
#endif

#define ENERGY_MAX_CALLS 1000000

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void energy_pass(kt_gpu_usage *u, int (*once)(void *), void *arg, const char *pci)
{
    kt_nvml_energy *e = NULL;
    char why[160] = "";
    double j0, j1, t0;
    int calls = 0, err = 0;
    u->energy_tried = 1;
    u->energy_j = NAN;
    if (kt_nvml_energy_open(&e, pci, why, sizeof(why)) < 0 ||
        kt_nvml_energy_read(&j0, e, why, sizeof(why)) < 0)
        goto done;
    t0 = now_s();
    while (err == 0 && calls < ENERGY_MAX_CALLS && now_s() - t0 < KT_GPU_ENERGY_SECONDS) {
        err = once(arg);
        calls++;
    }
    if (err < 0) {
        snprintf(why, sizeof(why), "a call failed: %s", kt_error_last());
        goto done;
    }
    if (kt_nvml_energy_read(&j1, e, why, sizeof(why)) < 0)
        goto done;
    if (j1 <= j0) {
        snprintf(why, sizeof(why), "NVML's energy counter did not move in %.2g s",
                 KT_GPU_ENERGY_SECONDS);
        goto done;
    }
    u->energy_j = (j1 - j0) / calls;
    u->energy_calls = calls;
done:
    if (why[0])
        snprintf(u->energy_unavailable, sizeof(u->energy_unavailable),
                 "not available on this "
                 "machine: %s",
                 why);
    kt_nvml_energy_close(e);
}

#ifdef KT_HAVE_CUDA
static void counter_pass(kt_gpu_usage *u, int (*once)(void *), void *arg)
{
    const char *names[KT_GPU_METRICS];
    char range_names[KT_GPU_KERNELS_MAX][64];
    double values[KT_GPU_KERNELS_MAX * KT_GPU_METRICS];
    unsigned char refused[KT_GPU_METRICS];
    for (int i = 0; i < KT_GPU_METRICS; i++)
        names[i] = kt_gpu_metric_at(i)->cupti;
    kt_cupti_request req = {names, KT_GPU_METRICS, once, arg, KT_GPU_KERNELS_MAX};
    kt_cupti_result res = {0, range_names, values, refused, ""};
    if (kt_cupti_profile(&res, &req) < 0) {
        snprintf(u->counters_unavailable, sizeof(u->counters_unavailable), "not available: %s",
                 kt_error_last());
        return;
    }
    u->counters_done = 1;
    u->ranges = res.n_ranges;
    u->n_kernels = res.n_ranges < KT_GPU_KERNELS_MAX ? res.n_ranges : KT_GPU_KERNELS_MAX;
    for (int r = 0; r < u->n_kernels; r++) {
        snprintf(u->k[r].range, sizeof(u->k[r].range), "%s", range_names[r]);
        memcpy(u->k[r].raw, values + (size_t)r * KT_GPU_METRICS, sizeof(u->k[r].raw));
    }
    for (int i = 0; i < KT_GPU_METRICS; i++)
        if ((u->unsupported[i] = refused[i]))
            u->n_unsupported++;
    snprintf(u->unsupported_reason, sizeof(u->unsupported_reason), "%s", res.refused_why);
}
#endif

void kt_usage_gpu_pass(kt_gpu_usage *u, int (*once)(void *arg), void *arg)
{
    memset(u, 0, sizeof(*u));
    char pci[32] = "";
#ifdef KT_HAVE_CUDA
    if (kt_cupti_device_pci_bus_id(pci, sizeof(pci)) < 0)
        pci[0] = '\0';
    energy_pass(u, once, arg, pci);
    counter_pass(u, once, arg);
#else
    energy_pass(u, once, arg, pci);
    snprintf(u->counters_unavailable, sizeof(u->counters_unavailable),
             "not available: this ktrial was built without CUDA");
#endif
}
