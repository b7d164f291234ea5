"""The torch variants of ktrial's ops: what PyTorch itself does for each, on ktrial's own
buffers (kernels/python/torch_variants.c compiles this file into ktrial and calls it through
the Python bridge, docs/python.md).

Each function is fn(inputs, outputs, problem) and writes its output in place. torch 1.13 (the
Debian build) has no float16 matmul, softmax or silu on the CPU: on a CPU float16 tensor these
compute in float32 and round the result to float16 (the casts are in the timed call, as they
would be in a PyTorch program). bfloat16 and float32 compute in their own type, softmax in
float32 as PyTorch's own attention does.
"""
import math

import torch
import torch.nn.functional as F


def _compute_type(t):
    if t.dtype == torch.float16 and t.device.type == "cpu":
        return torch.float32
    return t.dtype


def gemm(inputs, outputs, problem):
    """y[m, n] = x[m, k] @ w[n, k]^T (torch.matmul)."""
    x, w = inputs
    (y,) = outputs
    ct = _compute_type(x)
    if ct == y.dtype:
        torch.matmul(x, w.t(), out=y)
    else:
        y.copy_(torch.matmul(x.to(ct), w.to(ct).t()))


def attention_decode(inputs, outputs, problem):
    """out[b, h, d] = softmax(q k^T / sqrt(d)) v for one new token, over the KV cache
    k, v[b, kv_heads, T, d]; query head h reads KV head h // (heads // kv_heads) (GQA).
    torch 1.13 has no scaled_dot_product_attention: this is its math path, matmul, softmax
    in float32, matmul, with the query heads of a group batched against their KV head."""
    q, k, v = inputs
    (out,) = outputs
    b, h, d = q.shape
    hkv = k.shape[1]
    ct = _compute_type(q)
    qg = q.to(ct).view(b, hkv, h // hkv, d)
    scores = torch.matmul(qg, k.to(ct).transpose(-1, -2)) * (1.0 / math.sqrt(d))
    probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(ct)
    out.copy_(torch.matmul(probs, v.to(ct)).view(b, h, d))


def swiglu_mlp(inputs, outputs, problem):
    """y = (silu(x Wg^T) * (x Wu^T)) Wd^T, the gate and up weights stacked in w_gate_up[2I, H]
    (rows 0..I-1 gate, I..2I-1 up), w_down[H, I]."""
    x, w_gate_up, w_down = inputs
    (y,) = outputs
    i = w_down.shape[1]
    ct = _compute_type(x)
    gu = torch.matmul(x.to(ct), w_gate_up.to(ct).t())
    a = F.silu(gu[:, :i]) * gu[:, i:]
    if ct == y.dtype:
        torch.matmul(a, w_down.t(), out=y)
    else:
        y.copy_(torch.matmul(a, w_down.to(ct).t()))
