/* ffd_stream.c - fetching FFD's codes and scales ahead of the scan (see ffd_stream.h). */
#include "ffd_stream.h"

#include <stdint.h>

static void prefetch(const void *p, size_t bytes)
{
    for (size_t i = 0; i < bytes; i += 64)
        __builtin_prefetch((const char *)p + i);
}

void kt_ffd_prefetch_block(const void *codes, const kt_ffd_cache *c, int64_t blk)
{
    size_t block_codes = (size_t)(c->block * (c->head_dim / 4));
    prefetch((const uint8_t *)codes + (size_t)blk * block_codes, block_codes);
    prefetch(c->scales + blk * c->head_dim, sizeof(float) * (size_t)c->head_dim);
}
