/* common.c - helpers shared by the op files. */
#include "ops.h"

#include <math.h>
#include <string.h>

void kt_op_problem_init(kt_problem *p, const kt_op *op, kt_dtype dtype)
{
    memset(p, 0, sizeof(*p));
    p->op = op;
    p->dtype = dtype;
}

void kt_op_add_tensor(kt_problem *p, const char *name, kt_dtype dtype, int ndim, int64_t d0,
                      int64_t d1, int64_t d2, int64_t d3)
{
    int at = 0;
    while (at < KT_MAX_TENSORS && p->tensors[at].name)
        at++;
    if (at == KT_MAX_TENSORS)
        return;
    kt_tensor *t = &p->tensors[at];
    int64_t dims[4] = {d0, d1, d2, d3};
    t->name = name;
    t->ndim = ndim;
    t->dtype = dtype;
    for (int i = 0; i < 4; i++)
        t->dims[i] = i < ndim ? dims[i] : 1;
}

void kt_op_fill_random(void *dst, kt_dtype dtype, size_t n, kt_distribution dist, uint64_t seed,
                       double scale)
{
    kt_rng rng;
    kt_rng_seed(&rng, seed);
    size_t size = kt_dtype_size(dtype);
    for (size_t i = 0; i < n; i++) {
        double x;
        char *slot = (char *)dst + i * size;
        do {
            double u =
                dist == KT_DIST_UNIFORM ? 2.0 * kt_rng_uniform(&rng) - 1.0 : kt_rng_normal(&rng);
            x = u * scale;
            kt_dtype_from_double(slot, &x, dtype, 1);
        } while (kt_dtype_load(dst, dtype, i) == 0.0f);
    }
}
