"""ResNet-50 v1.5 training step (ImageNet shapes), as GE runs it on an Ascend NPU.

Activations are FLOAT16 in NC1HWC0 (channels in groups of 16), filters in FRACTAL_Z, BN
statistics in FLOAT.  Forward ops are phase "fp" (Conv2D, BNTrainingReduce, BNTrainingUpdate,
Relu, Add, MaxPool, TransData, MatMulV2, SoftmaxCrossEntropyWithLogits), backward ops "bp"
(Conv2DBackpropInput/Filter, BNTrainingReduceGrad/UpdateGrad, ReluGradV2, AddN, ...), optimizer
ops "update" (one ApplyMomentum per parameter), then a dynamic-shape AI CPU op for the
accuracy metric (``NonZero``, launched every execution).  Names follow the framework scope
(``resnet50/layer1/0/conv1/Conv2D``, ``gradients/.../Conv2DBackpropFilter``).
"""
from __future__ import annotations

import math

from msprof_py.runtime.graph import Graph, Tensor
from msprof_py.runtime.workloads._builder import GraphBuilder

F32 = "FLOAT"


def _c1(c: int) -> int:
    return max(1, math.ceil(c / 16))


class _ResNet:
    def __init__(self, batch: int, image: int) -> None:
        self.b = GraphBuilder("resnet50")
        self.n = batch
        self.image = image
        self.bp_units: list[tuple] = []  # forward records replayed in reverse for the backward pass
        self.params: list[Tensor] = []

    def conv_unit(self, scope: str, x: Tensor, cin: int, cout: int, k: int, stride: int, relu: bool) -> Tensor:
        b, n = self.b, self.n
        h = math.ceil(x.shape[2] / stride)
        w = self.b.weight(f"{scope}/conv/weight", (_c1(cin) * k * k, cout // 16, 16, 16), fmt="FRACTAL_Z")
        gamma = b.weight(f"{scope}/bn/gamma", (cout,), F32)
        beta = b.weight(f"{scope}/bn/beta", (cout,), F32)
        self.params += [w, gamma, beta]
        y = b.op(f"{scope}/Conv2D", "Conv2D", [x, w], [((n, _c1(cout), h, h, 16), "FLOAT16", "NC1HWC0")],
                 phase="fp", attrs={"strides": (1, 1, stride, stride), "ksize": (k, k)})[0]
        stat = ((1, _c1(cout), 1, 1, 16), F32, "NC1HWC0")
        bn_scope = scope.replace("conv", "bn")
        s, sq = b.op(f"{bn_scope}/BNTrainingReduce", "BNTrainingReduce", [y], [stat, stat], phase="fp")
        outs = b.op(f"{bn_scope}/BNTrainingUpdate", "BNTrainingUpdate", [y, s, sq, gamma, beta],
                    [(y.shape, "FLOAT16", "NC1HWC0"), stat, stat], phase="fp")
        out = outs[0]
        if relu:
            out = b.like(f"{scope.replace('conv', 'relu')}/Relu", "Relu", [out], out, phase="fp")
        self.bp_units.append(("conv", scope, x, y, w, gamma, relu))
        return out

    def bottleneck(self, scope: str, x: Tensor, cin: int, width: int, stride: int) -> Tensor:
        cout = width * 4
        y = self.conv_unit(f"{scope}/conv1", x, cin, width, 1, 1, True)
        y = self.conv_unit(f"{scope}/conv2", y, width, width, 3, stride, True)
        y = self.conv_unit(f"{scope}/conv3", y, width, cout, 1, 1, False)
        short = x
        if stride != 1 or cin != cout:
            short = self.conv_unit(f"{scope}/downsample/conv", x, cin, cout, 1, stride, False)
        out = self.b.like(f"{scope}/add/Add", "Add", [y, short], y, phase="fp")
        out = self.b.like(f"{scope}/relu/Relu", "Relu", [out], out, phase="fp")
        self.bp_units.append(("residual", scope, out, short is not x))
        return out

    def build(self) -> Graph:
        b, n = self.b, self.n
        img = b.input("input_images", (n, 3, self.image, self.image), "FLOAT16", "NCHW")
        labels = b.input("input_labels", (n,), "INT32")
        x = b.op("resnet50/input/TransData", "TransData", [img],
                 [((n, 1, self.image, self.image, 16), "FLOAT16", "NC1HWC0")], phase="fp")[0]
        x = self.conv_unit("resnet50/conv1", x, 3, 64, 7, 2, True)
        hp = math.ceil(x.shape[2] / 2)
        x = b.op("resnet50/maxpool/MaxPoolWithArgmaxV1", "MaxPoolWithArgmaxV1", [x],
                 [((n, 4, hp, hp, 16), "FLOAT16", "NC1HWC0"), ((n, 4, 9, hp * hp // 16 + 1, 16), "UINT16")],
                 phase="fp", attrs={"ksize": (3, 3)})[0]
        cin = 64
        for li, (blocks, width) in enumerate(zip((3, 4, 6, 3), (64, 128, 256, 512)), 1):
            for bi in range(blocks):
                stride = 2 if (bi == 0 and li > 1) else 1
                x = self.bottleneck(f"resnet50/layer{li}/{bi}", x, cin, width, stride)
                cin = width * 4
        pooled = b.op("resnet50/avgpool/ReduceMeanD", "ReduceMeanD", [x], [((n, 128, 1, 1, 16), "FLOAT16", "NC1HWC0")],
                      phase="fp")[0]
        flat = b.op("resnet50/flatten/TransData", "TransData", [pooled], [((n, 2048),)], phase="fp")[0]
        fc_w = b.weight("resnet50/fc/weight", (2048, 1000))
        fc_b = b.weight("resnet50/fc/bias", (1000,))
        self.params += [fc_w, fc_b]
        logits = b.op("resnet50/fc/MatMulV2", "MatMulV2", [flat, fc_w, fc_b], [((n, 1000),)], phase="fp",
                      fused_from=("resnet50/fc/MatMul", "resnet50/fc/BiasAdd"))[0]
        loss, dlogits = b.op("resnet50/loss/SoftmaxCrossEntropyWithLogits", "SoftmaxCrossEntropyWithLogits",
                             [logits, labels], [((n,), F32), ((n, 1000),)], phase="fp")
        b.output(loss)
        self.backward(dlogits, flat, fc_w, pooled, x)
        self.update()
        # top-1 hits for the accuracy metric: an AI CPU op with a data-dependent (dynamic) shape
        hits = b.op("metrics/accuracy/NonZero", "NonZero", [logits], [((n, 2), "INT64")], dynamic=True)[0]
        b.output(hits)
        return b.graph

    def backward(self, dlogits: Tensor, flat: Tensor, fc_w: Tensor, pooled: Tensor, last: Tensor) -> None:
        b, n = self.b, self.n
        g = "gradients/resnet50"
        b.op(f"{g}/fc/MatMul_grad/MatMulV2_1", "MatMulV2", [flat, dlogits], [((2048, 1000),)], phase="bp",
             attrs={"transpose_x1": True})
        b.op(f"{g}/fc/BiasAdd_grad/BiasAddGrad", "BiasAddGrad", [dlogits], [((1000,),)], phase="bp")
        dflat = b.op(f"{g}/fc/MatMul_grad/MatMulV2", "MatMulV2", [dlogits, fc_w], [((n, 2048),)], phase="bp")[0]
        dpool = b.op(f"{g}/flatten/TransData_grad/TransData", "TransData", [dflat], [(pooled.shape, "FLOAT16",
                                                                                      "NC1HWC0")], phase="bp")[0]
        dy = b.like(f"{g}/avgpool/ReduceMeanD_grad/Tile", "TileD", [dpool], last, phase="bp")
        pending_short: list[Tensor] = []
        for unit in reversed(self.bp_units):
            if unit[0] == "residual":
                _, scope, out, has_down = unit
                dy = b.like(f"{g}/{scope[9:]}/relu/Relu_grad/ReluGradV2", "ReluGradV2", [dy, out], out, phase="bp")
                pending_short.append(dy)
                continue
            _, scope, x, y, w, gamma, relu = unit
            s = f"{g}/{scope[9:]}"
            if relu:
                dy = b.like(f"{s.replace('conv', 'relu')}/Relu_grad/ReluGradV2", "ReluGradV2", [dy, y], y, phase="bp")
            stat = ((1, y.shape[1], 1, 1, 16), F32, "NC1HWC0")
            bn = s.replace("conv", "bn")
            dg, db = b.op(f"{bn}/BNTrainingUpdate_grad/BNTrainingUpdateGrad", "BNTrainingUpdateGrad", [dy, y],
                          [stat, stat], phase="bp")
            dy = b.like(f"{bn}/BNTrainingReduce_grad/BNTrainingReduceGrad", "BNTrainingReduceGrad",
                        [dy, y, dg, db, gamma], y, phase="bp")
            b.like(f"{s}/Conv2D_grad/Conv2DBackpropFilter", "Conv2DBackpropFilter", [x, dy], w, phase="bp")
            if scope != "resnet50/conv1":
                dx = b.like(f"{s}/Conv2D_grad/Conv2DBackpropInput", "Conv2DBackpropInput", [w, dy], x, phase="bp")
                if scope.endswith("/conv1") and pending_short:
                    # the block input receives the main path and the shortcut gradient
                    short = pending_short.pop()
                    dx = b.like(f"{s.rsplit('/', 1)[0]}/AddN", "AddN", [dx, short], dx, phase="bp",
                                fused_from=(f"{s.rsplit('/', 1)[0]}/AddN", f"{s.rsplit('/', 1)[0]}/ReluGradV2")
                                if scope.endswith("layer1/0/conv1") else ())
                dy = dx
            if scope == "resnet50/conv1":
                continue
            if scope.endswith("downsample/conv"):
                pending_short[-1] = dy  # gradient through the projection replaces the identity one
                dy = pending_short[-1]
        mp = self.b.graph.producers()
        del mp

    def update(self) -> None:
        b = self.b
        lr = b.weight("learning_rate", (1,), F32)
        mom = b.weight("momentum", (1,), F32)
        for p in self.params:
            acc = b.weight(f"{p.name}/Momentum", p.shape, p.dtype, p.format)
            b.op(f"Momentum/update_{p.name}/ApplyMomentum", "ApplyMomentum", [p, acc, lr, p, mom],
                 [(p.shape, p.dtype, p.format)], phase="update")


def build(batch: int = 32, image: int = 224) -> Graph:
    """The ResNet-50 training step graph for ``batch`` images of ``image`` x ``image`` pixels."""
    return _ResNet(batch, image).build()
