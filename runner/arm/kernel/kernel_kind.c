/* kernel_kind.c - the kernel kind of arm as the trial engine sees it: what it declares (numerics
 * against float64, the backend's clock, device memory and counters, a forked worker per point,
 * placements) and its operations (kernel_arm.c, kernel_place.c, kernel_call.c). */
#include "arm/kernel/kernel_arm.h"

/* The checks every call of a kernel arm gets, each named so in its REJECT reasons
 * (docs/robustness.md has what each catches, and what none does). */
static const char *const checks[] = {
    "written",          /* every output element written (a fresh poison before each call) */
    "finite",           /* no NaN or Inf written */
    "reference",        /* the output near the float64 reference of the inputs it was given */
    "fresh-inputs",     /* no two calls running on the same inputs; no other call's result */
    "inputs-unchanged", /* the inputs hash as generated after the call */
    "guard",            /* nothing written in the guard zones around its outputs */
    "late-writes",      /* its outputs unchanged when re-read after another arm's call */
    "roofline",         /* no faster than reading its least bytes at the measured bandwidth */
    NULL,
};

const kt_arm_kind kt_arm_kernel = {
    .name = "kernel",
    .startup = "inputs, float64 reference, prepare",
    .numerics = KT_ARM_NUMERICS_FLOAT64,
    .usage = KT_ARM_USAGE_DEVICE_MEMORY | KT_ARM_USAGE_COUNTERS,
    .clock = KT_ARM_CLOCK_BACKEND,
    .tick_ns = 0,
    .isolated = 1,
    .needs_backend = 1,
    .placements = 1,
    .grouped = 1,
    .shuffles = 1,
    .checks_each_call = 1,
    .checks = checks,
    .open = kt_kernel_open,
    .describe = kt_kernel_describe,
    .prepare = kt_kernel_prepare,
    .settle = kt_kernel_settle,
    .place = kt_kernel_place,
    .call = kt_kernel_call,
    .check = kt_kernel_check,
    .forget = NULL,
    .profile = kt_kernel_profile,
    .release = kt_kernel_release,
    .close = kt_kernel_close,
    .calibrate = NULL,
    .metric = NULL,
};
