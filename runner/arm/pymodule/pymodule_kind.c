/* pymodule_kind.c - the pymodule kind of arm as the trial engine sees it: numerics against
 * float64 (Model in double), the backend's clock around module(*inputs) alone, a forked worker
 * per point (the interpreter is started there, never in ktrial itself), every call checked
 * right after it, no placements (a module holds its own weights). */
#include "arm/pymodule/pymodule_arm.h"

const kt_arm_kind kt_arm_pymodule = {
    .name = "pymodule",
    .startup = "Python, inputs, float64 reference, modules",
    .numerics = KT_ARM_NUMERICS_FLOAT64,
    .usage = KT_ARM_USAGE_DEVICE_MEMORY,
    .clock = KT_ARM_CLOCK_BACKEND,
    .tick_ns = 0,
    .isolated = 1,
    .needs_backend = 1,
    .placements = 0,
    .grouped = 1,
    .shuffles = 1,
    .checks_each_call = 1,
    .open = kt_pymodule_open,
    .describe = kt_pymodule_describe,
    .prepare = kt_pymodule_prepare,
    .settle = NULL,
    .place = NULL,
    .call = kt_pymodule_call,
    .check = kt_pymodule_check,
    .forget = NULL,
    .profile = NULL,
    .release = kt_pymodule_release,
    .close = kt_pymodule_close,
    .calibrate = NULL,
    .metric = NULL,
};
