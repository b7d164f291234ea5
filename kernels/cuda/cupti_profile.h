/* cupti_profile.h - hardware counters of the kernels one call launches, through CUPTI's range
 * profiler (auto ranges: a range per kernel launch; kernel replay: CUPTI runs each kernel again
 * as often as the metrics need passes, restoring memory in between). */
#ifndef KT_CUPTI_PROFILE_H
#define KT_CUPTI_PROFILE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kt_cupti_request {
    const char *const *metrics; /* CUPTI metric names */
    int n_metrics;
    int (*body)(void *arg); /* the call to profile: 0, or negative with the message set */
    void *arg;
    int max_ranges; /* ranges kept (kernels of the call, in launch order) */
} kt_cupti_request;

typedef struct kt_cupti_result {
    int n_ranges;           /* ranges CUPTI reported (may exceed max_ranges) */
    char (*names)[64];      /* [max_ranges]: the ranges' names */
    double *values;         /* [max_ranges * n_metrics]; NAN for a refused metric */
    unsigned char *refused; /* [n_metrics]: 1 when CUPTI does not know the metric here */
    char refused_why[128];  /* the reason CUPTI gave for the last refused metric */
} kt_cupti_result;

/* Profiles 'req->body' on the current device (the CUDA backend's, device 0). Returns 0, or a
 * negative code with the message set ("cuptiRangeProfilerEnable:
 * CUPTI_ERROR_INSUFFICIENT_PRIVILEGES ..."). The caller owns the buffers in 'out'. */
int kt_cupti_profile(kt_cupti_result *out, const kt_cupti_request *req);

/* The PCI bus id of the CUDA backend's device ("0000:3b:00.0"), to find it in NVML. */
int kt_cupti_device_pci_bus_id(char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif
