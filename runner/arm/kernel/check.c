/* check.c - problem instances and output correctness against float64. */
#include "arm/kernel/check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Quiet NaNs whose payloads no arithmetic produces; the pattern rotates call by call, so a
 * kernel cannot recognise "the" poison and leave it in place. */
#define N_POISON 4
static const uint32_t poison_fp32[N_POISON] = {0x7fc0deadu, 0x7fd1beefu, 0x7fe2c0deu, 0x7ff3face};
static const uint16_t poison_fp16[N_POISON] = {0x7e5au, 0x7e6bu, 0x7f3cu, 0x7f4du};
static const uint16_t poison_bf16[N_POISON] = {0x7fdau, 0x7febu, 0x7fcdu, 0x7fe5u};

static void fill_poison(void *dst, kt_dtype dtype, size_t n, int k)
{
    for (size_t i = 0; i < n; i++) {
        if (dtype == KT_DTYPE_FP16)
            ((uint16_t *)dst)[i] = poison_fp16[k];
        else if (dtype == KT_DTYPE_BF16)
            ((uint16_t *)dst)[i] = poison_bf16[k];
        else
            ((uint32_t *)dst)[i] = poison_fp32[k];
    }
}

static int is_poison(const void *src, kt_dtype dtype, size_t i, int k)
{
    if (dtype == KT_DTYPE_FP16)
        return ((const uint16_t *)src)[i] == poison_fp16[k];
    if (dtype == KT_DTYPE_BF16)
        return ((const uint16_t *)src)[i] == poison_bf16[k];
    return ((const uint32_t *)src)[i] == poison_fp32[k];
}

static uint64_t hash_inputs(const kt_problem *p, void *const *inputs)
{
    uint64_t h = 0;
    for (int i = 0; i < p->n_inputs; i++)
        h = kt_seed_mix(h, kt_hash_bytes(inputs[i], kt_tensor_bytes(&p->tensors[i])));
    return h;
}

#define GUARD      KT_OUTPUT_GUARD_BYTES
#define GUARD_BYTE 0xa5

static const unsigned char *guard_pattern(void)
{
    static unsigned char pattern[GUARD];
    if (pattern[0] != GUARD_BYTE)
        memset(pattern, GUARD_BYTE, sizeof(pattern));
    return pattern;
}

/* Writes the pattern over the 'guard' bytes at 'dst'. */
static int write_zone(kt_backend *backend, void *dst, size_t guard)
{
    int err = KT_OK;
    for (size_t off = 0; off < guard && err == KT_OK; off += GUARD)
        err = kt_backend_upload(backend, (char *)dst + off, guard_pattern(),
                                guard - off < GUARD ? guard - off : GUARD);
    return err;
}

/* Writes the pattern into both guard zones of 'guard' bytes of the output buffer 'dev'. */
static int write_guards(kt_backend *backend, void *dev, size_t bytes, size_t guard)
{
    int err = write_zone(backend, (char *)dev - guard, guard);
    return err < 0 ? err : write_zone(backend, (char *)dev + bytes, guard);
}

/* An output buffer of 'bytes' between two guard zones of 'guard' bytes; '*dev' is its first
 * byte (aligned as the backend aligns, 'guard' being a multiple of every alignment it uses). */
static int alloc_guarded(kt_backend *backend, void **dev, size_t bytes, size_t guard)
{
    void *base = NULL;
    int err = kt_backend_alloc(backend, &base, bytes + 2 * guard);
    if (err < 0)
        return err;
    *dev = (char *)base + guard;
    if ((err = write_guards(backend, *dev, bytes, guard)) < 0) {
        kt_backend_free(backend, base, bytes + 2 * guard);
        *dev = NULL;
    }
    return err;
}

static void free_guarded(kt_backend *backend, void *dev, size_t bytes, size_t guard)
{
    if (dev)
        kt_backend_free(backend, (char *)dev - guard, bytes + 2 * guard);
}

