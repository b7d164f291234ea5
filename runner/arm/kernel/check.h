/* check.h - one problem instance (inputs, float64 reference, backend buffers) and the
 * correctness of a variant's output against that reference.
 *
 * Outputs are poisoned before each checked call with a NaN whose payload no arithmetic
 * produces (one of four per dtype, e.g. fp32 0x7fc0dead, fp16 0x7e5a, bf16 0x7fda, chosen
 * call by call): an element still carrying the call's pattern was left unwritten; any other
 * NaN or Inf was produced by the kernel. */
#ifndef KT_CHECK_H
#define KT_CHECK_H

#include "kernel.h"
#include "result/numerics.h"
#include "util/hash.h"

#include <stdint.h>

/* Bytes of guard zone before and after every output buffer: a kernel that writes past its
 * output's end (a vector tail, an off-by-one) writes there, is found by the check of its call,
 * and leaves the memory of the process intact for the arms after it. */
#define KT_OUTPUT_GUARD_BYTES 4096

typedef struct kt_instance {
    kt_problem problem;
    void *host_inputs[KT_MAX_TENSORS];     /* storage type, as generated */
    void *host_outputs[KT_MAX_TENSORS];    /* storage type, as last downloaded */
    double *reference[KT_MAX_TENSORS];     /* float64, one per output */
    void *dev_inputs[KT_MAX_TENSORS];      /* backend buffers */
    void *dev_outputs[KT_MAX_TENSORS];     /* the buffers the next call writes */
    void *dev_outputs_alt[KT_MAX_TENSORS]; /* the other set (see kt_instance_rotate) */
    void *input_copies[KT_MAX_TENSORS];    /* kt_instance_inputs_intact's, kept: a fresh
                                            * one per check faulted in hundreds of MB */
    int poison;                            /* which poison pattern the outputs carry */
    uint64_t input_hash;                   /* of the generated input bytes */
    uint64_t input_hashes[KT_MAX_TENSORS]; /* of each input tensor, as generated */
    size_t bytes;                          /* backend bytes of inputs + outputs */
} kt_instance;

/* Shapes 'point' with 'op', generates inputs from 'seed' (already mixed with the point and
 * the input set), computes the reference, and uploads the inputs to 'backend'. */
int kt_instance_create(kt_instance **out, kt_backend *backend, const kt_op *op,
                       const kt_point *point, kt_dtype dtype, kt_distribution dist,
                       const kt_param_value *input_params, uint64_t seed);
void kt_instance_free(kt_instance *inst, kt_backend *backend);

/* A kt_call over the instance's buffers; params, pair_position and seed are the caller's. */
kt_call kt_instance_call(const kt_instance *inst, kt_backend *backend, const kt_param_value *params,
                         int threads);

int kt_instance_poison_outputs(kt_instance *inst, kt_backend *backend);
/* From a random 'coin': picks the next poison pattern and, half the time, swaps the output
 * buffers with their spares, so no call can count on its outputs' address or pattern. */
void kt_instance_rotate(kt_instance *inst, uint64_t coin);
/* Counts unwritten (poison) and non-finite elements of host_outputs; nothing else. */
void kt_output_scan(kt_numerics *out, const kt_instance *inst);
/* Downloads the outputs into host_outputs. */
int kt_instance_download_outputs(kt_instance *inst, kt_backend *backend);
/* Uploads the inputs as generated again (after a variant wrote into them). */
int kt_instance_restore_inputs(kt_instance *inst, kt_backend *backend);
/* Downloads the inputs and says whether they still hash to input_hash (1) or not (0). */
int kt_instance_inputs_intact(kt_instance *inst, kt_backend *backend, int *intact);

/* Checks the guard zones of every output buffer (both sets) for writes, fills 'out''s
 * overrun fields and writes the guards afresh. */
int kt_instance_check_guards(kt_numerics *out, kt_instance *inst, kt_backend *backend);

/* Output buffers of the instance's shapes outside it (an arm's own, arm/kernel/kernel_fresh.c),
 * each between guard zones of 'guard' bytes (a multiple of 64). */
int kt_outputs_alloc(kt_backend *backend, const kt_problem *p, void **bufs, size_t guard);
void kt_outputs_free(kt_backend *backend, const kt_problem *p, void **bufs, size_t guard);
/* The instance's poison pattern into 'bufs', and 'bufs' downloaded into host_outputs. */
int kt_outputs_poison(kt_instance *inst, kt_backend *backend, void *const *bufs);
int kt_outputs_download(kt_instance *inst, kt_backend *backend, void *const *bufs);
/* kt_instance_check_guards for the buffers 'bufs' with guards of 'guard' bytes; 'scratch' holds
 * 'guard' bytes. */
int kt_outputs_check_guards(kt_numerics *out, const kt_problem *p, kt_backend *backend,
                            void *const *bufs, size_t guard, unsigned char *scratch);
/* Which input of 'bufs' (the instance's shapes) no longer hashes as the instance's inputs were
 * generated: its index in '*changed', or -1. 'scratch' holds the largest input. */
int kt_inputs_changed(const kt_instance *inst, kt_backend *backend, void *const *bufs,
                      void *scratch, int *changed);
/* The instance's inputs as generated uploaded into 'bufs'. */
int kt_inputs_upload(const kt_instance *inst, kt_backend *backend, void *const *bufs);
/* rel_l2 of 'out''s host_outputs against the float64 reference of 'ref' (same shapes). */
double kt_rel_l2_against(const kt_instance *out, const kt_instance *ref);

/* Compares host_outputs with the reference. */
void kt_numerics_compare(kt_numerics *out, const kt_instance *inst);
/* Compares two host output sets bit for bit; returns 1 when identical. */
int kt_outputs_identical(const kt_instance *inst, void *const *a, void *const *b);

/* The whole correctness protocol for one call: poison, run 'variant' (already prepared into
 * 'state'), synchronize, download, compare, re-hash the inputs, and upload them again where
 * the call wrote into them (out->inputs_modified), so no later call inherits what it wrote;
 * the same for writes next to its outputs (out->overrun_*, kt_instance_check_guards). A
 * variant error is returned as a negative code with its message in kt_error_last(). */
int kt_check_call(kt_numerics *out, kt_instance *inst, const kt_variant *variant, void *state,
                  const kt_call *call);

#endif
