/* test_spec.c - loading specs: defaults, resolved values, backend resolution, the order of the
 * validation stages, every meaning problem reported at its place, budget, models. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "decide/sequential.h"
#include "measure/calibrate_rates.h"
#include "spec/embedded.h"
#include "spec/plan.h"
#include "spec/spec.h"
#include "spec/yaml_tree.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEAD                                                                                       \
    "version: 1\n"                                                                                 \
    "name: t\n"                                                                                    \
    "op: synthetic\n"
#define AXES                                                                                       \
    "batch_sizes: [1, 4]\n"                                                                        \
    "context_lengths: [1024]\n"
#define ARMS                                                                                       \
    "baseline:\n"                                                                                  \
    "  variant: lognormal\n"                                                                       \
    "candidates:\n"                                                                                \
    "  - name: fast\n"                                                                             \
    "    variant: lognormal\n"                                                                     \
    "    params: {median_us: 50, fail: nan}\n"
#define MINIMAL HEAD AXES ARMS

static int parse(kt_spec **out, const char *text, const kt_spec_options *opts, kt_diag *d)
{
    kt_diag_init(d);
    return kt_spec_parse(out, "t.yaml", text, strlen(text), opts, d);
}

/* Asserts diagnostic 'i' is an error "line:col: message". */
static void assert_diag(const kt_diag *d, size_t i, int line, int col, const char *message)
{
    assert_true(i < d->n);
    assert_string_equal(d->items[i].message, message);
    assert_int_equal(d->items[i].line, line);
    assert_int_equal(d->items[i].col, col);
    assert_string_equal(d->items[i].file, "t.yaml");
}

static double param(const kt_arm *arm, const char *name)
{
    int i = kt_param_index(arm->variant->params, arm->variant->n_params, name);
    assert_true(i >= 0);
    return arm->params[i].num;
}

static void test_defaults(void **state)
{
    (void)state;
    kt_spec *s;
    kt_diag d;
    assert_int_equal(parse(&s, MINIMAL, NULL, &d), 0);
    assert_int_equal(d.n, 0);
    assert_int_equal(s->version, 1);
    assert_string_equal(s->name, "t");
    assert_null(s->description);
    assert_string_equal(s->op->name, "synthetic");
    assert_string_equal(s->backend_requested, "auto");
    assert_string_equal(s->backend, "sim"); /* auto resolves to the op's only backend */
    assert_int_equal(s->dtype, KT_DTYPE_FP32);
    assert_int_equal(s->threads, 0);
    assert_int_equal(s->n_models, 0);
    assert_int_equal(s->n_batch_sizes, 2);
    assert_int_equal(s->batch_sizes[1], 4);
    assert_int_equal(s->n_context_lengths, 1);
    assert_int_equal(s->context_lengths[0], 1024);
    assert_int_equal(s->n_phases, 0); /* synthetic has no phase axis */
    assert_int_equal(s->n_roles, 0);
    assert_int_equal(s->distribution, KT_DIST_NORMAL);
    assert_int_equal(s->seed, 0);
    assert_int_equal(s->input_sets, 3);
    assert_string_equal(s->baseline.name, "baseline");
    assert_string_equal(s->baseline.variant->name, "lognormal");
    assert_float_equal(param(&s->baseline, "median_us"), 100, 0); /* the variant's default */
    assert_int_equal(s->baseline.line, 6);                        /* the 'baseline' key */
    assert_int_equal(s->n_candidates, 1);
    assert_string_equal(s->candidates[0].name, "fast");
    assert_float_equal(param(&s->candidates[0], "median_us"), 50, 0);
    assert_float_equal(param(&s->candidates[0], "spread"), 0.02, 0);
    assert_float_equal(param(&s->candidates[0], "fail"), 2, 0); /* none|error|nan: index 2 */
    assert_int_equal(s->warmup, 3);
    assert_int_equal(s->min_repetitions, 7);
    assert_int_equal(s->max_repetitions, 200);
    assert_float_equal(s->max_seconds_per_point, 20, 0);
    assert_int_equal(s->order, KT_ORDER_RANDOM);
    assert_int_equal(s->flush_cache, 1);
    assert_true(isnan(s->numerics.max_rel_l2));
    assert_true(isnan(s->numerics.min_cosine));
    assert_true(isnan(s->numerics.max_abs));
    assert_true(isnan(s->numerics.max_error_vs_baseline));
    assert_int_equal(s->numerics.bitwise_repeatable, 0);
    assert_float_equal(s->min_speedup, 1.0, 0);
    assert_float_equal(s->confidence, 0.95, 0);
    assert_true(isnan(s->max_memory_ratio));
    assert_int_equal(s->aggregate, KT_AGGREGATE_ALL);
    assert_true(isnan(s->budget_minutes));
    assert_int_equal(s->len, strlen(MINIMAL));
    assert_string_equal(s->bytes, MINIMAL);
    kt_spec_free(s);
    kt_diag_free(&d);
}

