/* gemm_onednn.c - oneDNN's matmul over storage-typed operands, and the gemm 'onednn' variant
 * built on it: what a CPU inference engine calls for a bf16 projection. Built only when CMake
 * found oneDNN (KT_HAVE_ONEDNN).
 *
 * x[m, k] is the source, w[n, k] row-major is the weights as a k x n matrix with strides
 * (1, k) (oneDNN's "ba"), y[m, n] the destination, all three in the storage type; oneDNN
 * accumulates in fp32. The primitive, its descriptors and its scratchpad (user-managed, so
 * the backend counts it) are made in prepare; a call binds the three buffers and executes.
 * The weights stay in the caller's layout: like 'tiled', oneDNN packs them inside the call,
 * as the input sets rotate and no layout is prepared ahead of a call. */
#include "baselines.h"
#include "cpu.h"
#include "cpu_gemm.h"

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

const char *kt_onednn_isa_name(void)
{
    switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_sse41:
        return "sse41";
    case dnnl_cpu_isa_avx:
        return "avx";
    case dnnl_cpu_isa_avx2:
        return "avx2";
    case dnnl_cpu_isa_avx2_vnni:
        return "avx2_vnni";
    case dnnl_cpu_isa_avx512_core:
        return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni:
        return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16:
        return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx:
        return "avx512_core_amx";
    default:
        return "other";
    }
}

static dnnl_data_type_t dnnl_type(kt_dtype dtype)
{
    switch (dtype) {
    case KT_DTYPE_BF16:
        return dnnl_bf16;
    case KT_DTYPE_FP16:
        return dnnl_f16;
    default:
        return dnnl_f32;
    }
}

/* Sets the error for a failed oneDNN call and returns the matching code. */
static int dnnl_fail(dnnl_status_t s, const char *what)
{
    if (s == dnnl_unimplemented) {
        const dnnl_version_t *v = dnnl_version();
        return kt_error_code(KT_EUNSUPPORTED, "onednn %d.%d.%d has no %s for this CPU (isa %s)",
                             v->major, v->minor, v->patch, what, kt_onednn_isa_name());
    }
    if (s == dnnl_out_of_memory)
        return kt_error_code(KT_ENOMEM, "onednn %s: out of memory", what);
    return kt_error_code(KT_ERROR, "onednn %s: %s", what, dnnl_status2str(s));
}

/* The matmul y[m, n] = x[m, k] w[n, k]^T in 'dtype' on 'engine', with a user scratchpad: its
 * memory descriptors (x, w, y) in 'md' and its primitive descriptor in '*pd'. Returns KT_OK or
 * the error of the step that failed (KT_EUNSUPPORTED: no implementation on this CPU). */
static int matmul_pd(dnnl_primitive_desc_t *pd, dnnl_memory_desc_t md[3], dnnl_engine_t engine,
                     kt_dtype dtype, int64_t m, int64_t n, int64_t k)
{
    dnnl_dims_t x_dims = {m, k}, x_strides = {k, 1};
    dnnl_dims_t w_dims = {k, n}, w_strides = {1, k};
    dnnl_dims_t y_dims = {m, n}, y_strides = {n, 1};
    dnnl_data_type_t dt = dnnl_type(dtype);
    dnnl_matmul_desc_t desc;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_status_t s;
    if ((s = dnnl_memory_desc_init_by_strides(&md[0], 2, x_dims, dt, x_strides)) != dnnl_success ||
        (s = dnnl_memory_desc_init_by_strides(&md[1], 2, w_dims, dt, w_strides)) != dnnl_success ||
        (s = dnnl_memory_desc_init_by_strides(&md[2], 2, y_dims, dt, y_strides)) != dnnl_success)
        return dnnl_fail(s, "memory descriptor");
    if ((s = dnnl_matmul_desc_init(&desc, &md[0], &md[1], NULL, &md[2])) != dnnl_success)
        return dnnl_fail(s, "matmul descriptor");
    if ((s = dnnl_primitive_attr_create(&attr)) != dnnl_success)
        return dnnl_fail(s, "attributes");
    s = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    if (s == dnnl_success)
        s = dnnl_primitive_desc_create(pd, &desc, attr, engine, NULL);
    dnnl_primitive_attr_destroy(attr);
    if (s != dnnl_success) {
        char what[32];
        snprintf(what, sizeof(what), "%s matmul", kt_dtype_name(dtype));
        return dnnl_fail(s, what);
    }
    return KT_OK;
}

int kt_cpu_dnnl_check(kt_dtype dtype, int64_t m, int64_t n, int64_t k)
{
    dnnl_engine_t engine = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_memory_desc_t md[3];
    dnnl_status_t s = dnnl_engine_create(&engine, dnnl_cpu, 0);
    int err =
        s == dnnl_success ? matmul_pd(&pd, md, engine, dtype, m, n, k) : dnnl_fail(s, "engine");
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (engine)
        dnnl_engine_destroy(engine);
    return err;
}

