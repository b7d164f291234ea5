/* decoder_fill.c - the decoder_layer op's fast seeded fill: a llama-3.1-8b block holds 218 M
 * weights, and one draw, conversion and call per element made its start-up outlast the
 * worker's watchdog. Here the elements are cut into fixed chunks, each drawn from its own
 * stream with both normals of a polar-method pair used and stored with one conversion call, and
 * the chunks are spread over 'threads': the values depend on the seed only. */
#include "decoder_layer.h"

#include <math.h>

enum { CHUNK = 4096 };

/* Fills elements [c * CHUNK, min(n, (c + 1) * CHUNK)) of 'dst'. */
static void fill_chunk(void *dst, kt_dtype dtype, size_t n, kt_distribution dist, double std,
                       uint64_t seed, size_t c)
{
    double buf[CHUNK];
    size_t at = c * CHUNK, len = n - at < CHUNK ? n - at : CHUNK;
    kt_rng rng;
    kt_rng_seed(&rng, kt_seed_mix(seed, (uint64_t)c));
    if (dist == KT_DIST_UNIFORM) {
        double a = sqrt(3.0) * std; /* U(-a, a) has std a / sqrt(3) */
        for (size_t i = 0; i < len; i++)
            buf[i] = a * (2.0 * kt_rng_uniform(&rng) - 1.0);
    } else {
        for (size_t i = 0; i < len; i += 2) { /* Marsaglia's polar method: no trigonometry */
            double u, v, r2;
            do {
                u = 2.0 * kt_rng_uniform(&rng) - 1.0;
                v = 2.0 * kt_rng_uniform(&rng) - 1.0;
                r2 = u * u + v * v;
            } while (r2 >= 1.0 || r2 == 0.0);
            double f = std * sqrt(-2.0 * log(r2) / r2);
            buf[i] = f * u;
            if (i + 1 < len)
                buf[i + 1] = f * v;
        }
    }
    size_t size = kt_dtype_size(dtype);
    char *out = (char *)dst + at * size;
    kt_dtype_from_double(out, buf, dtype, len);
    for (size_t i = 0; i < len; i++) {
        if (kt_dtype_load(out, dtype, i) == 0.0f) {
            double x = buf[i] < 0 ? -1e-3 : 1e-3;
            kt_dtype_from_double(out + i * size, &x, dtype, 1);
        }
    }
}

void kt_dl_fill(void *dst, kt_dtype dtype, size_t n, kt_distribution dist, double std,
                uint64_t seed, int threads)
{
    long chunks = (long)((n + CHUNK - 1) / CHUNK);
#pragma omp parallel for schedule(dynamic, 16) num_threads(threads > 0 ? threads : 1)
    for (long c = 0; c < chunks; c++)
        fill_chunk(dst, dtype, n, dist, std, seed, (size_t)c);
}
