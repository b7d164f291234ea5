/* decoder_test_shape.h - what the decoder_layer tests of every backend share: a test shape,
 * its matrix point, the relative L2 error of an output and its limit, and the copy of a call's
 * three outputs. Include after kernel.h and arm/kernel/check.h (kt_instance). */
#ifndef KT_DECODER_TEST_SHAPE_H
#define KT_DECODER_TEST_SHAPE_H

#include "gemm_tolerance.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct shape {
    const char *name;
    int64_t hidden, heads, kv_heads, head_dim, inter, batch, context, layers;
    int64_t chunk; /* 0: a decode point; else a prefill point of this chunk */
} shape;

static inline kt_point point_of(const shape *s)
{
    kt_point pt;
    memset(&pt, 0, sizeof(pt));
    snprintf(pt.model.name, sizeof(pt.model.name), "%s", s->name);
    pt.model.hidden = s->hidden;
    pt.model.heads = s->heads;
    pt.model.kv_heads = s->kv_heads;
    pt.model.head_dim = s->head_dim;
    pt.model.intermediate = s->inter;
    pt.batch_size = s->batch;
    pt.context_length = s->context;
    pt.phase = s->chunk ? KT_PHASE_PREFILL : KT_PHASE_DECODE;
    snprintf(pt.id, sizeof(pt.id), "%s", s->name);
    return pt;
}

static inline double rel_l2(const void *out, const double *ref, kt_dtype dt, size_t n)
{
    double e2 = 0, r2 = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)kt_dtype_load(out, dt, i) - ref[i];
        e2 += d * d;
        r2 += ref[i] * ref[i];
    }
    return sqrt(e2 / r2);
}

/* Storage roundings that reach an output at full weight, per block (the rounded q, k, v and
 * y; the others are damped by the residual stream and the normalisations), and fp32
 * reductions of depth max(hidden, inter, the keys attended). */
static inline double limit(kt_dtype dt, const shape *s)
{
    int64_t k = s->inter > s->hidden ? s->inter : s->hidden;
    int64_t keys = s->context + (s->chunk ? s->chunk : 1);
    if (keys > k)
        k = keys;
    return kt_test_rel_l2_limit(dt, 4 * (int)s->layers, k);
}

/* Copies the three outputs of the instance's last call (y, k_new, v_new: host_outputs, after the
 * download) into out[] (malloc'd, bytes[] each) and their relative L2 errors against the
 * instance's float64 reference into rel[]. Free with decoder_outputs_free. */
static inline void decoder_outputs_take(const kt_instance *inst, kt_dtype dt, void *out[3],
                                        size_t bytes[3], double rel[3])
{
    for (int o = 0; o < 3; o++) {
        const kt_tensor *t = &inst->problem.tensors[inst->problem.n_inputs + o];
        bytes[o] = kt_tensor_bytes(t);
        out[o] = malloc(bytes[o]);
        memcpy(out[o], inst->host_outputs[o], bytes[o]);
        rel[o] = rel_l2(inst->host_outputs[o], inst->reference[o], dt, (size_t)kt_tensor_elems(t));
    }
}

static inline void decoder_outputs_free(void *out[3])
{
    for (int o = 0; o < 3; o++)
        free(out[o]);
}

#endif
