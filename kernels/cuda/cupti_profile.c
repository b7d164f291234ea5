/* cupti_profile.c - CUPTI's range profiler around one call: the profiler host object builds the
 * configuration for the metrics it knows, the range profiler collects them per kernel launch
 * with kernel replay, and the host object evaluates each range. Never run on hardware by the
 * people who wrote it: see docs/usage.md. */
#include "cuda/cupti_profile.h"

#include "../kernel.h"

#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_result.h>
#include <cupti_target.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef CUresult (*ctx_get_current_fn)(CUcontext *);

static int cupti_status(CUptiResult r, const char *what)
{
    if (r == CUPTI_SUCCESS)
        return KT_OK;
    const char *text = NULL;
    cuptiGetResultString(r, &text);
    return kt_error_set("%s: %s", what, text ? text : "unknown CUPTI error");
}

#define CUPTI_CHECK(expr, what)                                                                    \
    do {                                                                                           \
        if ((rc = cupti_status((expr), (what))) < 0)                                               \
            goto done;                                                                             \
    } while (0)

/* The current CUDA context, through the runtime's driver entry point (ktrial does not link
 * libcuda, so that a build without the driver still starts). */
static int current_context(CUcontext *ctx)
{
    cudaError_t err = cudaFree(0); /* makes the device's primary context current */
    if (err != cudaSuccess)
        return kt_error_set("cudaFree: %s", cudaGetErrorString(err));
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult q;
    err = cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000, cudaEnableDefault, &q);
    if (err != cudaSuccess || q != cudaDriverEntryPointSuccess || !fn)
        return kt_error_set("cuCtxGetCurrent: not found in the driver");
    if (((ctx_get_current_fn)fn)(ctx) != CUDA_SUCCESS || !*ctx)
        return kt_error_set("cuCtxGetCurrent: no current context");
    return KT_OK;
}

/* The metrics the host object knows, in 'use' (refused ones are marked in 'out'). */
static int known_metrics(const char **use, kt_cupti_result *out, CUpti_Profiler_Host_Object *host,
                         const kt_cupti_request *req)
{
    int n = 0;
    for (int i = 0; i < req->n_metrics; i++) {
        CUpti_Profiler_Host_GetMetricProperties_Params p = {
            CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE};
        p.pHostObject = host;
        p.pMetricName = req->metrics[i];
        CUptiResult r = cuptiProfilerHostGetMetricProperties(&p);
        out->refused[i] = r != CUPTI_SUCCESS;
        if (r == CUPTI_SUCCESS) {
            use[n++] = req->metrics[i];
        } else {
            const char *text = NULL;
            cuptiGetResultString(r, &text);
            snprintf(out->refused_why, sizeof(out->refused_why), "CUPTI: %s",
                     text ? text : "unknown metric");
        }
    }
    return n;
}