static void test_every_value(void **state)
{
    (void)state;
    const char *text =
        HEAD "description: all of it\n"
             "backend: sim\n"
             "dtype: bf16\n"
             "threads: 2\n" AXES "inputs: {distribution: llm, seed: 42, sets: 5}\n" ARMS "trials:\n"
             "  warmup: 0\n"
             "  min_repetitions: 4\n"
             "  max_repetitions: 9\n"
             "  max_seconds_per_point: 1.5\n"
             "  order: alternate\n"
             "  flush_cache: false\n"
             "thresholds:\n"
             "  numerics: {max_rel_l2: 0.01, min_cosine: 0.999, max_abs: 0.05,\n"
             "             max_error_vs_baseline: 4, bitwise_repeatable: true}\n"
             "  latency: {min_speedup: 0.9, confidence: 0.99}\n"
             "  memory: {max_ratio: 1.5}\n"
             "  aggregate: geomean\n"
             "budget: {max_minutes: 30}\n";
    kt_spec *s;
    kt_diag d;
    assert_int_equal(parse(&s, text, NULL, &d), 0);
    assert_string_equal(s->description, "all of it");
    assert_string_equal(s->backend_requested, "sim");
    assert_int_equal(s->dtype, KT_DTYPE_BF16);
    assert_int_equal(s->threads, 2);
    assert_int_equal(s->distribution, KT_DIST_LLM);
    assert_int_equal(s->seed, 42);
    assert_int_equal(s->input_sets, 5);
    assert_int_equal(s->warmup, 0);
    assert_int_equal(s->min_repetitions, 4);
    assert_int_equal(s->max_repetitions, 9);
    assert_float_equal(s->max_seconds_per_point, 1.5, 0);
    assert_int_equal(s->order, KT_ORDER_ALTERNATE);
    assert_int_equal(s->flush_cache, 0);
    assert_float_equal(s->numerics.max_rel_l2, 0.01, 0);
    assert_float_equal(s->numerics.min_cosine, 0.999, 0);
    assert_float_equal(s->numerics.max_abs, 0.05, 0);
    assert_float_equal(s->numerics.max_error_vs_baseline, 4, 0);
    assert_int_equal(s->numerics.bitwise_repeatable, 1);
    assert_float_equal(s->min_speedup, 0.9, 0);
    assert_float_equal(s->confidence, 0.99, 0);
    assert_float_equal(s->max_memory_ratio, 1.5, 0);
    assert_int_equal(s->aggregate, KT_AGGREGATE_GEOMEAN);
    assert_float_equal(s->budget_minutes, 30, 0);
    assert_string_equal(kt_order_name(s->order), "alternate");
    assert_string_equal(kt_aggregate_name(s->aggregate), "geomean");
    assert_string_equal(kt_order_name(KT_ORDER_GROUPED), "grouped");
    assert_string_equal(kt_aggregate_name(KT_AGGREGATE_ALL), "all");
    /* the document stays for later lookups */
    const kt_node *n = kt_node_at_path(s->root, "trials.max_repetitions");
    assert_non_null(n);
    assert_int_equal(n->line, 20);
    assert_null(kt_node_at_path(s->root, "trials.nothing"));
    kt_spec_free(s);
    kt_diag_free(&d);
}

