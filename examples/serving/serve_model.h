/* serve_model.h - kt_serve's model: the decoder_layer op's CPU 'layer' variant on a catalog
 * model's shapes, with seeded bf16 weights and a seeded KV cache of --context tokens per layer
 * shared read-only by every request, and a per-request generator whose every token is one
 * decode step of the layers.
 *
 * Tokens: a word list of KT_SERVE_VOCAB words, each with a seeded embedding of the model's
 * width. A request's first input is the embedding of a hash of its prompt and seed; each step's
 * token is the argmax over the words of a fixed projection of a few lanes of the step's output
 * hidden state (RMS-normalised) plus seeded Gumbel noise (a sampler whose draws depend only on
 * the request's seed and the step), and the next step's input is that word's embedding. So the
 * text is a deterministic function of (prompt, seed) and of the layers' outputs: dense and ffd
 * attention give the same text where their outputs rank the words alike.
 *
 * A generator owns its backend (its memory, the calling thread's OpenMP thread count), the
 * variant's state (its working copy of the KV cache), its input and its outputs. Opening one
 * prepares the variant: it copies the shared cache and runs one untimed step that prepares each
 * block's attention on it (FFD quantises it), the request's prefill in effect. The cache does
 * not grow: like the op's decode step, every step attends over the --context cached tokens and
 * its own new one (at position --context), whatever the prompt's length. Decode steps
 * of all requests run one at a time under the model's engine lock (one device), so concurrent
 * requests interleave token by token. */
#ifndef KT_SERVE_MODEL_H
#define KT_SERVE_MODEL_H

#include "kernel.h"

#include <pthread.h>

#define KT_SERVE_VOCAB 64
#define KT_SERVE_LANES 32 /* hidden-state lanes the words are projected from */

typedef struct kt_serve_model {
    const kt_op *op;
    const kt_variant *v;
    kt_param_value params[KT_MAX_PARAMS], ip[KT_MAX_PARAMS];
    kt_problem p;
    kt_backend *b;             /* holds the shared inputs */
    void *dev[KT_MAX_TENSORS]; /* the inputs (dev[0], x, is the first request's prototype) */
    float *embed;              /* [KT_SERVE_VOCAB][hidden] */
    float *proj;               /* [KT_SERVE_VOCAB][KT_SERVE_LANES] */
    int threads;
    uint64_t seed;
    pthread_mutex_t engine; /* one decode step (or prepare/release) at a time */
} kt_serve_model;

/* Shapes the op for 'shape' with 'layers' blocks and a KV cache of 'context' tokens, generates
 * the weights and the cache from 'seed' (seconds for a large model). 'attention' is dense|ffd. */
int kt_serve_model_open(kt_serve_model *m, const kt_model *shape, const char *attention, int layers,
                        int threads, int64_t context, uint64_t seed);
void kt_serve_model_close(kt_serve_model *m);

/* The prompt's token count: its whitespace-separated words. */
int kt_serve_prompt_tokens(const char *prompt);

typedef struct kt_serve_gen {
    kt_serve_model *m;
    kt_backend *b;
    void *state;
    void *x;
    const void *inputs[KT_MAX_TENSORS];
    void *outputs[KT_MAX_TENSORS];
    size_t out_bytes[KT_MAX_TENSORS];
    kt_call call;
    uint64_t seed;
    int step;
    int token;
} kt_serve_gen;

/* Prepares a request's generator (its own cache copy) for 'prompt' and 'seed'. On failure the
 * generator is released. */
int kt_serve_gen_open(kt_serve_gen *g, kt_serve_model *m, const char *prompt, uint64_t seed);
/* Runs one decode step and sets *word to the token's text (a static string, with its leading
 * space). */
int kt_serve_gen_next(kt_serve_gen *g, const char **word);
void kt_serve_gen_close(kt_serve_gen *g);

#endif
