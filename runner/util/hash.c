/* hash.c - a fast 64-bit hash of bytes (util/hash.h). */
#include "util/hash.h"

#include <string.h>

uint64_t kt_hash_bytes(const void *data, size_t bytes)
{
    const unsigned char *p = data;
    uint64_t h = 0x9e3779b97f4a7c15ull ^ bytes;
    size_t i = 0;
    for (; i + 8 <= bytes; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    for (; i < bytes; i++)
        h = (h ^ p[i]) * 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 29);
}