int kt_instance_create(kt_instance **out, kt_backend *backend, const kt_op *op,
                       const kt_point *point, kt_dtype dtype, kt_distribution dist,
                       const kt_param_value *input_params, uint64_t seed)
{
    kt_instance *inst = calloc(1, sizeof(*inst));
    int err;
    if (!inst)
        return kt_error_code(KT_ENOMEM, "out of memory");
    if ((err = kt_op_shape(op, &inst->problem, point, dtype, input_params)) < 0)
        goto fail;
    kt_problem *p = &inst->problem;
    for (int i = 0; i < p->n_inputs + p->n_outputs; i++) {
        size_t bytes = kt_tensor_bytes(&p->tensors[i]);
        int is_input = i < p->n_inputs;
        void **host = is_input ? &inst->host_inputs[i] : &inst->host_outputs[i - p->n_inputs];
        void **dev = is_input ? &inst->dev_inputs[i] : &inst->dev_outputs[i - p->n_inputs];
        *host = malloc(bytes);
        if (!*host) {
            err = kt_error_code(KT_ENOMEM, "cannot allocate %zu bytes for '%s'", bytes,
                                p->tensors[i].name);
            goto fail;
        }
        if ((err = is_input ? kt_backend_alloc(backend, dev, bytes)
                            : alloc_guarded(backend, dev, bytes, GUARD)) < 0)
            goto fail;
        inst->bytes += bytes;
        /* a second output buffer: timed calls switch between the two at random */
        if (!is_input && (err = alloc_guarded(backend, &inst->dev_outputs_alt[i - p->n_inputs],
                                              bytes, GUARD)) < 0)
            goto fail;
        if (!is_input) {
            size_t n = (size_t)kt_tensor_elems(&p->tensors[i]);
            inst->reference[i - p->n_inputs] = malloc(n * sizeof(double));
            if (!inst->reference[i - p->n_inputs]) {
                err = kt_error_code(KT_ENOMEM, "out of memory");
                goto fail;
            }
        }
    }
    kt_input_config cfg = {dist, seed, input_params};
    if ((err = op->generate(p, inst->host_inputs, &cfg)) < 0)
        goto fail;
    if ((err = op->reference(p, (const void *const *)inst->host_inputs, inst->reference)) < 0)
        goto fail;
    inst->input_hash = hash_inputs(p, inst->host_inputs);
    for (int i = 0; i < p->n_inputs; i++)
        inst->input_hashes[i] =
            kt_hash_bytes(inst->host_inputs[i], kt_tensor_bytes(&p->tensors[i]));
    for (int i = 0; i < p->n_inputs; i++) {
        err = kt_backend_upload(backend, inst->dev_inputs[i], inst->host_inputs[i],
                                kt_tensor_bytes(&p->tensors[i]));
        if (err < 0)
            goto fail;
    }
    *out = inst;
    return KT_OK;
fail:
    kt_instance_free(inst, backend);
    return err;
}

void kt_instance_free(kt_instance *inst, kt_backend *backend)
{
    if (!inst)
        return;
    const kt_problem *p = &inst->problem;
    for (int i = 0; i < KT_MAX_TENSORS; i++) {
        int is_input = i < p->n_inputs;
        int is_output = !is_input && i < p->n_inputs + p->n_outputs;
        if (is_input) {
            free(inst->host_inputs[i]);
            free(inst->input_copies[i]);
            kt_backend_free(backend, inst->dev_inputs[i], kt_tensor_bytes(&p->tensors[i]));
        } else if (is_output) {
            int o = i - p->n_inputs;
            free(inst->host_outputs[o]);
            free(inst->reference[o]);
            free_guarded(backend, inst->dev_outputs[o], kt_tensor_bytes(&p->tensors[i]), GUARD);
            free_guarded(backend, inst->dev_outputs_alt[o], kt_tensor_bytes(&p->tensors[i]), GUARD);
        }
    }
    free(inst);
}

