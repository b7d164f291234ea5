"""A decode-attention kernel written in PyTorch, as a paper's code or an LLM would give it, to be
judged by ktrial against the built-in C kernel (docs/python.md walks through it).

ktrial calls decode(inputs, outputs, problem) once per timed call:
  inputs  = [q, k, v]: q[batch, heads, head_dim], k and v[batch, kv_heads, context, head_dim]
  outputs = [out]:     out[batch, heads, head_dim], to be written in place
  problem = {'batch': .., 'heads': .., 'kv_heads': .., 'head_dim': .., 'context': ..,
             'op': 'attention_decode', 'dtype': 'fp32', 'threads': ..}
The tensors are ktrial's own buffers (no copy): write the result into out, do not allocate a
new one and return it unless you have to (a returned tensor is copied in after the timer).
"""
import math

import torch


def decode(inputs, outputs, problem):
    q, k, v = inputs
    (out,) = outputs
    b, h, d = q.shape
    group = h // problem["kv_heads"]
    # every query head of a group reads the same KV head: batch them against it
    qg = q.view(b, problem["kv_heads"], group, d)
    scores = torch.matmul(qg, k.transpose(-1, -2)) * (1.0 / math.sqrt(d))
    probs = torch.softmax(scores, dim=-1)
    torch.matmul(probs, v, out=out.view(b, problem["kv_heads"], group, d))


def decode_repeat_kv(inputs, outputs, problem):
    """The textbook way: repeat each KV head for its query heads, then one batched matmul per
    step. The repeat copies the whole cache on every call."""
    q, k, v = inputs
    (out,) = outputs
    group = q.shape[1] // problem["kv_heads"]
    k = k.repeat_interleave(group, dim=1)
    v = v.repeat_interleave(group, dim=1)
    scores = torch.matmul(q.unsqueeze(2), k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    out.copy_(torch.matmul(torch.softmax(scores, dim=-1), v).squeeze(2))
