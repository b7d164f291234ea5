/* samples_csv.c - the rows of samples.csv (see samples_csv.h). */
#include "result/samples_csv.h"

#include <stdio.h>
#include <stdlib.h>

/* Makes room for 'need' more bytes. */
static int reserve(char **buf, size_t len, size_t *cap, size_t need)
{
    size_t want = *cap;
    while (want - len < need)
        want *= 2;
    if (want == *cap)
        return 0;
    char *bigger = realloc(*buf, want);
    if (!bigger)
        return kt_error_set("out of memory");
    *buf = bigger;
    *cap = want;
    return 0;
}

/* The columns shared by every row of point 'p', from run_id to context_length, with the
 * trailing comma; empty cells for the axes the op does not use. */
static void point_columns(char *out, size_t n, const kt_point_result *p, const kt_spec *spec,
                          const kt_samples_ids *ids)
{
    unsigned axes = spec->op->axes;
    const kt_point *pt = &p->point;
    char batch[24] = "", context[24] = "";
    if (axes & KT_AXIS_BATCH)
        snprintf(batch, sizeof(batch), "%lld", (long long)pt->batch_size);
    if ((axes & KT_AXIS_CONTEXT) && pt->context_length > 0)
        snprintf(context, sizeof(context), "%lld", (long long)pt->context_length);
    snprintf(out, n, "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,", ids && ids->run_id ? ids->run_id : "",
             ids && ids->commit ? ids->commit : "", spec->backend, spec->op->name,
             kt_dtype_name(spec->dtype), pt->id, axes & KT_AXIS_MODEL ? pt->model.name : "",
             axes & KT_AXIS_PHASE ? kt_phase_name(pt->phase) : "",
             axes & KT_AXIS_ROLE ? kt_role_name(pt->role) : "", batch, context);
}

int kt_samples_format(char **buf, size_t *len, size_t *cap, const kt_point_result *p,
                      const kt_spec *spec, const kt_samples_ids *ids)
{
    char head[512];
    point_columns(head, sizeof(head), p, spec, ids);
    for (size_t k = 0; k < p->n_cands; k++) {
        const kt_candidate_result *c = &p->cands[k];
        for (size_t i = 0; i < c->n_pairs; i++) {
            const kt_pair *q = &c->pairs[i];
            for (int is_cand = 0; is_cand < 2; is_cand++) {
                const kt_arm_result *arm = is_cand ? &c->arm : &p->baseline;
                if (reserve(buf, *len, cap, 1024) < 0)
                    return -1;
                *len += (size_t)snprintf(
                    *buf + *len, *cap - *len, "%s%s,%d,%d,%d,%s,%s,%s,%.17g,%.17g,%d,%d\n", head,
                    c->arm.name, q->rep, q->input_set, is_cand == q->candidate_first ? 0 : 1,
                    is_cand ? "candidate" : "baseline", arm->name, arm->variant,
                    is_cand ? q->cand_ns : q->base_ns, is_cand ? q->cand_noise : q->base_noise,
                    q->throttled ? 1 : 0, q->placement);
            }
        }
    }
    return 0;
}
