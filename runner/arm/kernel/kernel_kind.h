/* kernel_kind.h - what the kernel kind of arm (arm/kernel/) declares about its calls beyond its
 * entry in arm.h: when an arm gets more prepared states per input set, how many of its calls get
 * the full check, and how many calls its profiling pass makes. The plan (spec/plan.c) prices a
 * point with the same figures, and test_plan checks them against these. */
#ifndef KT_KERNEL_KIND_H
#define KT_KERNEL_KIND_H

/* States an arm is prepared into per input set where its prepare is cheap (kernel_place.c): at
 * most KT_PLACEMENTS (result/point.h), when one prepare took under KT_PLACEMENT_MAX_PREPARE_S
 * seconds and the copies take at most KT_PLACEMENT_MAX_BYTES of backend memory in all. */
#define KT_PLACEMENT_MAX_PREPARE_S 0.05
#define KT_PLACEMENT_MAX_BYTES     (256.0 * 1024 * 1024)
/* The share of warmup and timed calls that get the full numerics against float64 and the input
 * hash: every one (the checks of docs/robustness.md). */
#define KT_FULL_CHECK_RATE 1.0

/* fresh-inputs' repeat probes (kernel_fresh.c): after an arm's timed calls 1 to
 * KT_PROBE_FIRST and every KT_PROBE_EVERY-th, a call on fresh inputs and one on the very same
 * inputs, both timed; from KT_PROBE_MIN probes on, a repeat median under 1/KT_PROBE_RATIO of the
 * fresh one is a memoised result. */
#define KT_PROBES      64
#define KT_PROBE_FIRST 3
#define KT_PROBE_EVERY 16
#define KT_PROBE_MIN   3
#define KT_PROBE_RATIO 4.0

/* the guard zones of an arm's output buffers: at least this, at least the output's size */
#define KT_LIVE_GUARD_BYTES (64 * 1024)

/* Calls per arm in the profiling pass (after the verdict, never in the timed pairs). */
#define KT_PROFILE_CALLS 5

#endif
