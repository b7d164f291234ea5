/* cmd_init.c - 'ktrial init': prints a commented starter spec (or writes it with -o) for a
 * built-in op, a command trial or a service trial, from the starters below. Every starter
 * validates and runs as printed (tests/cli/test_init.py validates each, and runs the fast
 * ones); the comments say what to change. The model, where the op has one, is --model's. */
#include "cli/commands.h"
#include "cli/options.h"

#include <stdio.h>
#include <string.h>

/* The lines every kernel starter shares after its op-specific head: inputs, trials,
 * thresholds and budget, with what each means. */
#define KERNEL_TAIL                                                                                \
    "inputs:\n"                                                                                    \
    "  distribution: llm          # activations and caches shaped like a real model's\n"           \
    "  seed: 7\n"                                                                                  \
    "  sets: 2                    # distinct input sets the pairs rotate over\n"                   \
    "trials:\n"                                                                                    \
    "  warmup: 2\n"                                                                                \
    "  min_repetitions: 10        # pairs before the first look at the evidence\n"                 \
    "  max_repetitions: 60        # pairs at most; a point still undecided then is INCONCLUSIVE\n" \
    "  max_seconds_per_point: 10\n"                                                                \
    "  order: random              # which arm of a pair runs first\n"                              \
    "  flush_cache: true\n"                                                                        \
    "thresholds:                  # chosen before running: what a KEEP must show\n"                \
    "  numerics:\n"                                                                                \
    "    max_rel_l2: 5.0e-2       # relative L2 error against a float64 reference, at most\n"      \
    "  latency:\n"                                                                                 \
    "    min_speedup: 1.05        # baseline time / candidate time, at least\n"                    \
    "    confidence: 0.95\n"                                                                       \
    "  aggregate: all             # every point must KEEP for the candidate to KEEP\n"             \
    "budget:\n"                                                                                    \
    "  max_minutes: 5             # refuse to start a plan estimated longer (ktrial validate "     \
    "--plan)\n"

typedef struct starter {
    const char *op;
    const char *text; /* a format with one %s, the model, where 'has_model' */
    int has_model;
} starter;

static const starter starters[] = {
    {"attention_decode",
     "op: attention_decode\nbackend: cpu                 # cpu, cuda, or auto (cuda where a "
     "device answers)\ndtype: bf16\nthreads: 0                   # 0: every core\n"
     "models: [%s]        # 'ktrial models' lists the catalog\nbatch_sizes: [1]\n"
     "context_lengths: [4096]\nbaseline:\n  variant: dense             # what runs today\n"
     "candidates:                  # 'ktrial kernels' lists every variant and its params\n"
     "  - name: ffd\n    variant: ffd\n    params: {delta: 5.0, block: 128}\n" KERNEL_TAIL,
     1},
    {"gemm",
     "op: gemm\nbackend: cpu                 # cpu, cuda, or auto (cuda where a device "
     "answers)\ndtype: bf16\nthreads: 0                   # 0: every core\n"
     "models: [%s]        # 'ktrial models' lists the catalog\nbatch_sizes: [1, 16]\n"
     "context_lengths: [32]\nphases: [decode]\nroles: [qkv, down]            # the model's "
     "projections\nbaseline:\n  variant: blas              # what runs today\n"
     "candidates:                  # 'ktrial kernels' lists every variant and its params\n"
     "  - name: tiled\n    variant: tiled\n" KERNEL_TAIL,
     1},
    {"swiglu_mlp",
     "op: swiglu_mlp\nbackend: cpu\ndtype: bf16\nthreads: 0                   # 0: every core\n"
     "models: [%s]        # 'ktrial models' lists the catalog\nbatch_sizes: [1, 16]\n"
     "context_lengths: [32]\nphases: [decode]\nbaseline:\n  variant: unfused           # what "
     "runs today\ncandidates:                  # 'ktrial kernels' lists every variant and its "
     "params\n  - name: fused\n    variant: fused\n" KERNEL_TAIL,
     1},
    {"decoder_layer",
     "op: decoder_layer\nbackend: cpu\ndtype: bf16\nthreads: 0                   # 0: every "
     "core\nmodels: [%s]        # 'ktrial models' lists the catalog\nbatch_sizes: [1]\n"
     "context_lengths: [4096]\nbaseline:\n  variant: layer\n  params: {fusion: none}     # what "
     "runs today\ncandidates:                  # 'ktrial kernels' lists every variant and its "
     "params\n  - name: fused-mlp\n    variant: layer\n    params: {fusion: mlp}\n" KERNEL_TAIL,
     1},
    {"synthetic",
     "op: synthetic               # the simulated backend: a virtual clock, no real kernel\n"
     "backend: sim\nbatch_sizes: [1]\ncontext_lengths: [1024]\nbaseline:\n  variant: lognormal\n"
     "  params: {median_us: 100}\ncandidates:\n  - name: faster\n    variant: lognormal\n"
     "    params: {median_us: 80}     # 20%% faster by construction\n"
     "trials:\n  warmup: 2\n  min_repetitions: 10\n  max_repetitions: 100\n"
     "  max_seconds_per_point: 10\n  order: random\nthresholds:\n  latency:\n"
     "    min_speedup: 1.1          # baseline time / candidate time, at least\n"
     "    confidence: 0.95\nbudget:\n  max_minutes: 2\n",
     0},
    {"command",
     "op: command                 # whole programs, one process per call "
     "(docs/command-trials.md)\nbackend: process\ntasks:                       # representative "
     "inputs; {input} in a command is the task's file\n  - {name: small}\n"
     "baseline:                    # the argv of one timed call, never through a shell\n"
     "  run: [\"gzip\", \"-c\", \"-9\", \"/etc/services\"]\ncandidates:\n  - name: fast\n"
     "    run: [\"gzip\", \"-c\", \"-1\", \"/etc/services\"]\n"
     "measure: {metric: wall, better: lower}   # or a metric the program prints as json-lines\n"
     "trials:\n  warmup: 1\n  min_repetitions: 10\n  max_repetitions: 40\n"
     "  max_seconds_per_point: 60\n  order: random\nthresholds:\n  latency:\n"
     "    min_speedup: 1.0          # baseline time / candidate time, at least\n"
     "    confidence: 0.95\n  memory:\n    max_ratio: 1.5            # candidate peak RSS / "
     "baseline's, at most\nbudget:\n  max_minutes: 5\n",
     0},
    {"service",
     "op: service                 # a server per arm, paired requests "
     "(docs/service-trials.md)\nbackend: process\ntasks:                       # request bodies: "
     "representative product requests\n  - {name: short, input: tasks/short.json}\n"
     "baseline:                    # {port}: a free loopback port\n"
     "  setup: [\"./build/kt_serve\", \"--port\", \"{port}\", \"--attention\", \"dense\"]\n"
     "  ready: {http_get: /health, timeout_s: 60}\ncandidates:\n  - name: ffd\n"
     "    setup: [\"./build/kt_serve\", \"--port\", \"{port}\", \"--attention\", \"ffd\"]\n"
     "    ready: {http_get: /health, timeout_s: 60}\n"
     "request: {method: POST, path: /v1/completions, stream: sse}   # stream: none | sse\n"
     "load: {mode: closed, concurrency: 2, requests_per_round: 20}  # or {mode: open, "
     "rate_per_s: 20, ...}\nmeasure: {metric: e2e, better: lower}     # e2e | ttft | tpot\n"
     "thresholds:\n  latency: {min_speedup: 1.05, max_p99_ratio: 1.10}\n"
     "  errors: {max_rate: 0.01}\n  memory: {max_ratio: 1.2}\nbudget:\n  max_minutes: 10\n",
     0},
};

