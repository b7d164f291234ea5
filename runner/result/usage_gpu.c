/* usage_gpu.c - the GPU counter view: the metric list, what is derived from raw values (the
 * device-wide SOL, the longest kernel, the top stall reasons), JSON and the summary line. */
#include "result/usage_gpu.h"

#include "util/json.h"

#include <math.h>
#include <string.h>

#define STALL(r)                                                                                   \
    {                                                                                              \
        "stall_" #r, "smsp__average_warps_issue_stalled_" #r "_per_issue_active.ratio"             \
    }

/* Nsight Compute's names; the stall reasons are its "warp state" breakdown, without
 * 'selected' (a warp issuing is not stalled). */
static const kt_gpu_metric metrics[KT_GPU_METRICS] = {
    {"duration_ns", "gpu__time_duration.sum"},
    {"sm_throughput_pct", "sm__throughput.avg.pct_of_peak_sustained_elapsed"},
    {"dram_throughput_pct", "dram__throughput.avg.pct_of_peak_sustained_elapsed"},
    {"occupancy_limit_registers", "launch__occupancy_limit_registers"},
    {"occupancy_limit_shared_mem", "launch__occupancy_limit_shared_mem"},
    {"occupancy_limit_warps", "launch__occupancy_limit_warps"},
    {"occupancy_limit_blocks", "launch__occupancy_limit_blocks"},
    {"achieved_occupancy_pct", "sm__warps_active.avg.pct_of_peak_sustained_active"},
    {"waves_per_sm", "launch__waves_per_multiprocessor"},
    {"grid_blocks", "launch__grid_size"},
    {"sms", "launch__sm_count"},
    STALL(barrier),
    STALL(branch_resolving),
    STALL(dispatch_stall),
    STALL(drain),
    STALL(imc_miss),
    STALL(lg_throttle),
    STALL(long_scoreboard),
    STALL(math_pipe_throttle),
    STALL(membar),
    STALL(mio_throttle),
    STALL(misc),
    STALL(no_instruction),
    STALL(not_selected),
    STALL(short_scoreboard),
    STALL(sleeping),
    STALL(tex_throttle),
    STALL(wait),
};

const kt_gpu_metric *kt_gpu_metric_at(int i)
{
    return i >= 0 && i < KT_GPU_METRICS ? &metrics[i] : NULL;
}

const char *kt_gpu_stall_name(int i)
{
    return metrics[i].key + strlen("stall_");
}

double kt_gpu_device_sol(const kt_gpu_kernel *k)
{
    double sol = k->raw[KT_GPU_SM_THROUGHPUT], grid = k->raw[KT_GPU_GRID_BLOCKS];
    double sms = k->raw[KT_GPU_SMS];
    if (isnan(sol) || isnan(grid) || isnan(sms) || sms <= 0)
        return NAN;
    return sol * fmin(grid, sms) / sms;
}

int kt_gpu_longest(const kt_gpu_usage *u)
{
    if (u->n_kernels == 0)
        return -1;
    int best = 0;
    for (int i = 1; i < u->n_kernels; i++)
        if (u->k[i].raw[KT_GPU_DURATION] > u->k[best].raw[KT_GPU_DURATION] ||
            isnan(u->k[best].raw[KT_GPU_DURATION]))
            best = i;
    return best;
}

int kt_gpu_occupancy_limiter(const kt_gpu_kernel *k)
{
    int best = -1;
    for (int i = KT_GPU_OCC_LIMIT_REGISTERS; i <= KT_GPU_OCC_LIMIT_BLOCKS; i++)
        if (!isnan(k->raw[i]) && (best < 0 || k->raw[i] < k->raw[best]))
            best = i;
    return best;
}

int kt_gpu_top_stalls(const kt_gpu_kernel *k, int *out, int n)
{
    int got = 0;
    for (int i = KT_GPU_STALL_FIRST; i < KT_GPU_METRICS; i++) {
        if (isnan(k->raw[i]))
            continue;
        int at = got < n ? got++ : n;
        while (at > 0 && k->raw[out[at - 1]] < k->raw[i]) {
            if (at < n)
                out[at] = out[at - 1];
            at--;
        }
        if (at < n)
            out[at] = i;
    }
    return got;
}

static cJSON *kernel_json(const kt_gpu_kernel *k)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "range", k->range);
    cJSON *stalls = cJSON_CreateObject();
    for (int i = 0; i < KT_GPU_METRICS; i++) {
        if (isnan(k->raw[i]))
            continue;
        if (i >= KT_GPU_STALL_FIRST)
            kt_json_add_real(stalls, kt_gpu_stall_name(i), k->raw[i]);
        else
            kt_json_add_real(o, metrics[i].key, k->raw[i]);
    }
    double dev = kt_gpu_device_sol(k);
    if (!isnan(dev))
        kt_json_add_real(o, "device_sol_pct", dev);
    cJSON_AddItemToObject(o, "stalls", stalls);
    return o;
}

cJSON *kt_gpu_counters_to_json(const kt_gpu_usage *u)
{
    cJSON *o = cJSON_CreateObject();
    if (!u->counters_done) {
        cJSON_AddStringToObject(o, "unavailable", u->counters_unavailable);
        return o;
    }
    cJSON_AddNumberToObject(o, "ranges", u->ranges);
    cJSON *ks = cJSON_AddArrayToObject(o, "kernels");
    for (int i = 0; i < u->n_kernels; i++)
        cJSON_AddItemToArray(ks, kernel_json(&u->k[i]));
    if (u->n_unsupported) {
        cJSON *un = cJSON_AddObjectToObject(o, "unsupported");
        for (int i = 0; i < KT_GPU_METRICS; i++)
            if (u->unsupported[i])
                cJSON_AddStringToObject(un, metrics[i].key, u->unsupported_reason);
    }
    return o;
}