int kt_cpu_dnnl_init(kt_cpu_dnnl *g, kt_backend *b, kt_dtype dtype, int64_t m, int64_t n, int64_t k)
{
    memset(g, 0, sizeof(*g));
    dnnl_memory_desc_t md[3];
    dnnl_status_t s;
    if ((s = dnnl_engine_create(&g->engine, dnnl_cpu, 0)) != dnnl_success)
        return dnnl_fail(s, "engine");
    if ((s = dnnl_stream_create(&g->stream, g->engine, dnnl_stream_default_flags)) != dnnl_success)
        return dnnl_fail(s, "stream");
    int err = matmul_pd(&g->pd, md, g->engine, dtype, m, n, k);
    if (err < 0)
        return err;
    if ((s = dnnl_primitive_create(&g->prim, g->pd)) != dnnl_success)
        return dnnl_fail(s, "primitive");
    const dnnl_memory_desc_t *pad_md =
        dnnl_primitive_desc_query_md(g->pd, dnnl_query_scratchpad_md, 0);
    g->pad_bytes = pad_md ? dnnl_memory_desc_get_size(pad_md) : 0;
    if (g->pad_bytes > 0) {
        int err = kt_backend_alloc(b, &g->pad, g->pad_bytes);
        if (err < 0)
            return err;
    }
    dnnl_memory_desc_t none_md;
    memset(&none_md, 0, sizeof(none_md));
    const dnnl_memory_desc_t *mds[4] = {&md[0], &md[1], &md[2], pad_md ? pad_md : &none_md};
    for (int i = 0; i < 4; i++) {
        if (i == 3 && g->pad_bytes == 0)
            break;
        if ((s = dnnl_memory_create(&g->mem[i], mds[i], g->engine, i == 3 ? g->pad : NULL)) !=
            dnnl_success)
            return dnnl_fail(s, "memory");
    }
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(g->pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success &&
        impl)
        snprintf(g->impl, sizeof(g->impl), "%s", impl);
    return KT_OK;
}

void kt_cpu_dnnl_release(kt_cpu_dnnl *g, kt_backend *b)
{
    if (!g)
        return;
    for (int i = 0; i < 4; i++)
        if (g->mem[i])
            dnnl_memory_destroy(g->mem[i]);
    if (g->prim)
        dnnl_primitive_destroy(g->prim);
    if (g->pd)
        dnnl_primitive_desc_destroy(g->pd);
    if (g->stream)
        dnnl_stream_destroy(g->stream);
    if (g->engine)
        dnnl_engine_destroy(g->engine);
    kt_backend_free(b, g->pad, g->pad_bytes);
    memset(g, 0, sizeof(*g));
}

int kt_cpu_dnnl_gemm(const kt_cpu_dnnl *g, void *y, const void *x, const void *w, int threads)
{
    dnnl_status_t s;
#ifdef _OPENMP
    omp_set_num_threads(threads); /* oneDNN's OpenMP runtime reads it when it executes */
#else
    (void)threads;
#endif
    if ((s = dnnl_memory_set_data_handle(g->mem[0], (void *)x)) != dnnl_success ||
        (s = dnnl_memory_set_data_handle(g->mem[1], (void *)w)) != dnnl_success ||
        (s = dnnl_memory_set_data_handle(g->mem[2], y)) != dnnl_success)
        return dnnl_fail(s, "bind");
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, g->mem[0]},
                               {DNNL_ARG_WEIGHTS, g->mem[1]},
                               {DNNL_ARG_DST, g->mem[2]},
                               {DNNL_ARG_SCRATCHPAD, g->mem[3]}};
    if ((s = dnnl_primitive_execute(g->prim, g->stream, g->pad_bytes > 0 ? 4 : 3, args)) !=
        dnnl_success)
        return dnnl_fail(s, "execute");
    if ((s = dnnl_stream_wait(g->stream)) != dnnl_success)
        return dnnl_fail(s, "wait");
    return KT_OK;
}

int kt_gemm_onednn_check_problem(const kt_param_value *params, const kt_problem *p)
{
    (void)params;
    return kt_cpu_dnnl_check(p->dtype, p->m, p->n, p->k);
}

static int onednn_prepare(void **state, const kt_call *call)
{
    const kt_problem *p = call->problem;
    kt_cpu_dnnl *g = calloc(1, sizeof(*g));
    if (!g)
        return kt_error_code(KT_ENOMEM, "out of memory");
    *state = g;
    return kt_cpu_dnnl_init(g, call->backend, p->dtype, p->m, p->n, p->k);
}

static int onednn_run(void *state, const kt_call *call)
{
    return kt_cpu_dnnl_gemm(state, call->outputs[0], call->inputs[0], call->inputs[1],
                            call->threads);
}

static void onednn_release(void *state, kt_backend *backend)
{
    kt_cpu_dnnl_release(state, backend);
    free(state);
}

static int onednn_metrics(void *state, kt_metric *out, int max)
{
    const kt_cpu_dnnl *g = state;
    if (max < 1)
        return 0;
    out[0].name = "scratchpad_bytes";
    out[0].value = (double)g->pad_bytes;
    out[0].unit = "B";
    return 1;
}

const kt_variant kt_variant_cpu_gemm_onednn = {
    /* .op = */ "gemm",
    /* .name = */ "onednn",
    /* .backend = */ "cpu",
    /* .doc = */ "oneDNN matmul on the storage type (bf16/fp16 natively, fp32 accumulation)",
    /* .params = */ NULL,
    /* .n_params = */ 0,
    /* .prepare = */ onednn_prepare,
    /* .run = */ onednn_run,
    /* .release = */ onednn_release,
    /* .metrics = */ onednn_metrics,
};
