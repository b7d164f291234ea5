/* test_cuda_mirror.c - the CUDA kernels' index math and merge arithmetic run on the CPU
 * through the same headers the kernels include (kernels/cuda/attn_plan.h, ffd_scan.h), so a
 * wrong index or merge fails here on any machine, GPU or not:
 *   - the dense kernel's split plan, and its lane-group walk + online softmax + group and
 *     split merges against float64 softmax, with every token visited exactly once;
 *   - the FFD tensor-core scan: weight quantisation, code unpacking and mma m16n8k32 fragment
 *     placement (emulated from the PTX fragment tables) give the exact integer dot, and the
 *     score stays within kt_ffd_scan_error_bound of float64;
 *   - the tensor-core GEMM's fragment assembly (m16n8k16, the k permutation) gives exact dots;
 *   - the GPU test's FFD cases have no decision the scan's error could flip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cuda/attn_plan.h"
#include "cuda/ffd_scan.h"
#include "gpu/ffd_check.h"
#include "kernel.h"
#include "arm/kernel/check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- dense decode --------------------------------------------------------------------- */

static void test_split_plan(void **state)
{
    (void)state;
    const int64_t bps[] = {1, 8, 32, 64, 256, 4096}, ctx[] = {1, 17, 100, 4096, 32768, 131072};
    const int sms[] = {1, 132};
    for (size_t i = 0; i < 6; i++)
        for (size_t j = 0; j < 6; j++)
            for (size_t k = 0; k < 2; k++) {
                int64_t st = kt_dense_split_tokens(bps[i], ctx[j], sms[k]);
                int64_t n = (ctx[j] + st - 1) / st;
                assert_true(st >= 16 && st % 16 == 0);
                /* no split under the minimum unless the context is shorter */
                assert_true(n == 1 || st >= KT_DENSE_MIN_SPLIT_TOKENS);
                /* never more blocks than needed for 4 per SM, by more than one split's worth */
                assert_true((n - 1) * bps[i] < (int64_t)sms[k] * KT_DENSE_BLOCKS_PER_SM || n == 1);
            }
    /* llama-3.1-8b (8 KV heads, one head group) at batch 1 on 132 SMs: every SM busy */
    int64_t st4k = kt_dense_split_tokens(8, 4096, 132),
            st32k = kt_dense_split_tokens(8, 32768, 132);
    assert_true(8 * ((4096 + st4k - 1) / st4k) >= 132);
    assert_true(8 * ((32768 + st32k - 1) / st32k) >= 4 * 132 - 8 * 2);
}

/* One split of 'n' scores walked as the kernel walks it: 'n_groups' lane groups, 'kpi' keys
 * per step, kt_osm_step per step, kt_lse_combine over the groups. Counts visits per token. */
static void walk_split(float *M, float *L, float *A, const float *s, const float *v, int64_t n,
                       int n_groups, int kpi, int *visits)
{
    float gm[64], gl[64], ga[64];
    int64_t steps = kt_dense_steps(n, n_groups, kpi);
    for (int g = 0; g < n_groups; g++) {
        float m = -INFINITY, l = 0, acc = 0;
        for (int64_t it = 0; it < steps; it++) {
            int64_t tb = kt_dense_token(0, it, g, 0, n_groups, kpi);
            if (tb >= n)
                continue;
            float sc[8], p[8];
            for (int j = 0; j < kpi; j++) {
                int64_t t = kt_dense_token(0, it, g, j, n_groups, kpi);
                sc[j] = t < n ? s[t] : -INFINITY;
                if (t < n)
                    visits[t]++;
            }
            float alpha = kt_osm_step(&m, &l, p, sc, kpi);
            acc *= alpha;
            for (int j = 0; j < kpi; j++)
                if (tb + j < n)
                    acc = fmaf(p[j], v[tb + j], acc);
        }
        gm[g] = m, gl[g] = l, ga[g] = acc;
    }
    kt_lse_combine(M, L, A, gm, gl, ga, 1, n_groups);
}