static void test_backend_override(void **state)
{
    (void)state;
    kt_spec *s;
    kt_diag d;
    kt_spec_options cpu = {"cpu", 0};
    assert_int_equal(parse(&s, MINIMAL, &cpu, &d), -1);
    assert_null(s);
    assert_int_equal(d.n, 1);
    assert_diag(&d, 0, 3, 5, "--backend: op 'synthetic' runs only on backend 'sim', not 'cpu'");
    kt_diag_free(&d);
    /* the spec's own backend is reported at its line */
    assert_int_equal(parse(&s, HEAD "backend: cpu\n" AXES ARMS, NULL, &d), -1);
    assert_diag(&d, 0, 4, 10, "backend: op 'synthetic' runs only on backend 'sim', not 'cpu'");
    kt_diag_free(&d);
    /* and the override wins over it */
    kt_spec_options sim = {"sim", 0};
    assert_int_equal(parse(&s, HEAD "backend: cpu\n" AXES ARMS, &sim, &d), 0);
    assert_string_equal(s->backend_requested, "sim");
    assert_string_equal(s->backend, "sim");
    kt_spec_free(s);
    kt_diag_free(&d);
}

static void test_resolve_backend(void **state)
{
    (void)state;
    char out[16], why[256];
    const kt_op *synthetic = kt_op_find("synthetic");
    assert_int_equal(kt_spec_resolve_backend(out, sizeof(out), synthetic, "auto", why, sizeof(why)),
                     0);
    assert_string_equal(out, "sim");
    assert_int_equal(kt_spec_resolve_backend(out, sizeof(out), synthetic, "gpu", why, sizeof(why)),
                     -1);
    assert_string_equal(why, "unknown backend 'gpu' (choose auto, cpu, cuda, sim or process)");
    /* an op with no variant anywhere: auto picks cuda or cpu, which it cannot run on */
    static const kt_op lonely = {"lonely", "", KT_AXIS_BATCH, 0, NULL, NULL, 0, NULL, NULL, NULL};
    assert_int_equal(kt_spec_resolve_backend(out, sizeof(out), &lonely, "cpu", why, sizeof(why)),
                     -1);
    assert_string_equal(why, "op 'lonely' has no variants on backend 'cpu'");
    if (!kt_backend_find("cuda")) {
        assert_int_equal(
            kt_spec_resolve_backend(out, sizeof(out), &lonely, "cuda", why, sizeof(why)), -1);
        assert_string_equal(why, "backend 'cuda' is not built into this ktrial (configure with "
                                 "-DKT_CUDA=ON)");
    }
}

/* The registry's table is the one list of backend names: every built backend is in it with
 * the capabilities it declares, the spec schemas' backend enums list it (backend_requested
 * with auto first), and auto is the GPU where one answers, else the CPU. */
static void test_backend_table(void **state)
{
    (void)state;
    for (int i = 0; i < kt_backend_count(); i++) {
        const kt_backend_iface *b = kt_backend_at(i);
        assert_non_null(b->caps);
        assert_ptr_equal(kt_backend_caps_of(b->name), b->caps);
        assert_ptr_equal(kt_backend_find(b->name), b);
        assert_string_equal(kt_backend_build_hint(b->name), "");
    }
    assert_int_equal(kt_backend_caps_of("nonesuch")->clock, KT_CLOCK_HOST);
    assert_int_equal(kt_backend_caps_of("cuda")->noise, KT_NOISE_LEVEL); /* built or not */
    assert_int_equal(kt_backend_caps_of("sim")->clock, KT_CLOCK_VIRTUAL);
    const kt_backend_iface *host = kt_backend_auto(KT_AUTO_HOST);
    assert_non_null(host);
    assert_false(host->caps->needs_device);
    const kt_backend_iface *gpu = kt_backend_auto(KT_AUTO_DEVICE);
    assert_ptr_equal(gpu, kt_backend_find("cuda"));
    assert_ptr_equal(kt_backend_auto(0), gpu ? gpu : host);

    cJSON *schema =
        cJSON_ParseWithLength(kt_embedded_experiment_schema, kt_embedded_experiment_schema_len);
    assert_non_null(schema);
    cJSON *choices = cJSON_GetObjectItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(schema, "properties"), "backend"), "enum");
    assert_int_equal(cJSON_GetArraySize(choices), 1 + kt_backend_name_count());
    assert_string_equal(cJSON_GetArrayItem(choices, 0)->valuestring, "auto");
    for (int i = 0; i < kt_backend_name_count(); i++)
        assert_string_equal(cJSON_GetArrayItem(choices, 1 + i)->valuestring, kt_backend_name_at(i));
    cJSON_Delete(schema);
}

