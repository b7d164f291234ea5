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

int kt_spec_resolve_backend(char *out, size_t out_len, const kt_op *op, const char *requested,
                            char *why, size_t why_len)
{
    char known[256] = "auto"; /* the registry's names, built or not, and auto */
    int found = strcmp(requested, "auto") == 0, n = kt_backend_name_count();
    for (int i = 0; i < n; i++) {
        found |= strcmp(requested, kt_backend_name_at(i)) == 0;
        snprintf(known + strlen(known), sizeof(known) - strlen(known), "%s%s",
                 i + 1 < n ? ", " : " or ", kt_backend_name_at(i));
    }
    if (!found) {
        snprintf(why, why_len, "unknown backend '%s' (choose %s)", requested, known);
        return -1;
    }
    const char *name = requested;
    if (strcmp(requested, "auto") == 0)
        name = op->backend_only ? op->backend_only : kt_backend_auto(KT_AUTO_PROBE)->name;
    if (op->backend_only && strcmp(name, op->backend_only) != 0) {
        snprintf(why, why_len, "op '%s' runs only on backend '%s', not '%s'", op->name,
                 op->backend_only, name);
        return -1;
    }
    if (!kt_backend_find(name)) {
        snprintf(why, why_len, "backend '%s' is not built into this ktrial%s", name,
                 kt_backend_build_hint(name));
        return -1;
    }
    if (!op_runs_on(op, name)) {
        snprintf(why, why_len, "op '%s' has no variants on backend '%s'", op->name, name);
        return -1;
    }
    snprintf(out, out_len, "%s", name);
    return 0;
}
