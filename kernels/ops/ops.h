/* ops.h - private to kernels/: the op table entries and helpers the op files share. */
#ifndef KT_OPS_H
#define KT_OPS_H

#include "../kernel.h"

extern const kt_op kt_op_synthetic;
extern const kt_op kt_op_gemm;
extern const kt_op kt_op_attention_decode;
extern const kt_op kt_op_swiglu_mlp;

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

#endif
