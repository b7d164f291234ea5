/* test_gpu_counters.c - the GPU counter view without a GPU: the metric list, the device-wide
 * SOL formula, the longest kernel, stall ranking and binding occupancy limit on raw values of
 * the shape CUPTI's evaluator returns (hand-written, with the arithmetic in the comments: no
 * GPU has run this code), the JSON round trip against schemas/result.schema.json, the summary
 * line, and NVML's absence reported with a reason. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "arm/meters/nvml_energy.h"
#include "result/usage_gpu.h"
#include "report/gpu_table.h"
#include "spec/embedded.h"
#include "spec/schema.h"
#include "util/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void assert_close(double got, double want)
{
    if (!(fabs(got - want) <= 1e-12 * fmax(fabs(want), 1)))
        fail_msg("got %.17g, want %.17g", got, want);
}

/* A kernel on a 132-SM device (H100/H200 SXM): 66 blocks of a GEMM tile, compute SOL 80%. */
static void kernel_66_blocks(kt_gpu_kernel *k)
{
    for (int i = 0; i < KT_GPU_METRICS; i++)
        k->raw[i] = NAN;
    snprintf(k->range, sizeof(k->range), "0");
    k->raw[KT_GPU_DURATION] = 12500;
    k->raw[KT_GPU_SM_THROUGHPUT] = 80;
    k->raw[KT_GPU_DRAM_THROUGHPUT] = 35.5;
    k->raw[KT_GPU_OCC_LIMIT_REGISTERS] = 2;
    k->raw[KT_GPU_OCC_LIMIT_SHARED] = 3;
    k->raw[KT_GPU_OCC_LIMIT_WARPS] = 8;
    k->raw[KT_GPU_OCC_LIMIT_BLOCKS] = 32;
    k->raw[KT_GPU_ACHIEVED_OCCUPANCY] = 12.4;
    k->raw[KT_GPU_WAVES] = 0.25; /* 66 blocks / (132 SMs x 2 blocks per SM) */
    k->raw[KT_GPU_GRID_BLOCKS] = 66;
    k->raw[KT_GPU_SMS] = 132;
    k->raw[KT_GPU_STALL_FIRST + 6] = 4.5;  /* long_scoreboard */
    k->raw[KT_GPU_STALL_FIRST + 0] = 0.75; /* barrier */
    k->raw[KT_GPU_STALL_FIRST + 7] = 2.25; /* math_pipe_throttle */
    k->raw[KT_GPU_STALL_FIRST + 16] = 1.5; /* wait */
}

static int find_cupti(const char *name)
{
    for (int i = 0; i < KT_GPU_METRICS; i++)
        if (strcmp(kt_gpu_metric_at(i)->cupti, name) == 0)
            return i;
    return -1;
}

static void test_metric_list(void **state)
{
    (void)state;
    /* the eight views of the issue, by their CUPTI names */
    static const char *const issue[] = {
        "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        "launch__occupancy_limit_registers",
        "launch__occupancy_limit_shared_mem",
        "launch__occupancy_limit_warps",
        "launch__occupancy_limit_blocks",
        "sm__warps_active.avg.pct_of_peak_sustained_active",
        "launch__waves_per_multiprocessor",
    };
    for (size_t i = 0; i < sizeof(issue) / sizeof(issue[0]); i++)
        assert_true(find_cupti(issue[i]) >= 0);
    assert_int_equal(find_cupti("launch__grid_size"), KT_GPU_GRID_BLOCKS);
    assert_int_equal(find_cupti("launch__sm_count"), KT_GPU_SMS);
    assert_int_equal(KT_GPU_METRICS - KT_GPU_STALL_FIRST, 17);
    for (int i = 0; i < KT_GPU_METRICS; i++) {
        const kt_gpu_metric *m = kt_gpu_metric_at(i);
        for (int j = 0; j < i; j++) {
            assert_string_not_equal(m->key, kt_gpu_metric_at(j)->key);
            assert_string_not_equal(m->cupti, kt_gpu_metric_at(j)->cupti);
        }
        if (i >= KT_GPU_STALL_FIRST) {
            char want[128];
            snprintf(want, sizeof(want),
                     "smsp__average_warps_issue_stalled_%s_per_issue_active.ratio",
                     kt_gpu_stall_name(i));
            assert_string_equal(m->cupti, want);
        }
    }
    assert_string_equal(kt_gpu_stall_name(KT_GPU_STALL_FIRST + 6), "long_scoreboard");
    assert_null(kt_gpu_metric_at(KT_GPU_METRICS));
    assert_null(kt_gpu_metric_at(-1));
}

