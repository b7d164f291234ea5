/* pymodule.c - the op 'pymodule': a KernelBench-layout problem (a Python file with Model,
 * get_inputs() and get_init_inputs()) whose arms are torch modules. Its tensors are made and
 * checked in Python by the pymodule kind of arm (runner/arm/pymodule/), not here: the problem
 * has none, and its one variant, 'module', only names the arms (a call through it is refused). */
#include "ops.h"

static int pymodule_shape(kt_problem *out, const kt_point *point, kt_dtype dtype,
                          const kt_param_value *input_params)
{
    (void)input_params;
    kt_op_problem_init(out, &kt_op_pymodule, dtype);
    out->batch = point->batch_size;
    out->context = point->context_length;
    return KT_OK; /* no tensors: the problem file's get_inputs() makes them */
}

static int pymodule_generate(const kt_problem *p, void *const *inputs, const kt_input_config *cfg)
{
    (void)p;
    (void)inputs;
    (void)cfg;
    return KT_OK;
}

static int pymodule_reference(const kt_problem *p, const void *const *inputs,
                              double *const *outputs)
{
    (void)p;
    (void)inputs;
    (void)outputs;
    return KT_OK; /* Model run in float64 by the arm kind */
}

const kt_op kt_op_pymodule = {
    /* .name = */ "pymodule",
    /* .doc = */
    "cpu only: a KernelBench-layout problem, torch modules as arms "
    "(docs/kernelbench.md)",
    /* .axes = */ KT_AXIS_BATCH | KT_AXIS_CONTEXT,
    /* .model_fields = */ 0,
    /* .backend_only = */ "cpu",
    /* .input_params = */ NULL,
    /* .n_input_params = */ 0,
    /* .shape = */ pymodule_shape,
    /* .generate = */ pymodule_generate,
    /* .reference = */ pymodule_reference,
};

static int module_refuse(void **state, const kt_call *call)
{
    (void)state;
    (void)call;
    return kt_error_code(KT_EUNSUPPORTED, "pymodule: a module's calls are made by the pymodule "
                                          "arms in Python, not through a variant");
}

static int module_run(void *state, const kt_call *call)
{
    return module_refuse(&state, call);
}

static void module_release(void *state, kt_backend *backend)
{
    (void)state;
    (void)backend;
}

const kt_variant kt_variant_cpu_pymodule = {
    /* .op = */ "pymodule",
    /* .name = */ "module",
    /* .backend = */ "cpu",
    /* .doc = */ "a torch module's forward (class from the problem or a solution file)",
    /* .params = */ NULL,
    /* .n_params = */ 0,
    /* .prepare = */ module_refuse,
    /* .run = */ module_run,
    /* .release = */ module_release,
    /* .metrics = */ NULL,
};
