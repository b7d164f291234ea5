/* cuda_types.cuh - private to the .cu files of kernels/cuda: loads and stores of the storage types
 * as fp32, and dispatch from kt_dtype to a template over the element type. */
#ifndef KT_CUDA_TYPES_CUH
#define KT_CUDA_TYPES_CUH

#include "cuda_private.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

static __device__ __forceinline__ float kt_to_f32(float v)
{
    return v;
}
static __device__ __forceinline__ float kt_to_f32(__half v)
{
    return __half2float(v);
}
static __device__ __forceinline__ float kt_to_f32(__nv_bfloat16 v)
{
    return __bfloat162float(v);
}

template <typename T> static __device__ __forceinline__ T kt_from_f32(float v);
template <> __device__ __forceinline__ float kt_from_f32<float>(float v)
{
    return v;
}
template <> __device__ __forceinline__ __half kt_from_f32<__half>(float v)
{
    return __float2half_rn(v);
}
template <> __device__ __forceinline__ __nv_bfloat16 kt_from_f32<__nv_bfloat16>(float v)
{
    return __float2bfloat16_rn(v);
}

/* Calls 'fn(T())' with T the element type of 'dtype'; KT_EUNSUPPORTED
 * for a type the kernels do not store (fp8). */
template <typename F> static int kt_dispatch_dtype(kt_dtype dtype, F fn)
{
    switch (dtype) {
    case KT_DTYPE_FP32:
        return fn(float());
    case KT_DTYPE_FP16:
        return fn(__half());
    case KT_DTYPE_BF16:
        return fn(__nv_bfloat16());
    default:
        return kt_error_code(KT_EUNSUPPORTED, "storage type '%s' is not supported on cuda",
                             kt_dtype_name(dtype));
    }
}

#endif
