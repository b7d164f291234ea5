/* backend_process.c - the process backend's registry entries: the backend (host memory, a
 * wall clock), the op 'command' (a whole program run per call, no tensors) and its one
 * variant 'exec'. What a call runs comes from the spec's 'run' lists, which only the command
 * trials read (runner/arm/command/); the variant is how the registry, 'ktrial kernels'
 * and the spec checks know the op and the backend exist. */
#include "process.h"
#include "../ops/ops.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct process_ctx {
    struct timespec start;
} process_ctx;

static int process_probe(kt_device_info *info)
{
    memset(info, 0, sizeof(*info));
    info->available = 1;
    kt_device_info_add(info, "name", "child processes (posix_spawnp, wait4)");
    kt_device_info_add(info, "clock", "CLOCK_MONOTONIC, spawn to reap");
    return KT_OK;
}

static int process_init(void **out, int threads, uint64_t seed)
{
    (void)threads;
    (void)seed;
    *out = calloc(1, sizeof(process_ctx));
    return *out ? KT_OK : kt_error_code(KT_ENOMEM, "out of memory");
}

static void process_shutdown(void *ctx)
{
    free(ctx);
}

static int process_alloc(void *ctx, void **ptr, size_t bytes)
{
    (void)ctx;
    *ptr = malloc(bytes ? bytes : 1);
    return *ptr ? KT_OK : kt_error_code(KT_ENOMEM, "cannot allocate %zu bytes", bytes);
}

static void process_free(void *ctx, void *ptr)
{
    (void)ctx;
    free(ptr);
}

static int process_copy(void *ctx, void *dst, const void *src, size_t bytes)
{
    (void)ctx;
    memcpy(dst, src, bytes);
    return KT_OK;
}

static int process_nothing(void *ctx)
{
    (void)ctx; /* each call is a fresh process: no cache of ours to flush, nothing queued */
    return KT_OK;
}

static int process_timer_start(void *ctx)
{
    clock_gettime(CLOCK_MONOTONIC, &((process_ctx *)ctx)->start);
    return KT_OK;
}

static int process_timer_stop(void *ctx, kt_timing *out)
{
    struct timespec now, *s = &((process_ctx *)ctx)->start;
    clock_gettime(CLOCK_MONOTONIC, &now);
    out->time_ns = (double)(now.tv_sec - s->tv_sec) * 1e9 + (double)(now.tv_nsec - s->tv_nsec);
    out->noise = 0;
    out->throttled = 0;
    return KT_OK;
}

const kt_backend_caps kt_backend_process_caps = {
    /* .clock = */ KT_CLOCK_HOST,
    /* .noise = */ KT_NOISE_NONE,
    /* .flush = */ KT_FLUSH_NOTHING, /* the command's caches are its own */
    /* .device_memory = */ 0,
    /* .profile_opt_in = */ 0,
    /* .needs_device = */ 0,
    /* .auto_rank = */ 0, /* chosen only by op command */
    /* .gpus = */ 0,
    /* .calibrated = */ 0, /* a command's calls are timed by its own calibration */
};

const kt_backend_iface kt_backend_process = {
    /* .name = */ "process",
    /* .doc = */ "whole programs as child processes: wall time, CPU time and peak RSS per call",
    /* .noise_name = */ "none",
    /* .probe = */ process_probe,
    /* .init = */ process_init,
    /* .shutdown = */ process_shutdown,
    /* .alloc = */ process_alloc,
    /* .free = */ process_free,
    /* .upload = */ process_copy,
    /* .download = */ process_copy,
    /* .flush_cache = */ process_nothing,
    /* .timer_start = */ process_timer_start,
    /* .timer_stop = */ process_timer_stop,
    /* .synchronize = */ process_nothing,
    /* .timer_tick_ns = */ NULL,
    /* .place_threads = */ NULL,
    /* .caps = */ &kt_backend_process_caps,
};

