"""A BERT-base-like encoder training step (FLOAT16, ND), as GE runs it.

Every op's inputs and outputs are what the op computes, so the forward pass also runs
numerically (``msprof-py compare --workload bert``).  Activations are ``(tokens, hidden)`` with
``tokens = batch * seq_len``; attention works per head on ``(batch, heads, seq_len, 64)``.

Head of the graph: the AI CPU ``DropOutGenMask`` (dynamic shape) makes the dropout bit mask; the
attention mask (``input_mask``, 1 = token, 0 = padding, shaped ``(batch, 1, 1, seq_len)``)
becomes the additive bias ``(mask - 1) * 10000`` (Cast, Muls, Adds).

Per layer forward: fused QKV MatMulV2 -> ConfusionTransposeD (reshape to
``(B, S, 3, heads, 64)`` and transpose to ``(3, B, heads, S, 64)``) -> SplitD into q, k, v ->
BatchMatMul(q, k^T) -> Muls (1/sqrt(64)) -> Add (mask bias) -> SoftmaxV2 -> DropOutDoMask ->
BatchMatMul(probs, v) -> ConfusionTransposeD back to ``(tokens, hidden)`` -> MatMulV2 (output
projection) -> Add (residual) -> LayerNormV3(gamma, beta) -> MatMulV2 -> Gelu -> MatMulV2 ->
Add (residual) -> LayerNormV3.  Backward mirrors it with the *Grad ops and the MatMul /
BatchMatMul gradient pairs (dX = dY W^T, dW = X^T dY); the optimizer is one ApplyAdamW per
parameter.
"""
from __future__ import annotations

import math

from msprof_py.errors import WorkloadError
from msprof_py.runtime.graph import Graph, Tensor
from msprof_py.runtime.workloads._builder import GraphBuilder

F32 = "FLOAT"
VOCAB = 30522
HEAD_DIM = 64
MASK_BIAS = 10000.0  # padding positions get -10000 before the softmax (fits fp16)


