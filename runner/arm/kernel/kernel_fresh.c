/* kernel_fresh.c - what the kernel kind's calls run on, so that every call does the work
 * (docs/robustness.md): two sets of input buffers whose contents are uploaded call by call (an
 * arm's calls alternate between them, and no call sees the bytes its arm's previous call saw),
 * a private second input set where the spec has one, and each arm's own two sets of output
 * buffers between guard zones of at least KT_LIVE_GUARD_BYTES (no other arm writes there, so
 * what changes in them after a call's check is that arm's late write). */
#include "arm/kernel/kernel_arm.h"

#include "util/hash.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t round_up(size_t n, size_t to)
{
    return (n + to - 1) / to * to;
}

int kt_fresh_open(point_run *r)
{
    const kt_problem *p = &r->inst[0]->problem;
    int err = KT_OK;
    r->n_contents = r->n_sets;
    if (r->n_sets == 1) { /* a second input set, of the calls' own: never one set twice running */
        err = kt_instance_create(&r->inst[1], r->backend, r->spec->op, r->point, r->spec->dtype,
                                 r->spec->distribution, r->spec->input_params,
                                 kt_seed_mix(r->env.seed, 0x6672657368ull));
        if (err < 0)
            return err;
        r->n_contents = 2;
    }
    size_t largest = 0, out_largest = 0;
    for (int i = 0; i < p->n_inputs + p->n_outputs; i++) {
        size_t bytes = kt_tensor_bytes(&p->tensors[i]);
        largest = bytes > largest ? bytes : largest;
        if (i >= p->n_inputs && bytes > out_largest)
            out_largest = bytes;
    }
    r->out_guard = round_up(out_largest, 4096);
    if (r->out_guard < KT_LIVE_GUARD_BYTES)
        r->out_guard = KT_LIVE_GUARD_BYTES;
    if (!(r->scratch = malloc(largest > r->out_guard ? largest : r->out_guard)))
        return kt_error_code(KT_ENOMEM, "out of memory");
    for (int b = 0; b < 2 && err == KT_OK; b++) {
        r->live_set[b] = -1;
        for (int i = 0; i < p->n_inputs && err == KT_OK; i++)
            err = kt_backend_alloc(r->backend, &r->live_in[b][i], kt_tensor_bytes(&p->tensors[i]));
    }
    for (int arm = 0; arm <= (int)r->out->n_cands && err == KT_OK; arm++) {
        r->last_live[arm] = r->last_set[arm] = -1;
        for (int o = 0; o < 2 && err == KT_OK; o++)
            err = kt_outputs_alloc(r->backend, p, r->outs[arm][o], r->out_guard);
    }
    return err;
}

void kt_fresh_close(point_run *r)
{
    if (!r->inst[0])
        return;
    const kt_problem *p = &r->inst[0]->problem;
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < p->n_inputs; i++)
            if (r->live_in[b][i])
                kt_backend_free(r->backend, r->live_in[b][i], kt_tensor_bytes(&p->tensors[i]));
    for (int arm = 0; arm <= (int)r->out->n_cands; arm++)
        for (int o = 0; o < 2; o++)
            if (r->outs[arm][o][0])
                kt_outputs_free(r->backend, p, r->outs[arm][o], r->out_guard);
    if (r->n_contents > r->n_sets)
        kt_instance_free(r->inst[r->n_sets], r->backend);
    free(r->scratch);
}

int kt_fresh_load(point_run *r, int b, int set)
{
    if (r->live_set[b] == set)
        return KT_OK;
    r->live_set[b] = -1; /* a failed upload leaves them unknown */
    int err = kt_inputs_upload(r->inst[set], r->backend, r->live_in[b]);
    if (err == KT_OK)
        r->live_set[b] = set;
    return err;
}

int kt_fresh_load_other(point_run *r, int b, int set)
{
    if (r->live_set[b] >= 0 && r->live_set[b] != set)
        return KT_OK;
    return kt_fresh_load(r, b, (set + 1) % r->n_contents);
}

/* The hash of what output buffers 'bufs' hold ('scratch' for a device's). */
static int outputs_hash(point_run *r, void *const *bufs, uint64_t *h)
{
    const kt_problem *p = &r->inst[0]->problem;
    *h = 0;
    for (int o = 0; o < p->n_outputs; o++) {
        size_t bytes = kt_tensor_bytes(&p->tensors[p->n_inputs + o]);
        const void *at = bufs[o];
        if (r->backend->iface->caps->device_memory) {
            int err = kt_backend_download(r->backend, r->scratch, bufs[o], bytes);
            if (err < 0)
                return err;
            at = r->scratch;
        }
        *h = kt_seed_mix(*h, kt_hash_bytes(at, bytes));
    }
    return KT_OK;
}

void kt_fresh_remember(point_run *r, int arm, int o, const kt_instance *inst)
{
    const kt_problem *p = &inst->problem;
    uint64_t h = 0;
    for (int i = 0; i < p->n_outputs; i++)
        h = kt_seed_mix(
            h, kt_hash_bytes(inst->host_outputs[i], kt_tensor_bytes(&p->tensors[p->n_inputs + i])));
    r->out_hash[arm][o] = h;
    r->out_hashed[arm][o] = 1;
    r->out_pending[arm] = 1;
}

int kt_fresh_recheck(point_run *r, int arm, char *why, size_t len)
{
    for (int o = 0; o < 2; o++) {
        uint64_t h;
        if (!r->out_hashed[arm][o])
            continue;
        int err = outputs_hash(r, r->outs[arm][o], &h);
        if (err < 0)
            return err;
        if (h != r->out_hash[arm][o]) {
            const kt_problem *p = &r->inst[0]->problem;
            r->out_hashed[arm][o] = 0;
            snprintf(why, len,
                     "check late-writes: output '%s' changed after the call that wrote it had "
                     "returned and been checked (work still running after the call: a "
                     "background thread or another stream)",
                     p->tensors[p->n_inputs].name);
            return 1;
        }
    }
    r->out_pending[arm] = 0;
    return 0;
}