#define N_STARTERS (sizeof(starters) / sizeof(starters[0]))

static const starter *starter_find(const char *op)
{
    for (size_t i = 0; i < N_STARTERS; i++)
        if (strcmp(starters[i].op, op) == 0)
            return &starters[i];
    return NULL;
}

static void write_spec(FILE *out, const starter *s, const char *model)
{
    fprintf(
        out,
        "# A starter spec written by 'ktrial init': it validates and runs as it is. Change the\n"
        "# question it asks (the arms, the shapes, the limits) before you rely on its verdict,\n"
        "# and fix the limits before you run: they are the claim the run tests.\n"
        "#   ktrial validate THIS.yaml --plan     # problems with file:line:col, and the time\n"
        "#   ktrial run THIS.yaml                 # exit 0 KEEP, 1 REJECT, 2 INCONCLUSIVE\n"
        "# docs/spec.md describes every key.\n"
        "version: 1\n"
        "name: my-%s\n"
        "description: starter experiment (ktrial init)\n",
        s->op);
    if (s->has_model)
        fprintf(out, s->text, model);
    else
        fprintf(out, s->text, "");
}

int cmd_init(int argc, char **argv)
{
    const char *op = NULL, *model = "llama-3.2-1b", *path = NULL;
    int command = 0, service = 0;
    kt_opt_parser p;
    const kt_option *o;
    const char *value;
    int r;
    kt_opt_init(&p, "init", argc, argv);
    while ((r = kt_opt_next(&p, &o, &value)) > 0) {
        if (!o)
            return kt_usage_error("init", "unexpected argument '%s'", value);
        if (kt_opt_is(o, "--op"))
            op = value;
        else if (kt_opt_is(o, "--model"))
            model = value;
        else if (kt_opt_is(o, "--command"))
            command = 1;
        else if (kt_opt_is(o, "--service"))
            service = 1;
        else if (kt_opt_is(o, "--output"))
            path = value;
    }
    if (r < 0)
        return KT_EXIT_USAGE;
    if (command + service + (op != NULL) > 1)
        return kt_usage_error("init", "--op, --command and --service choose one kind of spec: "
                                      "give one of them");
    if (!op)
        op = command ? "command" : service ? "service" : "attention_decode";
    const starter *s = starter_find(op);
    if (!s) {
        const char *names[N_STARTERS];
        for (size_t i = 0; i < N_STARTERS; i++)
            names[i] = starters[i].op;
        return kt_opt_check_choice("init", "--op", op, names, N_STARTERS);
    }
    if (!s->has_model && model && strcmp(model, "llama-3.2-1b") != 0)
        return kt_usage_error("init", "op %s has no model: --model applies to the kernel ops",
                              s->op);
    if (!path) {
        write_spec(stdout, s, model);
        return KT_EXIT_KEEP;
    }
    FILE *f = fopen(path, "wx"); /* never over an existing spec */
    if (!f) {
        fprintf(stderr, "error: cannot create %s: %m (init never overwrites a file)\n", path);
        return KT_EXIT_IOERR;
    }
    write_spec(f, s, model);
    if (fclose(f) != 0) {
        fprintf(stderr, "error: writing %s: %m\n", path);
        return KT_EXIT_IOERR;
    }
    fprintf(stderr, "wrote %s: check it with 'ktrial validate %s --plan'\n", path, path);
    return KT_EXIT_KEEP;
}
