/* gemm_blocked.c - a CPU GEMM variant as a team would write one, outside ktrial.
 *
 * Y[M,N] = X[M,K] W[N,K]^T for ktrial's built-in op 'gemm', in any storage dtype: prepare
 * converts W to fp32 once (untimed), run converts a block of X rows to fp32, multiplies with
 * blocked loops and writes Y back in the storage type. One param, 'block', sets the tile
 * edge. Plain C: no intrinsics, no BLAS, no threads.
 *
 * Build it with nothing but the installed header:
 *     cc -O2 -shared -fPIC $(pkg-config --cflags ktrial-plugin) gemm_blocked.c -o libgemm.so
 */
#include <ktrial/plugin.h>

#include <stdlib.h>

static const kt_param_def params[] = {
    {"block", KT_PARAM_INT, 64, 8, 512, NULL, "tile edge in rows, columns and depth"},
};

typedef struct state {
    float *w;  /* W as fp32, N x K */
    float *xb; /* one block of X rows as fp32, block x K */
    float *yb; /* one block of Y as fp32, block x N */
} state;

static void release(void *s_, kt_backend *backend)
{
    (void)backend;
    state *s = s_;
    if (!s)
        return;
    free(s->w);
    free(s->xb);
    free(s->yb);
    free(s);
}

static int prepare(void **out, const kt_call *call)
{
    const kt_problem *p = call->problem;
    size_t block = (size_t)call->params[0].num;
    state *s = calloc(1, sizeof(*s));
    if (!s)
        return kt_error_code(KT_ENOMEM, "gemm_blocked: out of memory");
    *out = s;
    s->w = malloc((size_t)(p->n * p->k) * sizeof(float));
    s->xb = malloc(block * (size_t)p->k * sizeof(float));
    s->yb = malloc(block * (size_t)p->n * sizeof(float));
    if (!s->w || !s->xb || !s->yb)
        return kt_error_code(KT_ENOMEM, "gemm_blocked: out of memory");
    for (int64_t i = 0; i < p->n * p->k; i++)
        s->w[i] = kt_dtype_load(call->inputs[1], p->dtype, (size_t)i);
    return KT_OK;
}

/* yb[rows, N] = xb[rows, K] W^T, tiled over columns and depth. */
static void block_product(const state *s, int64_t rows, int64_t n, int64_t k, int64_t bs)
{
    for (int64_t i = 0; i < rows * n; i++)
        s->yb[i] = 0.0f;
    for (int64_t j0 = 0; j0 < n; j0 += bs) {
        int64_t j1 = j0 + bs < n ? j0 + bs : n;
        for (int64_t p0 = 0; p0 < k; p0 += bs) {
            int64_t p1 = p0 + bs < k ? p0 + bs : k;
            for (int64_t i = 0; i < rows; i++) {
                const float *x = s->xb + i * k;
                float *y = s->yb + i * n;
                for (int64_t j = j0; j < j1; j++) {
                    const float *w = s->w + j * k;
                    float acc = 0.0f;
                    for (int64_t q = p0; q < p1; q++)
                        acc += x[q] * w[q];
                    y[j] += acc;
                }
            }
        }
    }
}

static int run(void *s_, const kt_call *call)
{
    const state *s = s_;
    const kt_problem *p = call->problem;
    int64_t bs = (int64_t)call->params[0].num;
    size_t size = kt_dtype_size(p->dtype);
    for (int64_t r0 = 0; r0 < p->m; r0 += bs) {
        int64_t rows = p->m - r0 < bs ? p->m - r0 : bs;
        for (int64_t i = 0; i < rows * p->k; i++)
            s->xb[i] = kt_dtype_load(call->inputs[0], p->dtype, (size_t)(r0 * p->k + i));
        block_product(s, rows, p->n, p->k, bs);
        char *y = (char *)call->outputs[0] + (size_t)(r0 * p->n) * size;
        for (int64_t i = 0; i < rows * p->n; i++) {
            double v = s->yb[i];
            kt_dtype_from_double(y + (size_t)i * size, &v, p->dtype, 1);
        }
    }
    return KT_OK;
}

static const kt_variant blocked = {
    .op = "gemm",
    .name = "blocked",
    .backend = "cpu",
    .doc = "plain C blocked GEMM from a plugin (fp32 accumulation, one thread)",
    .params = params,
    .n_params = 1,
    .prepare = prepare,
    .run = run,
    .release = release,
};

int kt_plugin_init(kt_plugin_registrar *r)
{
    return r->add_variant(r, &blocked);
}
