"""An LLaMA-like decoder forward pass (prefill) for inference, BF16.

Per layer: RmsNorm, fused QKV MatMul, RotaryMul, FlashAttentionScore (causal, MIX_AIV),
MatMul (o_proj), Add, RmsNorm, fused gate/up MatMul, Swiglu, MatMul (down_proj), Add.  Then the
final RmsNorm, lm_head MatMul, Cast to FLOAT, and a dynamic-shape AI CPU ``TopKV2`` sampling op
at the tail (launched every execution on the user stream).
"""
from __future__ import annotations

from msprof_py.runtime.graph import Graph
from msprof_py.runtime.workloads._builder import GraphBuilder


def build(batch: int = 4, seq_len: int = 1024, layers: int = 8, hidden: int = 4096, vocab: int = 32000) -> Graph:
    b = GraphBuilder("llm_decoder", dtype="BF16")
    heads = max(1, hidden // 128)
    ffn = int(hidden * 8 / 3) // 256 * 256
    tokens = batch * seq_len
    ids = b.input("input_ids", (batch, seq_len), "INT64")
    emb = b.weight("model/embed_tokens/weight", (vocab, hidden))
    x = b.op("model/embed_tokens/Gather", "GatherV2", [emb, ids], [((batch, seq_len, hidden),)])[0]
    cos = b.weight("model/rotary_emb/cos", (1, seq_len, 1, 128))
    for i in range(layers):
        s = f"model/layers/{i}"
        h = b.like(f"{s}/input_layernorm/RmsNorm", "RmsNorm", [x], x)
        wqkv = b.weight(f"{s}/self_attn/qkv_proj/weight", (hidden, 3 * hidden))
        qkv = b.op(f"{s}/self_attn/qkv_proj/MatMulV2", "MatMulV2", [h, wqkv], [((batch, seq_len, 3 * hidden),)],
                   fused_from=(f"{s}/self_attn/q_proj/MatMul", f"{s}/self_attn/k_proj/MatMul",
                               f"{s}/self_attn/v_proj/MatMul") if i == 0 else ())[0]
        q = b.op(f"{s}/self_attn/RotaryMul", "RotaryMul", [qkv, cos], [((batch, seq_len, hidden),)])[0]
        k = b.op(f"{s}/self_attn/RotaryMul_1", "RotaryMul", [qkv, cos], [((batch, seq_len, hidden),)])[0]
        a = b.op(f"{s}/self_attn/FlashAttentionScore", "FlashAttentionScore", [q, k, qkv],
                 [((batch, seq_len, hidden),), ((batch, heads, seq_len, 8), "FLOAT"),
                  ((batch, heads, seq_len, 8), "FLOAT")],
                 attrs={"head_num": heads, "input_layout": "BSH", "sparse_mode": 2, "causal": True})[0]
        wo = b.weight(f"{s}/self_attn/o_proj/weight", (hidden, hidden))
        o = b.op(f"{s}/self_attn/o_proj/MatMulV2", "MatMulV2", [a, wo], [((batch, seq_len, hidden),)])[0]
        x = b.like(f"{s}/Add", "Add", [o, x], x)
        h = b.like(f"{s}/post_attention_layernorm/RmsNorm", "RmsNorm", [x], x)
        wgu = b.weight(f"{s}/mlp/gate_up_proj/weight", (hidden, 2 * ffn))
        gu = b.op(f"{s}/mlp/gate_up_proj/MatMulV2", "MatMulV2", [h, wgu], [((batch, seq_len, 2 * ffn),)])[0]
        act = b.op(f"{s}/mlp/Swiglu", "Swiglu", [gu], [((batch, seq_len, ffn),)])[0]
        wd = b.weight(f"{s}/mlp/down_proj/weight", (ffn, hidden))
        d = b.op(f"{s}/mlp/down_proj/MatMulV2", "MatMulV2", [act, wd], [((batch, seq_len, hidden),)])[0]
        x = b.like(f"{s}/Add_1", "Add", [d, x], x)
    x = b.like("model/norm/RmsNorm", "RmsNorm", [x], x)
    last = b.op("model/StridedSliceD", "StridedSliceD", [x], [((batch, 1, hidden),)])[0]
    head = b.weight("lm_head/weight", (hidden, vocab))
    logits = b.op("lm_head/MatMulV2", "MatMulV2", [last, head], [((batch, 1, vocab),)])[0]
    logits = b.op("lm_head/Cast", "Cast", [logits], [((batch, 1, vocab), "FLOAT")])[0]
    tok = b.op("sampler/TopKV2", "TopKV2", [logits], [((batch, 1, 50), "FLOAT"), ((batch, 1, 50), "INT32")],
               dynamic=True)
    b.output(tok[1])
    del tokens
    return b.graph
