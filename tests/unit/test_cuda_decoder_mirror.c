/* test_cuda_decoder_mirror.c - the CUDA decoder_layer variant's plan logic run on the CPU
 * through the header its kernels and host code include (kernels/cuda/decoder_plan.h), in every
 * build, GPU or not:
 *   - the launch plan: events per call, the stage of each interval between two events, in the
 *     CPU variant's order;
 *   - the working cache: the strided copy of the input cache and the appends of every block's
 *     RoPE rows write each element of [L][B][Hkv][T + 1][d] exactly once, the copy from the
 *     right input element;
 *   - the RoPE + append rows, emulated element by element, against the CPU variant's kernel
 *     (kt_dlk_rope_append) on the same layout;
 *   - the activation views: aligned, disjoint, large enough;
 *   - stage picking (kt_stage_pick): pass-through params reach the chosen variant, one it
 *     lacks is an error naming both.
 * In CUDA builds also: every '<stage>.<param>' of cuda/layer has the stage variants' default,
 * type and choices; and without a device, the variant and the example spec report "no CUDA
 * device" (skipped where a device answers). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cpu/decoder_kernels.h"
#include "cuda/decoder_plan.h"
#include "kernel.h"
#include "kernels/harness.h"
#include "stage_call.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* The dims of a decode problem (hidden 72, intermediate 100), through the op's own
 * kt_dl_dims_of. Awkward sizes: G = 3, d not a multiple of 16, batch 3, two blocks. */
static kt_dl_dims dims(int64_t l, int64_t b, int64_t hq, int64_t hkv, int64_t d, int64_t t)
{
    kt_problem p;
    memset(&p, 0, sizeof(p));
    p.m = p.batch = b;
    p.k = 72;
    p.n = 100;
    p.heads = hq;
    p.kv_heads = hkv;
    p.head_dim = d;
    p.context = t;
    p.layers = l;
    p.tensors[KT_DL_X].ndim = 2; /* [B, hidden]: a decode step */
    kt_dl_dims m;
    kt_dl_dims_of(&m, &p);
    return m;
}

static void test_launch_plan(void **state)
{
    (void)state;
    /* the CPU variant's laps per block (decoder_stages.c) */
    const int order[KT_CDL_STEPS] = {KT_DLS_NORM, KT_DLS_PROJ, KT_DLS_ROPE,
                                     KT_DLS_ATTN, KT_DLS_PROJ, KT_DLS_RES,
                                     KT_DLS_NORM, KT_DLS_MLP,  KT_DLS_RES};
    for (int64_t layers = 1; layers <= 3; layers++) {
        int64_t n = kt_cdl_events(layers);
        assert_int_equal(n, 1 + 9 * layers);
        int count[KT_DLS_COUNT] = {0};
        for (int64_t i = 0; i + 1 < n; i++) {
            int s = kt_cdl_interval_stage(i);
            assert_int_equal(s, order[i % KT_CDL_STEPS]);
            count[s]++;
        }
        const int per_block[KT_DLS_COUNT] = {2, 2, 1, 1, 1, 2};
        for (int s = 0; s < KT_DLS_COUNT; s++)
            assert_int_equal(count[s], per_block[s] * layers);
    }
}

/* Every element of the working cache is written exactly once per step: tokens 0..T-1 by the
 * copy (from the matching input element), token T by the RoPE rows of its block. */
