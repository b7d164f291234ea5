/* usage_gpu.h - the GPU half of the profiling pass: the counter view of each kernel an arm
 * launches (the metrics CUPTI's range profiler is asked for, and what is derived from them),
 * and the GPU energy per call from NVML. Pure data and arithmetic: it compiles in every build,
 * and kernels/cuda/cupti_profile.c fills the raw values where a GPU is present. */
#ifndef KT_USAGE_GPU_H
#define KT_USAGE_GPU_H

#include <cjson/cJSON.h>
#include <stdio.h>

/* Indexes into kt_gpu_kernel.raw, in the order of kt_gpu_metric_at. */
enum {
    KT_GPU_DURATION,            /* gpu__time_duration.sum, ns */
    KT_GPU_SM_THROUGHPUT,       /* compute SOL, % of peak over the kernel's elapsed cycles */
    KT_GPU_DRAM_THROUGHPUT,     /* DRAM SOL, % of peak */
    KT_GPU_OCC_LIMIT_REGISTERS, /* blocks per SM the registers allow */
    KT_GPU_OCC_LIMIT_SHARED,    /* ... shared memory allows */
    KT_GPU_OCC_LIMIT_WARPS,     /* ... the warp slots allow */
    KT_GPU_OCC_LIMIT_BLOCKS,    /* ... the block slots allow */
    KT_GPU_ACHIEVED_OCCUPANCY,  /* active warps, % of the SM's maximum, while active */
    KT_GPU_WAVES,               /* waves per multiprocessor */
    KT_GPU_GRID_BLOCKS,         /* blocks launched */
    KT_GPU_SMS,                 /* SMs on the device */
    KT_GPU_STALL_FIRST,         /* then KT_GPU_STALLS stall reasons, warp cycles per issue */
    KT_GPU_STALLS = 17,
    KT_GPU_METRICS = KT_GPU_STALL_FIRST + KT_GPU_STALLS
};

/* One metric: its key in result.json ("sm_throughput_pct", "stall_long_scoreboard") and the
 * name CUPTI knows it by. */
typedef struct kt_gpu_metric {
    const char *key;
    const char *cupti;
} kt_gpu_metric;

/* Metric 'i' (0 <= i < KT_GPU_METRICS). */
const kt_gpu_metric *kt_gpu_metric_at(int i);

#define KT_GPU_KERNELS_MAX 8

/* One profiled range (one kernel launch: auto ranges). raw[i] is NAN when metric i was not
 * collected; never a zero in its place. */
typedef struct kt_gpu_kernel {
    char range[64]; /* the range's name as CUPTI reports it */
    double raw[KT_GPU_METRICS];
} kt_gpu_kernel;

/* What the GPU half of the profiling pass found for one arm. */
typedef struct kt_gpu_usage {
    int counters_done;              /* 1: 'kernels' holds the counter view */
    char counters_unavailable[192]; /* why not, when !counters_done and it was tried */
    int n_kernels;                  /* ranges kept (the first KT_GPU_KERNELS_MAX) */
    int ranges;                     /* ranges CUPTI reported for the profiled call */
    kt_gpu_kernel k[KT_GPU_KERNELS_MAX];
    int n_unsupported; /* metrics CUPTI refused, with one reason */
    char unsupported_reason[128];
    unsigned char unsupported[KT_GPU_METRICS];
    int energy_tried;             /* the NVML energy counter was tried */
    double energy_j;              /* GPU joules per call; NAN when unavailable */
    char energy_unavailable[160]; /* why, "" when there is a figure */
    int energy_calls;             /* calls the energy figure spans */
} kt_gpu_usage;

/* Device-wide compute SOL: the kernel's compute SOL scaled by the share of the device's SMs
 * its grid can reach, sm_throughput x min(grid_blocks, sms) / sms. NAN when any is missing. */
double kt_gpu_device_sol(const kt_gpu_kernel *k);

/* The index of the kernel with the longest duration (0 when none has one); -1 when empty. */
int kt_gpu_longest(const kt_gpu_usage *u);

/* The occupancy limit that binds: the index of the smallest of the four blocks-per-SM limits
 * (registers, shared memory, warps, blocks; the first on a tie); -1 when none was collected. */
int kt_gpu_occupancy_limiter(const kt_gpu_kernel *k);

/* The 'n' largest stall reasons of 'k' (metric indexes, largest first) into 'out'; returns
 * how many were written (stalls not collected are skipped). */
int kt_gpu_top_stalls(const kt_gpu_kernel *k, int *out, int n);

/* The stall reason's short name ("long_scoreboard") of metric index 'i'. */
const char *kt_gpu_stall_name(int i);

/* usage.gpu_counters and the GPU fields of usage.energy (schemas/result.schema.json). */
cJSON *kt_gpu_counters_to_json(const kt_gpu_usage *u);
void kt_gpu_counters_from_json(kt_gpu_usage *u, const cJSON *counters, const cJSON *energy);
void kt_gpu_energy_to_json(cJSON *energy, const kt_gpu_usage *u);

/* The summary's 'gpu:' line of an arm (nothing when the GPU half did not run). */
void kt_gpu_print_line(FILE *out, const kt_gpu_usage *u);

#endif
