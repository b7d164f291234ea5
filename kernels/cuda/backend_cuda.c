/* backend_cuda.c - the CUDA backend: device 0, one stream, cudaMalloc'd memory, CUDA events
 * around the timed call, an L2 flush by reading twice the L2, and an SM clock estimate
 * after every timed call.
 *
 * The probe never initialises CUDA in the calling process: the runner forks trial workers
 * after probing, and a CUDA context does not survive fork. It asks a child process instead,
 * unless this process has already opened the backend (a forked child of an initialised
 * process cannot use CUDA, and asking in place then costs nothing). */
#include "cublaslt_load.h"
#include "cuda_backend.h"
#include "cuda_private.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct cuda_ctx {
    int device;
    int sm_count;
    int default_clock_khz;
    cudaStream_t stream;
    cudaEvent_t ev_start, ev_stop;
    cublasLtHandle_t blaslt;
    void *flush_buf;
    size_t flush_bytes;
    unsigned long long *stamps;      /* device: clock sample of the last timer_stop */
    unsigned long long *host_stamps; /* pinned copy */
    unsigned *flush_sink;            /* device word the flush kernel could write (never does) */
    void (*after_stop)(void *);      /* run once by the next timer_stop, after the stream drained */
    void *after_stop_arg;
} cuda_ctx;

/* The process that initialised CUDA through cuda_init (0: none). Process-wide by nature:
 * CUDA's own state is per process. */
static pid_t cuda_initialised_pid;

int kt_blaslt_status(cublasStatus_t st, const char *file, int line)
{
    if (st == CUBLAS_STATUS_SUCCESS)
        return KT_OK;
    if (!kt_lt.GetStatusName) /* a status from before cuBLASLt was loaded */
        return kt_error_set("%s:%d: cuBLAS status %d", file, line, (int)st);
    return kt_error_set("%s:%d: %s: %s", file, line, kt_lt.GetStatusName(st),
                        kt_lt.GetStatusString(st));
}

/* ---- probe ---------------------------------------------------------------------------- */

static void no_device(kt_device_info *info, const char *why)
{
    info->available = 0;
    snprintf(info->reason, sizeof(info->reason), "no CUDA device: %s", why);
}

static void version_string(char *buf, size_t len, int v)
{
    snprintf(buf, len, "%d.%d", v / 1000, (v % 1000) / 10);
}

/* Fills 'info' from device 0; initialises CUDA in the calling process. */
static void probe_device(kt_device_info *info)
{
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count <= 0) {
        no_device(info, cudaGetErrorString(err != cudaSuccess ? err : cudaErrorNoDevice));
        return;
    }
    struct cudaDeviceProp prop;
    if ((err = cudaGetDeviceProperties(&prop, 0)) != cudaSuccess) {
        no_device(info, cudaGetErrorString(err));
        return;
    }
    int clock_khz = 0, mem_clock_khz = 0, driver = 0, runtime = 0;
    cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
    cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, 0);
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    if (kt_cublaslt_load() < 0) {
        info->available = 0;
        snprintf(info->reason, sizeof(info->reason), "%s", kt_error_last());
        return;
    }
    size_t blaslt = kt_lt.GetVersion();
    const unsigned char *u = (const unsigned char *)prop.uuid.bytes;
    char drv[32], rt[32];
    version_string(drv, sizeof(drv), driver);
    version_string(rt, sizeof(rt), runtime);

    info->available = 1;
    kt_device_info_add(info, "name", "%s", prop.name);
    kt_device_info_add(info, "uuid",
                       "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                       u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11],
                       u[12], u[13], u[14], u[15]);
    kt_device_info_add(info, "device_count", "%d", count);
    kt_device_info_add(info, "compute_capability", "%d.%d", prop.major, prop.minor);
    kt_device_info_add(info, "sm_count", "%d", prop.multiProcessorCount);
    kt_device_info_add(info, "l2_bytes", "%d", prop.l2CacheSize);
    kt_device_info_add(info, "memory_bytes", "%zu", prop.totalGlobalMem);
    kt_device_info_add(info, "memory_bus_bits", "%d", prop.memoryBusWidth);
    kt_device_info_add(info, "sm_clock_mhz", "%d", clock_khz / 1000);
    kt_device_info_add(info, "memory_clock_mhz", "%d", mem_clock_khz / 1000);
    kt_device_info_add(info, "driver_version", "%s", drv);
    kt_device_info_add(info, "runtime_version", "%s", rt);
    kt_device_info_add(info, "cublaslt_version", "%zu.%zu.%zu", blaslt / 10000,
                       (blaslt / 100) % 100, blaslt % 100);
    kt_device_info_add(info, "timer", "cudaEvent on the backend stream");
    kt_device_info_add(info, "cache_flush", "read of 2x L2 (16-byte loads, clean lines only)");
}

