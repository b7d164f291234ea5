/* pipeline.c - a small decode-step program for command trials: a few transformer layers of
 * llama-3.2-1b's shape (random bf16 weights, a KV cache of the task's context length), run
 * as decode steps with the attention chosen by a flag. It stands in for a serving engine's
 * benchmark binary in experiments/pipeline-command.yaml.
 *
 *   pipeline --attention dense|ffd --in TASK.json --out OUT.f32 [--layers N] [--threads N]
 *
 * TASK.json: {"context_length": 4096, "steps": 4, "seed": 3}. The program generates the
 * weights and the cache (untimed), runs 'steps' decode steps of the layers (timed), writes
 * the last step's output hidden state as raw f32 to OUT, and prints
 * {"metric": "tokens_per_s", "value": ...} and {"metric": "step_ms", "value": ...} on stdout.
 * It uses the decoder_layer op and its CPU 'layer' variant of the kernel library. */
#include "kernel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The integer after "key": in the JSON text 's', or 'fallback'. */
static long json_int(const char *s, const char *key, long fallback)
{
    char quoted[64];
    snprintf(quoted, sizeof(quoted), "\"%s\"", key);
    const char *p = strstr(s, quoted);
    if (!p || !(p = strchr(p + strlen(quoted), ':')))
        return fallback;
    return strtol(p + 1, NULL, 10);
}

static int fail(const char *what)
{
    fprintf(stderr, "pipeline: %s: %s\n", what, kt_error_last());
    return 1;
}

static int usage(void)
{
    fprintf(stderr, "usage: pipeline --attention dense|ffd --in TASK.json --out OUT.f32 "
                    "[--layers N] [--threads N]\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *attention = NULL, *in = NULL, *out = NULL;
    int layers = 2, threads = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--attention") == 0)
            attention = argv[i + 1];
        else if (strcmp(argv[i], "--in") == 0)
            in = argv[i + 1];
        else if (strcmp(argv[i], "--out") == 0)
            out = argv[i + 1];
        else if (strcmp(argv[i], "--layers") == 0)
            layers = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--threads") == 0)
            threads = atoi(argv[i + 1]);
        else
            return usage();
    }
    if (!attention || !in || !out || argc % 2 == 0 || layers < 1 || threads < 1)
        return usage();
    char task[4096] = "";
    FILE *f = fopen(in, "r");
    if (!f || fread(task, 1, sizeof(task) - 1, f) == 0) {
        fprintf(stderr, "pipeline: cannot read the task '%s'\n", in);
        return 1;
    }
    fclose(f);
    long context = json_int(task, "context_length", 0), steps = json_int(task, "steps", 4);
    uint64_t seed = (uint64_t)json_int(task, "seed", 1);
    if (context < 1 || steps < 1) {
        fprintf(stderr, "pipeline: '%s' needs a positive context_length and steps\n", in);
        return 1;
    }

    const kt_op *op = kt_op_find("decoder_layer");
    const kt_variant *v = kt_variant_find("decoder_layer", "cpu", "layer");
    if (!op || !v) {
        fprintf(stderr, "pipeline: this kernel library has no decoder_layer 'layer' variant\n");
        return 1;
    }
    kt_param_value params[KT_MAX_PARAMS], ip[KT_MAX_PARAMS];
    kt_param_defaults(params, v->params, v->n_params);
    kt_param_defaults(ip, op->input_params, op->n_input_params);
    ip[kt_param_index(op->input_params, op->n_input_params, "layers")].num = layers;
    int a = kt_param_index(v->params, v->n_params, "attention");
    params[a].num = kt_param_choice_index(v->params[a].choices, attention);
    if (params[a].num < 0)
        return usage();
    kt_point pt;
    memset(&pt, 0, sizeof(pt));
    snprintf(pt.model.name, sizeof(pt.model.name), "llama-3.2-1b");
    pt.model.hidden = 2048;
    pt.model.heads = 32;
    pt.model.kv_heads = 8;
    pt.model.head_dim = 64;
    pt.model.intermediate = 8192;
    pt.batch_size = 1;
    pt.context_length = context;

    kt_problem p;
    if (op->shape(&p, &pt, KT_DTYPE_BF16, ip) != KT_OK)
        return fail("shape");
    kt_backend *b = NULL;
    if (kt_backend_open(&b, "cpu", threads, seed) != KT_OK)
        return fail("cpu backend");
    void *host[KT_MAX_TENSORS] = {0}, *dev[KT_MAX_TENSORS] = {0};
    int n = p.n_inputs + p.n_outputs;
    for (int i = 0; i < n; i++) {
        size_t bytes = kt_tensor_bytes(&p.tensors[i]);
        host[i] = malloc(bytes);
        if (!host[i] || kt_backend_alloc(b, &dev[i], bytes) != KT_OK)
            return fail("memory");
    }
    kt_input_config cfg = {KT_DIST_LLM, kt_seed_mix(seed, 0x70697065), ip};
    if (op->generate(&p, host, &cfg) != KT_OK)
        return fail("inputs");
    for (int i = 0; i < p.n_inputs; i++)
        kt_backend_upload(b, dev[i], host[i], kt_tensor_bytes(&p.tensors[i]));
    kt_call call = {b,  &p,   params, (const void *const *)dev, dev + p.n_inputs, threads,
                    -1, seed, NULL,   &kt_registry_lookup};
    void *state = NULL;
    if (v->prepare(&state, &call) != KT_OK)
        return fail("prepare");
    double t0 = now_s();
    for (long s = 0; s < steps; s++)
        if (v->run(state, &call) != KT_OK || kt_backend_synchronize(b) != KT_OK)
            return fail("decode step");
    double seconds = now_s() - t0;
    const kt_tensor *y = &p.tensors[p.n_inputs];
    kt_backend_download(b, host[p.n_inputs], dev[p.n_inputs], kt_tensor_bytes(y));
    FILE *o = fopen(out, "wb");
    size_t elems = (size_t)kt_tensor_elems(y);
    for (size_t i = 0; o && i < elems; i++) {
        float x = kt_dtype_load(host[p.n_inputs], y->dtype, i);
        fwrite(&x, sizeof(x), 1, o);
    }
    if (!o || fclose(o) != 0) {
        fprintf(stderr, "pipeline: cannot write '%s'\n", out);
        return 1;
    }
    printf("{\"metric\": \"tokens_per_s\", \"value\": %.6g}\n", (double)steps / seconds);
    printf("{\"metric\": \"step_ms\", \"value\": %.6g}\n", seconds * 1e3 / (double)steps);
    v->release(state, b);
    for (int i = 0; i < n; i++) {
        kt_backend_free(b, dev[i], kt_tensor_bytes(&p.tensors[i]));
        free(host[i]);
    }
    kt_backend_close(b);
    return 0;
}
