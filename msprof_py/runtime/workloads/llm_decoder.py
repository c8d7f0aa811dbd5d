"""An LLaMA-like decoder forward pass (prefill) for inference, BF16.

Every op's inputs and outputs are what the op computes, so the graph also runs numerically
(``msprof-py compare --workload llm_decoder``).  Activations are ``(batch, seq_len, hidden)``
(the BSH layout), ``hidden = heads * 128``.

Per layer: RmsNorm(gamma) -> fused QKV MatMulV2 -> SplitD into q, k, v -> RotaryMul on q and on
k with the ``(1, seq_len, 1, 128)`` cos/sin tables (each head rotated) -> FlashAttentionScore(q,
k, v) (BSH, causal, scale 1/sqrt(128), MIX_AIV; softmax max/sum side outputs) -> MatMulV2
(o_proj) -> Add (residual) -> RmsNorm -> fused gate/up MatMulV2 -> Swiglu -> MatMulV2
(down_proj) -> Add (residual).  Then the final RmsNorm, StridedSliceD of the last token, the
lm_head MatMulV2, Cast to FLOAT, and a dynamic-shape AI CPU ``TopKV2`` sampling op at the tail
(launched every execution on the user stream).
"""
from __future__ import annotations

import math

from msprof_py.errors import WorkloadError
from msprof_py.runtime.graph import Graph
from msprof_py.runtime.workloads._builder import GraphBuilder

HEAD_DIM = 128
TOP_K = 50


def build(batch: int = 4, seq_len: int = 1024, layers: int = 8, hidden: int = 4096, vocab: int = 32000) -> Graph:
    b = GraphBuilder("llm_decoder", dtype="BF16")
    d = min(HEAD_DIM, hidden)
    if hidden % d or d % 2:  # whole heads of an even size (RoPE rotates half against half)
        raise WorkloadError(f"workload 'llm_decoder': hidden must be a multiple of the head size {HEAD_DIM} "
                            f"(or an even number below it), got {hidden}")
    heads = hidden // d
    ffn = max(256, int(hidden * 8 / 3) // 256 * 256)
    top_k = min(TOP_K, vocab)
    bsh = (batch, seq_len, hidden)
    ids = b.input("input_ids", (batch, seq_len), "INT64")
    emb = b.weight("model/embed_tokens/weight", (vocab, hidden))
    x = b.op("model/embed_tokens/Gather", "GatherV2", [emb, ids], [(bsh,)])[0]
    cos = b.weight("model/rotary_emb/cos", (1, seq_len, 1, d))
    sin = b.weight("model/rotary_emb/sin", (1, seq_len, 1, d))
    for i in range(layers):
        s = f"model/layers/{i}"
        g1 = b.weight(f"{s}/input_layernorm/weight", (hidden,))
        h = b.like(f"{s}/input_layernorm/RmsNorm", "RmsNorm", [x, g1], x, attrs={"epsilon": 1e-6})
        wqkv = b.weight(f"{s}/self_attn/qkv_proj/weight", (hidden, 3 * hidden))
        qkv = b.op(f"{s}/self_attn/qkv_proj/MatMulV2", "MatMulV2", [h, wqkv], [((batch, seq_len, 3 * hidden),)],
                   fused_from=(f"{s}/self_attn/q_proj/MatMul", f"{s}/self_attn/k_proj/MatMul",
                               f"{s}/self_attn/v_proj/MatMul") if i == 0 else ())[0]
        q, k, v = b.op(f"{s}/self_attn/SplitD", "SplitD", [qkv], [(bsh,)] * 3, attrs={"split_dim": 2, "num_split": 3})
        q = b.like(f"{s}/self_attn/RotaryMul", "RotaryMul", [q, cos, sin], q)
        k = b.like(f"{s}/self_attn/RotaryMul_1", "RotaryMul", [k, cos, sin], k)
        a = b.op(f"{s}/self_attn/FlashAttentionScore", "FlashAttentionScore", [q, k, v],
                 [(bsh,), ((batch, heads, seq_len, 8), "FLOAT"), ((batch, heads, seq_len, 8), "FLOAT")],
                 attrs={"head_num": heads, "input_layout": "BSH", "sparse_mode": 2, "causal": True,
                        "scale_value": 1.0 / math.sqrt(d)})[0]
        wo = b.weight(f"{s}/self_attn/o_proj/weight", (hidden, hidden))
        o = b.op(f"{s}/self_attn/o_proj/MatMulV2", "MatMulV2", [a, wo], [(bsh,)])[0]
        x = b.like(f"{s}/Add", "Add", [o, x], x)
        g2 = b.weight(f"{s}/post_attention_layernorm/weight", (hidden,))
        h = b.like(f"{s}/post_attention_layernorm/RmsNorm", "RmsNorm", [x, g2], x, attrs={"epsilon": 1e-6})
        wgu = b.weight(f"{s}/mlp/gate_up_proj/weight", (hidden, 2 * ffn))
        gu = b.op(f"{s}/mlp/gate_up_proj/MatMulV2", "MatMulV2", [h, wgu], [((batch, seq_len, 2 * ffn),)])[0]
        act = b.op(f"{s}/mlp/Swiglu", "Swiglu", [gu], [((batch, seq_len, ffn),)], attrs={"dim": -1})[0]
        wd = b.weight(f"{s}/mlp/down_proj/weight", (ffn, hidden))
        dn = b.op(f"{s}/mlp/down_proj/MatMulV2", "MatMulV2", [act, wd], [(bsh,)])[0]
        x = b.like(f"{s}/Add_1", "Add", [dn, x], x)
    gn = b.weight("model/norm/weight", (hidden,))
    x = b.like("model/norm/RmsNorm", "RmsNorm", [x, gn], x, attrs={"epsilon": 1e-6})
    last = b.op("model/StridedSliceD", "StridedSliceD", [x], [((batch, 1, hidden),)],
                attrs={"begin": (0, seq_len - 1, 0), "end": bsh, "strides": (1, 1, 1)})[0]
    head = b.weight("lm_head/weight", (hidden, vocab))
    logits = b.op("lm_head/MatMulV2", "MatMulV2", [last, head], [((batch, 1, vocab),)])[0]
    logits = b.op("lm_head/Cast", "Cast", [logits], [((batch, 1, vocab), "FLOAT")])[0]
    tok = b.op("sampler/TopKV2", "TopKV2", [logits], [((batch, 1, top_k), "FLOAT"), ((batch, 1, top_k), "INT32")],
               attrs={"k": top_k, "sorted": True}, dynamic=True)
    b.output(tok[1])
    return b.graph
