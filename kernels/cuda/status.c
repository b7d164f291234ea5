/* status.c - CUDA runtime errors as ktrial errors (file:line, name, text); a leaf that the
 * kernels' launchers and the backend share. */
#include "cuda_private.h"

int kt_cuda_status(cudaError_t err, const char *file, int line)
{
    if (err == cudaSuccess)
        return KT_OK;
    return kt_error_set("%s:%d: %s: %s", file, line, cudaGetErrorName(err),
                        cudaGetErrorString(err));
}