static void test_dense_walk_and_merge(void **state)
{
    (void)state;
    const int groups[] = {4, 8, 16, 32};
    const int64_t lens[] = {1, 5, 16, 63, 128, 1000, 4097};
    kt_rng rng;
    kt_rng_seed(&rng, 9);
    for (size_t gi = 0; gi < 4; gi++)
        for (size_t li = 0; li < 7; li++) {
            int64_t T = lens[li], split = kt_dense_split_tokens(1, T, 132);
            float *s = malloc(sizeof(float) * (size_t)T), *v = malloc(sizeof(float) * (size_t)T);
            int *visits = calloc((size_t)T, sizeof(int));
            double big = -INFINITY, num = 0, den = 0;
            for (int64_t t = 0; t < T; t++) {
                s[t] = (float)(kt_rng_normal(&rng) * 8.0);
                v[t] = (float)kt_rng_normal(&rng);
                big = fmax(big, s[t]);
            }
            for (int64_t t = 0; t < T; t++) {
                num += exp2(s[t] - big) * v[t];
                den += exp2(s[t] - big);
            }
            /* the splits, then the merge kernel's combine (out = A / L) */
            int64_t n_splits = (T + split - 1) / split;
            float *sm = malloc(sizeof(float) * (size_t)n_splits);
            float *sl = malloc(sizeof(float) * (size_t)n_splits);
            float *sa = malloc(sizeof(float) * (size_t)n_splits);
            for (int64_t i = 0; i < n_splits; i++) {
                int64_t t0 = i * split, len = T - t0 < split ? T - t0 : split;
                walk_split(&sm[i], &sl[i], &sa[i], s + t0, v + t0, len, groups[gi], 4, visits + t0);
            }
            float M, L, A;
            kt_lse_combine(&M, &L, &A, sm, sl, sa, 1, (int)n_splits);
            for (int64_t t = 0; t < T; t++)
                assert_int_equal(visits[t], 1);
            double want = num / den;
            if (!(fabs(A / L - want) <= 1e-5 * (1 + fabs(want))))
                fail_msg("groups %d T %lld: %.9g, float64 %.9g", groups[gi], (long long)T, A / L,
                         want);
            free(s);
            free(v);
            free(visits);
            free(sm);
            free(sl);
            free(sa);
        }
}

/* ---- mma fragments (emulated from the PTX tables through ffd_scan.h's helpers) --------- */

/* D[16][8] += A B for one m16n8kK mma, from per-lane registers of 'epr' elements of 'bits'
 * bits; every A and B element must be placed by exactly one lane and register. */
static void emulate_mma(int64_t d[16][8], const uint32_t a[32][4], const uint32_t b[32][2], int k,
                        int epr)
{
    int64_t A[16][32], B[32][8];
    int seen_a[16][32] = {{0}}, seen_b[32][8] = {{0}};
    const int bits = 32 / epr;
    for (int lane = 0; lane < 32; lane++) {
        for (int r = 0; r < 4; r++)
            for (int e = 0; e < epr; e++) {
                int64_t x = (int64_t)(int32_t)(a[lane][r] << (32 - bits * (e + 1))) >> (32 - bits);
                int row = kt_mma_a_row(lane, r), col = kt_mma_a_col(lane, r, e, k, epr);
                A[row][col] = x;
                seen_a[row][col]++;
            }
        for (int r = 0; r < 2; r++)
            for (int e = 0; e < epr; e++) {
                int64_t x = (int64_t)(int32_t)(b[lane][r] << (32 - bits * (e + 1))) >> (32 - bits);
                int row = kt_mma_b_row(lane, r, e, k, epr), col = kt_mma_b_col(lane);
                B[row][col] = x;
                seen_b[row][col]++;
            }
    }
    for (int i = 0; i < 16; i++)
        for (int kk = 0; kk < k; kk++)
            assert_int_equal(seen_a[i][kk], 1);
    for (int kk = 0; kk < k; kk++)
        for (int j = 0; j < 8; j++)
            assert_int_equal(seen_b[kk][j], 1);
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 8; j++)
            for (int kk = 0; kk < k; kk++)
                d[i][j] += A[i][kk] * B[kk][j];
}