static void test_work_cache_written_once(void **state)
{
    (void)state;
    const kt_dl_dims m = dims(2, 3, 9, 3, 6, 7);
    const size_t elem = 2;
    int64_t total = kt_cdl_work_at(&m, m.l, 0, 0, 0);
    assert_int_equal(total, m.l * m.b * m.hkv * (m.t + 1) * m.d);
    int *k_hits = calloc((size_t)total, sizeof(int)), *v_hits = calloc((size_t)total, sizeof(int));
    int64_t *from = calloc((size_t)total, sizeof(int64_t));
    assert_non_null(k_hits);
    assert_non_null(v_hits);
    assert_non_null(from);
    kt_cdl_copy c = kt_cdl_cache_copy(&m, elem);
    assert_int_equal(c.rows, m.l * m.b * m.hkv);
    for (size_t r = 0; r < c.rows; r++)
        for (size_t byte = 0; byte < c.width; byte += elem) {
            size_t dst = (r * c.dst_pitch + byte) / elem, src = (r * c.src_pitch + byte) / elem;
            k_hits[dst]++;
            v_hits[dst]++;
            from[dst] = (int64_t)src;
        }
    for (int64_t l = 0; l < m.l; l++)
        for (int64_t row = 0; row < kt_cdl_rope_rows(&m); row++) {
            kt_cdl_rope_row r = kt_cdl_rope_row_of(&m, row);
            if (r.kind == KT_CDL_ROW_Q)
                continue;
            int *hits = r.kind == KT_CDL_ROW_K ? k_hits : v_hits;
            for (int64_t c2 = 0; c2 < m.d; c2++)
                hits[kt_cdl_work_at(&m, l, 0, 0, 0) + r.dst + c2]++;
        }
    for (int64_t l = 0; l < m.l; l++)
        for (int64_t b = 0; b < m.b; b++)
            for (int64_t kh = 0; kh < m.hkv; kh++)
                for (int64_t tok = 0; tok <= m.t; tok++)
                    for (int64_t c2 = 0; c2 < m.d; c2++) {
                        int64_t at = kt_cdl_work_at(&m, l, b, kh, tok) + c2;
                        assert_int_equal(k_hits[at], 1);
                        assert_int_equal(v_hits[at], 1);
                        if (tok < m.t)
                            assert_int_equal(from[at], kt_cdl_input_at(&m, l, b, kh, tok) + c2);
                    }
    /* the input offsets are the op's: block l's cache starts at kt_dl_off_cache */
    assert_int_equal(kt_cdl_input_at(&m, 1, 0, 0, 0), (int64_t)kt_dl_off_cache(&m, 1));
    free(k_hits);
    free(v_hits);
    free(from);
}