static void test_device_sol(void **state)
{
    (void)state;
    kt_gpu_kernel k;
    kernel_66_blocks(&k);
    assert_close(kt_gpu_device_sol(&k), 40); /* 80 x min(66, 132) / 132 */
    k.raw[KT_GPU_GRID_BLOCKS] = 1000;
    assert_close(kt_gpu_device_sol(&k), 80); /* 80 x min(1000, 132) / 132 */
    k.raw[KT_GPU_GRID_BLOCKS] = 1;
    assert_close(kt_gpu_device_sol(&k), 80.0 / 132); /* one block reaches one SM */
    k.raw[KT_GPU_SMS] = NAN;
    assert_true(isnan(kt_gpu_device_sol(&k))); /* never a guess in place of a counter */
    kernel_66_blocks(&k);
    k.raw[KT_GPU_SM_THROUGHPUT] = NAN;
    assert_true(isnan(kt_gpu_device_sol(&k)));
}

static void test_longest_stalls_limit(void **state)
{
    (void)state;
    kt_gpu_usage u;
    memset(&u, 0, sizeof(u));
    assert_int_equal(kt_gpu_longest(&u), -1);
    u.n_kernels = 3;
    for (int i = 0; i < 3; i++)
        kernel_66_blocks(&u.k[i]);
    u.k[0].raw[KT_GPU_DURATION] = 100;
    u.k[1].raw[KT_GPU_DURATION] = 900;
    u.k[2].raw[KT_GPU_DURATION] = 300;
    assert_int_equal(kt_gpu_longest(&u), 1);

    int top[3];
    assert_int_equal(kt_gpu_top_stalls(&u.k[0], top, 3), 3);
    assert_int_equal(top[0], KT_GPU_STALL_FIRST + 6);  /* 4.5 */
    assert_int_equal(top[1], KT_GPU_STALL_FIRST + 7);  /* 2.25 */
    assert_int_equal(top[2], KT_GPU_STALL_FIRST + 16); /* 1.5; barrier's 0.75 drops out */
    int two[2];
    u.k[0].raw[KT_GPU_STALL_FIRST + 0] = 9;
    assert_int_equal(kt_gpu_top_stalls(&u.k[0], two, 2), 2);
    assert_int_equal(two[0], KT_GPU_STALL_FIRST + 0);
    assert_int_equal(two[1], KT_GPU_STALL_FIRST + 6);

    assert_int_equal(kt_gpu_occupancy_limiter(&u.k[0]), KT_GPU_OCC_LIMIT_REGISTERS);
    u.k[0].raw[KT_GPU_OCC_LIMIT_REGISTERS] = NAN;
    assert_int_equal(kt_gpu_occupancy_limiter(&u.k[0]), KT_GPU_OCC_LIMIT_SHARED);
    for (int i = KT_GPU_OCC_LIMIT_REGISTERS; i <= KT_GPU_OCC_LIMIT_BLOCKS; i++)
        u.k[0].raw[i] = NAN;
    assert_int_equal(kt_gpu_occupancy_limiter(&u.k[0]), -1);
}

/* Validates 'doc' against the arm's 'usage' schema of the embedded result schema. */
static void assert_valid_usage(const cJSON *doc)
{
    cJSON *root = cJSON_Parse(kt_embedded_result_schema);
    assert_non_null(root);
    cJSON *defs = cJSON_GetObjectItemCaseSensitive(root, "definitions");
    cJSON *arm = cJSON_GetObjectItemCaseSensitive(defs, "arm");
    cJSON *usage = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(arm, "properties"), "usage");
    assert_non_null(usage);
    cJSON *schema = cJSON_Duplicate(usage, 1);
    cJSON_AddItemToObject(schema, "definitions", cJSON_Duplicate(defs, 1));
    char *text = cJSON_PrintUnformatted(doc);
    kt_node *node = NULL;
    kt_diag d;
    kt_diag_init(&d);
    assert_int_equal(kt_yaml_load(&node, "usage.json", text, strlen(text), &d), 0);
    int rc = kt_schema_validate(schema, node, "usage.json", &d);
    if (rc != 0) {
        kt_diag_print(&d, stderr);
        fail_msg("usage does not validate: %s", text);
    }
    kt_diag_free(&d);
    kt_node_free(node);
    free(text);
    cJSON_Delete(schema);
    cJSON_Delete(root);
}

