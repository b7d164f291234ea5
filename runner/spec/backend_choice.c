/* backend_choice.c - which backend a spec's op runs on ("auto" resolved), shared by the
 * meaning checks and the tests; it reads only the kernel registry. */
#include "spec/spec.h"

#include <stdio.h>
#include <string.h>

/* True when 'op' has at least one variant on 'backend'. */
static int op_runs_on(const kt_op *op, const char *backend)
{
    for (int i = 0; i < kt_variant_count(); i++) {
        const kt_variant *v = kt_variant_at(i);
        if (strcmp(v->op, op->name) == 0 && strcmp(v->backend, backend) == 0)
            return 1;
    }
    return 0;
}

static int cuda_answers(void)
{
    const kt_backend_iface *cuda = kt_backend_find("cuda");
    if (!cuda)
        return 0;
    kt_device_info info;
    memset(&info, 0, sizeof(info));
    return cuda->probe(&info) == KT_OK && info.available;
}

int kt_spec_resolve_backend(char *out, size_t out_len, const kt_op *op, const char *requested,
                            char *why, size_t why_len)
{
    static const char *const known[] = {"auto", "cpu", "cuda", "sim", "process"};
    int found = 0;
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        found |= strcmp(requested, known[i]) == 0;
    if (!found) {
        snprintf(why, why_len, "unknown backend '%s' (choose auto, cpu, cuda, sim or process)",
                 requested);
        return -1;
    }
    const char *name = requested;
    if (strcmp(requested, "auto") == 0)
        name = op->backend_only ? op->backend_only : cuda_answers() ? "cuda" : "cpu";
    if (op->backend_only && strcmp(name, op->backend_only) != 0) {
        snprintf(why, why_len, "op '%s' runs only on backend '%s', not '%s'", op->name,
                 op->backend_only, name);
        return -1;
    }
    if (!kt_backend_find(name)) {
        snprintf(why, why_len, "backend '%s' is not built into this ktrial%s", name,
                 strcmp(name, "cuda") == 0 ? " (configure with -DKT_CUDA=ON)" : "");
        return -1;
    }
    if (!op_runs_on(op, name)) {
        snprintf(why, why_len, "op '%s' has no variants on backend '%s'", op->name, name);
        return -1;
    }
    snprintf(out, out_len, "%s", name);
    return 0;
}
