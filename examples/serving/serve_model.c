/* serve_model.c - kt_serve's model and per-request generator (contract in serve_model.h). */
#include "serve_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const words[KT_SERVE_VOCAB] = {
    " the",    " a",       " kernel",  " cache",  " token",  " layer",   " tensor", " head",
    " query",  " key",     " value",   " model",  " server", " request", " trial",  " pair",
    " faster", " slower",  " same",    " bound",  " memory", " compute", " fused",  " dense",
    " sparse", " decode",  " prefill", " batch",  " stream", " score",   " weight", " norm",
    " and",    " of",      " to",      " in",     " is",     " was",     " with",   " for",
    " on",     " by",      " at",      " from",   " then",   " so",      " but",    " or",
    " quick",  " careful", " noisy",   " steady", " warm",   " cold",    " long",   " short",
    " paired", " sampled", " median",  " tail",   " p99",    " verdict", " keep",   " reject",
};

static uint64_t hash_text(const char *s, uint64_t h)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

int kt_serve_prompt_tokens(const char *prompt)
{
    int n = 0, in_word = 0;
    for (const char *s = prompt; *s; s++) {
        int space = *s == ' ' || *s == '\t' || *s == '\n' || *s == '\r';
        n += !space && !in_word;
        in_word = !space;
    }
    return n;
}

static void fill_normal(float *dst, size_t n, double scale, uint64_t seed)
{
    kt_rng r;
    kt_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++)
        dst[i] = (float)(scale * kt_rng_normal(&r));
}

/* The shared inputs: generated on the host, then placed in the model's backend. */
static int make_inputs(kt_serve_model *m, uint64_t seed, double *x_rms)
{
    const kt_problem *p = &m->p;
    kt_input_config cfg = {KT_DIST_LLM, kt_seed_mix(seed, 0x73657276), m->ip};
    void *host[KT_MAX_TENSORS] = {0};
    int n = p->n_inputs + p->n_outputs, err = KT_OK;
    for (int i = 0; i < n && err == KT_OK; i++)
        if (!(host[i] = malloc(kt_tensor_bytes(&p->tensors[i]))))
            err = kt_error_code(KT_ENOMEM, "out of memory");
    if (err == KT_OK)
        err = m->op->generate(p, host, &cfg);
    for (int i = 0; i < p->n_inputs && err == KT_OK; i++) {
        size_t bytes = kt_tensor_bytes(&p->tensors[i]);
        if ((err = kt_backend_alloc(m->b, &m->dev[i], bytes)) == KT_OK)
            err = kt_backend_upload(m->b, m->dev[i], host[i], bytes);
    }
    double s2 = 0;
    int64_t width = p->k;
    for (int64_t i = 0; err == KT_OK && i < width; i++) {
        double v = kt_dtype_load(host[0], p->dtype, (size_t)i);
        s2 += v * v;
    }
    *x_rms = width > 0 && s2 > 0 ? sqrt(s2 / (double)width) : 1.0;
    for (int i = 0; i < n; i++)
        free(host[i]);
    return err;
}

int kt_serve_model_open(kt_serve_model *m, const kt_model *shape, const char *attention, int layers,
                        int threads, int64_t context, uint64_t seed)
{
    memset(m, 0, sizeof(*m));
    pthread_mutex_init(&m->engine, NULL);
    m->threads = threads;
    m->seed = seed;
    m->op = kt_op_find("decoder_layer");
    m->v = kt_variant_find("decoder_layer", "cpu", "layer");
    if (!m->op || !m->v)
        return kt_error_code(KT_EUNSUPPORTED, "this kernel library has no decoder_layer 'layer'");
    kt_param_defaults(m->params, m->v->params, m->v->n_params);
    kt_param_defaults(m->ip, m->op->input_params, m->op->n_input_params);
    m->ip[kt_param_index(m->op->input_params, m->op->n_input_params, "layers")].num = layers;
    int a = kt_param_index(m->v->params, m->v->n_params, "attention");
    m->params[a].num = kt_param_choice_index(m->v->params[a].choices, attention);
    if (m->params[a].num < 0)
        return kt_error_code(KT_EINVAL, "--attention must be dense or ffd, not '%s'", attention);
    kt_point pt;
    memset(&pt, 0, sizeof(pt));
    pt.model = *shape;
    pt.batch_size = 1;
    pt.context_length = context;
    int err = kt_op_shape(m->op, &m->p, &pt, KT_DTYPE_BF16, m->ip);
    if (err < 0 || (err = kt_backend_open(&m->b, "cpu", threads, seed)) < 0)
        return err;
    double x_rms = 1.0;
    if ((err = make_inputs(m, seed, &x_rms)) < 0)
        return err;
    size_t width = (size_t)m->p.k;
    m->embed = malloc(sizeof(float) * KT_SERVE_VOCAB * width);
    m->proj = malloc(sizeof(float) * KT_SERVE_VOCAB * KT_SERVE_LANES);
    if (!m->embed || !m->proj)
        return kt_error_code(KT_ENOMEM, "out of memory");
    fill_normal(m->embed, KT_SERVE_VOCAB * width, x_rms, kt_seed_mix(seed, 0x656d6264));
    /* logits of a few nats between words: enough spread that a small change of the hidden
     * state rarely reorders the top two */
    fill_normal(m->proj, KT_SERVE_VOCAB * KT_SERVE_LANES, 3.0 / sqrt(KT_SERVE_LANES),
                kt_seed_mix(seed, 0x70726f6a));
    return KT_OK;
}