kt_call kt_instance_call(const kt_instance *inst, kt_backend *backend, const kt_param_value *params,
                         int threads)
{
    kt_call call;
    memset(&call, 0, sizeof(call));
    call.backend = backend;
    call.problem = &inst->problem;
    call.params = params;
    call.inputs = (const void *const *)inst->dev_inputs;
    call.outputs = (void *const *)inst->dev_outputs;
    call.threads = threads > 0 ? threads : 1;
    call.pair_position = -1;
    call.lookup = &kt_registry_lookup;
    return call;
}

int kt_outputs_poison(kt_instance *inst, kt_backend *backend, void *const *bufs)
{
    const kt_problem *p = &inst->problem;
    for (int o = 0; o < p->n_outputs; o++) {
        const kt_tensor *t = &p->tensors[p->n_inputs + o];
        fill_poison(inst->host_outputs[o], t->dtype, (size_t)kt_tensor_elems(t), inst->poison);
        int err = kt_backend_upload(backend, bufs[o], inst->host_outputs[o], kt_tensor_bytes(t));
        if (err < 0)
            return err;
    }
    return KT_OK;
}

int kt_instance_poison_outputs(kt_instance *inst, kt_backend *backend)
{
    return kt_outputs_poison(inst, backend, inst->dev_outputs);
}

void kt_instance_rotate(kt_instance *inst, uint64_t coin)
{
    inst->poison = (int)(coin % N_POISON);
    if ((coin >> 8) & 1) {
        for (int o = 0; o < inst->problem.n_outputs; o++) {
            void *t = inst->dev_outputs[o];
            inst->dev_outputs[o] = inst->dev_outputs_alt[o];
            inst->dev_outputs_alt[o] = t;
        }
    }
}

void kt_output_scan(kt_numerics *out, const kt_instance *inst)
{
    const kt_problem *p = &inst->problem;
    memset(out, 0, sizeof(*out));
    for (int o = 0; o < p->n_outputs; o++) {
        const kt_tensor *t = &p->tensors[p->n_inputs + o];
        int64_t n = kt_tensor_elems(t);
        out->elems += n;
        for (int64_t i = 0; i < n; i++) {
            if (is_poison(inst->host_outputs[o], t->dtype, (size_t)i, inst->poison))
                out->unwritten++;
            else if (!isfinite(kt_dtype_load(inst->host_outputs[o], t->dtype, (size_t)i)))
                out->nonfinite++;
        }
    }
}

int kt_outputs_download(kt_instance *inst, kt_backend *backend, void *const *bufs)
{
    const kt_problem *p = &inst->problem;
    for (int o = 0; o < p->n_outputs; o++) {
        const kt_tensor *t = &p->tensors[p->n_inputs + o];
        int err = kt_backend_download(backend, inst->host_outputs[o], bufs[o], kt_tensor_bytes(t));
        if (err < 0)
            return err;
    }
    return KT_OK;
}

int kt_instance_download_outputs(kt_instance *inst, kt_backend *backend)
{
    return kt_outputs_download(inst, backend, inst->dev_outputs);
}

int kt_inputs_upload(const kt_instance *inst, kt_backend *backend, void *const *bufs)
{
    const kt_problem *p = &inst->problem;
    for (int i = 0; i < p->n_inputs; i++) {
        int err = kt_backend_upload(backend, bufs[i], inst->host_inputs[i],
                                    kt_tensor_bytes(&p->tensors[i]));
        if (err < 0)
            return err;
    }
    return KT_OK;
}

int kt_instance_restore_inputs(kt_instance *inst, kt_backend *backend)
{
    return kt_inputs_upload(inst, backend, inst->dev_inputs);
}

int kt_inputs_changed(const kt_instance *inst, kt_backend *backend, void *const *bufs,
                      void *scratch, int *changed)
{
    const kt_problem *p = &inst->problem;
    int in_place = !backend->iface->caps->device_memory; /* host memory: hashed where it is */
    *changed = -1;
    for (int i = 0; i < p->n_inputs && *changed < 0; i++) {
        size_t bytes = kt_tensor_bytes(&p->tensors[i]);
        const void *at = bufs[i];
        if (!in_place) {
            int err = kt_backend_download(backend, scratch, bufs[i], bytes);
            if (err < 0)
                return err;
            at = scratch;
        }
        if (kt_hash_bytes(at, bytes) != inst->input_hashes[i])
            *changed = i;
    }
    return KT_OK;
}

