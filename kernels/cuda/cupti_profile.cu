/* cupti_profile.cu - CUPTI's range profiler around one call: the profiler host object builds the
 * configuration for the metrics it knows, the range profiler collects them per kernel launch
 * with kernel replay, and the host object evaluates each range. A .cu file because CUPTI's host
 * header is C++. Never run on hardware by the people who wrote it: see docs/usage.md. */
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

/* A CUPTI parameter struct: zeroed, with its structSize set (the API's versioning). */
template <typename T> static T cupti_params(size_t struct_size)
{
    T p;
    memset(&p, 0, sizeof(p));
    p.structSize = struct_size;
    return p;
}
#define CUPTI_PARAMS(T) cupti_params<T>(T##_STRUCT_SIZE)

/* What one profiling session holds; released by session_end. */
typedef struct session {
    CUcontext ctx;
    int device;
    int inited;
    const char *chip;
    uint8_t *avail;
    size_t avail_size;
    CUpti_RangeProfiler_Object *obj;
    CUpti_Profiler_Host_Object *host;
    uint8_t *config;
    size_t config_size;
    uint8_t *image;
    size_t image_size;
} session;

static int cupti_status(CUptiResult r, const char *what)
{
    if (r == CUPTI_SUCCESS)
        return KT_OK;
    const char *text = NULL;
    cuptiGetResultString(r, &text);
    return kt_error_set("%s: %s", what, text ? text : "unknown CUPTI error");
}

/* The current CUDA context, through the runtime's driver entry point (ktrial does not link
 * libcuda, so that a build without the driver still starts). */
static int current_context(session *s)
{
    cudaError_t err = cudaFree(0); /* makes the device's primary context current */
    if (err != cudaSuccess)
        return kt_error_set("cudaFree: %s", cudaGetErrorString(err));
    if ((err = cudaGetDevice(&s->device)) != cudaSuccess)
        return kt_error_set("cudaGetDevice: %s", cudaGetErrorString(err));
    void *fn = NULL;
    cudaDriverEntryPointQueryResult q;
    err = cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000, cudaEnableDefault, &q);
    if (err != cudaSuccess || q != cudaDriverEntryPointSuccess || !fn)
        return kt_error_set("cuCtxGetCurrent: not found in the driver");
    if (((ctx_get_current_fn)fn)(&s->ctx) != CUDA_SUCCESS || !s->ctx)
        return kt_error_set("cuCtxGetCurrent: no current context");
    return KT_OK;
}

/* Profiler, chip name, counter availability, range profiler object, host object. */
static int session_begin(session *s)
{
    int rc = current_context(s);
    if (rc < 0)
        return rc;
    CUpti_Profiler_Initialize_Params ip = CUPTI_PARAMS(CUpti_Profiler_Initialize_Params);
    if ((rc = cupti_status(cuptiProfilerInitialize(&ip), "cuptiProfilerInitialize")) < 0)
        return rc;
    s->inited = 1;
    CUpti_Device_GetChipName_Params cn = CUPTI_PARAMS(CUpti_Device_GetChipName_Params);
    cn.deviceIndex = (size_t)s->device;
    if ((rc = cupti_status(cuptiDeviceGetChipName(&cn), "cuptiDeviceGetChipName")) < 0)
        return rc;
    s->chip = cn.pChipName;
    CUpti_Profiler_GetCounterAvailability_Params ca =
        CUPTI_PARAMS(CUpti_Profiler_GetCounterAvailability_Params);
    ca.ctx = s->ctx;
    const char *what = "cuptiProfilerGetCounterAvailability";
    if ((rc = cupti_status(cuptiProfilerGetCounterAvailability(&ca), what)) < 0)
        return rc;
    s->avail_size = ca.counterAvailabilityImageSize;
    if (!(s->avail = (uint8_t *)malloc(s->avail_size)))
        return kt_error_set("out of memory");
    ca.pCounterAvailabilityImage = s->avail;
    if ((rc = cupti_status(cuptiProfilerGetCounterAvailability(&ca), what)) < 0)
        return rc;
    CUpti_RangeProfiler_Enable_Params en = CUPTI_PARAMS(CUpti_RangeProfiler_Enable_Params);
    en.ctx = s->ctx;
    if ((rc = cupti_status(cuptiRangeProfilerEnable(&en), "cuptiRangeProfilerEnable")) < 0)
        return rc;
    s->obj = en.pRangeProfilerObject;
    CUpti_Profiler_Host_Initialize_Params hi = CUPTI_PARAMS(CUpti_Profiler_Host_Initialize_Params);
    hi.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    hi.pChipName = s->chip;
    hi.pCounterAvailabilityImage = s->avail;
    if ((rc = cupti_status(cuptiProfilerHostInitialize(&hi), "cuptiProfilerHostInitialize")) < 0)
        return rc;
    s->host = hi.pHostObject;
    return KT_OK;
}