void kt_serve_model_close(kt_serve_model *m)
{
    if (m->b) {
        for (int i = 0; i < m->p.n_inputs; i++)
            if (m->dev[i])
                kt_backend_free(m->b, m->dev[i], kt_tensor_bytes(&m->p.tensors[i]));
        kt_backend_close(m->b);
    }
    free(m->embed);
    free(m->proj);
    pthread_mutex_destroy(&m->engine);
    memset(m, 0, sizeof(*m));
}

/* Writes word 'token''s embedding into the generator's input. */
static int set_input(kt_serve_gen *g, int token)
{
    const kt_problem *p = &g->m->p;
    size_t width = (size_t)p->k;
    double *row = malloc(sizeof(double) * width);
    if (!row)
        return kt_error_code(KT_ENOMEM, "out of memory");
    for (size_t i = 0; i < width; i++)
        row[i] = g->m->embed[(size_t)token * width + i];
    kt_dtype_from_double(g->x, row, p->dtype, width);
    free(row);
    g->token = token;
    return KT_OK;
}

void kt_serve_gen_close(kt_serve_gen *g)
{
    if (g->m && g->state) {
        pthread_mutex_lock(&g->m->engine);
        g->m->v->release(g->state, g->b);
        pthread_mutex_unlock(&g->m->engine);
    }
    if (g->b) {
        const kt_problem *p = &g->m->p;
        if (g->x)
            kt_backend_free(g->b, g->x, kt_tensor_bytes(&p->tensors[0]));
        for (int i = 0; i < p->n_outputs; i++)
            if (g->outputs[i])
                kt_backend_free(g->b, g->outputs[i], g->out_bytes[i]);
        kt_backend_close(g->b);
    }
    memset(g, 0, sizeof(*g));
}

int kt_serve_gen_open(kt_serve_gen *g, kt_serve_model *m, const char *prompt, uint64_t seed)
{
    memset(g, 0, sizeof(*g));
    g->m = m;
    g->seed = kt_seed_mix(m->seed, seed);
    const kt_problem *p = &m->p;
    int err = kt_backend_open(&g->b, "cpu", m->threads, g->seed);
    if (err == KT_OK)
        err = kt_backend_alloc(g->b, &g->x, kt_tensor_bytes(&p->tensors[0]));
    for (int i = 0; i < p->n_outputs && err == KT_OK; i++) {
        g->out_bytes[i] = kt_tensor_bytes(&p->tensors[p->n_inputs + i]);
        err = kt_backend_alloc(g->b, &g->outputs[i], g->out_bytes[i]);
    }
    if (err == KT_OK)
        err = set_input(g, (int)(hash_text(prompt, g->seed | 1) % KT_SERVE_VOCAB));
    if (err < 0) {
        kt_serve_gen_close(g);
        return err;
    }
    g->inputs[0] = g->x;
    for (int i = 1; i < p->n_inputs; i++)
        g->inputs[i] = m->dev[i];
    g->call = (kt_call){g->b,       p,  m->params, g->inputs, g->outputs,
                        m->threads, -1, g->seed,   NULL,      &kt_registry_lookup};
    pthread_mutex_lock(&m->engine);
    err = m->v->prepare(&g->state, &g->call);
    pthread_mutex_unlock(&m->engine);
    if (err < 0)
        kt_serve_gen_close(g);
    return err;
}

int kt_serve_gen_next(kt_serve_gen *g, const char **word)
{
    const kt_problem *p = &g->m->p;
    pthread_mutex_lock(&g->m->engine);
    int err = g->m->v->run(g->state, &g->call);
    if (err == KT_OK)
        err = kt_backend_synchronize(g->b);
    pthread_mutex_unlock(&g->m->engine);
    if (err < 0)
        return err;
    /* a few lanes spread over the width, RMS-normalised */
    double lanes[KT_SERVE_LANES], s2 = 0;
    int64_t width = p->k;
    for (int k = 0; k < KT_SERVE_LANES; k++) {
        lanes[k] = kt_dtype_load(g->outputs[0], p->dtype, (size_t)((k * width) / KT_SERVE_LANES));
        s2 += lanes[k] * lanes[k];
    }
    double inv = s2 > 0 ? 1.0 / sqrt(s2 / KT_SERVE_LANES) : 0.0;
    kt_rng r;
    kt_rng_seed(&r, kt_seed_mix(g->seed, (uint64_t)g->step));
    int best = 0;
    double best_score = -INFINITY;
    for (int j = 0; j < KT_SERVE_VOCAB; j++) {
        double logit = 0;
        for (int k = 0; k < KT_SERVE_LANES; k++)
            logit += g->m->proj[j * KT_SERVE_LANES + k] * lanes[k] * inv;
        double u = kt_rng_uniform(&r);
        double score = logit - log(-log(u > 0 ? u : 1e-300));
        if (score > best_score) {
            best_score = score;
            best = j;
        }
    }
    g->step++;
    *word = words[best];
    return set_input(g, best);
}
