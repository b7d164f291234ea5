/* op_shape.c - an op's shape, and for a plugin's op a check of the problem it made (see
 * kt_op_shape in kernel.h). Apart from core.c: it asks the registry whose op it is, and the
 * registry lists the ops that use core.c. */
#include "kernel.h"

#include <math.h>

/* What the rest of ktrial takes for granted of a problem (KT_TENSOR_MAX_ELEMS elements at
 * most in a tensor, so no size overflows). */
#define KT_TENSOR_MAX_ELEMS ((int64_t)1 << 48)

static int problem_check(const kt_problem *p)
{
    if (p->n_inputs < 0 || p->n_outputs < 1 || p->n_inputs + p->n_outputs > KT_MAX_TENSORS)
        return kt_error_code(KT_EINVAL,
                             "%d inputs and %d outputs (at least one output, %d "
                             "tensors at most)",
                             p->n_inputs, p->n_outputs, KT_MAX_TENSORS);
    if ((unsigned)p->dtype > KT_DTYPE_BF16)
        return kt_error_code(KT_EINVAL, "dtype %d", (int)p->dtype);
    for (int i = 0; i < p->n_inputs + p->n_outputs; i++) {
        const kt_tensor *t = &p->tensors[i];
        if (!t->name || (unsigned)t->dtype > KT_DTYPE_BF16 || t->ndim < 1 || t->ndim > 4)
            return kt_error_code(KT_EINVAL, "tensor %d has %s, dtype %d and %d dims (1 to 4)", i,
                                 t->name ? "a name" : "no name", (int)t->dtype, t->ndim);
        int64_t elems = 1;
        for (int d = 0; d < t->ndim; d++) {
            if (t->dims[d] < 1 || t->dims[d] > KT_TENSOR_MAX_ELEMS / elems)
                return kt_error_code(KT_EINVAL,
                                     "tensor '%s' has dims[%d] = %lld (at least 1, and at most "
                                     "2^48 elements in all)",
                                     t->name, d, (long long)t->dims[d]);
            elems *= t->dims[d];
        }
    }
    if (!(p->flops >= 0 && p->flops < HUGE_VAL) || !(p->bytes >= 0 && p->bytes < HUGE_VAL))
        return kt_error_code(KT_EINVAL, "flops %g and bytes %g (finite, not negative)", p->flops,
                             p->bytes);
    return KT_OK;
}

int kt_op_shape(const kt_op *op, kt_problem *out, const kt_point *point, kt_dtype dtype,
                const kt_param_value *input_params)
{
    kt_error_clear();
    int err = op->shape(out, point, dtype, input_params);
    if (err < 0 && !kt_error_last()[0])
        return kt_error_code(err, "op '%s': shape %s", op->name, kt_error_or_code(err));
    if (err < 0)
        return err;
    if (kt_op_plugin(op) != KT_PLUGIN_BUILTIN && (err = problem_check(out)) < 0)
        return kt_error_code(err, "op '%s' made an invalid problem: %s", op->name, kt_error_last());
    return KT_OK;
}
