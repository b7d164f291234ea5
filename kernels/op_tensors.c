/* op_tensors.c - the one table of every built-in op's tensors as a kernel receives them: name,
 * position (inputs first, then outputs: call->inputs[i] and call->outputs[i], the order of
 * problem->tensors that each op's shape() fills, and the order a Python arm's lists follow),
 * shape in the op's sizes, memory layout and storage type. 'ktrial kernels --op NAME' prints it
 * and docs/ops.md lists it; tests/unit/test_op_tensors.c checks it against every op's shape()
 * and tests/cli/test_ops_doc.py checks the page against it. */
#include "kernel.h"

#include <string.h>

/* "dtype": the spec's dtype (fp32, fp16 or bf16), the storage type of every tensor. */
#define STORAGE "the spec's dtype"

static const kt_op_tensor_doc docs[] = {
    {"synthetic", "x", 0, "[elems]", "elems = batch_size * context_length", STORAGE},
    {"synthetic", "y", 1, "[elems]", "y = x", STORAGE},

    {"gemm", "x", 0, "[m, k]", "row-major activations; m = the batch's rows, k = the role's input",
     STORAGE},
    {"gemm", "w", 0, "[n, k]", "row-major weights, one row per output (y = x w^T)", STORAGE},
    {"gemm", "y", 1, "[m, n]", "row-major", STORAGE},

    {"swiglu_mlp", "x", 0, "[m, hidden]", "row-major activations", STORAGE},
    {"swiglu_mlp", "w_gate_up", 0, "[2 intermediate, hidden]",
     "row-major; rows 0..intermediate-1 are the gate, rows intermediate..2 intermediate-1 the up "
     "projection (stacked, not interleaved)",
     STORAGE},
    {"swiglu_mlp", "w_down", 0, "[hidden, intermediate]", "row-major", STORAGE},
    {"swiglu_mlp", "y", 1, "[m, hidden]",
     "row-major; y = (silu(x wg^T) * (x wu^T)) w_down^T, no residual", STORAGE},

    {"attention_decode", "q", 0, "[batch, heads, head_dim]", "row-major; one new token a sequence",
     STORAGE},
    {"attention_decode", "k", 0, "[batch, kv_heads, context, head_dim]",
     "row-major KV cache; query head h reads kv head h / (heads / kv_heads) (GQA)", STORAGE},
    {"attention_decode", "v", 0, "[batch, kv_heads, context, head_dim]", "as k", STORAGE},
    {"attention_decode", "out", 1, "[batch, heads, head_dim]",
     "row-major; softmax(q k^T / sqrt(head_dim)) v", STORAGE},

    {"decoder_layer", "x", 0, "[batch, hidden] | [batch, chunk, hidden]",
     "decode | prefill; row-major", STORAGE},
    {"decoder_layer", "norms", 0, "[layers, 2, hidden]",
     "per block: the attention RMSNorm's gain, then the MLP's", STORAGE},
    {"decoder_layer", "w_qkv", 0, "[layers, (heads + 2 kv_heads) head_dim, hidden]",
     "per block, row-major: the q rows, then k, then v", STORAGE},
    {"decoder_layer", "w_o", 0, "[layers, hidden, heads head_dim]", "per block, row-major",
     STORAGE},
    {"decoder_layer", "w_gate_up", 0, "[layers, 2 intermediate, hidden]",
     "per block, as swiglu_mlp's: the gate rows, then the up rows", STORAGE},
    {"decoder_layer", "w_down", 0, "[layers, hidden, intermediate]", "per block, row-major",
     STORAGE},
    {"decoder_layer", "k_cache", 0, "[layers batch, kv_heads, context, head_dim]",
     "block l's cache of sequence b at l batch + b; keys after RoPE", STORAGE},
    {"decoder_layer", "v_cache", 0, "[layers batch, kv_heads, context, head_dim]", "as k_cache",
     STORAGE},
    {"decoder_layer", "y", 1, "like x", "the last block's output", STORAGE},
    {"decoder_layer", "k_new", 1,
     "[layers, batch, kv_heads, head_dim] | [layers batch, kv_heads, chunk, head_dim]",
     "decode | prefill; the keys each block appends, after RoPE", STORAGE},
    {"decoder_layer", "v_new", 1, "like k_new", "the values each block appends", STORAGE},
};

int kt_op_tensor_docs(const char *op, const kt_op_tensor_doc **out)
{
    int first = -1, n = 0;
    for (int i = 0; i < (int)(sizeof(docs) / sizeof(docs[0])); i++)
        if (strcmp(docs[i].op, op) == 0) {
            if (first < 0)
                first = i;
            n++;
        }
    *out = first >= 0 ? &docs[first] : NULL;
    return n;
}