static void session_end(session *s)
{
    if (s->host) {
        CUpti_Profiler_Host_Deinitialize_Params hd =
            CUPTI_PARAMS(CUpti_Profiler_Host_Deinitialize_Params);
        hd.pHostObject = s->host;
        cuptiProfilerHostDeinitialize(&hd);
    }
    if (s->obj) {
        CUpti_RangeProfiler_Disable_Params dp = CUPTI_PARAMS(CUpti_RangeProfiler_Disable_Params);
        dp.pRangeProfilerObject = s->obj;
        cuptiRangeProfilerDisable(&dp);
    }
    if (s->inited) {
        CUpti_Profiler_DeInitialize_Params dp = CUPTI_PARAMS(CUpti_Profiler_DeInitialize_Params);
        cuptiProfilerDeInitialize(&dp);
    }
    free(s->avail);
    free(s->config);
    free(s->image);
}

/* The metrics the host object knows, in 'use' (refused ones are marked in 'out'). */
static int known_metrics(const char **use, kt_cupti_result *out, const session *s,
                         const kt_cupti_request *req)
{
    int n = 0;
    for (int i = 0; i < req->n_metrics; i++) {
        CUpti_Profiler_Host_GetMetricProperties_Params p =
            CUPTI_PARAMS(CUpti_Profiler_Host_GetMetricProperties_Params);
        p.pHostObject = s->host;
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

/* The configuration image for 'use' (the host object schedules the passes). */
static int config_image(session *s, const char **use, int n_use)
{
    CUpti_Profiler_Host_ConfigAddMetrics_Params add =
        CUPTI_PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params);
    add.pHostObject = s->host;
    add.ppMetricNames = use;
    add.numMetrics = (size_t)n_use;
    int rc =
        cupti_status(cuptiProfilerHostConfigAddMetrics(&add), "cuptiProfilerHostConfigAddMetrics");
    if (rc < 0)
        return rc;
    CUpti_Profiler_Host_GetConfigImageSize_Params cs =
        CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImageSize_Params);
    cs.pHostObject = s->host;
    rc = cupti_status(cuptiProfilerHostGetConfigImageSize(&cs),
                      "cuptiProfilerHostGetConfigImageSize");
    if (rc < 0)
        return rc;
    s->config_size = cs.configImageSize;
    if (!(s->config = (uint8_t *)malloc(s->config_size)))
        return kt_error_set("out of memory");
    CUpti_Profiler_Host_GetConfigImage_Params ci =
        CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImage_Params);
    ci.pHostObject = s->host;
    ci.configImageSize = s->config_size;
    ci.pConfigImage = s->config;
    return cupti_status(cuptiProfilerHostGetConfigImage(&ci), "cuptiProfilerHostGetConfigImage");
}

