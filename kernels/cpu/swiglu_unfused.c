/* swiglu_unfused.c - the swiglu_mlp 'unfused' variant, the way a framework runs it op by op:
 * the gate_up GEMM writes h[M, 2I] in the storage type, an elementwise pass writes
 * a = silu(h[:, :I]) * h[:, I:] (fp32 math) in the storage type, the down GEMM writes y.
 * The GEMMs are OpenBLAS (engine blas), oneDNN's matmul on the storage type (engine onednn,
 * where oneDNN was found at build time: the realistic bf16 baseline) or ktrial's tiled engine
 * (engine tiled: against 'fused' it isolates what the fusion itself saves). */
#include "cpu.h"
#include "cpu_gemm.h"
#include "pool.h"

#include <stdlib.h>

enum { P_ENGINE, P_COUNT };
enum { ENGINE_BLAS, ENGINE_TILED, ENGINE_ONEDNN };

static const kt_param_def unfused_params[P_COUNT] = {
#ifdef KT_HAVE_ONEDNN
    {"engine", KT_PARAM_ENUM, ENGINE_BLAS, 0, 0, "blas|tiled|onednn",
     "GEMM implementation: OpenBLAS sgemm, ktrial's tiled engine or oneDNN matmul"},
#else
    {"engine", KT_PARAM_ENUM, ENGINE_BLAS, 0, 0, "blas|tiled",
     "GEMM implementation: OpenBLAS sgemm or ktrial's tiled engine (no oneDNN in this build)"},
#endif
};

typedef struct unfused_state {
    int engine;
    kt_cpu_blas gate_up, down;
    kt_cpu_tiled tiled;
#ifdef KT_HAVE_ONEDNN
    kt_cpu_dnnl dnnl_gate_up, dnnl_down;
#endif
    void *h, *a; /* [M, 2I] and [M, I] in the storage type */
    size_t h_bytes, a_bytes;
} unfused_state;

int kt_swiglu_unfused_check_engine(int engine, const kt_problem *p)
{
#ifdef KT_HAVE_ONEDNN
    int err;
    if (engine == ENGINE_ONEDNN && ((err = kt_cpu_dnnl_check(p->dtype, p->m, 2 * p->n, p->k)) < 0 ||
                                    (err = kt_cpu_dnnl_check(p->dtype, p->m, p->k, p->n)) < 0))
        return err;
#else
    (void)engine;
    (void)p;
#endif
    return KT_OK;
}

int kt_swiglu_unfused_check_problem(const kt_param_value *params, const kt_problem *p)
{
    return kt_swiglu_unfused_check_engine((int)params[P_ENGINE].num, p);
}

static int unfused_prepare(void **state, const kt_call *call)
{
    const kt_problem *p = call->problem;
    unfused_state *st = calloc(1, sizeof(*st));
    if (!st)
        return kt_error_code(KT_ENOMEM, "out of memory");
    *state = st;
    st->engine = (int)call->params[P_ENGINE].num;
    size_t size = kt_dtype_size(p->dtype);
    int err = kt_backend_alloc(call->backend, &st->h, (size_t)(p->m * 2 * p->n) * size);
    if (err < 0)
        return err;
    st->h_bytes = (size_t)(p->m * 2 * p->n) * size;
    if ((err = kt_backend_alloc(call->backend, &st->a, (size_t)(p->m * p->n) * size)) < 0)
        return err;
    st->a_bytes = (size_t)(p->m * p->n) * size;
    if (st->engine == ENGINE_TILED)
        return kt_cpu_tiled_init(&st->tiled, call->backend, call->threads, NULL);
#ifdef KT_HAVE_ONEDNN
    if (st->engine == ENGINE_ONEDNN) {
        err = kt_cpu_dnnl_init(&st->dnnl_gate_up, call->backend, p->dtype, p->m, 2 * p->n, p->k);
        return err < 0
                   ? err
                   : kt_cpu_dnnl_init(&st->dnnl_down, call->backend, p->dtype, p->m, p->k, p->n);
    }
#endif
    if ((err = kt_cpu_blas_init(&st->gate_up, call->backend, p->dtype, p->m, 2 * p->n, p->k)) < 0)
        return err;
    return kt_cpu_blas_init(&st->down, call->backend, p->dtype, p->m, p->k, p->n);
}