/* Reads exactly 'bytes' from 'fd'; returns 0 on success. */
static int read_full(int fd, void *buf, size_t bytes)
{
    char *p = buf;
    while (bytes > 0) {
        ssize_t got = read(fd, p, bytes);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return -1;
        p += got;
        bytes -= (size_t)got;
    }
    return 0;
}

static int write_full(int fd, const void *buf, size_t bytes)
{
    const char *p = buf;
    while (bytes > 0) {
        ssize_t put = write(fd, p, bytes);
        if (put < 0 && errno == EINTR)
            continue;
        if (put <= 0)
            return -1;
        p += put;
        bytes -= (size_t)put;
    }
    return 0;
}

static int cuda_probe(kt_device_info *info)
{
    memset(info, 0, sizeof(*info));
    if (cuda_initialised_pid == getpid()) {
        probe_device(info);
        return info->available ? KT_OK : KT_ENODEV;
    }
    int fds[2];
    if (pipe(fds) != 0) {
        no_device(info, "cannot create the probe pipe");
        return KT_ENODEV;
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        no_device(info, "cannot fork the probe process");
        return KT_ENODEV;
    }
    if (pid == 0) {
        kt_device_info child;
        memset(&child, 0, sizeof(child));
        close(fds[0]);
        probe_device(&child);
        int rc = write_full(fds[1], &child, sizeof(child));
        close(fds[1]);
        _exit(rc == 0 ? 0 : 1);
    }
    close(fds[1]);
    int got = read_full(fds[0], info, sizeof(*info));
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (got != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        memset(info, 0, sizeof(*info));
        if (WIFSIGNALED(status))
            snprintf(info->reason, sizeof(info->reason),
                     "no CUDA device: the probe process died of signal %d", WTERMSIG(status));
        else
            no_device(info, "the probe process returned no answer");
    }
    if (!info->available) {
        info->reason[sizeof(info->reason) - 1] = '\0';
        return KT_ENODEV;
    }
    return KT_OK;
}

/* ---- init and memory ------------------------------------------------------------------- */

static void cuda_shutdown(void *ctx)
{
    cuda_ctx *c = ctx;
    if (!c)
        return;
    if (c->stream)
        cudaStreamSynchronize(c->stream);
    if (c->blaslt)
        kt_lt.Destroy(c->blaslt);
    cudaFree(c->flush_buf);
    cudaFree(c->flush_sink);
    cudaFree(c->stamps);
    cudaFreeHost(c->host_stamps);
    if (c->ev_start)
        cudaEventDestroy(c->ev_start);
    if (c->ev_stop)
        cudaEventDestroy(c->ev_stop);
    if (c->stream)
        cudaStreamDestroy(c->stream);
    free(c);
}