/* The scan of 16 tokens x 8 heads x 'dim' channels as scan_mma_kernel assembles it. */
static void check_scan_tile(int dim, kt_rng *rng)
{
    uint8_t codes[16][64]; /* dim / 4 bytes per token */
    float w[8][256], sw[8], amax[8];
    int qi[8][256], sum_qi[8];
    for (int t = 0; t < 16; t++)
        for (int i = 0; i < dim / 4; i++)
            codes[t][i] = (uint8_t)(kt_rng_next(rng) & 0xff);
    for (int h = 0; h < 8; h++) {
        amax[h] = 0;
        double mag = h == 7 ? 0.0 : ldexp(1.0, h - 3); /* head 7: all zero weights */
        for (int c = 0; c < dim; c++) {
            w[h][c] = (float)(kt_rng_normal(rng) * mag);
            amax[h] = fmaxf(amax[h], fabsf(w[h][c]));
        }
        sw[h] = kt_ffd_weight_step(amax[h]);
        sum_qi[h] = 0;
        for (int c = 0; c < dim; c++) {
            qi[h][c] = kt_ffd_weight_int(w[h][c], sw[h]);
            assert_true(abs(qi[h][c]) <= (int)KT_FFD_QMAX);
            assert_int_equal(128 * kt_ffd_weight_hi(qi[h][c]) + kt_ffd_weight_lo(qi[h][c]),
                             qi[h][c]);
            assert_true(abs(kt_ffd_weight_hi(qi[h][c])) <= 127);
            assert_true(abs(kt_ffd_weight_lo(qi[h][c])) <= 64);
            sum_qi[h] += qi[h][c];
        }
    }
    int64_t dhi[16][8] = {{0}}, dlo[16][8] = {{0}};
    for (int s = 0; s < dim / 32; s++) {
        uint32_t a[32][4], bhi[32][2], blo[32][2];
        for (int lane = 0; lane < 32; lane++) {
            int tig = lane & 3, r0 = kt_mma_a_row(lane, 0), r1 = kt_mma_a_row(lane, 1);
            uint32_t c0x, c0y, c1x, c1y; /* the kernel's uint2 loads, little-endian */
            memcpy(&c0x, &codes[r0][8 * s], 4);
            memcpy(&c0y, &codes[r0][8 * s + 4], 4);
            memcpy(&c1x, &codes[r1][8 * s], 4);
            memcpy(&c1y, &codes[r1][8 * s + 4], 4);
            a[lane][0] = kt_ffd_expand_codes((c0x >> (8 * tig)) & 0xffu);
            a[lane][1] = kt_ffd_expand_codes((c1x >> (8 * tig)) & 0xffu);
            a[lane][2] = kt_ffd_expand_codes((c0y >> (8 * tig)) & 0xffu);
            a[lane][3] = kt_ffd_expand_codes((c1y >> (8 * tig)) & 0xffu);
            int head = kt_mma_b_col(lane);
            for (int r = 0; r < 2; r++) {
                int hi[4], lo[4];
                for (int e = 0; e < 4; e++) {
                    int v = qi[head][32 * s + kt_mma_b_row(lane, r, e, 32, 4)];
                    hi[e] = kt_ffd_weight_hi(v), lo[e] = kt_ffd_weight_lo(v);
                }
                bhi[lane][r] = kt_pack_s8x4(hi[0], hi[1], hi[2], hi[3]);
                blo[lane][r] = kt_pack_s8x4(lo[0], lo[1], lo[2], lo[3]);
            }
        }
        emulate_mma(dhi, a, bhi, 32, 4);
        emulate_mma(dlo, a, blo, 32, 4);
    }
    /* read back through the C fragment, as the kernel does */
    for (int lane = 0; lane < 32; lane++)
        for (int i = 0; i < 4; i++) {
            int t = kt_mma_c_row(lane, i), h = kt_mma_c_col(lane, i);
            int64_t exact = 0;
            double ref = 0;
            for (int c = 0; c < dim; c++) {
                int code = kt_ffd_code_at(codes[t], c);
                exact += (int64_t)code * qi[h][c];
                ref += ((double)code - 1.5) * (double)w[h][c];
            }
            assert_true(128 * dhi[t][h] + dlo[t][h] == exact);
            float score = kt_ffd_scan_score((int)dhi[t][h], (int)dlo[t][h], sw[h], sum_qi[h]);
            double bound = kt_ffd_scan_error_bound(dim, sw[h], amax[h]);
            if (!(fabs(score - ref) <= bound))
                fail_msg("d %d head %d token %d: score %.9g, float64 %.9g, bound %.3g", dim, h, t,
                         score, ref, bound);
        }
}

static void test_ffd_scan_mirror(void **state)
{
    (void)state;
    kt_rng rng;
    kt_rng_seed(&rng, 77);
    assert_int_equal(kt_ffd_expand_codes(0xe4), 0x03020100u); /* codes 0,1,2,3 */
    assert_int_equal(kt_pack_s8x4(-1, 2, -128, 127), 0x7f8002ffu);
    for (int rep = 0; rep < 4; rep++) {
        check_scan_tile(64, &rng);
        check_scan_tile(128, &rng);
        check_scan_tile(256, &rng);
    }
}

/* The GEMM's 32-k chunk: lane tig loads k = 8 tig .. 8 tig + 7 of rows g and g + 8 of X and
 * row g of W; registers 2s, 2s + 1 feed k-step s. The two mma must give the exact dots. */
