/* stage_call.h - variants made of other variants (decoder_layer on cuda): choosing a stage's
 * variant through an enum param of the composite, with the composite's '<stage>.<param>'
 * params passed through; shaping the stage's problem at the composite's point; calling it
 * through its vtable. Backend-neutral: the composite says which backend. */
#ifndef KT_STAGE_CALL_H
#define KT_STAGE_CALL_H

#include "kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One prepared stage variant: the variant, its params, its problem and state. */
typedef struct kt_stage_call {
    const kt_variant *variant;
    kt_param_value params[KT_MAX_PARAMS];
    kt_problem problem;
    void *state;
    int prepared;
} kt_stage_call;

/* The variant of op 'op' on 'backend' that the composite's enum param 'choice' (of its params
 * 'defs', 'n_defs' of them) names, into s->variant, and its params into s->params: its
 * defaults, overridden by every composite param '<stage>.<name>' the variant has. A
 * '<stage>.<name>' param set away from its default that the variant lacks, or whose type or
 * choices differ from the variant's, is an error naming both. */
int kt_stage_pick(kt_stage_call *s, const kt_call *call, const kt_param_def *defs, int n_defs,
                  int choice, const char *stage, const char *op, const char *backend);

/* Shapes s->problem with op 'op' at the composite's point: its model, batch and dtype,
 * 'role' for gemm, and 'phase' with 'context' tokens: a decode point attends to 'context'
 * cached tokens with one row per sequence; a prefill point has 'context' rows per sequence
 * (a chunk: M = batch x context for gemm and swiglu_mlp). */
int kt_stage_shape(kt_stage_call *s, const kt_call *call, const char *op, kt_role role,
                   kt_phase phase, int64_t context);

/* Prepares / runs s on 'in' and 'out' (its op's tensors) with the composite's backend and
 * threads, no profile. A failed prepare names the stage variant; its state is still released
 * by kt_stage_release. */
int kt_stage_prepare(kt_stage_call *s, const kt_call *call, const void *const *in,
                     void *const *out);
int kt_stage_run(kt_stage_call *s, const kt_call *call, const void *const *in, void *const *out);
void kt_stage_release(kt_stage_call *s, kt_backend *b);

#ifdef __cplusplus
}
#endif

#endif
