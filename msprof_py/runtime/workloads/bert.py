"""A BERT-base-like encoder training step (FLOAT16, ND), as GE runs it.

Per layer forward: fused QKV MatMulV2, TransposeD, BatchMatMul (scores), SoftmaxV2, DropOutDoMask,
BatchMatMul (context), MatMulV2 (output projection), Add + LayerNorm, MatMulV2 + Gelu, MatMulV2,
Add + LayerNorm.  Backward mirrors it with the *Grad ops and MatMul/BatchMatMul gradient pairs;
the optimizer is one ApplyAdamW per parameter.  The dropout masks come from an AI CPU
``DropOutGenMask`` at the head of the graph with a dynamic shape.
"""
from __future__ import annotations

from msprof_py.runtime.graph import Graph, Tensor
from msprof_py.runtime.workloads._builder import GraphBuilder


def build(batch: int = 32, seq_len: int = 128, layers: int = 12, hidden: int = 768) -> Graph:
    b = GraphBuilder("bert")
    heads = max(1, hidden // 64)
    tokens = batch * seq_len
    ids = b.input("input_ids", (batch, seq_len), "INT32")
    b.input("input_mask", (batch, seq_len), "INT32")
    labels = b.input("masked_lm_labels", (batch, seq_len), "INT32")
    params: list[Tensor] = []

    def w(name: str, shape: tuple) -> Tensor:
        t = b.weight(name, shape)
        params.append(t)
        return t

    mask = b.op("bert/dropout/DropOutGenMask", "DropOutGenMask", [ids], [((tokens * heads * seq_len // 8,), "UINT8")],
                phase="fp", dynamic=True)[0]
    emb = w("bert/embeddings/word_embeddings", (30522, hidden))
    x = b.op("bert/embeddings/GatherV2", "GatherV2", [emb, ids], [((tokens, hidden),)], phase="fp")[0]
    x = b.like("bert/embeddings/LayerNorm/LayerNormV3", "LayerNormV3", [x], x, phase="fp")
    saved = []
    for i in range(layers):
        s = f"bert/encoder/layer_{i}"
        qkv_w = w(f"{s}/attention/self/qkv/kernel", (hidden, 3 * hidden))
        qkv = b.op(f"{s}/attention/self/qkv/MatMulV2", "MatMulV2", [x, qkv_w], [((tokens, 3 * hidden),)], phase="fp",
                   fused_from=(f"{s}/attention/self/query/MatMul", f"{s}/attention/self/key/MatMul",
                               f"{s}/attention/self/value/MatMul"))[0] if i == 0 else \
            b.op(f"{s}/attention/self/qkv/MatMulV2", "MatMulV2", [x, qkv_w], [((tokens, 3 * hidden),)], phase="fp")[0]
        q = b.op(f"{s}/attention/self/TransposeD", "TransposeD", [qkv], [((3, batch, heads, seq_len, 64),)],
                 phase="fp")[0]
        scores = b.op(f"{s}/attention/self/BatchMatMul", "BatchMatMul", [q, q],
                      [((batch, heads, seq_len, seq_len),)], phase="fp")[0]
        probs = b.like(f"{s}/attention/self/SoftmaxV2", "SoftmaxV2", [scores], scores, phase="fp")
        probs = b.like(f"{s}/attention/self/dropout/DropOutDoMask", "DropOutDoMask", [probs, mask], probs, phase="fp")
        ctx = b.op(f"{s}/attention/self/BatchMatMul_1", "BatchMatMul", [probs, q], [((batch, heads, seq_len, 64),)],
                   phase="fp")[0]
        ctx = b.op(f"{s}/attention/self/TransposeD_1", "TransposeD", [ctx], [((tokens, hidden),)], phase="fp")[0]
        ow = w(f"{s}/attention/output/dense/kernel", (hidden, hidden))
        y = b.op(f"{s}/attention/output/dense/MatMulV2", "MatMulV2", [ctx, ow], [((tokens, hidden),)], phase="fp")[0]
        y = b.like(f"{s}/attention/output/Add", "Add", [y, x], y, phase="fp")
        y = b.like(f"{s}/attention/output/LayerNorm/LayerNormV3", "LayerNormV3", [y], y, phase="fp")
        iw = w(f"{s}/intermediate/dense/kernel", (hidden, 4 * hidden))
        h = b.op(f"{s}/intermediate/dense/MatMulV2", "MatMulV2", [y, iw], [((tokens, 4 * hidden),)], phase="fp")[0]
        h = b.like(f"{s}/intermediate/Gelu", "Gelu", [h], h, phase="fp")
        o2 = w(f"{s}/output/dense/kernel", (4 * hidden, hidden))
        z = b.op(f"{s}/output/dense/MatMulV2", "MatMulV2", [h, o2], [((tokens, hidden),)], phase="fp")[0]
        z = b.like(f"{s}/output/Add", "Add", [z, y], z, phase="fp")
        z = b.like(f"{s}/output/LayerNorm/LayerNormV3", "LayerNormV3", [z], z, phase="fp")
        saved.append((s, x, qkv, q, scores, probs, ctx, y, h, z))
        x = z
    cls_w = w("cls/predictions/output_weights", (hidden, 30522))
    logits = b.op("cls/predictions/MatMulV2", "MatMulV2", [x, cls_w], [((tokens, 30522),)], phase="fp")[0]
    loss, dlogits = b.op("cls/loss/SoftmaxCrossEntropyWithLogits", "SoftmaxCrossEntropyWithLogits",
                         [logits, labels], [((tokens,), "FLOAT"), ((tokens, 30522),)], phase="fp")
    b.output(loss)
    # ---- backward
    g = "gradients"
    b.op(f"{g}/cls/predictions/MatMul_grad/MatMulV2_1", "MatMulV2", [x, dlogits], [((hidden, 30522),)], phase="bp",
         attrs={"transpose_x1": True})
    dx = b.op(f"{g}/cls/predictions/MatMul_grad/MatMulV2", "MatMulV2", [dlogits, cls_w], [((tokens, hidden),)],
              phase="bp")[0]
    for s, x_in, qkv, q, scores, probs, ctx, y, h, z in reversed(saved):
        gs = f"{g}/{s}"
        dz = b.like(f"{gs}/output/LayerNorm/LayerNormV3_grad/LayerNormGrad", "LayerNormGrad", [dx, z], z, phase="bp")
        b.op(f"{gs}/output/dense/MatMul_grad/MatMulV2_1", "MatMulV2", [h, dz], [((4 * hidden, hidden),)], phase="bp",
             attrs={"transpose_x1": True})
        dh = b.op(f"{gs}/output/dense/MatMul_grad/MatMulV2", "MatMulV2", [dz, dz], [(h.shape,)], phase="bp")[0]
        dh = b.like(f"{gs}/intermediate/Gelu_grad/GeluGrad", "GeluGrad", [dh, h], h, phase="bp")
        b.op(f"{gs}/intermediate/dense/MatMul_grad/MatMulV2_1", "MatMulV2", [y, dh], [((hidden, 4 * hidden),)],
             phase="bp", attrs={"transpose_x1": True})
        dy = b.op(f"{gs}/intermediate/dense/MatMul_grad/MatMulV2", "MatMulV2", [dh, h], [(y.shape,)], phase="bp")[0]
        dy = b.like(f"{gs}/attention/output/AddN", "AddN", [dy, dz], dy, phase="bp")
        dy = b.like(f"{gs}/attention/output/LayerNorm/LayerNormV3_grad/LayerNormGrad", "LayerNormGrad", [dy, y], y,
                    phase="bp")
        b.op(f"{gs}/attention/output/dense/MatMul_grad/MatMulV2_1", "MatMulV2", [ctx, dy], [((hidden, hidden),)],
             phase="bp", attrs={"transpose_x1": True})
        dctx = b.op(f"{gs}/attention/output/dense/MatMul_grad/MatMulV2", "MatMulV2", [dy, dy], [(ctx.shape,)],
                    phase="bp")[0]
        dctx = b.op(f"{gs}/attention/self/TransposeD_1_grad/TransposeD", "TransposeD", [dctx],
                    [((batch, heads, seq_len, 64),)], phase="bp")[0]
        dprobs = b.op(f"{gs}/attention/self/BatchMatMul_1_grad/BatchMatMul", "BatchMatMul", [dctx, q],
                      [(scores.shape,)], phase="bp")[0]
        b.op(f"{gs}/attention/self/BatchMatMul_1_grad/BatchMatMul_1", "BatchMatMul", [probs, dctx],
             [((batch, heads, seq_len, 64),)], phase="bp")
        dprobs = b.like(f"{gs}/attention/self/dropout/DropOutDoMask_grad/DropOutDoMask", "DropOutDoMask", [dprobs],
                        dprobs, phase="bp")
        dsc = b.like(f"{gs}/attention/self/SoftmaxV2_grad/SoftmaxGrad", "SoftmaxGrad", [dprobs, probs], scores,
                     phase="bp")
        dq = b.op(f"{gs}/attention/self/BatchMatMul_grad/BatchMatMul", "BatchMatMul", [dsc, q],
                  [((batch, heads, seq_len, 64),)], phase="bp")[0]
        b.op(f"{gs}/attention/self/BatchMatMul_grad/BatchMatMul_1", "BatchMatMul", [dsc, q],
             [((batch, heads, seq_len, 64),)], phase="bp")
        dqkv = b.op(f"{gs}/attention/self/TransposeD_grad/TransposeD", "TransposeD", [dq], [(qkv.shape,)],
                    phase="bp")[0]
        b.op(f"{gs}/attention/self/qkv/MatMul_grad/MatMulV2_1", "MatMulV2", [x_in, dqkv], [((hidden, 3 * hidden),)],
             phase="bp", attrs={"transpose_x1": True})
        dx = b.op(f"{gs}/attention/self/qkv/MatMul_grad/MatMulV2", "MatMulV2", [dqkv, dqkv], [(x_in.shape,)],
                  phase="bp")[0]
    b.like(f"{g}/bert/embeddings/LayerNorm/LayerNormV3_grad/LayerNormGrad", "LayerNormGrad", [dx], dx, phase="bp")
    b.op(f"{g}/bert/embeddings/GatherV2_grad/UnsortedSegmentSum", "UnsortedSegmentSum", [dx, ids],
         [((30522, hidden),)], phase="bp")
    for p in params:
        b.op(f"AdamW/update_{p.name}/ApplyAdamW", "ApplyAdamW", [p, p, p, p], [(p.shape,)], phase="update")
    return b.graph