void kt_gpu_energy_to_json(cJSON *energy, const kt_gpu_usage *u)
{
    if (!u->energy_tried)
        return;
    if (u->energy_unavailable[0]) {
        cJSON_AddStringToObject(energy, "gpu_unavailable", u->energy_unavailable);
        return;
    }
    kt_json_add_real(energy, "gpu_j_per_call", u->energy_j);
    cJSON_AddNumberToObject(energy, "gpu_calls", u->energy_calls);
}

static void kernel_from_json(kt_gpu_kernel *k, const cJSON *o)
{
    kt_json_get_str(o, "range", k->range, sizeof(k->range));
    const cJSON *stalls = cJSON_GetObjectItemCaseSensitive(o, "stalls");
    for (int i = 0; i < KT_GPU_METRICS; i++)
        k->raw[i] = i >= KT_GPU_STALL_FIRST ? kt_json_get_real(stalls, kt_gpu_stall_name(i), NAN)
                                            : kt_json_get_real(o, metrics[i].key, NAN);
}

void kt_gpu_counters_from_json(kt_gpu_usage *u, const cJSON *counters, const cJSON *energy)
{
    memset(u, 0, sizeof(*u));
    u->energy_j = NAN;
    if (counters) {
        kt_json_get_str(counters, "unavailable", u->counters_unavailable,
                        sizeof(u->counters_unavailable));
        u->counters_done = !u->counters_unavailable[0];
        u->ranges = (int)kt_json_get_real(counters, "ranges", 0);
        const cJSON *k;
        cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(counters, "kernels"))
        {
            if (u->n_kernels < KT_GPU_KERNELS_MAX)
                kernel_from_json(&u->k[u->n_kernels++], k);
        }
        const cJSON *un = cJSON_GetObjectItemCaseSensitive(counters, "unsupported");
        for (int i = 0; un && i < KT_GPU_METRICS; i++) {
            const cJSON *why = cJSON_GetObjectItemCaseSensitive(un, metrics[i].key);
            if (cJSON_IsString(why)) {
                u->unsupported[i] = 1;
                u->n_unsupported++;
                snprintf(u->unsupported_reason, sizeof(u->unsupported_reason), "%s",
                         why->valuestring);
            }
        }
    }
    const cJSON *gj = cJSON_GetObjectItemCaseSensitive(energy, "gpu_j_per_call");
    const cJSON *gu = cJSON_GetObjectItemCaseSensitive(energy, "gpu_unavailable");
    u->energy_tried = gj || gu;
    u->energy_j = kt_json_real_value(gj, NAN);
    u->energy_calls = (int)kt_json_get_real(energy, "gpu_calls", 0);
    kt_json_get_str(energy, "gpu_unavailable", u->energy_unavailable,
                    sizeof(u->energy_unavailable));
}

/* Appends " name value" to the line when the value was collected. */
static void field(FILE *out, const char *name, double v, const char *fmt)
{
    if (isnan(v))
        return;
    fprintf(out, " %s ", name);
    fprintf(out, fmt, v);
}

void kt_gpu_print_line(FILE *out, const kt_gpu_usage *u)
{
    if (!u->counters_done && !u->counters_unavailable[0] && !u->energy_tried)
        return;
    fprintf(out, "    gpu:");
    if (u->energy_tried && !u->energy_unavailable[0])
        fprintf(out, " energy %.3g J/call;", u->energy_j);
    int b = u->counters_done ? kt_gpu_longest(u) : -1;
    if (b < 0) {
        fprintf(out, " counters %s\n",
                u->counters_unavailable[0] ? u->counters_unavailable : "found no kernel");
        return;
    }
    const kt_gpu_kernel *k = &u->k[b];
    fprintf(out, " %d kernel%s, longest '%s'", u->ranges, u->ranges == 1 ? "" : "s", k->range);
    field(out, "", k->raw[KT_GPU_DURATION] / 1e3, "%.3g us:");
    field(out, "SOL", k->raw[KT_GPU_SM_THROUGHPUT], "%.0f%%");
    field(out, "(device", kt_gpu_device_sol(k), "%.0f%%)");
    field(out, "DRAM", k->raw[KT_GPU_DRAM_THROUGHPUT], "%.0f%%");
    field(out, "occupancy", k->raw[KT_GPU_ACHIEVED_OCCUPANCY], "%.0f%%");
    int lim = kt_gpu_occupancy_limiter(k);
    if (lim >= 0)
        fprintf(out, " (limit %s, %.0f blocks/SM)", metrics[lim].key + strlen("occupancy_limit_"),
                k->raw[lim]);
    field(out, "waves", k->raw[KT_GPU_WAVES], "%.2g");
    int top[3];
    int n = kt_gpu_top_stalls(k, top, 3);
    for (int i = 0; i < n; i++)
        fprintf(out, "%s%s %.2g", i ? ", " : " stalls ", kt_gpu_stall_name(top[i]), k->raw[top[i]]);
    if (u->n_unsupported)
        fprintf(out, "; %d metric%s refused (%s)", u->n_unsupported,
                u->n_unsupported == 1 ? "" : "s", u->unsupported_reason);
    fputc('\n', out);
}