static void test_size_limit(void **state)
{
    (void)state;
    size_t len = 1200000;
    char *big = malloc(len);
    assert_non_null(big);
    memset(big, '#', len);
    kt_spec *s;
    kt_diag d;
    kt_diag_init(&d);
    assert_int_equal(kt_spec_parse(&s, "t.yaml", big, len, NULL, &d), -1);
    assert_int_equal(d.n, 1);
    assert_string_equal(d.items[0].message, "spec is 1200000 bytes; the limit is 1048576");
    assert_int_equal(d.items[0].line, 0);
    free(big);
    kt_diag_free(&d);
}

/* A YAML problem stops before the schema, which would have complained about 'name: 7'. */
static void test_yaml_stage_stops(void **state)
{
    (void)state;
    kt_spec *s;
    kt_diag d;
    assert_int_equal(parse(&s, "version: 1\nname: 7\nname: 8\nflush: yes\n", NULL, &d), -1);
    assert_int_equal(d.n, 2);
    assert_int_equal(d.n_errors, 2);
    assert_int_equal(d.items[0].line, 3);
    assert_non_null(strstr(d.items[0].message, "duplicate key 'name'"));
    assert_int_equal(d.items[1].line, 4);
    kt_diag_free(&d);
}

/* The schema stage reports everything it finds and stops the meaning stage. */
static void test_schema_stage_stops(void **state)
{
    (void)state;
    kt_spec *s;
    kt_diag d;
    /* schema: batch size 0 and an unknown key; meaning (not reached): a misspelled variant */
    assert_int_equal(parse(&s,
                           HEAD "batch_sizes: [0]\ncontext_lengths: [8]\nbogus: 1\n"
                                "baseline: {variant: nope}\n"
                                "candidates: [{name: a, variant: lognormal}]\n",
                           NULL, &d),
                     -1);
    assert_int_equal(d.n_errors, 2);
    assert_int_equal(d.items[0].line, 4);
    assert_int_equal(d.items[1].line, 6);
    for (size_t i = 0; i < d.n; i++)
        assert_null(strstr(d.items[i].message, "nope"));
    kt_diag_free(&d);
}

/* Every meaning problem is reported, in the order of the file. */
static void test_meaning_reports_all_sorted(void **state)
{
    (void)state;
    const char *text = HEAD AXES "trials: {min_repetitions: 30, max_repetitions: 20}\n"
                                 "baseline:\n"
                                 "  variant: lognormall\n"
                                 "candidates:\n"
                                 "  - name: baseline\n"
                                 "    variant: lognormal\n"
                                 "    params: {spread: 4, medain_us: 1}\n"
                                 "exclude: [{model: x}]\n";
    kt_spec *s;
    kt_diag d;
    assert_int_equal(parse(&s, text, NULL, &d), -1);
    assert_int_equal(d.n, 6);
    assert_diag(&d, 0, 6, 48, "trials.max_repetitions: 20 is less than min_repetitions (30)");
    assert_diag(&d, 1, 8, 12,
                "baseline.variant: op 'synthetic' has no variant 'lognormall' on backend 'sim'; "
                "did you mean 'lognormal'?");
    assert_diag(&d, 2, 10, 11,
                "candidates[0].name: 'baseline' is reserved for the baseline; pick another name");
    assert_diag(&d, 3, 12, 22, "candidates[0].params.spread: 4 is out of range [0, 3]");
    assert_diag(&d, 4, 12, 25,
                "candidates[0].params: variant 'lognormal' has no param 'medain_us'; did you "
                "mean 'median_us'?");
    assert_diag(&d, 5, 13, 12,
                "exclude[0]: 'model' is not an axis of op 'synthetic' (axes: batch_size, "
                "context_length)");
    kt_diag_free(&d);
}

