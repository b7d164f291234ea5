/* ops.h - private to kernels/: the op table entries and helpers the op files share. */
#ifndef KT_OPS_H
#define KT_OPS_H

#include "../kernel.h"

extern const kt_op kt_op_synthetic;
extern const kt_op kt_op_gemm;
extern const kt_op kt_op_attention_decode;
extern const kt_op kt_op_swiglu_mlp;
/* pymodule.c: KernelBench-layout problems, and the variant that names their arms */
extern const kt_op kt_op_pymodule;
extern const kt_variant kt_variant_cpu_pymodule;

/* Zeroes 'p' and sets its op and dtype. */
void kt_op_problem_init(kt_problem *p, const kt_op *op, kt_dtype dtype);
/* Appends a tensor of 'ndim' dims (unused dims ignored) to p->tensors. */
void kt_op_add_tensor(kt_problem *p, const char *name, kt_dtype dtype, int ndim, int64_t d0,
                      int64_t d1, int64_t d2, int64_t d3);
/* Fills 'n' storage-typed values from 'dist' (normal: N(0, scale^2); uniform: U(-scale,
 * scale); llm falls back to normal here) with 'seed'. Values that round to zero are redrawn,
 * so no input is ever exactly zero. */
void kt_op_fill_random(void *dst, kt_dtype dtype, size_t n, kt_distribution dist, uint64_t seed,
                       double scale);

/* gemm.c, shared with swiglu_mlp.c: the llm activation knobs (outlier_fraction, outlier_scale). */
#define KT_OP_N_ACTIVATION_PARAMS 2
extern const kt_param_def kt_op_activation_params[KT_OP_N_ACTIVATION_PARAMS];
/* Fills a [rows, cols] activation matrix: N(0,1) (uniform: U(-1,1)); llm adds outlier
 * channels per cfg->params (NULL: defaults). Never zero. */
int kt_op_fill_activations(void *dst, kt_dtype dtype, int64_t rows, int64_t cols,
                           const kt_input_config *cfg, uint64_t seed);
/* Fills a [rows, fan_in] weight matrix with std 1/sqrt(fan_in) (uniform: U(-a, a) of that
 * std; llm: normal). Never zero. */
void kt_op_fill_weights(void *dst, kt_dtype dtype, int64_t rows, int64_t fan_in,
                        kt_distribution dist, uint64_t seed);
/* y[r * ldy + j] = sum_k xd[r * k + kk] * w[j * k + kk] in float64 for r < rows, j < n, with
 * 'w' in storage type 'dtype'; parallel over j, the result independent of the thread count. */
int kt_op_ref_rows(double *y, int64_t ldy, const double *xd, int64_t rows, const void *w,
                   kt_dtype dtype, int64_t n, int64_t k);
/* The row count M of a gemm-shaped op at 'point': batch (decode) or batch * context. */
int kt_op_gemm_dims(int64_t *m, const kt_point *point, const char *op);

#endif