static void test_gemm_fragments(void **state)
{
    (void)state;
    int16_t x[16][32], w[8][32];
    kt_rng rng;
    kt_rng_seed(&rng, 3);
    for (int i = 0; i < 16; i++)
        for (int k = 0; k < 32; k++)
            x[i][k] = (int16_t)((int)(kt_rng_next(&rng) % 201) - 100);
    for (int j = 0; j < 8; j++)
        for (int k = 0; k < 32; k++)
            w[j][k] = (int16_t)((int)(kt_rng_next(&rng) % 201) - 100);
    int64_t d[16][8] = {{0}};
    for (int s = 0; s < 2; s++) {
        uint32_t a[32][4], b[32][2];
        for (int lane = 0; lane < 32; lane++) {
            int tig = lane & 3, ra = kt_mma_a_row(lane, 0), rb = kt_mma_a_row(lane, 1);
            int n = kt_mma_b_col(lane);
            uint32_t xa[4], xb[4], wg[4]; /* the 16-byte loads as 4 words */
            for (int q = 0; q < 4; q++) {
                int k0 = kt_gemm_chunk_k(tig, q / 2, q % 2, 0),
                    k1 = kt_gemm_chunk_k(tig, q / 2, q % 2, 1);
                assert_int_equal(k0, 8 * tig + 2 * q); /* word q of the lane's load */
                xa[q] = (uint16_t)x[ra][k0] | (uint32_t)(uint16_t)x[ra][k1] << 16;
                xb[q] = (uint16_t)x[rb][k0] | (uint32_t)(uint16_t)x[rb][k1] << 16;
                wg[q] = (uint16_t)w[n][k0] | (uint32_t)(uint16_t)w[n][k1] << 16;
            }
            a[lane][0] = xa[2 * s], a[lane][1] = xb[2 * s];
            a[lane][2] = xa[2 * s + 1], a[lane][3] = xb[2 * s + 1];
            b[lane][0] = wg[2 * s], b[lane][1] = wg[2 * s + 1];
        }
        emulate_mma(d, a, b, 16, 2);
    }
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 8; j++) {
            int64_t want = 0;
            for (int k = 0; k < 32; k++)
                want += (int64_t)x[i][k] * w[j][k];
            assert_true(d[i][j] == want);
        }
}

/* ---- the GPU test's FFD cases ---------------------------------------------------------- */

static void test_gpu_ffd_cases_decidable(void **state)
{
    (void)state;
    const kt_op *op = kt_op_find("attention_decode");
    const kt_dtype dtypes[] = {KT_DTYPE_FP32, KT_DTYPE_FP16, KT_DTYPE_BF16};
    kt_backend *b = NULL;
    assert_int_equal(kt_backend_open(&b, "cpu", 2, 1), KT_OK);
    for (size_t i = 0; i < KT_FFD_GPU_CASES; i++) {
        const kt_ffd_case *fc = &kt_ffd_gpu_cases[i];
        kt_point pt;
        memset(&pt, 0, sizeof(pt));
        pt.model.heads = fc->heads;
        pt.model.kv_heads = fc->kv_heads;
        pt.model.head_dim = fc->head_dim;
        pt.batch_size = fc->batch;
        pt.context_length = fc->context;
        kt_param_value in[KT_MAX_PARAMS];
        kt_param_defaults(in, op->input_params, op->n_input_params);
        for (int d = 0; d < 3; d++) {
            kt_instance *inst = NULL;
            assert_int_equal(
                kt_instance_create(&inst, b, op, &pt, dtypes[d], KT_DIST_LLM, in, KT_FFD_GPU_SEED),
                KT_OK);
            int mma_dim = fc->head_dim == 64 || fc->head_dim == 128 || fc->head_dim == 256;
            for (int scan_fp32 = !mma_dim; scan_fp32 < 2; scan_fp32++) {
                kt_ffd_expect e;
                assert_int_equal(kt_ffd_expect_compute(&e, fc, inst->host_inputs[0],
                                                       inst->host_inputs[1], inst->host_inputs[2],
                                                       dtypes[d], scan_fp32),
                                 KT_OK);
                int64_t n_blocks = fc->batch * fc->kv_heads * e.cache.n_full;
                print_message("case %zu %s scan %s: kept %lld/%lld, %lld empty splits, "
                              "%lld ambiguous, reference margin %.3g\n",
                              i, kt_dtype_name(dtypes[d]), scan_fp32 ? "fp32" : "mma",
                              (long long)e.n_kept, (long long)n_blocks, (long long)e.empty_splits,
                              (long long)e.ambiguous, e.margin);
                assert_int_equal(e.ambiguous, 0);
                assert_true(e.n_kept > 0 && e.n_kept < n_blocks);
                assert_true(e.empty_splits > 0);
                kt_ffd_expect_free(&e);
            }
            kt_instance_free(inst, b);
        }
    }
    kt_backend_close(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_plan),
        cmocka_unit_test(test_dense_walk_and_merge),
        cmocka_unit_test(test_ffd_scan_mirror),
        cmocka_unit_test(test_gemm_fragments),
        cmocka_unit_test(test_gpu_ffd_cases_decidable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
