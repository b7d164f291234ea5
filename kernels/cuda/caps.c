/* caps.c - what the CUDA backend is, for the runner (kt_backend_caps). Compiled into every
 * build, CUDA or not: the registry knows the capabilities of a backend this build left out, so
 * a CPU build plans, checks and judges a CUDA spec or archive as a CUDA build would. */
#include "cuda_backend.h"

const kt_backend_caps kt_backend_cuda_caps = {
    /* .clock = */ KT_CLOCK_DEVICE, /* CUDA events on the stream */
    /* .noise = */ KT_NOISE_LEVEL,  /* the SM clock, MHz: 'throttled' below 75% of its peak */
    /* .flush = */ KT_FLUSH_L2_SWEEP,
    /* .device_memory = */ 1,
    /* .profile_opt_in = */ 1, /* counters perturb the clocks and need CUPTI */
    /* .needs_device = */ 1,
    /* .auto_rank = */ 2,  /* auto's first choice where a device answers */
    /* .gpus = */ 1,       /* device 0 */
    /* .calibrated = */ 0, /* the host's roofline says nothing of it */
};
