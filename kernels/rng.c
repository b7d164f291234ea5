/* rng.c - xoshiro256** (Blackman and Vigna), the generator behind every seeded draw. */
#include "kernel.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

void kt_rng_seed(kt_rng *r, uint64_t seed)
{
    uint64_t state = seed;
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&state);
}

uint64_t kt_rng_next(kt_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double kt_rng_uniform(kt_rng *r)
{
    return (double)(kt_rng_next(r) >> 11) * 0x1.0p-53;
}

/* Box-Muller without caching the second value: keeps kt_rng a plain state, so that a
 * draw sequence depends only on the seed and the number of calls. */
double kt_rng_normal(kt_rng *r)
{
    double u1 = kt_rng_uniform(r);
    double u2 = kt_rng_uniform(r);
    if (u1 < 0x1.0p-60)
        u1 = 0x1.0p-60;
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

uint64_t kt_seed_mix(uint64_t a, uint64_t b)
{
    uint64_t state = a ^ rotl(b, 32) ^ 0x2545f4914f6cdd1dull;
    splitmix64(&state);
    return splitmix64(&state) ^ b;
}