int kt_instance_inputs_intact(kt_instance *inst, kt_backend *backend, int *intact)
{
    const kt_problem *p = &inst->problem;
    void **copies = inst->input_copies;
    int err = KT_OK;
    for (int i = 0; i < p->n_inputs && err == KT_OK; i++) {
        size_t bytes = kt_tensor_bytes(&p->tensors[i]);
        if (!copies[i] && !(copies[i] = malloc(bytes)))
            err = kt_error_code(KT_ENOMEM, "out of memory");
        else
            err = kt_backend_download(backend, copies[i], inst->dev_inputs[i], bytes);
    }
    if (err == KT_OK)
        *intact = hash_inputs(p, (void *const *)copies) == inst->input_hash;
    return err;
}

void kt_numerics_compare(kt_numerics *out, const kt_instance *inst)
{
    const kt_problem *p = &inst->problem;
    memset(out, 0, sizeof(*out));
    double ref_max = 0;
    for (int o = 0; o < p->n_outputs; o++) {
        int64_t n = kt_tensor_elems(&p->tensors[p->n_inputs + o]);
        for (int64_t i = 0; i < n; i++)
            ref_max = fmax(ref_max, fabs(inst->reference[o][i]));
    }
    double floor = ref_max > 0 ? 1e-3 * ref_max : 1e-300;
    double err2 = 0, ref2 = 0, out2 = 0, dot = 0;
    for (int o = 0; o < p->n_outputs; o++) {
        const kt_tensor *t = &p->tensors[p->n_inputs + o];
        int64_t n = kt_tensor_elems(t);
        const double *ref = inst->reference[o];
        out->elems += n;
        for (int64_t i = 0; i < n; i++) {
            if (is_poison(inst->host_outputs[o], t->dtype, (size_t)i, inst->poison)) {
                out->unwritten++;
                continue;
            }
            double y = kt_dtype_load(inst->host_outputs[o], t->dtype, (size_t)i);
            if (!isfinite(y)) {
                out->nonfinite++;
                continue;
            }
            double e = fabs(y - ref[i]);
            out->max_abs = fmax(out->max_abs, e);
            out->max_rel = fmax(out->max_rel, e / fmax(fabs(ref[i]), floor));
            err2 += e * e;
            ref2 += ref[i] * ref[i];
            out2 += y * y;
            dot += y * ref[i];
        }
    }
    out->rel_l2 = ref2 > 0 ? sqrt(err2 / ref2) : (err2 > 0 ? INFINITY : 0);
    out->cosine = ref2 > 0 && out2 > 0 ? dot / sqrt(ref2 * out2) : 0;
}

int kt_outputs_identical(const kt_instance *inst, void *const *a, void *const *b)
{
    const kt_problem *p = &inst->problem;
    for (int o = 0; o < p->n_outputs; o++)
        if (memcmp(a[o], b[o], kt_tensor_bytes(&p->tensors[p->n_inputs + o])) != 0)
            return 0;
    return 1;
}

/* How far into the guard zone 'zone' of 'guard' bytes the writes reach from the buffer's side
 * ('after': the zone follows the buffer), or 0 when the zone is intact. */
static int64_t guard_reach(const unsigned char *zone, size_t guard, int after)
{
    for (size_t i = 0; i < guard; i++) {
        size_t at = after ? guard - 1 - i : i; /* the far end first */
        if (zone[at] != GUARD_BYTE)
            return after ? (int64_t)at + 1 : (int64_t)(guard - at);
    }
    return 0;
}

