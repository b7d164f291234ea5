/* matmul.c - cuBLASLt in ktrial's row-major layout: Y[m,n] = X[m,k] W[n,k]^T.
 *
 * cuBLASLt is column-major, so the call computes Y^T = W X^T: A is W seen as a k x n
 * column-major matrix (transposed), B is X seen as k x m, C is Y seen as n x m. */
#include "cublaslt_load.h"
#include "cuda_private.h"

#include <string.h>

static cudaDataType_t data_type(kt_dtype dtype)
{
    switch (dtype) {
    case KT_DTYPE_FP16:
        return CUDA_R_16F;
    case KT_DTYPE_BF16:
        return CUDA_R_16BF;
    default:
        return CUDA_R_32F;
    }
}

static int create_descriptors(kt_cuda_matmul *mm, kt_dtype dtype, int64_t m, int64_t n, int64_t k)
{
    cublasComputeType_t compute = mm->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    cudaDataType_t t = data_type(dtype);
    cublasOperation_t trans_w = CUBLAS_OP_T, trans_x = CUBLAS_OP_N;
    KT_BLASLT_CHECK(kt_lt.MatmulDescCreate(&mm->desc, compute, CUDA_R_32F));
    KT_BLASLT_CHECK(kt_lt.MatmulDescSetAttribute(mm->desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans_w,
                                                 sizeof(trans_w)));
    KT_BLASLT_CHECK(kt_lt.MatmulDescSetAttribute(mm->desc, CUBLASLT_MATMUL_DESC_TRANSB, &trans_x,
                                                 sizeof(trans_x)));
    KT_BLASLT_CHECK(kt_lt.MatrixLayoutCreate(&mm->layout_w, t, (uint64_t)k, (uint64_t)n, k));
    KT_BLASLT_CHECK(kt_lt.MatrixLayoutCreate(&mm->layout_x, t, (uint64_t)k, (uint64_t)m, k));
    KT_BLASLT_CHECK(kt_lt.MatrixLayoutCreate(&mm->layout_y, t, (uint64_t)n, (uint64_t)m, n));
    return KT_OK;
}

static int choose_algo(kt_cuda_matmul *mm, cublasLtHandle_t handle)
{
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t result;
    int found = 0, rc;
    uint64_t max_ws = mm->workspace_bytes;
    memset(&result, 0, sizeof(result));
    if ((rc = KT_BLASLT_CALL(kt_lt.MatmulPreferenceCreate(&pref))) < 0)
        goto done;
    rc = KT_BLASLT_CALL(kt_lt.MatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_ws, sizeof(max_ws)));
    if (rc < 0)
        goto done;
    rc = KT_BLASLT_CALL(kt_lt.MatmulAlgoGetHeuristic(handle, mm->desc, mm->layout_w, mm->layout_x,
                                                     mm->layout_y, mm->layout_y, pref, 1, &result,
                                                     &found));
    if (rc < 0)
        goto done;
    if (found < 1) {
        rc = kt_error_code(KT_EUNSUPPORTED, "cuBLASLt has no algorithm for this matmul");
        goto done;
    }
    mm->algo = result.algo;
    mm->algo_workspace_bytes = result.workspaceSize;
    size_t written = 0;
    rc = KT_BLASLT_CALL(kt_lt.MatmulAlgoConfigGetAttribute(
        &mm->algo, CUBLASLT_ALGO_CONFIG_ID, &mm->algo_id, sizeof(mm->algo_id), &written));
done:
    if (pref)
        kt_lt.MatmulPreferenceDestroy(pref);
    return rc;
}

int kt_cuda_matmul_prepare(kt_cuda_matmul *mm, kt_backend *b, kt_dtype dtype, int64_t m, int64_t n,
                           int64_t k, int tf32, size_t workspace_bytes)
{
    cublasLtHandle_t handle = kt_cuda_blaslt(b);
    if (!handle)
        return kt_error_code(KT_EINVAL, "backend '%s' is not cuda", b->iface->name);
    if (m <= 0 || n <= 0 || k <= 0)
        return kt_error_code(KT_EINVAL, "bad matmul shape %lldx%lldx%lld", (long long)m,
                             (long long)n, (long long)k);
    mm->tf32 = tf32 && dtype == KT_DTYPE_FP32;
    int rc = kt_cublaslt_load(); /* loaded when the backend opened; KT_OK at once */
    if (rc < 0)
        return rc;
    rc = create_descriptors(mm, dtype, m, n, k);
    if (rc < 0)
        return rc;
    if (workspace_bytes > 0) {
        if ((rc = kt_backend_alloc(b, &mm->workspace, workspace_bytes)) < 0)
            return rc;
        mm->workspace_bytes = workspace_bytes;
    }
    if ((rc = choose_algo(mm, handle)) < 0)
        return rc;
    mm->ready = 1;
    return KT_OK;
}

int kt_cuda_matmul_run(const kt_cuda_matmul *mm, kt_backend *b, const void *x, const void *w,
                       void *y)
{
    const float alpha = 1.0f, beta = 0.0f;
    if (!mm->ready)
        return kt_error_code(KT_EINVAL, "matmul not prepared");
    KT_BLASLT_CHECK(kt_lt.Matmul(kt_cuda_blaslt(b), mm->desc, &alpha, w, mm->layout_w, x,
                                 mm->layout_x, &beta, y, mm->layout_y, y, mm->layout_y, &mm->algo,
                                 mm->workspace, mm->workspace_bytes, kt_cuda_stream(b)));
    return KT_OK;
}

void kt_cuda_matmul_release(kt_cuda_matmul *mm, kt_backend *b)
{
    if (mm->layout_y)
        kt_lt.MatrixLayoutDestroy(mm->layout_y);
    if (mm->layout_x)
        kt_lt.MatrixLayoutDestroy(mm->layout_x);
    if (mm->layout_w)
        kt_lt.MatrixLayoutDestroy(mm->layout_w);
    if (mm->desc)
        kt_lt.MatmulDescDestroy(mm->desc);
    kt_backend_free(b, mm->workspace, mm->workspace_bytes);
    memset(mm, 0, sizeof(*mm));
}