static int init_ctx(cuda_ctx *c)
{
    int l2_bytes = 0;
    KT_CUDA_CHECK(cudaSetDevice(c->device));
    KT_CUDA_CHECK(cudaDeviceGetAttribute(&c->sm_count, cudaDevAttrMultiProcessorCount, 0));
    KT_CUDA_CHECK(cudaDeviceGetAttribute(&c->default_clock_khz, cudaDevAttrClockRate, 0));
    KT_CUDA_CHECK(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, 0));
    KT_CUDA_CHECK(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    KT_CUDA_CHECK(cudaEventCreate(&c->ev_start));
    KT_CUDA_CHECK(cudaEventCreate(&c->ev_stop));
    int rc = kt_cublaslt_load();
    if (rc < 0)
        return rc;
    KT_BLASLT_CHECK(kt_lt.Create(&c->blaslt));
    c->flush_bytes = 2 * (size_t)(l2_bytes > 0 ? l2_bytes : 64 << 20);
    KT_CUDA_CHECK(cudaMalloc(&c->flush_buf, c->flush_bytes));
    KT_CUDA_CHECK(cudaMemset(c->flush_buf, 0, c->flush_bytes)); /* once: the flush reads it */
    KT_CUDA_CHECK(cudaMalloc((void **)&c->flush_sink, sizeof(unsigned)));
    KT_CUDA_CHECK(cudaMalloc((void **)&c->stamps, 4 * sizeof(unsigned long long)));
    KT_CUDA_CHECK(cudaMallocHost((void **)&c->host_stamps, 4 * sizeof(unsigned long long)));
    return KT_OK;
}

static int cuda_init(void **out, int threads, uint64_t seed)
{
    (void)threads;
    (void)seed;
    int count = 0;
    cuda_initialised_pid = getpid(); /* the next call initialises CUDA here, even on failure */
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count <= 0)
        return kt_error_code(KT_ENODEV, "no CUDA device: %s",
                             cudaGetErrorString(err != cudaSuccess ? err : cudaErrorNoDevice));
    cuda_ctx *c = calloc(1, sizeof(*c));
    if (!c)
        return kt_error_code(KT_ENOMEM, "out of memory");
    int rc = init_ctx(c);
    if (rc < 0) {
        cuda_shutdown(c);
        return rc;
    }
    *out = c;
    return KT_OK;
}

static int cuda_alloc(void *ctx, void **ptr, size_t bytes)
{
    (void)ctx;
    cudaError_t err = cudaMalloc(ptr, bytes);
    if (err == cudaErrorMemoryAllocation) {
        cudaGetLastError(); /* clear it, so the next launch check does not report it */
        return kt_error_code(KT_ENOMEM, "cannot allocate %zu bytes on the device", bytes);
    }
    return KT_CUDA_CALL(err);
}

static void cuda_free(void *ctx, void *ptr)
{
    (void)ctx;
    cudaFree(ptr);
}

static int cuda_copy(cuda_ctx *c, void *dst, const void *src, size_t bytes,
                     enum cudaMemcpyKind kind)
{
    KT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, c->stream));
    KT_CUDA_CHECK(cudaStreamSynchronize(c->stream));
    return KT_OK;
}

static int cuda_upload(void *ctx, void *dst, const void *src, size_t bytes)
{
    return cuda_copy(ctx, dst, src, bytes, cudaMemcpyHostToDevice);
}

static int cuda_download(void *ctx, void *dst, const void *src, size_t bytes)
{
    return cuda_copy(ctx, dst, src, bytes, cudaMemcpyDeviceToHost);
}

/* ---- timing ---------------------------------------------------------------------------- */

/* Reads twice the L2. A memset would leave up to a whole L2 of dirty lines whose write-back
 * lands in the timed call (~60 MB on an H200: microseconds); reading leaves clean lines, and
 * the previous call's dirty output is written back here, before the timer starts. */
static int cuda_flush_cache(void *ctx)
{
    cuda_ctx *c = ctx;
    return kt_cuda_l2_flush(c->stream, c->flush_buf, c->flush_bytes, c->sm_count, c->flush_sink);
}

static int cuda_timer_start(void *ctx)
{
    cuda_ctx *c = ctx;
    c->after_stop = NULL; /* one registered by an untimed call is stale */
    KT_CUDA_CHECK(cudaEventRecord(c->ev_start, c->stream));
    return KT_OK;
}

/* Stops the event timer once the device is idle, then samples the SM clock right after the
 * timed call on the same stream: MHz = clock64 cycles / globaltimer ns * 1000, over one ~10 us
 * spin. */