static int command_shape(kt_problem *out, const kt_point *point, kt_dtype dtype,
                         const kt_param_value *input_params)
{
    (void)input_params;
    kt_op_problem_init(out, &kt_op_command, dtype);
    out->batch = point->batch_size;
    out->context = point->context_length;
    return KT_OK; /* no tensors: the command reads its task's input file itself */
}

static int command_generate(const kt_problem *p, void *const *inputs, const kt_input_config *cfg)
{
    (void)p;
    (void)inputs;
    (void)cfg;
    return KT_OK;
}

static int command_reference(const kt_problem *p, const void *const *inputs, double *const *outputs)
{
    (void)p;
    (void)inputs;
    (void)outputs;
    return KT_OK; /* outputs are compared with the baseline's or the task's expect file */
}

const kt_op kt_op_command = {
    /* .name = */ "command",
    /* .doc = */ "process only: a whole program per call (argv from the spec's 'run' lists)",
    /* .axes = */ KT_AXIS_BATCH | KT_AXIS_CONTEXT,
    /* .model_fields = */ 0,
    /* .backend_only = */ "process",
    /* .input_params = */ NULL,
    /* .n_input_params = */ 0,
    /* .shape = */ command_shape,
    /* .generate = */ command_generate,
    /* .reference = */ command_reference,
};

static int exec_refuse(void **state, const kt_call *call)
{
    (void)state;
    (void)call;
    return kt_error_code(KT_EUNSUPPORTED, "command: 'exec' calls are made by the command "
                                          "trials from the spec's 'run' lists, not in a worker");
}

static int exec_run(void *state, const kt_call *call)
{
    return exec_refuse(&state, call);
}

static void exec_release(void *state, kt_backend *backend)
{
    (void)state;
    (void)backend;
}

const kt_variant kt_variant_process_exec = {
    /* .op = */ "command",
    /* .name = */ "exec",
    /* .backend = */ "process",
    /* .doc = */ "runs the arm's 'run' argv (no shell) with its env, cwd and timeout_s",
    /* .params = */ NULL,
    /* .n_params = */ 0,
    /* .prepare = */ exec_refuse,
    /* .run = */ exec_run,
    /* .release = */ exec_release,
    /* .metrics = */ NULL,
};

/* op 'service': two servers under the same load (runner/arm/service/); like 'command', no
 * tensors: each request's body is its task's input file. */
static int service_shape(kt_problem *out, const kt_point *point, kt_dtype dtype,
                         const kt_param_value *input_params)
{
    (void)input_params;
    kt_op_problem_init(out, &kt_op_service, dtype);
    out->batch = point->batch_size;
    out->context = point->context_length;
    return KT_OK;
}

const kt_op kt_op_service = {
    /* .name = */ "service",
    /* .doc = */ "process only: a server per arm under the same load (the spec's 'setup' lists)",
    /* .axes = */ KT_AXIS_BATCH | KT_AXIS_CONTEXT,
    /* .model_fields = */ 0,
    /* .backend_only = */ "process",
    /* .input_params = */ NULL,
    /* .n_input_params = */ 0,
    /* .shape = */ service_shape,
    /* .generate = */ command_generate,
    /* .reference = */ command_reference,
};

static int serve_refuse(void **state, const kt_call *call)
{
    (void)state;
    (void)call;
    return kt_error_code(KT_EUNSUPPORTED, "service: requests are sent by the service trials "
                                          "to the server the spec's 'setup' starts");
}

static int serve_run(void *state, const kt_call *call)
{
    return serve_refuse(&state, call);
}

const kt_variant kt_variant_process_serve = {
    /* .op = */ "service",
    /* .name = */ "serve",
    /* .backend = */ "process",
    /* .doc = */ "starts the arm's 'setup' server on a free port and sends it the requests",
    /* .params = */ NULL,
    /* .n_params = */ 0,
    /* .prepare = */ serve_refuse,
    /* .run = */ serve_run,
    /* .release = */ exec_release,
    /* .metrics = */ NULL,
};