static void test_warnings_do_not_fail(void **state)
{
    (void)state;
    kt_spec *s;
    kt_diag d;
    assert_int_equal(parse(&s, MINIMAL "exclude: [{batch_size: 2}]\n", NULL, &d), 0);
    assert_non_null(s);
    assert_int_equal(d.n, 1);
    assert_int_equal(d.n_errors, 0);
    assert_int_equal(d.items[0].severity, KT_DIAG_WARNING);
    assert_diag(&d, 0, 12, 11, "exclude[0] matches no point");
    assert_int_equal(s->n_exclude, 1);
    assert_int_equal(s->exclude[0].axes, KT_AXIS_BATCH);
    assert_int_equal(s->exclude[0].point.batch_size, 2);
    kt_spec_free(s);
    kt_diag_free(&d);
}

static void test_budget(void **state)
{
    (void)state;
    /* 1 s per call: checks and warmup alone take 2 points x 2 arms x 6 calls = 24 s */
    const char *text = HEAD AXES "baseline: {variant: lognormal, params: {median_us: 1000000}}\n"
                                 "candidates: [{name: a, variant: lognormal}]\n"
                                 "budget:\n"
                                 "  max_minutes: 0.2\n";
    kt_spec *s;
    kt_diag d;
    assert_int_equal(parse(&s, text, NULL, &d), -1);
    assert_int_equal(d.n, 1);
    assert_int_equal(d.items[0].line, 9);
    assert_int_equal(d.items[0].col, 16);
    assert_non_null(strstr(d.items[0].message, "budget.max_minutes: the plan needs up to"));
    kt_diag_free(&d);
    kt_spec_options force = {NULL, 1};
    assert_int_equal(parse(&s, text, &force, &d), 0);
    assert_float_equal(s->budget_minutes, 0.2, 0);
    kt_spec_free(s);
    kt_diag_free(&d);

    /* a plan of seconds against a smaller budget says how many, not "0.0 minutes" */
    const char *small = HEAD AXES "baseline: {variant: lognormal, params: {median_us: 1000}}\n"
                                  "candidates: [{name: a, variant: lognormal}]\n"
                                  "budget:\n"
                                  "  max_minutes: 0.001\n";
    assert_int_equal(parse(&s, small, NULL, &d), -1);
    assert_int_equal(d.n, 1);
    assert_non_null(strstr(d.items[0].message, "budget.max_minutes: the plan needs up to 0.0"));
    assert_null(strstr(d.items[0].message, "up to 0.0 minutes"));
    assert_null(strstr(d.items[0].message, "up to 0.000 minutes"));
    kt_diag_free(&d);
}

static void test_load_files(void **state)
{
    (void)state;
    kt_spec *s;
    kt_diag d;
    kt_diag_init(&d);
    assert_int_equal(kt_spec_load(&s, "/nonexistent/x.yaml", NULL, &d), -1);
    assert_string_equal(d.items[0].message, "cannot open: No such file or directory");
    kt_diag_free(&d);

    const char *src = getenv("KT_SOURCE_DIR");
    char path[4096];
    snprintf(path, sizeof(path), "%s/experiments/sim-quickstart.yaml", src ? src : ".");
    kt_diag_init(&d);
    assert_int_equal(kt_spec_load(&s, path, NULL, &d), 0);
    assert_string_equal(s->path, path);
    assert_string_equal(s->name, "sim-quickstart");
    assert_int_equal(s->n_candidates, 2);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char buf[8192];
    size_t n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    assert_int_equal(s->len, n);
    assert_memory_equal(s->bytes, buf, n);
    kt_spec_free(s);
    kt_diag_free(&d);
}

/* With an op that has a model axis (once the registry has one): catalog names, inline models
 * with only the fields the op reads, misspelled names with a suggestion. */