/* Evaluates every kept range of the decoded counter data into 'out'. */
static int evaluate(kt_cupti_result *out, const kt_cupti_request *req,
                    CUpti_Profiler_Host_Object *host, const uint8_t *image, size_t size,
                    const char **use, int n_use)
{
    int rc = KT_OK;
    double *v = calloc((size_t)(n_use ? n_use : 1), sizeof(double));
    if (!v)
        return kt_error_set("out of memory");
    CUpti_RangeProfiler_GetCounterDataInfo_Params info = {
        CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
    info.pCounterDataImage = image;
    info.counterDataImageSize = size;
    CUPTI_CHECK(cuptiRangeProfilerGetCounterDataInfo(&info),
                "cuptiRangeProfilerGetCounterDataInfo");
    out->n_ranges = (int)info.numTotalRanges;
    for (int r = 0; r < out->n_ranges && r < req->max_ranges; r++) {
        CUpti_RangeProfiler_CounterData_GetRangeInfo_Params ri = {
            CUpti_RangeProfiler_CounterData_GetRangeInfo_Params_STRUCT_SIZE};
        ri.pCounterDataImage = image;
        ri.counterDataImageSize = size;
        ri.rangeIndex = (size_t)r;
        ri.rangeDelimiter = "/";
        CUPTI_CHECK(cuptiRangeProfilerCounterDataGetRangeInfo(&ri),
                    "cuptiRangeProfilerCounterDataGetRangeInfo");
        snprintf(out->names[r], sizeof(out->names[r]), "%s", ri.rangeName ? ri.rangeName : "");
        CUpti_Profiler_Host_EvaluateToGpuValues_Params ev = {
            CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
        ev.pHostObject = host;
        ev.pCounterDataImage = image;
        ev.counterDataImageSize = size;
        ev.rangeIndex = (size_t)r;
        ev.ppMetricNames = use;
        ev.numMetrics = (size_t)n_use;
        ev.pMetricValues = v;
        CUPTI_CHECK(cuptiProfilerHostEvaluateToGpuValues(&ev),
                    "cuptiProfilerHostEvaluateToGpuValues");
        double *row = out->values + (size_t)r * (size_t)req->n_metrics;
        for (int i = 0, j = 0; i < req->n_metrics; i++)
            row[i] = out->refused[i] ? NAN : v[j++];
    }
done:
    free(v);
    return rc;
}

/* Configures the range profiler 'obj' for 'use', runs the call once and decodes the ranges. */
static int collect(kt_cupti_result *out, const kt_cupti_request *req,
                   CUpti_RangeProfiler_Object *obj, CUpti_Profiler_Host_Object *host,
                   const char **use, int n_use)
{
    int rc = KT_OK;
    uint8_t *config = NULL, *image = NULL;
    CUpti_Profiler_Host_ConfigAddMetrics_Params add = {
        CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
    add.pHostObject = host;
    add.ppMetricNames = use;
    add.numMetrics = (size_t)n_use;
    CUPTI_CHECK(cuptiProfilerHostConfigAddMetrics(&add), "cuptiProfilerHostConfigAddMetrics");
    CUpti_Profiler_Host_GetConfigImageSize_Params cs = {
        CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
    cs.pHostObject = host;
    CUPTI_CHECK(cuptiProfilerHostGetConfigImageSize(&cs), "cuptiProfilerHostGetConfigImageSize");
    if (!(config = malloc(cs.configImageSize))) {
        rc = kt_error_set("out of memory");
        goto done;
    }
    CUpti_Profiler_Host_GetConfigImage_Params ci = {
        CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
    ci.pHostObject = host;
    ci.configImageSize = cs.configImageSize;
    ci.pConfigImage = config;
    CUPTI_CHECK(cuptiProfilerHostGetConfigImage(&ci), "cuptiProfilerHostGetConfigImage");

    CUpti_RangeProfiler_GetCounterDataSize_Params ds = {
        CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
    ds.pRangeProfilerObject = obj;
    ds.pMetricNames = use;
    ds.numMetrics = (size_t)n_use;
    ds.maxNumOfRanges = (size_t)req->max_ranges;
    ds.maxNumRangeTreeNodes = (uint32_t)req->max_ranges;
    CUPTI_CHECK(cuptiRangeProfilerGetCounterDataSize(&ds), "cuptiRangeProfilerGetCounterDataSize");
    if (!(image = malloc(ds.counterDataSize))) {
        rc = kt_error_set("out of memory");
        goto done;
    }
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params di = {
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
    di.pRangeProfilerObject = obj;
    di.counterDataSize = ds.counterDataSize;
    di.pCounterData = image;
    CUPTI_CHECK(cuptiRangeProfilerCounterDataImageInitialize(&di),
                "cuptiRangeProfilerCounterDataImageInitialize");

    CUpti_RangeProfiler_SetConfig_Params sc = {CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
    sc.pRangeProfilerObject = obj;
    sc.configSize = cs.configImageSize;
    sc.pConfig = config;
    sc.counterDataImageSize = ds.counterDataSize;
    sc.pCounterDataImage = image;
    sc.range = CUPTI_AutoRange;
    sc.replayMode = CUPTI_KernelReplay;
    sc.maxRangesPerPass = (size_t)req->max_ranges;
    sc.numNestingLevels = 1;
    sc.minNestingLevel = 1;
    sc.passIndex = 0;
    sc.targetNestingLevel = 1;
    CUPTI_CHECK(cuptiRangeProfilerSetConfig(&sc), "cuptiRangeProfilerSetConfig");

    CUpti_RangeProfiler_Start_Params st = {CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
    st.pRangeProfilerObject = obj;
    CUPTI_CHECK(cuptiRangeProfilerStart(&st), "cuptiRangeProfilerStart");
    int body_rc = req->body(req->arg);
    cudaError_t sync = cudaDeviceSynchronize();
    CUpti_RangeProfiler_Stop_Params sp = {CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
    sp.pRangeProfilerObject = obj;
    CUPTI_CHECK(cuptiRangeProfilerStop(&sp), "cuptiRangeProfilerStop");
    if ((rc = body_rc) < 0)
        goto done;
    if (sync != cudaSuccess) {
        rc = kt_error_set("cudaDeviceSynchronize: %s", cudaGetErrorString(sync));
        goto done;
    }
    CUpti_RangeProfiler_DecodeData_Params dd = {CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
    dd.pRangeProfilerObject = obj;
    CUPTI_CHECK(cuptiRangeProfilerDecodeData(&dd), "cuptiRangeProfilerDecodeData");
    rc = evaluate(out, req, host, image, ds.counterDataSize, use, n_use);
done:
    free(config);
    free(image);
    return rc;
}

int kt_cupti_profile(kt_cupti_result *out, const kt_cupti_request *req)
{
    int rc, device = 0, inited = 0;
    CUcontext ctx;
    uint8_t *avail = NULL;
    const char **use = NULL;
    CUpti_RangeProfiler_Object *obj = NULL;
    CUpti_Profiler_Host_Object *host = NULL;
    out->n_ranges = 0;
    out->refused_why[0] = '\0';
    if ((rc = current_context(&ctx)) < 0)
        return rc;
    if (cudaGetDevice(&device) != cudaSuccess)
        return kt_error_set("cudaGetDevice failed");
    CUpti_Profiler_Initialize_Params ip = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
    CUPTI_CHECK(cuptiProfilerInitialize(&ip), "cuptiProfilerInitialize");
    inited = 1;
    CUpti_Device_GetChipName_Params cn = {CUpti_Device_GetChipName_Params_STRUCT_SIZE};
    cn.deviceIndex = (size_t)device;
    CUPTI_CHECK(cuptiDeviceGetChipName(&cn), "cuptiDeviceGetChipName");
    CUpti_Profiler_GetCounterAvailability_Params ca = {
        CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
    ca.ctx = ctx;
    CUPTI_CHECK(cuptiProfilerGetCounterAvailability(&ca), "cuptiProfilerGetCounterAvailability");
    if (!(avail = malloc(ca.counterAvailabilityImageSize)) ||
        !(use = calloc((size_t)req->n_metrics, sizeof(*use)))) {
        rc = kt_error_set("out of memory");
        goto done;
    }
    ca.pCounterAvailabilityImage = avail;
    CUPTI_CHECK(cuptiProfilerGetCounterAvailability(&ca), "cuptiProfilerGetCounterAvailability");
    CUpti_RangeProfiler_Enable_Params en = {CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
    en.ctx = ctx;
    CUPTI_CHECK(cuptiRangeProfilerEnable(&en), "cuptiRangeProfilerEnable");
    obj = en.pRangeProfilerObject;
    CUpti_Profiler_Host_Initialize_Params hi = {CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
    hi.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    hi.pChipName = cn.pChipName;
    hi.pCounterAvailabilityImage = avail;
    CUPTI_CHECK(cuptiProfilerHostInitialize(&hi), "cuptiProfilerHostInitialize");
    host = hi.pHostObject;
    int n_use = known_metrics(use, out, host, req);
    if (n_use == 0) {
        rc = kt_error_set("CUPTI knows none of the %d metrics on '%s' (%s)", req->n_metrics,
                          cn.pChipName, out->refused_why);
        goto done;
    }
    rc = collect(out, req, obj, host, use, n_use);
done:
    if (host) {
        CUpti_Profiler_Host_Deinitialize_Params hd = {
            CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
        hd.pHostObject = host;
        cuptiProfilerHostDeinitialize(&hd);
    }
    if (obj) {
        CUpti_RangeProfiler_Disable_Params dp = {CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
        dp.pRangeProfilerObject = obj;
        cuptiRangeProfilerDisable(&dp);
    }
    if (inited) {
        CUpti_Profiler_DeInitialize_Params dp = {CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE};
        cuptiProfilerDeInitialize(&dp);
    }
    free(avail);
    free(use);
    return rc;
}

int kt_cupti_device_pci_bus_id(char *buf, size_t size)
{
    int device = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err == cudaSuccess)
        err = cudaDeviceGetPCIBusId(buf, (int)size, device);
    if (err != cudaSuccess)
        return kt_error_set("cudaDeviceGetPCIBusId: %s", cudaGetErrorString(err));
    return KT_OK;
}
