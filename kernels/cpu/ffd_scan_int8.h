/* ffd_scan_int8.h - FFD block selection on int8 dot products (AVX-512 VNNI), with an exact
 * bound so that it never drops a block the float scan would keep.
 *
 * The float scan computes, per token t and query head h, the approximate score
 *   s~(t) = sum_c w_c (code_tc - 1.5),   w_c = qs_c * scale_c   (log2 units)
 * Here w is rounded to int8, wi_c = round(w_c / step), and vpdpbusd sums code_tc * wi_c over
 * 64 channel-token products per instruction (the float scan: 16 FMAs). One step per head serves
 * all the blocks of a split-KV task: step = max_c |qs_c| smax_c / 127, smax_c the largest scale
 * of channel c over the task's blocks, so |w_c| / step <= 127 in every one of them.
 * Then s~(t) = step * (S(t) - 1.5 sum wi) + err with |err| <= E = 1.5 sum_c |w_c - step wi_c|
 * (plus a float rounding slack), so a block is certainly kept when some head's largest S gives
 * a score >= threshold + E, certainly dropped when every head's gives < threshold - E, and
 * ambiguous otherwise: the caller then rescans that block with the float scan.
 *
 * The scan reads codes in a transposed layout built in prepare (kt_ffd_codes_transpose): per
 * block, per 16 channels (4 bytes of a packed row), the 4-byte words of all the block's tokens
 * in a row, so one 64-byte load holds 16 tokens and each 32-bit lane is one token. */
#ifndef KT_FFD_SCAN_INT8_H
#define KT_FFD_SCAN_INT8_H

#include "../ffd_quant.h"

#include <stddef.h>
#include <stdint.h>

/* Whether this CPU has the instructions of the int8 scan (AVX-512 F, BW, DQ, VL and VNNI, FMA,
 * F16C: the attention kernels' AVX-512 set and VNNI). */
int kt_ffd_int8_supported(void);

/* Whether the int8 scan handles this cache shape: head_dim and block multiples of 16. */
int kt_ffd_int8_shape_ok(const kt_ffd_cache *c);

/* Writes the codes of every full block of 'c' into 'dst' (kt_ffd_codes_bytes(c) bytes) in the
 * scan layout: word (q, t) of block i = bytes 4q..4q+3 of token t's packed row. */
void kt_ffd_codes_transpose(uint32_t *dst, const kt_ffd_cache *c);

/* Bytes of scratch kt_ffd_int8_begin and kt_ffd_block_int8 need for groups of 'g' heads of
 * dimension 'd'. */
size_t kt_ffd_int8_scratch_bytes(int64_t g, int64_t d);
/* Prepares the selection of blocks [blk0, blk1) (global block indices, blk0 < blk1, one (b, kv
 * head)) for the g query heads 'qs' ([g][d], log2 units, natural channel order) against their
 * thresholds 'thr' ([g], log2 units): one int8 step per head for all those blocks, from the
 * largest scale of each channel over them, kept in 'scratch' (kt_ffd_int8_scratch_bytes(g, d)
 * bytes, 64-byte aligned) for kt_ffd_block_int8. */
void kt_ffd_int8_begin(const kt_ffd_cache *c, int64_t blk0, int64_t blk1, const float *qs,
                       const float *thr, int64_t g, void *scratch);
/* Decides block 'blk' of the range of the last kt_ffd_int8_begin on 'scratch': 1 when a head
 * certainly reaches its threshold, 0 when none can, -1 when the int8 bound cannot tell.
 * 'codes_t' is the transposed layout of kt_ffd_codes_transpose. Call only where
 * kt_ffd_int8_supported() and kt_ffd_int8_shape_ok(). */
int kt_ffd_block_int8(const uint32_t *codes_t, const kt_ffd_cache *c, int64_t blk, int64_t g,
                      void *scratch);
#endif