def build(batch: int = 32, seq_len: int = 128, layers: int = 12, hidden: int = 768) -> Graph:
    b = GraphBuilder("bert")
    d = min(HEAD_DIM, hidden)
    if hidden % d:
        raise WorkloadError(f"workload 'bert': hidden must be a multiple of the head size {HEAD_DIM}, got {hidden}")
    heads = hidden // d
    tokens = batch * seq_len
    ids = b.input("input_ids", (batch, seq_len), "INT32")
    mask_in = b.input("input_mask", (batch, 1, 1, seq_len), "INT32")
    labels = b.input("masked_lm_labels", (batch, seq_len), "INT32")
    params: list[Tensor] = []
    grads: dict[str, Tensor] = {}

    def w(name: str, shape: tuple, dtype: str | None = None) -> Tensor:
        t = b.weight(name, shape, dtype)
        params.append(t)
        return t

    def ln(scope: str, x: Tensor, gamma: Tensor, beta: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        y, mean, rstd = b.op(f"{scope}/LayerNormV3", "LayerNormV3", [x, gamma, beta],
                             [(x.shape,), ((tokens, 1), F32), ((tokens, 1), F32)], phase="fp",
                             attrs={"begin_norm_axis": -1, "epsilon": 1e-12})
        return y, mean, rstd

    def mm(name: str, x: Tensor, wt: Tensor, **kw) -> Tensor:
        return b.op(name, "MatMulV2", [x, wt], [((x.shape[0], wt.shape[1]),)], phase="fp", **kw)[0]

    drop_mask = b.op("bert/dropout/DropOutGenMask", "DropOutGenMask", [ids],
                     [((tokens * heads * seq_len // 8,), "UINT8")], phase="fp", dynamic=True)[0]
    mask = b.op("bert/encoder/Cast", "Cast", [mask_in], [(mask_in.shape, "FLOAT16")], phase="fp")[0]
    mask = b.like("bert/encoder/Muls", "Muls", [mask], mask, phase="fp", attrs={"value": MASK_BIAS})
    mask_bias = b.like("bert/encoder/Adds", "Adds", [mask], mask, phase="fp", attrs={"value": -MASK_BIAS})
    emb = w("bert/embeddings/word_embeddings", (VOCAB, hidden))
    emb_ln_in = b.op("bert/embeddings/GatherV2", "GatherV2", [emb, ids], [((tokens, hidden),)], phase="fp")[0]
    e_gamma, e_beta = w("bert/embeddings/LayerNorm/gamma", (hidden,)), w("bert/embeddings/LayerNorm/beta", (hidden,))
    x, e_mean, e_rstd = ln("bert/embeddings/LayerNorm", emb_ln_in, e_gamma, e_beta)
    saved = []
    qkv_shape = (batch, seq_len, 3, heads, d)
    head_shape = (batch, heads, seq_len, d)
    for i in range(layers):
        s = f"bert/encoder/layer_{i}"
        a = f"{s}/attention/self"
        qkv_w = w(f"{a}/qkv/kernel", (hidden, 3 * hidden))
        qkv = mm(f"{a}/qkv/MatMulV2", x, qkv_w,
                 fused_from=(f"{a}/query/MatMul", f"{a}/key/MatMul", f"{a}/value/MatMul") if i == 0 else ())
        qkv_t = b.op(f"{a}/ConfusionTransposeD", "ConfusionTransposeD", [qkv], [((3,) + head_shape,)], phase="fp",
                     attrs={"perm": (2, 0, 3, 1, 4), "shape": qkv_shape, "transpose_first": False})[0]
        q, k, v = b.op(f"{a}/SplitD", "SplitD", [qkv_t], [(head_shape,)] * 3, phase="fp",
                       attrs={"split_dim": 0, "num_split": 3})
        scores = b.op(f"{a}/BatchMatMul", "BatchMatMul", [q, k], [((batch, heads, seq_len, seq_len),)],
                      phase="fp", attrs={"adj_x1": False, "adj_x2": True})[0]
        scaled = b.like(f"{a}/Muls", "Muls", [scores], scores, phase="fp", attrs={"value": 1.0 / math.sqrt(d)})
        masked = b.like(f"{a}/Add", "Add", [scaled, mask_bias], scores, phase="fp")
        probs = b.like(f"{a}/SoftmaxV2", "SoftmaxV2", [masked], scores, phase="fp", attrs={"axes": (-1,)})
        dropped = b.like(f"{a}/dropout/DropOutDoMask", "DropOutDoMask", [probs, drop_mask], probs, phase="fp")
        ctx = b.op(f"{a}/BatchMatMul_1", "BatchMatMul", [dropped, v], [(head_shape,)], phase="fp",
                   attrs={"adj_x1": False, "adj_x2": False})[0]
        ctx2 = b.op(f"{a}/ConfusionTransposeD_1", "ConfusionTransposeD", [ctx], [((tokens, hidden),)], phase="fp",
                    attrs={"perm": (0, 2, 1, 3), "shape": (tokens, hidden), "transpose_first": True})[0]
        ow = w(f"{s}/attention/output/dense/kernel", (hidden, hidden))
        y = mm(f"{s}/attention/output/dense/MatMulV2", ctx2, ow)
        y_res = b.like(f"{s}/attention/output/Add", "Add", [y, x], y, phase="fp")
        g1, b1 = w(f"{s}/attention/output/LayerNorm/gamma", (hidden,)), w(f"{s}/attention/output/LayerNorm/beta",
                                                                           (hidden,))
        y_ln, m1, r1 = ln(f"{s}/attention/output/LayerNorm", y_res, g1, b1)
        iw = w(f"{s}/intermediate/dense/kernel", (hidden, 4 * hidden))
        h = mm(f"{s}/intermediate/dense/MatMulV2", y_ln, iw)
        h_act = b.like(f"{s}/intermediate/Gelu", "Gelu", [h], h, phase="fp")
        o2 = w(f"{s}/output/dense/kernel", (4 * hidden, hidden))
        z = mm(f"{s}/output/dense/MatMulV2", h_act, o2)
        z_res = b.like(f"{s}/output/Add", "Add", [z, y_ln], z, phase="fp")
        g2, b2 = w(f"{s}/output/LayerNorm/gamma", (hidden,)), w(f"{s}/output/LayerNorm/beta", (hidden,))
        z_ln, m2, r2 = ln(f"{s}/output/LayerNorm", z_res, g2, b2)
        saved.append(dict(s=s, x=x, qkv_w=qkv_w, q=q, k=k, v=v, probs=probs, dropped=dropped, ctx2=ctx2, ow=ow,
                          y_res=y_res, g1=g1, m1=m1, r1=r1, y_ln=y_ln, iw=iw, h=h, h_act=h_act, o2=o2,
                          z_res=z_res, g2=g2, m2=m2, r2=r2))
        x = z_ln
    cls_w = w("cls/predictions/output_weights", (hidden, VOCAB))
    logits = mm("cls/predictions/MatMulV2", x, cls_w)
    loss, dlogits = b.op("cls/loss/SoftmaxCrossEntropyWithLogits", "SoftmaxCrossEntropyWithLogits",
                         [logits, labels], [((tokens,), F32), ((tokens, VOCAB),)], phase="fp")
    b.output(loss)
    _backward(b, saved, x, dlogits, cls_w, (e_gamma, e_beta, e_mean, e_rstd, emb_ln_in, emb, ids), grads,
              batch, seq_len, heads, d)
    for p in params:
        g = grads.get(p.name, p)
        m = b.weight(f"{p.name}/adam_m", p.shape, F32)
        v_ = b.weight(f"{p.name}/adam_v", p.shape, F32)
        b.op(f"AdamW/update_{p.name}/ApplyAdamW", "ApplyAdamW", [p, m, v_, g], [(p.shape,)], phase="update")
    return b.graph


def _backward(b: GraphBuilder, saved: list[dict], x_last: Tensor, dlogits: Tensor, cls_w: Tensor, emb_parts: tuple,
              grads: dict[str, Tensor], batch: int, seq_len: int, heads: int, d: int) -> None:
    """Backward pass (phase "bp"): gradients flow from the loss to the embeddings; every weight's
    gradient lands in ``grads`` for its optimizer op."""
    g = "gradients"
    tokens, hidden = x_last.shape
    head_shape = (batch, heads, seq_len, d)

    def bp(name: str, type_: str, inputs: list[Tensor], outputs: list[tuple], **attrs) -> list[Tensor]:
        return b.op(name, type_, inputs, outputs, phase="bp", attrs=attrs)

    def dense_grad(scope: str, x: Tensor, wt: Tensor, dy: Tensor) -> Tensor:
        """dW = X^T dY (MatMulV2_1), dX = dY W^T (MatMulV2)."""
        grads[wt.name] = bp(f"{scope}/MatMul_grad/MatMulV2_1", "MatMulV2", [x, dy], [(wt.shape,)],
                            transpose_x1=True)[0]
        return bp(f"{scope}/MatMul_grad/MatMulV2", "MatMulV2", [dy, wt], [(x.shape,)], transpose_x2=True)[0]

    def ln_grad(scope: str, dy: Tensor, x: Tensor, rstd: Tensor, mean: Tensor, gamma: Tensor, beta_name: str) -> Tensor:
        dx, dg, db = bp(f"{scope}/LayerNormV3_grad/LayerNormGrad", "LayerNormGrad", [dy, x, rstd, mean, gamma],
                        [(x.shape,), (gamma.shape,), (gamma.shape,)])
        grads[gamma.name] = dg
        grads[beta_name] = db
        return dx

    dx = dense_grad(f"{g}/cls/predictions", x_last, cls_w, dlogits)
    for t in reversed(saved):
        s, gs = t["s"], f"{g}/{t['s']}"
        dz = ln_grad(f"{gs}/output/LayerNorm", dx, t["z_res"], t["r2"], t["m2"], t["g2"], f"{s}/output/LayerNorm/beta")
        dh = dense_grad(f"{gs}/output/dense", t["h_act"], t["o2"], dz)
        dh = bp(f"{gs}/intermediate/Gelu_grad/GeluGrad", "GeluGrad", [dh, t["h"], t["h_act"]], [(t["h"].shape,)])[0]
        dy = dense_grad(f"{gs}/intermediate/dense", t["y_ln"], t["iw"], dh)
        dy = bp(f"{gs}/attention/output/AddN", "AddN", [dy, dz], [(dy.shape,)])[0]  # residual branch
        dy = ln_grad(f"{gs}/attention/output/LayerNorm", dy, t["y_res"], t["r1"], t["m1"], t["g1"],
                     f"{s}/attention/output/LayerNorm/beta")
        dctx2 = dense_grad(f"{gs}/attention/output/dense", t["ctx2"], t["ow"], dy)
        a = f"{gs}/attention/self"
        dctx = bp(f"{a}/ConfusionTransposeD_1_grad/ConfusionTransposeD", "ConfusionTransposeD", [dctx2],
                  [(head_shape,)], perm=(0, 2, 1, 3), shape=(batch, seq_len, heads, d), transpose_first=False)[0]
        ddrop = bp(f"{a}/BatchMatMul_1_grad/BatchMatMul", "BatchMatMul", [dctx, t["v"]],
                   [(t["probs"].shape,)], adj_x2=True)[0]
        dv = bp(f"{a}/BatchMatMul_1_grad/BatchMatMul_1", "BatchMatMul", [t["dropped"], dctx], [(head_shape,)],
                adj_x1=True)[0]
        dprobs = bp(f"{a}/dropout/DropOutDoMask_grad/DropOutDoMask", "DropOutDoMask", [ddrop],
                    [(ddrop.shape,)])[0]
        dsc = bp(f"{a}/SoftmaxV2_grad/SoftmaxGrad", "SoftmaxGrad", [dprobs, t["probs"]], [(dprobs.shape,)])[0]
        dsc = bp(f"{a}/Muls_grad/Muls", "Muls", [dsc], [(dsc.shape,)], value=1.0 / math.sqrt(d))[0]
        dq = bp(f"{a}/BatchMatMul_grad/BatchMatMul", "BatchMatMul", [dsc, t["k"]], [(head_shape,)])[0]
        dk = bp(f"{a}/BatchMatMul_grad/BatchMatMul_1", "BatchMatMul", [dsc, t["q"]], [(head_shape,)], adj_x1=True)[0]
        dqkv_t = bp(f"{a}/SplitD_grad/ConcatD", "ConcatD", [dq, dk, dv], [((3,) + head_shape,)], concat_dim=0)[0]
        dqkv = bp(f"{a}/ConfusionTransposeD_grad/ConfusionTransposeD", "ConfusionTransposeD", [dqkv_t],
                  [((tokens, 3 * hidden),)], perm=(1, 3, 0, 2, 4), shape=(tokens, 3 * hidden), transpose_first=True)[0]
        dx_attn = dense_grad(f"{a}/qkv", t["x"], t["qkv_w"], dqkv)
        dx = bp(f"{gs}/attention/AddN", "AddN", [dx_attn, dy], [(dy.shape,)])[0]  # residual branch
    e_gamma, e_beta, e_mean, e_rstd, ln_in, emb, ids = emb_parts
    dx = ln_grad(f"{g}/bert/embeddings/LayerNorm", dx, ln_in, e_rstd, e_mean, e_gamma, e_beta.name)
    grads[emb.name] = bp(f"{g}/bert/embeddings/GatherV2_grad/UnsortedSegmentSum", "UnsortedSegmentSum", [dx, ids],
                         [(emb.shape,)])[0]