static float rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(*s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* The rope kernel's rows, emulated element by element in fp32 storage, against the CPU
 * variant's RoPE + append on the same layout: q, the cache at token T and k_new / v_new. */
static void test_rope_rows_match_cpu(void **state)
{
    (void)state;
    const kt_dl_dims m = dims(1, 3, 9, 3, 24, 300);
    const int64_t half = m.d / 2, work = kt_cdl_work_at(&m, 1, 0, 0, 0);
    const size_t nqkv = (size_t)(m.b * m.qkv), nq = (size_t)(m.b * m.hq * m.d),
                 nnew = (size_t)(m.b * m.hkv * m.d);
    float *qkv = malloc(nqkv * sizeof(float)), *cs = malloc((size_t)m.d * sizeof(float));
    float *q[2], *k[2], *v[2], *kn[2], *vn[2];
    for (int i = 0; i < 2; i++) {
        q[i] = calloc(nq, sizeof(float));
        k[i] = calloc((size_t)work, sizeof(float));
        v[i] = calloc((size_t)work, sizeof(float));
        kn[i] = calloc(nnew, sizeof(float));
        vn[i] = calloc(nnew, sizeof(float));
        assert_non_null(q[i]);
        assert_non_null(k[i]);
        assert_non_null(v[i]);
        assert_non_null(kn[i]);
        assert_non_null(vn[i]);
    }
    uint64_t seed = 17;
    for (size_t i = 0; i < nqkv; i++)
        qkv[i] = rnd(&seed);
    double angles[24];
    kt_dl_rope_angles(angles, angles + half, m.d, m.t);
    for (int64_t c = 0; c < m.d; c++)
        cs[c] = (float)angles[c];
    /* the CPU variant's kernel */
    kt_dlk_rope_args a = {&m,   KT_DTYPE_FP32, qkv,   KT_DTYPE_FP32, q[0], KT_DTYPE_FP32,
                          k[0], v[0],          kn[0], vn[0],         cs,   cs + half};
    kt_dlk_rope_append(&a, 0, 1);
    /* the CUDA kernel's rows, each element written once */
    int *q_hits = calloc(nq, sizeof(int));
    assert_non_null(q_hits);
    for (int64_t row = 0; row < kt_cdl_rope_rows(&m); row++) {
        kt_cdl_rope_row r = kt_cdl_rope_row_of(&m, row);
        float *dst = r.kind == KT_CDL_ROW_Q ? q[1] : r.kind == KT_CDL_ROW_K ? k[1] : v[1];
        float *nw = r.kind == KT_CDL_ROW_K ? kn[1] : vn[1];
        for (int64_t c = 0; c < half; c++) {
            float x0 = qkv[r.src + c], x1 = qkv[r.src + c + half], y0 = x0, y1 = x1;
            if (r.rotate)
                kt_cdl_rotate(&y0, &y1, x0, x1, cs[c], cs[half + c]);
            dst[r.dst + c] = y0;
            dst[r.dst + c + half] = y1;
            if (r.kind == KT_CDL_ROW_Q) {
                q_hits[r.dst + c]++;
                q_hits[r.dst + c + half]++;
            } else {
                nw[r.new_at + c] = y0;
                nw[r.new_at + c + half] = y1;
            }
        }
    }
    for (size_t i = 0; i < nq; i++)
        assert_int_equal(q_hits[i], 1);
    struct {
        float **p;
        size_t n;
    } outs[] = {{q, nq}, {k, (size_t)work}, {v, (size_t)work}, {kn, nnew}, {vn, nnew}};
    for (size_t o = 0; o < 5; o++)
        for (size_t i = 0; i < outs[o].n; i++) {
            float want = outs[o].p[0][i], got = outs[o].p[1][i];
            if (fabsf(want - got) > 1e-6f * (1.0f + fabsf(want)))
                fail_msg("output %zu element %zu: cpu %.9g, cuda rows %.9g", o, i, want, got);
        }
    free(q_hits);
    free(qkv);
    free(cs);
    for (int i = 0; i < 2; i++) {
        free(q[i]);
        free(k[i]);
        free(v[i]);
        free(kn[i]);
        free(vn[i]);
    }
}

static void test_buffers(void **state)
{
    (void)state;
    const kt_dl_dims m = dims(2, 5, 5, 1, 40, 33);
    for (size_t elem = 2; elem <= 4; elem += 2) {
        kt_cdl_buffers bufs;
        kt_cdl_buffers_of(&bufs, &m, elem);
        const int64_t want[KT_CDL_N_BUFS] = {m.b * m.h,        m.b * m.h,        m.b * m.qkv,
                                             m.b * m.hq * m.d, m.b * m.hq * m.d, m.b * m.h,
                                             m.b * m.h,        m.b * m.h};
        for (int i = 0; i < KT_CDL_N_BUFS; i++) {
            assert_int_equal(bufs.at[i] % KT_CDL_ALIGN, 0);
            assert_int_equal(bufs.bytes[i], (size_t)want[i] * elem);
            assert_true(bufs.at[i] + bufs.bytes[i] <= bufs.total);
            if (i > 0)
                assert_true(bufs.at[i - 1] + bufs.bytes[i - 1] <= bufs.at[i]);
        }
    }
}

/* kt_stage_pick on the CPU variant's table (every build): the chosen variant gets the
 * '<stage>.<param>' values it has; one it lacks, set away from its default, is an error. */
static void test_stage_pick(void **state)
{
    (void)state;
    const kt_variant *layer = kt_variant_find("decoder_layer", "cpu", "layer");
    assert_non_null(layer);
    kt_param_value params[KT_MAX_PARAMS];
    kt_param_defaults(params, layer->params, layer->n_params);
    kt_problem p;
    memset(&p, 0, sizeof(p));
    p.op = kt_op_find("decoder_layer");
    kt_call call = {NULL, &p, params, NULL, NULL, 1, -1, 1, NULL, &kt_registry_lookup};
    int choice = kt_param_index(layer->params, layer->n_params, "attention");
    int delta = kt_param_index(layer->params, layer->n_params, "attention.delta");
    assert_true(choice >= 0 && delta >= 0);
    params[choice].num = kt_param_choice_index(layer->params[choice].choices, "ffd");
    params[delta].num = 5;
    kt_stage_call s;
    memset(&s, 0, sizeof(s));
    assert_int_equal(kt_stage_pick(&s, &call, layer->params, layer->n_params, choice, "attention",
                                   "attention_decode", "cpu"),
                     KT_OK);
    assert_string_equal(s.variant->name, "ffd");
    assert_true(s.params[kt_param_index(s.variant->params, s.variant->n_params, "delta")].num == 5);
    params[choice].num = kt_param_choice_index(layer->params[choice].choices, "dense");
    assert_int_equal(kt_stage_pick(&s, &call, layer->params, layer->n_params, choice, "attention",
                                   "attention_decode", "cpu"),
                     KT_EINVAL);
    assert_string_equal(kt_error_last(), "decoder_layer: attention.delta is set but "
                                         "attention_decode variant 'dense' has no param 'delta'");
    assert_int_equal(kt_stage_pick(&s, &call, layer->params, layer->n_params, choice, "attention",
                                   "attention_decode", "nowhere"),
                     KT_EINVAL);
}

#ifdef KT_HAVE_CUDA
/* Every '<stage>.<param>' of cuda/layer: at least one cuda variant of the stage's op has it,
 * and each that has it agrees on type, default and choices; each stage choice is registered. */
static void test_pass_through_matches_variants(void **state)
{
    (void)state;
    const kt_variant *layer = kt_variant_find("decoder_layer", "cuda", "layer");
    assert_non_null(layer);
    const char *stages[][2] = {
        {"attention", "attention_decode"}, {"mlp", "swiglu_mlp"}, {"gemm", "gemm"}};
    for (size_t s = 0; s < 3; s++) {
        const kt_param_def *choice =
            &layer->params[kt_param_index(layer->params, layer->n_params, stages[s][0])];
        char name[KT_NAME_MAX];
        for (int c = 0; kt_param_choice_name(name, sizeof(name), choice->choices, c)[0]; c++)
            assert_non_null(kt_variant_find(stages[s][1], "cuda", name));
        size_t len = strlen(stages[s][0]);
        for (int i = 0; i < layer->n_params; i++) {
            const kt_param_def *own = &layer->params[i];
            if (strncmp(own->name, stages[s][0], len) != 0 || own->name[len] != '.')
                continue;
            int found = 0;
            for (int c = 0; kt_param_choice_name(name, sizeof(name), choice->choices, c)[0]; c++) {
                const kt_variant *v = kt_variant_find(stages[s][1], "cuda", name);
                int at = kt_param_index(v->params, v->n_params, own->name + len + 1);
                if (at < 0)
                    continue;
                found++;
                if (v->params[at].type != own->type || v->params[at].def != own->def ||
                    (own->choices && strcmp(own->choices, v->params[at].choices) != 0))
                    fail_msg("%s differs from %s/%s's '%s'", own->name, stages[s][1], name,
                             v->params[at].name);
            }
            if (!found)
                fail_msg("%s: no cuda %s variant has it", own->name, stages[s][1]);
        }
    }
}

/* Without a device the variant reports "no CUDA device" through the kernel harness, and the
 * example spec validates while 'run' exits 69 with the same reason: no crash. */
static void test_no_device_reported(void **state)
{
    (void)state;
    kt_point pt;
    memset(&pt, 0, sizeof(pt));
    pt.model = (kt_model){"tiny", 72, 9, 3, 24, 100, 0};
    pt.batch_size = 2;
    pt.context_length = 33;
    kt_test_result r = kt_test_run("cuda", "decoder_layer", "layer", &pt, KT_DTYPE_BF16,
                                   KT_DIST_NORMAL, NULL, NULL, 1, 1);
    if (r.status == KT_OK)
        skip(); /* a device answers: tests/gpu/test_cuda_decoder.c checks the outputs */
    assert_int_equal(r.status, KT_ENODEV);
    assert_memory_equal(r.error, "no CUDA device: ", strlen("no CUDA device: "));
    const char *src = getenv("KT_SOURCE_DIR"), *build = getenv("KT_BUILD_DIR");
    assert_non_null(src);
    assert_non_null(build);
    char out[] = "/tmp/kt-cdl-XXXXXX", cmd[2048], text[4096] = "";
    assert_non_null(mkdtemp(out));
    snprintf(
        cmd, sizeof(cmd),
        "'%s/ktrial' validate '%s/experiments/decode-step-cuda.yaml' >/dev/null 2>&1 || exit 3;"
        " '%s/ktrial' run '%s/experiments/decode-step-cuda.yaml' -o '%s/run' 2>&1",
        build, src, build, src, out);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(text, 1, sizeof(text) - 1, p);
    text[n] = '\0';
    int status = pclose(p);
    print_message("%s", text);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 69);
    assert_non_null(strstr(text, "no CUDA device"));
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", out);
    assert_int_equal(system(cmd), 0);
}

/* Prefill is refused for validation through the registry's phase table, decode is not. */
static void test_prefill_refused(void **state)
{
    (void)state;
    const kt_variant *v = kt_variant_find("decoder_layer", "cuda", "layer");
    assert_non_null(v);
    kt_param_value params[KT_MAX_PARAMS];
    kt_param_defaults(params, v->params, v->n_params);
    int blame = 0;
    const char *why = kt_variant_phase_refusal(v, params, KT_PHASE_PREFILL, &blame);
    assert_non_null(why);
    assert_non_null(strstr(why, "prefill is not built on cuda"));
    assert_int_equal(blame, -1);
    assert_null(kt_variant_phase_refusal(v, params, KT_PHASE_DECODE, &blame));
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_launch_plan),
        cmocka_unit_test(test_work_cache_written_once),
        cmocka_unit_test(test_rope_rows_match_cpu),
        cmocka_unit_test(test_buffers),
        cmocka_unit_test(test_stage_pick),
#ifdef KT_HAVE_CUDA
        cmocka_unit_test(test_pass_through_matches_variants),
        cmocka_unit_test(test_no_device_reported),
        cmocka_unit_test(test_prefill_refused),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