/* The counter data image, sized for 'max_ranges' ranges of 'use'. */
static int counter_image(session *s, const char **use, int n_use, int max_ranges)
{
    CUpti_RangeProfiler_GetCounterDataSize_Params ds =
        CUPTI_PARAMS(CUpti_RangeProfiler_GetCounterDataSize_Params);
    ds.pRangeProfilerObject = s->obj;
    ds.pMetricNames = use;
    ds.numMetrics = (size_t)n_use;
    ds.maxNumOfRanges = (size_t)max_ranges;
    ds.maxNumRangeTreeNodes = (uint32_t)max_ranges;
    int rc = cupti_status(cuptiRangeProfilerGetCounterDataSize(&ds),
                          "cuptiRangeProfilerGetCounterDataSize");
    if (rc < 0)
        return rc;
    s->image_size = ds.counterDataSize;
    if (!(s->image = (uint8_t *)malloc(s->image_size)))
        return kt_error_set("out of memory");
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params di =
        CUPTI_PARAMS(CUpti_RangeProfiler_CounterDataImage_Initialize_Params);
    di.pRangeProfilerObject = s->obj;
    di.counterDataSize = s->image_size;
    di.pCounterData = s->image;
    return cupti_status(cuptiRangeProfilerCounterDataImageInitialize(&di),
                        "cuptiRangeProfilerCounterDataImageInitialize");
}

/* Auto ranges with kernel replay; runs the call once between start and stop, then decodes. */
static int run_ranges(session *s, const kt_cupti_request *req)
{
    CUpti_RangeProfiler_SetConfig_Params sc = CUPTI_PARAMS(CUpti_RangeProfiler_SetConfig_Params);
    sc.pRangeProfilerObject = s->obj;
    sc.configSize = s->config_size;
    sc.pConfig = s->config;
    sc.counterDataImageSize = s->image_size;
    sc.pCounterDataImage = s->image;
    sc.range = CUPTI_AutoRange;
    sc.replayMode = CUPTI_KernelReplay;
    sc.maxRangesPerPass = (size_t)req->max_ranges;
    sc.numNestingLevels = 1;
    sc.minNestingLevel = 1;
    sc.passIndex = 0;
    sc.targetNestingLevel = 1;
    int rc = cupti_status(cuptiRangeProfilerSetConfig(&sc), "cuptiRangeProfilerSetConfig");
    if (rc < 0)
        return rc;
    CUpti_RangeProfiler_Start_Params st = CUPTI_PARAMS(CUpti_RangeProfiler_Start_Params);
    st.pRangeProfilerObject = s->obj;
    if ((rc = cupti_status(cuptiRangeProfilerStart(&st), "cuptiRangeProfilerStart")) < 0)
        return rc;
    int body_rc = req->body(req->arg);
    cudaError_t sync = cudaDeviceSynchronize();
    CUpti_RangeProfiler_Stop_Params sp = CUPTI_PARAMS(CUpti_RangeProfiler_Stop_Params);
    sp.pRangeProfilerObject = s->obj;
    if ((rc = cupti_status(cuptiRangeProfilerStop(&sp), "cuptiRangeProfilerStop")) < 0)
        return rc;
    if (body_rc < 0)
        return body_rc;
    if (sync != cudaSuccess)
        return kt_error_set("cudaDeviceSynchronize: %s", cudaGetErrorString(sync));
    CUpti_RangeProfiler_DecodeData_Params dd = CUPTI_PARAMS(CUpti_RangeProfiler_DecodeData_Params);
    dd.pRangeProfilerObject = s->obj;
    return cupti_status(cuptiRangeProfilerDecodeData(&dd), "cuptiRangeProfilerDecodeData");
}

