/* gpu_table.c - one row per arm and profiled kernel: the counter view, the binding occupancy
 * limit, the top stall reasons; a row with the reason where an arm has no counters. */
#include "report/gpu_table.h"

#include "report/svg.h"

#include <math.h>
#include <string.h>

static void cell(FILE *f, double v, const char *fmt)
{
    fputs("<td class='num'>", f);
    if (isnan(v))
        fputs("&ndash;", f);
    else
        fprintf(f, fmt, v);
    fputs("</td>", f);
}

static void kernel_row(FILE *f, const kt_arm_result *a, const kt_gpu_kernel *k)
{
    fputs("<tr><td>", f);
    kt_html_escape(f, a->name);
    fputs("</td><td>", f);
    kt_html_escape(f, k->range);
    fputs("</td>", f);
    cell(f, k->raw[KT_GPU_DURATION] / 1e3, "%.3g");
    cell(f, k->raw[KT_GPU_SM_THROUGHPUT], "%.1f");
    cell(f, kt_gpu_device_sol(k), "%.1f");
    cell(f, k->raw[KT_GPU_DRAM_THROUGHPUT], "%.1f");
    for (int i = KT_GPU_OCC_LIMIT_REGISTERS; i <= KT_GPU_OCC_LIMIT_BLOCKS; i++)
        cell(f, k->raw[i], i == kt_gpu_occupancy_limiter(k) ? "<b>%.0f</b>" : "%.0f");
    cell(f, k->raw[KT_GPU_ACHIEVED_OCCUPANCY], "%.1f");
    cell(f, k->raw[KT_GPU_WAVES], "%.2f");
    int top[3], n = kt_gpu_top_stalls(k, top, 3);
    fputs("<td>", f);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%s %.2g", i ? ", " : "", kt_gpu_stall_name(top[i]), k->raw[top[i]]);
    fputs("</td>", f);
    fputs("<td class='num'>", f);
    if (a->profile.gpu.energy_tried && !a->profile.gpu.energy_unavailable[0])
        fprintf(f, "%.3g", a->profile.gpu.energy_j);
    fputs("</td></tr>\n", f);
}

static void reason_row(FILE *f, const kt_arm_result *a)
{
    const kt_gpu_usage *u = &a->profile.gpu;
    fputs("<tr><td>", f);
    kt_html_escape(f, a->name);
    fputs("</td><td colspan='13' class='muted'>", f);
    kt_html_escape(f, u->counters_unavailable[0] ? u->counters_unavailable : "no kernel profiled");
    if (u->energy_unavailable[0]) {
        fputs("; energy ", f);
        kt_html_escape(f, u->energy_unavailable);
    }
    fputs("</td></tr>\n", f);
}

static int ran(const kt_arm_result *a)
{
    return a->profiled && (a->profile.gpu.counters_done || a->profile.gpu.counters_unavailable[0] ||
                           a->profile.gpu.energy_tried);
}

static void arm_rows(FILE *f, const kt_arm_result *a)
{
    if (!ran(a))
        return;
    const kt_gpu_usage *u = &a->profile.gpu;
    if (!u->counters_done || u->n_kernels == 0)
        reason_row(f, a);
    for (int i = 0; u->counters_done && i < u->n_kernels; i++)
        kernel_row(f, a, &u->k[i]);
}

void kt_report_gpu_table(FILE *f, const kt_point_result *pt)
{
    int any = ran(&pt->baseline);
    for (size_t k = 0; k < pt->n_cands; k++)
        any |= ran(&pt->cands[k].arm);
    if (!any)
        return;
    fputs("<h3>GPU counters of one call (CUPTI, kernel replay) and energy per call (NVML)</h3>\n"
          "<table class='gpu-counters'><tr><th>arm</th><th>range</th><th>us</th>"
          "<th>SOL %</th><th>device SOL %</th><th>DRAM %</th><th>limit: registers</th>"
          "<th>shared mem</th><th>warps</th><th>blocks</th><th>achieved occupancy %</th>"
          "<th>waves/SM</th><th>top stalls (cycles per issue)</th><th>J/call</th></tr>\n",
          f);
    arm_rows(f, &pt->baseline);
    for (size_t k = 0; k < pt->n_cands; k++)
        arm_rows(f, &pt->cands[k].arm);
    fputs("</table>\n", f);
}