static void test_models(void **state)
{
    (void)state;
    const kt_op *op = NULL;
    const kt_variant *var = NULL;
    for (int i = 0; i < kt_op_count() && !var; i++) {
        op = kt_op_at(i);
        if (!(op->axes & KT_AXIS_MODEL) || (op->model_fields & KT_MODEL_HEAD_DIM) == 0)
            continue;
        for (int j = 0; j < kt_variant_count() && !var; j++)
            if (strcmp(kt_variant_at(j)->op, op->name) == 0 &&
                strcmp(kt_variant_at(j)->backend, "cpu") == 0)
                var = kt_variant_at(j);
    }
    if (!var)
        skip(); /* no op reading head_dim has a cpu variant in this build */
    char text[2048];
    int n = snprintf(text, sizeof(text), "version: 1\nname: m\nop: %s\nbackend: cpu\n", op->name);
    n += snprintf(text + n, sizeof(text) - (size_t)n,
                  "models:\n"                                /* line 5 */
                  "  - llama-3.2-1b\n"                       /* line 6 */
                  "  - llama-3.2-1bb\n"                      /* line 7 */
                  "  - {name: tiny, hidden: 64, heads: 2}\n" /* line 8 */
                  "%s%s%s",
                  op->axes & KT_AXIS_BATCH ? "batch_sizes: [1]\n" : "",
                  op->axes & KT_AXIS_CONTEXT ? "context_lengths: [64]\n" : "", "threads: 1\n");
    snprintf(text + n, sizeof(text) - (size_t)n,
             "baseline: {variant: %s}\ncandidates: [{name: a, variant: %s}]\n", var->name,
             var->name);
    kt_spec *s;
    kt_diag d;
    assert_int_equal(parse(&s, text, NULL, &d), -1);
    assert_true(d.n >= 2);
    assert_diag(&d, 0, 7, 5,
                "models[1]: unknown model 'llama-3.2-1bb'; did you mean 'llama-3.2-1b'?");
    char expected[256];
    snprintf(expected, sizeof(expected), "models[2]: inline model 'tiny' needs '%s' for op '%s'",
             (op->model_fields & KT_MODEL_KV_HEADS) ? "kv_heads" : "head_dim", op->name);
    assert_diag(&d, 1, 8, 5, expected);
    kt_diag_free(&d);
}

/* gemm reads of a model what its roles read: an MLP-only inline model serves gate_up and down,
 * is refused for o at the model, and a qkv point an include rule adds is refused by name. */
static void test_gemm_roles_need_their_fields(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"roles: [gate_up, down]\n", NULL},
        {"roles: [o]\n", "models[0]: inline model 'mlp' needs 'heads' for op 'gemm'"},
        {"roles: [down]\ninclude: [{model: mlp, role: qkv, batch_size: 1}]\n",
         "models[0]: point 'mlp/decode/qkv/b1': gemm: model 'mlp' has no 'heads', which role "
         "'qkv' reads"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[1024];
        snprintf(text, sizeof(text),
                 "version: 1\nname: m\nop: gemm\nbackend: cpu\n"
                 "models:\n  - {name: mlp, hidden: 64, intermediate: 96}\n" /* line 6 */
                 "batch_sizes: [1, 3]\n%s"
                 "baseline: {variant: blas}\ncandidates: [{name: a, variant: tiled}]\n",
                 cases[i][0]);
        kt_spec *s = NULL;
        kt_diag d;
        int rc = parse(&s, text, NULL, &d);
        if (!cases[i][1]) {
            kt_diag_print(&d, stderr);
            assert_int_equal(rc, 0);
            assert_int_equal(s->n_roles, 2);
            kt_spec_free(s);
        } else {
            assert_int_equal(rc, -1);
            assert_diag(&d, 0, 6, 5, cases[i][1]);
        }
        kt_diag_free(&d);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_every_value),
        cmocka_unit_test(test_backend_override),
        cmocka_unit_test(test_resolve_backend),
        cmocka_unit_test(test_backend_table),
        cmocka_unit_test(test_size_limit),
        cmocka_unit_test(test_yaml_stage_stops),
        cmocka_unit_test(test_schema_stage_stops),
        cmocka_unit_test(test_meaning_reports_all_sorted),
        cmocka_unit_test(test_warnings_do_not_fail),
        cmocka_unit_test(test_budget),
        cmocka_unit_test(test_load_files),
        cmocka_unit_test(test_models),
        cmocka_unit_test(test_gemm_roles_need_their_fields),
    };
    /* validation as the command line has it: the looks checked, the start-up measured */
    kt_spec_use_design_check(kt_design_check);
    kt_plan_use_rates(kt_calibration_get);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
