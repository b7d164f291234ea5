/* harness.h - runs one variant on one point through the runner's correctness path
 * (kt_instance + kt_check_call), for kernel tests in the style of ggml's test-backend-ops. */
#ifndef KT_TEST_HARNESS_H
#define KT_TEST_HARNESS_H

#include "arm/kernel/check.h"
#include "kernel.h"

#include <stdio.h>
#include <string.h>

typedef struct kt_test_result {
    int status; /* KT_OK, KT_ENODEV (backend absent: skip), KT_EUNSUPPORTED, or an error */
    kt_numerics numerics;
    kt_metric metrics[KT_MAX_METRICS];
    int n_metrics;
    size_t variant_bytes; /* peak bytes the variant allocated beyond inputs and outputs */
    char error[512];
} kt_test_result;

/* Runs 'variant' of 'op' on 'backend' at 'point'. 'params' may be NULL for the defaults;
 * 'input_params' may be NULL for the op's defaults. */
static inline kt_test_result kt_test_run(const char *backend_name, const char *op_name,
                                         const char *variant_name, const kt_point *point,
                                         kt_dtype dtype, kt_distribution dist,
                                         const kt_param_value *params,
                                         const kt_param_value *input_params, uint64_t seed,
                                         int threads)
{
    kt_test_result r;
    memset(&r, 0, sizeof(r));
    const kt_op *op = kt_op_find(op_name);
    const kt_variant *v = kt_variant_find(op_name, backend_name, variant_name);
    const kt_backend_iface *iface = kt_backend_find(backend_name);
    if (!op || !v || !iface) {
        r.status = KT_EINVAL;
        snprintf(r.error, sizeof(r.error), "not registered: %s/%s/%s", op_name, backend_name,
                 variant_name);
        return r;
    }
    kt_device_info info;
    if (iface->probe(&info) < 0 || !info.available) {
        r.status = KT_ENODEV;
        snprintf(r.error, sizeof(r.error), "%s", info.reason);
        return r;
    }
    kt_param_value defaults[KT_MAX_PARAMS], input_defaults[KT_MAX_PARAMS];
    kt_param_defaults(defaults, v->params, v->n_params);
    kt_param_defaults(input_defaults, op->input_params, op->n_input_params);
    kt_backend *b = NULL;
    kt_instance *inst = NULL;
    void *state = NULL;
    if ((r.status = kt_backend_open(&b, backend_name, threads, seed)) < 0)
        goto done;
    r.status = kt_instance_create(&inst, b, op, point, dtype, dist,
                                  input_params ? input_params : input_defaults, seed);
    if (r.status < 0)
        goto done;
    kt_call call = kt_instance_call(inst, b, params ? params : defaults, threads);
    kt_backend_reset_peak(b);
    size_t base = b->bytes_current;
    if ((r.status = v->prepare(&state, &call)) < 0)
        goto done;
    if ((r.status = kt_check_call(&r.numerics, inst, v, state, &call)) < 0)
        goto done;
    r.variant_bytes = b->bytes_peak - base;
    if (v->metrics)
        r.n_metrics = v->metrics(state, r.metrics, KT_MAX_METRICS);
done:
    if (r.status < 0 && !r.error[0])
        snprintf(r.error, sizeof(r.error), "%s", kt_error_last());
    if (v && b)
        v->release(state, b);
    kt_instance_free(inst, b);
    kt_backend_close(b);
    return r;
}

#endif