typedef struct silu_job {
    void *a;
    const void *h;
    kt_dtype dtype;
    int64_t i;
} silu_job;

/* Pool item r: a[r, j] = silu(h[r, j]) * h[r, i + j] for j < i, in fp32, stored in 'dtype'. */
static void silu_mul_row(void *arg, int64_t r, int slot)
{
    const silu_job *s = arg;
    int64_t i = s->i;
    (void)slot;
    for (int64_t j = 0; j < i; j++) {
        float g = kt_cpu_load1(s->h, s->dtype, (size_t)(r * 2 * i + j));
        float u = kt_cpu_load1(s->h, s->dtype, (size_t)(r * 2 * i + i + j));
        kt_cpu_store1(s->a, s->dtype, (size_t)(r * i + j), kt_cpu_silu_mul(g, u));
    }
}

static void silu_mul_pass(void *a, const void *h, kt_dtype dtype, int64_t m, int64_t i, int threads)
{
    silu_job s = {a, h, dtype, i};
    kt_pool_for(threads, m, silu_mul_row, &s);
}

/* One GEMM y[m, n] = x[m, k] w[n, k]^T on the chosen engine; 'blas' and 'dnnl' were made
 * for this shape in prepare. */
static int engine_gemm(unfused_state *st, const kt_cpu_blas *blas, const void *dnnl, void *y,
                       const void *x, const void *w, const kt_problem *p, int64_t m, int64_t n,
                       int64_t k, int threads)
{
#ifdef KT_HAVE_ONEDNN
    if (st->engine == ENGINE_ONEDNN)
        return kt_cpu_dnnl_gemm(dnnl, y, x, w, threads);
#else
    (void)dnnl;
#endif
    if (st->engine == ENGINE_TILED)
        kt_cpu_tiled_gemm(&st->tiled, y, x, w, p->dtype, m, n, k, 0, threads);
    else
        kt_cpu_blas_gemm(blas, y, x, w, threads);
    return KT_OK;
}

static int unfused_run(void *state, const kt_call *call)
{
    unfused_state *st = state;
    const kt_problem *p = call->problem;
    const void *x = call->inputs[0], *wgu = call->inputs[1], *wd = call->inputs[2];
    const void *dnnl_gate_up = NULL, *dnnl_down = NULL;
#ifdef KT_HAVE_ONEDNN
    dnnl_gate_up = &st->dnnl_gate_up;
    dnnl_down = &st->dnnl_down;
#endif
    int err = engine_gemm(st, &st->gate_up, dnnl_gate_up, st->h, x, wgu, p, p->m, 2 * p->n, p->k,
                          call->threads);
    if (err < 0)
        return err;
    silu_mul_pass(st->a, st->h, p->dtype, p->m, p->n, call->threads);
    return engine_gemm(st, &st->down, dnnl_down, call->outputs[0], st->a, wd, p, p->m, p->k, p->n,
                       call->threads);
}

static void unfused_release(void *state, kt_backend *backend)
{
    unfused_state *st = state;
    if (!st)
        return;
    kt_cpu_blas_release(&st->gate_up, backend);
    kt_cpu_blas_release(&st->down, backend);
    kt_cpu_tiled_release(&st->tiled, backend);
#ifdef KT_HAVE_ONEDNN
    kt_cpu_dnnl_release(&st->dnnl_gate_up, backend);
    kt_cpu_dnnl_release(&st->dnnl_down, backend);
#endif
    kt_backend_free(backend, st->h, st->h_bytes);
    kt_backend_free(backend, st->a, st->a_bytes);
    free(st);
}

const kt_variant kt_variant_cpu_swiglu_unfused = {
    /* .op = */ "swiglu_mlp",
    /* .name = */ "unfused",
    /* .backend = */ "cpu",
    /* .doc = */ "gate_up GEMM to h[M,2I], silu*mul pass to a[M,I], down GEMM (engine param)",
    /* .params = */ unfused_params,
    /* .n_params = */ P_COUNT,
    /* .prepare = */ unfused_prepare,
    /* .run = */ unfused_run,
    /* .release = */ unfused_release,
    /* .metrics = */ NULL,
};