/* A usage object as result_json.c writes it, around 'u'. */
static cJSON *usage_doc(const kt_gpu_usage *u)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "calls", 5);
    cJSON_AddNumberToObject(o, "threads", 1);
    cJSON_AddNumberToObject(o, "wall_ns_per_call", 1000);
    cJSON_AddObjectToObject(o, "counters");
    cJSON *e = cJSON_AddObjectToObject(o, "energy");
    cJSON_AddStringToObject(e, "unavailable", "not available on this machine: no RAPL");
    kt_gpu_energy_to_json(e, u);
    cJSON_AddItemToObject(o, "gpu_counters", kt_gpu_counters_to_json(u));
    return o;
}

static void test_json_round_trip(void **state)
{
    (void)state;
    kt_gpu_usage u;
    memset(&u, 0, sizeof(u));
    u.counters_done = 1;
    u.ranges = 9; /* more ranges than kept */
    u.n_kernels = 2;
    kernel_66_blocks(&u.k[0]);
    kernel_66_blocks(&u.k[1]);
    snprintf(u.k[1].range, sizeof(u.k[1].range), "1");
    u.k[1].raw[KT_GPU_WAVES] = NAN; /* refused: absent from the JSON, never 0 */
    u.unsupported[KT_GPU_WAVES] = 1;
    u.n_unsupported = 1;
    snprintf(u.unsupported_reason, sizeof(u.unsupported_reason), "CUPTI: invalid metric");
    u.energy_tried = 1;
    u.energy_j = 0.0123;
    u.energy_calls = 4000;

    cJSON *doc = usage_doc(&u);
    assert_valid_usage(doc);
    const cJSON *gc = cJSON_GetObjectItemCaseSensitive(doc, "gpu_counters");
    const cJSON *k1 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(gc, "kernels"), 1);
    assert_null(cJSON_GetObjectItemCaseSensitive(k1, "waves_per_sm"));
    assert_close(kt_json_real_value(cJSON_GetObjectItemCaseSensitive(k1, "device_sol_pct"), NAN),
                 40);

    kt_gpu_usage back;
    kt_gpu_counters_from_json(&back, gc, cJSON_GetObjectItemCaseSensitive(doc, "energy"));
    assert_int_equal(back.counters_done, 1);
    assert_int_equal(back.ranges, 9);
    assert_int_equal(back.n_kernels, 2);
    assert_string_equal(back.k[1].range, "1");
    for (int i = 0; i < KT_GPU_METRICS; i++)
        for (int k = 0; k < 2; k++) {
            if (isnan(u.k[k].raw[i]))
                assert_true(isnan(back.k[k].raw[i]));
            else
                assert_close(back.k[k].raw[i], u.k[k].raw[i]);
        }
    assert_int_equal(back.n_unsupported, 1);
    assert_true(back.unsupported[KT_GPU_WAVES]);
    assert_string_equal(back.unsupported_reason, "CUPTI: invalid metric");
    assert_int_equal(back.energy_tried, 1);
    assert_close(back.energy_j, 0.0123);
    assert_int_equal(back.energy_calls, 4000);
    cJSON_Delete(doc);

    /* without a device: the reasons, and they validate too */
    memset(&u, 0, sizeof(u));
    u.energy_tried = 1;
    snprintf(u.energy_unavailable, sizeof(u.energy_unavailable), "not available: no NVML");
    snprintf(u.counters_unavailable, sizeof(u.counters_unavailable), "not available: no device");
    doc = usage_doc(&u);
    assert_valid_usage(doc);
    kt_gpu_counters_from_json(&back, cJSON_GetObjectItemCaseSensitive(doc, "gpu_counters"),
                              cJSON_GetObjectItemCaseSensitive(doc, "energy"));
    assert_int_equal(back.counters_done, 0);
    assert_string_equal(back.counters_unavailable, "not available: no device");
    assert_string_equal(back.energy_unavailable, "not available: no NVML");
    assert_true(isnan(back.energy_j));
    cJSON_Delete(doc);
}

