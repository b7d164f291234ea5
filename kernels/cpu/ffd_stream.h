/* ffd_stream.h - how FFD's selection streams its key cache from memory: the codes and scales of
 * every block pass once per decode step, cold, and each block's codes start where the hardware
 * prefetcher may not follow (a new page every 4 KiB), so the scan fetches the next block's
 * codes and scales while it scores the current one. */
#ifndef KT_FFD_STREAM_H
#define KT_FFD_STREAM_H

#include "../ffd_quant.h"

#include <stddef.h>

/* Prefetches the codes (in 'codes': either layout, both block-major) and the scales of block
 * 'blk' (global index) of 'c'. */
void kt_ffd_prefetch_block(const void *codes, const kt_ffd_cache *c, int64_t blk);

#endif
