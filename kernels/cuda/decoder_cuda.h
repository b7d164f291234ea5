/* decoder_cuda.h - private to kernels/cuda: the decoder_layer variant's own kernels
 * (decoder_kernels.cu), its state (decoder_cuda.c) and one step's launches (decoder_step.c).
 * Every launcher enqueues on 'stream', synchronizes nothing, and returns KT_OK or KT_ERROR
 * with the message set. */
#ifndef KT_CUDA_DECODER_CUDA_H
#define KT_CUDA_DECODER_CUDA_H

#include "../stage_call.h"
#include "cuda_private.h"
#include "decoder_plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* out[r] = x[r] / sqrt(mean(x[r]^2) + eps) * g for 'rows' rows of 'h' (fp32 arithmetic). */
int kt_cuda_dl_rmsnorm(cudaStream_t stream, kt_dtype dtype, void *out, const void *x, const void *g,
                       int64_t rows, int64_t h);
/* out = a + b over 'n' elements. */
int kt_cuda_dl_add(cudaStream_t stream, kt_dtype dtype, void *out, const void *a, const void *b,
                   int64_t n);

/* Where the RoPE + append kernel of block l reads and writes (device pointers). */
typedef struct kt_cuda_dl_rope {
    const void *qkv;       /* [B][(H + 2 Hkv) d] */
    void *q;               /* [B][H][d] */
    void *k_work, *v_work; /* block l's working cache [B][Hkv][T + 1][d] */
    void *k_new, *v_new;   /* block l's [B][Hkv][d] */
    const float *cos_sin;  /* d / 2 cosines, then d / 2 sines, at position T */
} kt_cuda_dl_rope;

/* RoPE on the q and k heads at position T; q to 'q', k and v to token T of the working cache
 * and to k_new / v_new (kt_cdl_rope_row_of). */
int kt_cuda_dl_rope_append(cudaStream_t stream, kt_dtype dtype, const kt_dl_dims *m,
                           const kt_cuda_dl_rope *r);

/* fusion none: a launch per stage on the stream; graph: the same launches captured once into
 * a CUDA graph in prepare and replayed per call. */
enum { KT_CDL_FUSION_NONE, KT_CDL_FUSION_GRAPH };

typedef struct kt_cdl_state {
    kt_backend *backend;
    kt_dl_dims m;
    kt_dtype dt;
    int fusion;
    /* the stage variants: gemm and mlp shared by every block, attention one per block */
    kt_stage_call qkv, o, mlp;
    kt_stage_call *attn;
    const kt_variant *v_attn;
    kt_param_value p_attn[KT_MAX_PARAMS];
    void *k_work, *v_work; /* [L][B][Hkv][T + 1][d] */
    size_t work_bytes;
    float *cos_sin; /* device: RoPE at position T */
    void *act;      /* the activations (kt_cdl_buffers) */
    kt_cdl_buffers bufs;
    /* profile: kt_cdl_events(L) events, recorded between the launches */
    cudaEvent_t *events;
    int64_t n_events;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    const void *captured[KT_DL_N_INPUTS + KT_DL_N_OUTPUTS]; /* the buffers the graph holds */
    int graph_stage_times;         /* 1 when the graph's event nodes gave elapsed times */
    kt_stage_profile *profile_out; /* where the next timer stop puts the last call's stages */
    double record_ns;              /* measured cost of one event record */
    double overhead_ns;            /* of the records of one call */
} kt_cdl_state;

/* Enqueues one step (every block) on the backend's stream, with an event before the first
 * launch and after each. 'prepare' is 1 on the untimed first step, which prepares each block's
 * attention right after that block's append (FFD quantises the cache then); 'capture' records
 * the events as graph nodes (cudaEventRecordExternal) while the stream is being captured. */
int kt_cdl_step(kt_cdl_state *st, const kt_call *call, int prepare, int capture);

/* Fills 'out' with the stages of the last completed call from its events; 0 stages when the
 * events give no elapsed time. */
void kt_cdl_read_profile(kt_cdl_state *st, kt_stage_profile *out);

#ifdef __cplusplus
}
#endif

#endif