/* Range 'r': its name, and the values of 'use' into 'v'. */
static int evaluate_range(kt_cupti_result *out, const session *s, int r, const char **use,
                          int n_use, double *v)
{
    CUpti_RangeProfiler_CounterData_GetRangeInfo_Params ri =
        CUPTI_PARAMS(CUpti_RangeProfiler_CounterData_GetRangeInfo_Params);
    ri.pCounterDataImage = s->image;
    ri.counterDataImageSize = s->image_size;
    ri.rangeIndex = (size_t)r;
    ri.rangeDelimiter = "/";
    int rc = cupti_status(cuptiRangeProfilerCounterDataGetRangeInfo(&ri),
                          "cuptiRangeProfilerCounterDataGetRangeInfo");
    if (rc < 0)
        return rc;
    snprintf(out->names[r], sizeof(out->names[r]), "%s", ri.rangeName ? ri.rangeName : "");
    CUpti_Profiler_Host_EvaluateToGpuValues_Params ev =
        CUPTI_PARAMS(CUpti_Profiler_Host_EvaluateToGpuValues_Params);
    ev.pHostObject = s->host;
    ev.pCounterDataImage = s->image;
    ev.counterDataImageSize = s->image_size;
    ev.rangeIndex = (size_t)r;
    ev.ppMetricNames = use;
    ev.numMetrics = (size_t)n_use;
    ev.pMetricValues = v;
    return cupti_status(cuptiProfilerHostEvaluateToGpuValues(&ev),
                        "cuptiProfilerHostEvaluateToGpuValues");
}

/* Every kept range of the decoded counter data into 'out'. */
static int evaluate(kt_cupti_result *out, const kt_cupti_request *req, const session *s,
                    const char **use, int n_use)
{
    CUpti_RangeProfiler_GetCounterDataInfo_Params info =
        CUPTI_PARAMS(CUpti_RangeProfiler_GetCounterDataInfo_Params);
    info.pCounterDataImage = s->image;
    info.counterDataImageSize = s->image_size;
    int rc = cupti_status(cuptiRangeProfilerGetCounterDataInfo(&info),
                          "cuptiRangeProfilerGetCounterDataInfo");
    if (rc < 0)
        return rc;
    out->n_ranges = (int)info.numTotalRanges;
    double *v = (double *)calloc((size_t)n_use, sizeof(double));
    if (!v)
        return kt_error_set("out of memory");
    for (int r = 0; r < out->n_ranges && r < req->max_ranges && rc == 0; r++) {
        rc = evaluate_range(out, s, r, use, n_use, v);
        double *row = out->values + (size_t)r * (size_t)req->n_metrics;
        for (int i = 0, j = 0; rc == 0 && i < req->n_metrics; i++)
            row[i] = out->refused[i] ? NAN : v[j++];
    }
    free(v);
    return rc;
}

extern "C" int kt_cupti_profile(kt_cupti_result *out, const kt_cupti_request *req)
{
    session s;
    memset(&s, 0, sizeof(s));
    out->n_ranges = 0;
    out->refused_why[0] = '\0';
    const char **use = (const char **)calloc((size_t)req->n_metrics, sizeof(*use));
    if (!use)
        return kt_error_set("out of memory");
    int rc = session_begin(&s);
    int n_use = rc < 0 ? 0 : known_metrics(use, out, &s, req);
    if (rc == 0 && n_use == 0)
        rc = kt_error_set("CUPTI knows none of the %d metrics on '%s' (%s)", req->n_metrics, s.chip,
                          out->refused_why);
    if (rc == 0)
        rc = config_image(&s, use, n_use);
    if (rc == 0)
        rc = counter_image(&s, use, n_use, req->max_ranges);
    if (rc == 0)
        rc = run_ranges(&s, req);
    if (rc == 0)
        rc = evaluate(out, req, &s, use, n_use);
    session_end(&s);
    free(use);
    return rc;
}

extern "C" int kt_cupti_device_pci_bus_id(char *buf, size_t size)
{
    int device = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err == cudaSuccess)
        err = cudaDeviceGetPCIBusId(buf, (int)size, device);
    if (err != cudaSuccess)
        return kt_error_set("cudaDeviceGetPCIBusId: %s", cudaGetErrorString(err));
    return KT_OK;
}
