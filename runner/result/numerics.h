/* numerics.h - how far one output of an arm is from its float64 reference, on one input set
 * (arm/kernel/check.c computes it; result.json carries it). */
#ifndef KT_NUMERICS_H
#define KT_NUMERICS_H

#include <stdint.h>

typedef struct kt_numerics {
    int64_t elems;
    int64_t unwritten; /* elements still equal to the poison */
    int64_t nonfinite; /* NaN or Inf written by the kernel */
    /* Over written, finite elements: */
    double max_abs;      /* max |out - ref| */
    double max_rel;      /* max |out - ref| / max(|ref|, 1e-3 * max|ref|) */
    double rel_l2;       /* ||out - ref|| / ||ref|| */
    double cosine;       /* <out, ref> / (||out|| ||ref||) */
    int inputs_modified; /* the variant wrote into its inputs */
    /* The variant wrote next to an output (into its guard zones, KT_OUTPUT_GUARD_BYTES each
     * side): how far past its end and before its start, in bytes, and the output's name
     * (a static string; NULL when none). */
    int64_t overrun_after, overrun_before;
    const char *overrun_tensor;
} kt_numerics;

#endif