static int cuda_timer_stop(void *ctx, kt_timing *out)
{
    cuda_ctx *c = ctx;
    float ms = 0;
    /* the call is over only when the whole device is: work a kernel left on another stream
     * (its own, or one it created) is timed too, at the cost of one host round trip per call,
     * the same for every arm (docs/robustness.md, late-writes) */
    KT_CUDA_CHECK(cudaDeviceSynchronize());
    KT_CUDA_CHECK(cudaEventRecord(c->ev_stop, c->stream));
    if (kt_cuda_clock_sample(c->stream, c->stamps) < 0)
        return KT_ERROR;
    KT_CUDA_CHECK(cudaMemcpyAsync(c->host_stamps, c->stamps, 4 * sizeof(unsigned long long),
                                  cudaMemcpyDeviceToHost, c->stream));
    KT_CUDA_CHECK(cudaEventSynchronize(c->ev_stop));
    KT_CUDA_CHECK(cudaEventElapsedTime(&ms, c->ev_start, c->ev_stop));
    KT_CUDA_CHECK(cudaStreamSynchronize(c->stream));
    if (c->after_stop) {
        void (*fn)(void *) = c->after_stop;
        c->after_stop = NULL;
        fn(c->after_stop_arg);
    }
    const unsigned long long *s = c->host_stamps;
    double cycles = (double)(s[2] - s[0]), ns = (double)(s[3] - s[1]);
    out->time_ns = (double)ms * 1e6;
    out->noise = ns > 0 ? cycles / ns * 1000.0 : 0.0;
    out->throttled = out->noise > 0 && out->noise < 0.75 * (c->default_clock_khz / 1000.0);
    return KT_OK;
}

static int cuda_synchronize(void *ctx)
{
    cuda_ctx *c = ctx;
    KT_CUDA_CHECK(cudaStreamSynchronize(c->stream));
    KT_CUDA_CHECK(cudaGetLastError());
    return KT_OK;
}

const kt_backend_iface kt_backend_cuda = {
    /* .name = */ "cuda",
    /* .doc = */ "CUDA device 0, one stream, CUDA events, L2 flush by reading 2x L2",
    /* .noise_name = */ "sm_clock_mhz",
    /* .probe = */ cuda_probe,
    /* .init = */ cuda_init,
    /* .shutdown = */ cuda_shutdown,
    /* .alloc = */ cuda_alloc,
    /* .free = */ cuda_free,
    /* .upload = */ cuda_upload,
    /* .download = */ cuda_download,
    /* .flush_cache = */ cuda_flush_cache,
    /* .timer_start = */ cuda_timer_start,
    /* .timer_stop = */ cuda_timer_stop,
    /* .synchronize = */ cuda_synchronize,
    /* .timer_tick_ns = */ NULL, /* measured: the smallest nonzero event interval */
    /* .place_threads = */ NULL,
    /* .caps = */ &kt_backend_cuda_caps,
};

static cuda_ctx *ctx_of(kt_backend *b)
{
    return b && b->iface == &kt_backend_cuda ? (cuda_ctx *)b->ctx : NULL;
}

cudaStream_t kt_cuda_stream(kt_backend *b)
{
    cuda_ctx *c = ctx_of(b);
    return c ? c->stream : NULL;
}

cublasLtHandle_t kt_cuda_blaslt(kt_backend *b)
{
    cuda_ctx *c = ctx_of(b);
    return c ? c->blaslt : NULL;
}

int kt_cuda_sm_count(kt_backend *b)
{
    cuda_ctx *c = ctx_of(b);
    return c ? c->sm_count : 0;
}

int kt_cuda_after_timer_stop(kt_backend *b, void (*fn)(void *), void *arg)
{
    cuda_ctx *c = ctx_of(b);
    if (!c)
        return kt_error_code(KT_EINVAL, "backend is not cuda");
    c->after_stop = fn;
    c->after_stop_arg = arg;
    return KT_OK;
}

int kt_cuda_metrics_copy(kt_metric *out, int max, const kt_metric *m, int n)
{
    int i = 0;
    for (; i < max && i < n; i++)
        out[i] = m[i];
    return i;
}
