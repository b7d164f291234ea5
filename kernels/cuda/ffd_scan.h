/* ffd_scan.h - the integer arithmetic of the CUDA FFD scan, as plain C for the host and the
 * device (tests/unit/test_cuda_mirror.c runs it on the CPU), and the mma.sync fragment layout
 * it and the tensor-core GEMM rely on.
 *
 * The approximate score of a token for a head is sum_c (code_c - 1.5) w_c with w_c = q_c x
 * scale_c (log2 units). Per (block, head) the scan quantises w to qi_c = rint(w_c / sw) with
 * sw = max|w| / KT_FFD_QMAX, splits qi = 128 hi + lo (hi, lo int8), and computes the exact
 * integer dots sum code_c hi_c and sum code_c lo_c on int8 tensor cores (mma m16n8k32, codes
 * 0..3 unpacked to int8). Then
 *     score = (sw / 2) x (float)(2 (128 dot_hi + dot_lo) - 3 sum_c qi_c)
 * where the integer is exact and below 2^24 (head_dim <= 256), so the one float rounding is
 * the multiply. Its distance from the exact approximate score is at most
 * kt_ffd_scan_error_bound (0.75 x head_dim x sw, plus the fp32 rounding of w). */
#ifndef KT_CUDA_FFD_SCAN_H
#define KT_CUDA_FFD_SCAN_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define KT_HD static __host__ __device__ __forceinline__
#else
#define KT_HD static inline
#endif

/* Largest |qi|: 127 x 128, so hi = rint(qi / 128) fits int8 and lo = qi - 128 hi is in
 * [-64, 64]. */
#define KT_FFD_QMAX 16256.0f

/* The step of head weights whose largest magnitude is 'amax' (0 when all are 0). */
KT_HD float kt_ffd_weight_step(float amax)
{
    return amax / KT_FFD_QMAX;
}

/* w quantised to an integer in [-16256, 16256] ('sw' 0: 0). */
KT_HD int kt_ffd_weight_int(float w, float sw)
{
    return sw > 0.0f ? (int)rintf(w / sw) : 0;
}

KT_HD int kt_ffd_weight_hi(int qi)
{
    return (int)rintf((float)qi / 128.0f);
}

KT_HD int kt_ffd_weight_lo(int qi)
{
    return qi - 128 * kt_ffd_weight_hi(qi);
}

/* Four int8 values (low byte first) in one 32-bit word. */
KT_HD uint32_t kt_pack_s8x4(int a, int b, int c, int d)
{
    return (uint32_t)(a & 0xff) | (uint32_t)(b & 0xff) << 8 | (uint32_t)(c & 0xff) << 16 |
           (uint32_t)(d & 0xff) << 24;
}

/* The four 2-bit codes of one code byte (channel 4i+m at bits 2m) as four bytes, channel 4i
 * in the low byte: an int8 x 4 operand for 4 consecutive channels. */
KT_HD uint32_t kt_ffd_expand_codes(uint32_t byte)
{
    return (byte | byte << 6 | byte << 12 | byte << 18) & 0x03030303u;
}

/* The score from the integer dots of one token and head ('dot_hi', 'dot_lo'), the step 'sw'
 * and 'sum_qi' = sum_c qi_c. */
KT_HD float kt_ffd_scan_score(int dot_hi, int dot_lo, float sw, int sum_qi)
{
    int twice = 2 * (128 * dot_hi + dot_lo) - 3 * sum_qi;
    return (0.5f * sw) * (float)twice;
}

/* How far kt_ffd_scan_score may be from sum_c (code_c - 1.5) w_c computed exactly, for
 * 'head_dim' channels, step 'sw' and largest |w| 'amax'. */
KT_HD double kt_ffd_scan_error_bound(int head_dim, float sw, float amax)
{
    return 0.75 * head_dim * (double)sw + 1.5 * head_dim * (double)amax * 3e-7 +
           3.0 * head_dim * KT_FFD_QMAX * (double)sw * 6e-8;
}

/* ---- mma.sync fragments (PTX ISA, "Matrix Fragments for mma.m16n8k16/k32") ---------------
 * lane = 4 x groupID + tig. A (16 x K, row-major): register r holds row groupID (+8 when r
 * is odd), K-columns 'epr' x tig + e (+ K/2 when r >= 2), e < epr elements per register
 * (4 for int8, 2 for 16-bit). B (K x 8, column-major): register r holds column groupID,
 * K-rows epr x tig + e (+ K/2 when r == 1). C (16 x 8, fp32/int32): element i holds row
 * groupID (+8 when i >= 2), column 2 tig + (i & 1). */
KT_HD int kt_mma_a_row(int lane, int r)
{
    return (lane >> 2) + 8 * (r & 1);
}

KT_HD int kt_mma_a_col(int lane, int r, int e, int k, int epr)
{
    return epr * (lane & 3) + e + (r >= 2 ? k / 2 : 0);
}

KT_HD int kt_mma_b_row(int lane, int r, int e, int k, int epr)
{
    return epr * (lane & 3) + e + (r == 1 ? k / 2 : 0);
}

KT_HD int kt_mma_b_col(int lane)
{
    return lane >> 2;
}

KT_HD int kt_mma_c_row(int lane, int i)
{
    return (lane >> 2) + 8 * (i >> 1);
}

KT_HD int kt_mma_c_col(int lane, int i)
{
    return 2 * (lane & 3) + (i & 1);
}

/* The tensor-core GEMM (gemm_tiled.cu) reads 32 k at a time, 8 consecutive per lane with one
 * 16-byte load: lane tig holds k = 8 tig .. 8 tig + 7 of the chunk. Element 'e' (0, 1) of
 * 16-bit register 'r' (A: 0..3, B: 0..1) of k-step 'kstep' (0, 1) of the chunk is then the
 * chunk's k returned here, for A and B alike: a fixed permutation of the k of each mma, so
 * every output is the same sum in the same order for any m, tile or launch. */
KT_HD int kt_gemm_chunk_k(int tig, int kstep, int r_half, int e)
{
    return 8 * tig + 4 * kstep + 2 * r_half + e;
}

#endif