int kt_outputs_check_guards(kt_numerics *out, const kt_problem *p, kt_backend *backend,
                            void *const *bufs, size_t guard, unsigned char *scratch)
{
    for (int o = 0; o < p->n_outputs; o++) {
        size_t bytes = kt_tensor_bytes(&p->tensors[p->n_inputs + o]);
        int err = kt_backend_download(backend, scratch, (char *)bufs[o] - guard, guard);
        int64_t before = err < 0 ? 0 : guard_reach(scratch, guard, 0);
        if (err == KT_OK)
            err = kt_backend_download(backend, scratch, (char *)bufs[o] + bytes, guard);
        int64_t after = err < 0 ? 0 : guard_reach(scratch, guard, 1);
        if (err == KT_OK && (before || after))
            err = write_guards(backend, bufs[o], bytes, guard);
        if (err < 0)
            return err;
        if ((before || after) && !out->overrun_tensor) {
            out->overrun_tensor = p->tensors[p->n_inputs + o].name;
            out->overrun_before = before;
            out->overrun_after = after;
        }
    }
    return KT_OK;
}

int kt_instance_check_guards(kt_numerics *out, kt_instance *inst, kt_backend *backend)
{
    unsigned char zone[GUARD];
    out->overrun_tensor = NULL;
    out->overrun_after = out->overrun_before = 0;
    int err = kt_outputs_check_guards(out, &inst->problem, backend, inst->dev_outputs, GUARD, zone);
    return err < 0 ? err
                   : kt_outputs_check_guards(out, &inst->problem, backend, inst->dev_outputs_alt,
                                             GUARD, zone);
}

int kt_outputs_alloc(kt_backend *backend, const kt_problem *p, void **bufs, size_t guard)
{
    for (int o = 0; o < p->n_outputs; o++) {
        int err =
            alloc_guarded(backend, &bufs[o], kt_tensor_bytes(&p->tensors[p->n_inputs + o]), guard);
        if (err < 0)
            return err;
    }
    return KT_OK;
}

void kt_outputs_free(kt_backend *backend, const kt_problem *p, void **bufs, size_t guard)
{
    for (int o = 0; o < p->n_outputs; o++) {
        free_guarded(backend, bufs[o], kt_tensor_bytes(&p->tensors[p->n_inputs + o]), guard);
        bufs[o] = NULL;
    }
}

double kt_rel_l2_against(const kt_instance *out, const kt_instance *ref)
{
    const kt_problem *p = &out->problem;
    double err2 = 0, ref2 = 0;
    for (int o = 0; o < p->n_outputs; o++) {
        const kt_tensor *t = &p->tensors[p->n_inputs + o];
        int64_t n = kt_tensor_elems(t);
        for (int64_t i = 0; i < n; i++) {
            double y = kt_dtype_load(out->host_outputs[o], t->dtype, (size_t)i);
            double e = y - ref->reference[o][i];
            err2 += e * e;
            ref2 += ref->reference[o][i] * ref->reference[o][i];
        }
    }
    return ref2 > 0 ? sqrt(err2 / ref2) : INFINITY;
}

int kt_check_call(kt_numerics *out, kt_instance *inst, const kt_variant *variant, void *state,
                  const kt_call *call)
{
    int err, intact = 1;
    memset(out, 0, sizeof(*out));
    if ((err = kt_instance_poison_outputs(inst, call->backend)) < 0)
        return err;
    kt_error_clear();
    if ((err = kt_variant_call(variant, state, call)) < 0)
        return err;
    if ((err = kt_backend_synchronize(call->backend)) < 0)
        return err;
    if ((err = kt_instance_download_outputs(inst, call->backend)) < 0)
        return err;
    kt_numerics_compare(out, inst);
    if ((err = kt_instance_check_guards(out, inst, call->backend)) < 0)
        return err;
    if ((err = kt_instance_inputs_intact(inst, call->backend, &intact)) < 0)
        return err;
    out->inputs_modified = !intact;
    /* the next call, of whichever arm, gets the inputs as generated */
    return intact ? KT_OK : kt_instance_restore_inputs(inst, call->backend);
}
