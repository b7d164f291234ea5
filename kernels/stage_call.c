/* stage_call.c - stage variants of a composite variant: picked by params, shaped at the
 * composite's point, called through their vtables (stage_call.h). */
#include "stage_call.h"

#include <stdio.h>
#include <string.h>

int kt_stage_pick(kt_stage_call *s, const kt_call *call, const kt_param_def *defs, int n_defs,
                  int choice, const char *stage, const char *op, const char *backend)
{
    const char *who = call->problem->op ? call->problem->op->name : "stage";
    char name[KT_NAME_MAX];
    kt_param_choice_name(name, sizeof(name), defs[choice].choices, (int)call->params[choice].num);
    const kt_variant *v = call->lookup ? call->lookup->variant(op, backend, name) : NULL;
    if (!v)
        return kt_error_code(KT_EINVAL, "%s: %s variant '%s' of %s is not built in on %s", who,
                             stage, name, op, backend);
    kt_param_defaults(s->params, v->params, v->n_params);
    size_t len = strlen(stage);
    for (int i = 0; i < n_defs; i++) {
        const kt_param_def *own = &defs[i];
        if (strncmp(own->name, stage, len) != 0 || own->name[len] != '.')
            continue;
        const char *pass = own->name + len + 1;
        int at = kt_param_index(v->params, v->n_params, pass);
        if (at < 0) {
            if (call->params[i].num != own->def)
                return kt_error_code(KT_EINVAL,
                                     "%s: %s is set but %s variant '%s' has no param '%s'", who,
                                     own->name, op, name, pass);
            continue;
        }
        const kt_param_def *theirs = &v->params[at];
        int same_choices = !theirs->choices == !own->choices &&
                           (!own->choices || strcmp(theirs->choices, own->choices) == 0);
        if (theirs->type != own->type || !same_choices)
            return kt_error_code(KT_EINVAL, "%s: %s does not match the type of %s's param '%s'",
                                 who, own->name, name, pass);
        s->params[at] = call->params[i];
    }
    s->variant = v;
    return KT_OK;
}

int kt_stage_shape(kt_stage_call *s, const kt_call *call, const char *op_name, kt_role role,
                   kt_phase phase, int64_t context)
{
    const kt_problem *p = call->problem;
    const char *who = p->op ? p->op->name : "stage";
    kt_point pt;
    memset(&pt, 0, sizeof(pt));
    snprintf(pt.model.name, sizeof(pt.model.name), "%s", who);
    pt.model.hidden = p->k;
    pt.model.heads = p->heads;
    pt.model.kv_heads = p->kv_heads;
    pt.model.head_dim = p->head_dim;
    pt.model.intermediate = p->n;
    pt.batch_size = p->batch;
    pt.context_length = context;
    pt.phase = phase;
    pt.role = role;
    const kt_op *op = call->lookup ? call->lookup->op(op_name) : NULL;
    if (!op)
        return kt_error_code(KT_EINVAL, "%s: op '%s' is not built in", who, op_name);
    return op->shape(&s->problem, &pt, p->dtype, NULL);
}

static kt_call stage_call_of(const kt_stage_call *s, const kt_call *call, const void *const *in,
                             void *const *out)
{
    kt_call c = *call;
    c.problem = &s->problem;
    c.params = s->params;
    c.inputs = in;
    c.outputs = out;
    c.profile = NULL;
    return c;
}

int kt_stage_prepare(kt_stage_call *s, const kt_call *call, const void *const *in, void *const *out)
{
    kt_call c = stage_call_of(s, call, in, out);
    int err = s->variant->prepare(&s->state, &c);
    s->prepared = 1; /* release even a failed prepare's state */
    if (err < 0)
        return kt_error_code(err, "%s: stage variant '%s' of %s: %s",
                             call->problem->op ? call->problem->op->name : "stage",
                             s->variant->name, s->variant->op, kt_error_last());
    return KT_OK;
}

int kt_stage_run(kt_stage_call *s, const kt_call *call, const void *const *in, void *const *out)
{
    kt_call c = stage_call_of(s, call, in, out);
    return s->variant->run(s->state, &c);
}

void kt_stage_release(kt_stage_call *s, kt_backend *b)
{
    if (s->prepared)
        s->variant->release(s->state, b);
    s->prepared = 0;
    s->state = NULL;
}