static void test_summary_line(void **state)
{
    (void)state;
    kt_gpu_usage u;
    memset(&u, 0, sizeof(u));
    char buf[1024];
    FILE *f = fmemopen(buf, sizeof(buf), "w");
    kt_gpu_print_line(f, &u); /* nothing when the GPU half did not run */
    fflush(f);
    assert_int_equal(ftell(f), 0);
    u.counters_done = 1;
    u.ranges = u.n_kernels = 1;
    kernel_66_blocks(&u.k[0]);
    u.energy_tried = 1;
    u.energy_j = 0.5;
    kt_gpu_print_line(f, &u);
    u.unsupported[KT_GPU_WAVES] = 1;
    u.n_unsupported = 1;
    snprintf(u.unsupported_reason, sizeof(u.unsupported_reason), "CUPTI: invalid metric");
    kt_gpu_print_line(f, &u);
    fclose(f);
    assert_non_null(strstr(buf, "energy 0.5 J/call"));
    assert_non_null(strstr(buf, "1 kernel, longest '0'"));
    assert_non_null(strstr(buf, "12.5 us"));
    assert_non_null(strstr(buf, "SOL 80% (device 40%)"));
    assert_non_null(strstr(buf, "DRAM 36%"));
    assert_non_null(strstr(buf, "(limit registers, 2 blocks/SM)"));
    assert_non_null(strstr(buf, "stalls long_scoreboard 4.5, math_pipe_throttle 2.2, wait 1.5\n"));
    assert_non_null(strstr(buf, "wait 1.5; 1 metric refused (CUPTI: invalid metric)\n"));
}

/* The report's table: a row per kernel with the binding limit in bold, a row with the reason
 * for an arm without counters, names escaped; nothing for a point without the GPU half. */
static void test_report_table(void **state)
{
    (void)state;
    kt_point_result *pt = calloc(1, sizeof(*pt));
    kt_candidate_result *cand = calloc(1, sizeof(*cand));
    assert_non_null(pt);
    assert_non_null(cand);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    kt_report_gpu_table(f, pt);
    fflush(f);
    assert_int_equal(len, 0);
    snprintf(pt->baseline.name, sizeof(pt->baseline.name), "base<1>");
    pt->baseline.profiled = 1;
    kt_gpu_usage *u = &pt->baseline.profile.gpu;
    u->counters_done = 1;
    u->ranges = u->n_kernels = 1;
    kernel_66_blocks(&u->k[0]);
    u->energy_tried = 1;
    u->energy_j = 0.25;
    pt->cands = cand;
    pt->n_cands = 1;
    snprintf(cand->arm.name, sizeof(cand->arm.name), "cand");
    cand->arm.profiled = 1;
    snprintf(cand->arm.profile.gpu.counters_unavailable,
             sizeof(cand->arm.profile.gpu.counters_unavailable), "not available: no device");
    kt_report_gpu_table(f, pt);
    fclose(f);
    assert_non_null(strstr(buf, "<table class='gpu-counters'>"));
    assert_non_null(strstr(buf, "<td>base&lt;1&gt;</td><td>0</td>"));
    assert_non_null(strstr(buf, "<td class='num'>40.0</td>")); /* device SOL */
    assert_non_null(strstr(buf, "<td class='num'><b>2</b></td>"));
    assert_non_null(strstr(buf, "long_scoreboard 4.5"));
    assert_non_null(strstr(buf, "<td class='num'>0.25</td></tr>"));
    assert_non_null(strstr(buf, "not available: no device"));
    free(buf);
    free(cand);
    free(pt);
}

/* NVML opened where there is none: a reason, never a crash or a zero. */
static void test_nvml_absent(void **state)
{
    (void)state;
    kt_nvml_energy *e = (kt_nvml_energy *)&e;
    char why[160] = "";
    if (kt_nvml_energy_open(&e, NULL, why, sizeof(why)) == 0) {
        double j = -1;
        char why2[160];
        assert_int_equal(kt_nvml_energy_read(&j, e, why2, sizeof(why2)), 0);
        assert_true(j >= 0);
        kt_nvml_energy_close(e);
        skip(); /* a machine with the driver: the absent case cannot be shown here */
    }
    assert_null(e);
    assert_true(strlen(why) > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metric_list),          cmocka_unit_test(test_device_sol),
        cmocka_unit_test(test_longest_stalls_limit), cmocka_unit_test(test_json_round_trip),
        cmocka_unit_test(test_summary_line),         cmocka_unit_test(test_nvml_absent),
        cmocka_unit_test(test_report_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
