#!/usr/bin/env python3
"""qconv_models.py: small low-bit CNNs written as QONNX (Quant on activations and weights,
Conv, BatchNormalization, Relu, Flatten, MatMul), the shapes the qconv step must cover:
3x3 pad 1 and stride-2 convs, channel counts 3, 5 and 65, 1- and 2-bit weights, 2- and
3-bit activations, a signed activation quant whose padding reads a non-zero code, a dense
classifier on the flattened codes. Power-of-two scales keep the float sums exact, so the
lowbit pass takes every layer integer (tests/lowbit/test_qconv_bin.py checks that it does).

    qconv_models.py OUTDIR   writes OUTDIR/<name>.onnx and prints the names"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

QDOM = "qonnx.custom_op.general"


class Net:
    def __init__(self, name, rng):
        self.name, self.rng, self.nodes, self.inits, self.n = name, rng, [], [], 0

    def const(self, arr):
        self.n += 1
        name = f"c{self.n}"
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def node(self, op, ins, domain="", **attrs):
        self.n += 1
        out = f"v{self.n}"
        self.nodes.append(helper.make_node(op, ins, [out], name=f"{op}_{self.n}", domain=domain,
                                           **attrs))
        return out

    def quant(self, x, scale, bits, signed, zeropt=0.0, narrow=0, rounding="ROUND"):
        return self.node("Quant", [x, self.const(np.float32(scale)), self.const(np.float32(zeropt)),
                                   self.const(np.float32(bits))], QDOM, signed=signed,
                         narrow=narrow, rounding_mode=rounding)

    def weights(self, shape, wbits):
        """Float weights behind a Quant: wbits 1 gives bipolar levels, else signed levels."""
        o = shape[0]
        scale = np.float32(2.0) ** -self.rng.integers(1, 4, size=(o,) + (1,) * (len(shape) - 1))
        if wbits == 1:
            lv = np.where(self.rng.integers(0, 2, size=shape) == 1, 1, -1)
            return self.node("BipolarQuant", [self.const((lv * scale).astype(np.float32)),
                                              self.const(scale.astype(np.float32))], QDOM)
        lo, hi = -(1 << (wbits - 1)), (1 << (wbits - 1)) - 1
        lv = self.rng.integers(lo, hi + 1, size=shape)
        return self.node("Quant", [self.const((lv * scale).astype(np.float32)),
                                   self.const(scale.astype(np.float32)), self.const(np.float32(0)),
                                   self.const(np.float32(wbits))], QDOM, signed=1, narrow=0,
                         rounding_mode="ROUND")

    def conv(self, x, c, o, k, wbits, stride=1, pad=0):
        w = self.weights((o, c, k, k), wbits)
        return self.node("Conv", [x, w], kernel_shape=[k, k], strides=[stride, stride],
                         pads=[pad] * 4)

    def bn(self, x, c):
        r = self.rng
        gamma = r.normal(0, 1, c).astype(np.float32)
        gamma[0] = -abs(gamma[0]) - 0.1  # a decreasing channel
        return self.node("BatchNormalization",
                         [x, self.const(gamma), self.const(r.normal(0, 1, c).astype(np.float32)),
                          self.const(r.normal(0, 2, c).astype(np.float32)),
                          self.const(r.uniform(0.5, 4, c).astype(np.float32))], epsilon=1e-5)

    def dense(self, x, k, o, wbits):
        w = self.weights((o, k), wbits)
        wt = self.node("Transpose", [w], perm=[1, 0])
        return self.node("MatMul", [x, wt])

    def model(self, x_shape, y):
        g = helper.make_graph(self.nodes, self.name,
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                             ["N"] + list(x_shape))],
                              [helper.make_tensor_value_info(y, TensorProto.FLOAT, None)],
                              initializer=self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13),
                                                helper.make_opsetid(QDOM, 1)])
        m.ir_version = 8
        return m


def block(net, x, c, o, k, wbits, abits, stride=1, pad=1, signed=0, relu=True):
    y = net.bn(net.conv(x, c, o, k, wbits, stride, pad), o)
    if relu:
        y = net.node("Relu", [y])
    return net.quant(y, 0.5, abits, signed)


def w2a2(rng):
    """w2a2: 3 -> 5 (3x3 pad 1) -> 65 (3x3 stride 2 pad 1) -> 5 (1x1) -> dense 10."""
    n = Net("qcnn_w2a2", rng)
    x = n.quant("x", 0.25, 2, 0)
    x = block(n, x, 3, 5, 3, 2, 2)
    x = block(n, x, 5, 65, 3, 2, 2, stride=2)
    x = block(n, x, 65, 5, 1, 2, 2, pad=0)
    f = n.node("Flatten", [x], axis=1)
    return n.model((3, 9, 9), n.dense(f, 5 * 5 * 5, 10, 2))


def w1a2(rng):
    """w1a2 with 3-bit and signed (non-zero pad code) activations: 3 -> 65 (3x3 pad 1, signed
    2-bit input: pad code 2) -> 5 (3x3 stride 2 pad 1, signed 3-bit: pad code 4) -> 33 (3x3 pad
    1, 2-bit) -> dense 7."""
    n = Net("qcnn_w1a2", rng)
    x = n.quant("x", 0.5, 2, 1)
    x = block(n, x, 3, 65, 3, 1, 3, signed=1, relu=False)
    x = block(n, x, 65, 5, 3, 1, 2, stride=2)
    x = block(n, x, 5, 33, 3, 1, 2)
    f = n.node("Flatten", [x], axis=1)
    return n.model((3, 7, 8), n.dense(f, 33 * 4 * 4, 7, 1))


def tail(rng):
    """Convs without a quant after them: 2-bit unsigned weights on a 3-bit activation, a
    dilated conv, then a last 3x3 conv whose exact i32 accumulator goes out through the float
    epilogue (cast, scale): 5 -> 31 (3x3 pad 1 dilation 2) -> 3 (3x3 pad 1 stride 2)."""
    n = Net("qcnn_tail", rng)
    x = n.quant("x", 0.125, 3, 0)
    w = n.node("Quant", [n.const((rng.integers(0, 4, size=(31, 5, 3, 3)) * 0.5).astype(np.float32)),
                         n.const(np.float32(0.5)), n.const(np.float32(0)), n.const(np.float32(3))],
               QDOM, signed=1, narrow=0, rounding_mode="ROUND")
    y = n.node("Conv", [x, w], kernel_shape=[3, 3], pads=[2, 2, 2, 2], dilations=[2, 2])
    y = n.quant(n.node("Relu", [n.bn(y, 31)]), 0.5, 2, 0)
    y = n.conv(y, 31, 3, 3, 2, stride=2, pad=1)
    return n.model((5, 6, 7), y)


def wide(rng):
    """Channels past 256 (two k256 steps a tap) and 3-bit signed weights: 3 -> 300 (3x3 pad 1,
    w2) -> 70 (3x3 stride 2 pad 1, w3) -> 40 (3x3 pad 1 over signed 2-bit codes: pad code 2,
    w1) -> dense 10."""
    n = Net("qcnn_wide", rng)
    x = n.quant("x", 0.25, 2, 0)
    x = block(n, x, 3, 300, 3, 2, 2)
    x = block(n, x, 300, 70, 3, 3, 2, stride=2, signed=1, relu=False)
    x = block(n, x, 70, 40, 3, 1, 2)
    f = n.node("Flatten", [x], axis=1)
    return n.model((3, 8, 8), n.dense(f, 40 * 4 * 4, 10, 2))


def tobits(rng):
    """A qconv2d into a BipolarQuant (a one-level threshold to packed bits, written by the
    qconv step as one image plane), read by a binary conv with a float output."""
    n = Net("qcnn_tobits", rng)
    x = n.quant("x", 0.25, 2, 0)
    y = n.bn(n.conv(x, 3, 40, 3, 2, 1, 1), 40)
    b = n.node("BipolarQuant", [y, n.const(np.float32(1))], QDOM)
    return n.model((3, 6, 6), n.bn(n.conv(b, 40, 20, 3, 1, 1, 1), 20))


def grouped(rng):
    """A grouped (depthwise) low-bit conv: lowbit makes it a qconv2d with groups = 4, which the
    code generator refuses (test_qconv_bin.py checks the message)."""
    n = Net("qcnn_grouped", rng)
    x = n.quant("x", 0.25, 2, 0)
    w = n.weights((4, 1, 3, 3), 2)
    y = n.node("Conv", [x, w], kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=4)
    y = n.quant(n.node("Relu", [n.bn(y, 4)]), 0.5, 2, 0)
    return n.model((4, 5, 5), n.conv(y, 4, 3, 1, 2))


def s2c64(rng):
    """64 2-bit channels into a 3x3 stride-2 conv (64 -> 64, w1): on the halo kernel's 8x16
    tile it asks for 47,892 bytes of dynamic shared memory beside 16,896 static, past the
    default 48 KiB together (libbnnrt must raise the kernel's limit; bnncc --tune's
    candidates run it, tests/tune/test_tune_cli.py) -> dense 10."""
    n = Net("qcnn_s2c64", rng)
    x = n.quant("x", 0.25, 2, 0)
    x = block(n, x, 64, 64, 3, 1, 2, stride=2)
    f = n.node("Flatten", [x], axis=1)
    return n.model((64, 17, 33), n.dense(f, 64 * 9 * 17, 10, 2))


def big(rng):
    """An input image of more bits than a pixel row holds (3x20x20: the image-plane quantize's
    K is far above 32 * ld, which the loader once refused): 3 -> 16 (3x3 pad 1) -> 16 (3x3
    stride 2 pad 1) -> dense 10 over 1600 codes."""
    n = Net("qcnn_big", rng)
    x = n.quant("x", 0.25, 2, 0)
    x = block(n, x, 3, 16, 3, 2, 2)
    x = block(n, x, 16, 16, 3, 2, 2, stride=2)
    f = n.node("Flatten", [x], axis=1)
    return n.model((3, 20, 20), n.dense(f, 16 * 10 * 10, 10, 2))


def float_conv(net, x, c, o, k, stride, pad, bias=False):
    """A float conv (the stem: float weights, no Quant), optionally with a bias."""
    ins = [x, net.const(net.rng.normal(0, 0.5, (o, c, k, k)).astype(np.float32))]
    if bias:
        ins.append(net.const(net.rng.normal(0, 0.5, o).astype(np.float32)))
    return net.node("Conv", ins, kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4)


def stem_bn(net, x, c):
    """Batch-norm with a decreasing channel (bn's) and a zero gamma (a channel of one code)."""
    r = net.rng
    gamma = r.normal(0, 1, c).astype(np.float32)
    gamma[0], gamma[-1] = -abs(gamma[0]) - 0.1, 0.0
    return net.node("BatchNormalization",
                    [x, net.const(gamma), net.const(r.normal(0, 0.5, c).astype(np.float32)),
                     net.const(r.normal(0, 1, c).astype(np.float32)),
                     net.const(r.uniform(1, 6, c).astype(np.float32))], epsilon=1e-5)


def stem_res(rng):
    """A ResNet stem whose codes the next conv reads (conv2d_chain with a quantizer: codes
    straight from the exact tensor-core stem, docs/kernels.md "The stem"): 3 -> 16 (7x7 stride 2
    pad 3), batch-norm, relu, unsigned 2-bit quant, max-pool 3x3 stride 2 pad 1; a block whose
    shortcut is the stem's quant float (the pool step's float output): qconv 16 -> 16, batch-norm,
    add, relu, quant -> dense 10."""
    n = Net("qcnn_stem_res", rng)
    s = n.quant(n.node("Relu", [stem_bn(n, float_conv(n, "x", 3, 16, 7, 2, 3), 16)]), 0.25, 2, 0)
    s = n.node("MaxPool", [s], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    y = n.bn(n.conv(s, 16, 16, 3, 1, 1, 1), 16)
    y = n.quant(n.node("Relu", [n.node("Add", [y, s])]), 0.5, 2, 0)
    f = n.node("Flatten", [y], axis=1)
    return n.model((3, 21, 18), n.dense(f, 16 * 6 * 5, 10, 1))


def stem_a3(rng):
    """A stem of 70 channels (three words a pixel, image planes of 4) with a bias and a signed
    3-bit quant of zero point 1 (7 levels, lo -4): 3 -> 70 (3x3 pad 1), batch-norm, relu, quant,
    max-pool 2x2 stride 2 -> qconv 70 -> 8 (3x3 pad 1, w2) -> dense 10."""
    n = Net("qcnn_stem_a3", rng)
    s = n.quant(n.node("Relu", [stem_bn(n, float_conv(n, "x", 3, 70, 3, 1, 1, bias=True), 70)]), 0.125, 3, 1,
                zeropt=1.0)
    s = n.node("MaxPool", [s], kernel_shape=[2, 2], strides=[2, 2])
    y = block(n, s, 70, 8, 3, 2, 2)
    f = n.node("Flatten", [y], axis=1)
    return n.model((3, 17, 16), n.dense(f, 8 * 8 * 8, 10, 2))


def stem_nopool(rng):
    """A stem without a max-pool (its codes from the separate steps: the tiled float conv with
    the chain, then a quantize): 3 -> 24 (5x5 stride 2 pad 2), batch-norm, relu, unsigned 2-bit
    quant -> qconv 24 -> 8 (3x3 pad 1) -> dense 10."""
    n = Net("qcnn_stem_nopool", rng)
    s = n.quant(n.node("Relu", [stem_bn(n, float_conv(n, "x", 3, 24, 5, 2, 2), 24)]), 0.25, 2, 0)
    y = block(n, s, 24, 8, 3, 1, 2)
    f = n.node("Flatten", [y], axis=1)
    return n.model((3, 13, 12), n.dense(f, 8 * 7 * 6, 10, 1))


def random_net(rng):
    """Two or three random quantized convs (channels 1-130, kernels 1-3, strides, dilations,
    asymmetric pads, 1-3 bit weights, 2-3 bit activations, signed ones giving non-zero pad
    codes), the last one's i32 accumulator out through the float epilogue. Returns the model
    and its input shape (C, H, W)."""
    n = Net("qcnn_random", rng)
    c = int(rng.choice([1, 3, 7, 33, 130]))
    h, w = int(rng.integers(3, 10)), int(rng.integers(3, 10))
    shape, signed = (c, h, w), int(rng.integers(0, 2))
    x = n.quant("x", 0.25, int(rng.integers(2, 4)), signed)
    layers = int(rng.integers(2, 4))
    for i in range(layers):
        k, s, d = int(rng.integers(1, 4)), int(rng.integers(1, 3)), int(rng.integers(1, 3))
        pads = [int(v) for v in rng.integers(0, 3, size=4)]
        while (h + pads[0] + pads[2] - d * (k - 1) - 1) < 0 or (w + pads[1] + pads[3] - d * (k - 1) - 1) < 0:
            pads = [v + 1 for v in pads]
        o = int(rng.choice([1, 5, 32, 40, 65]))
        y = n.node("Conv", [x, n.weights((o, c, k, k), int(rng.integers(1, 4)))], kernel_shape=[k, k],
                   strides=[s, s], dilations=[d, d], pads=pads)
        h = (h + pads[0] + pads[2] - d * (k - 1) - 1) // s + 1
        w = (w + pads[1] + pads[3] - d * (k - 1) - 1) // s + 1
        c = o
        if i == layers - 1:
            return n.model(shape, y), shape
        signed = int(rng.integers(0, 2))
        y = n.bn(y, o)
        x = n.quant(y if signed else n.node("Relu", [y]), 0.5, int(rng.integers(2, 4)), signed)


MODELS = {"qcnn_big": (big, (3, 20, 20)), "qcnn_tobits": (tobits, (3, 6, 6)), "qcnn_tail": (tail, (5, 6, 7)), "qcnn_wide": (wide, (3, 8, 8)), "qcnn_w2a2": (w2a2, (3, 9, 9)), "qcnn_w1a2": (w1a2, (3, 7, 8)), "qcnn_s2c64": (s2c64, (64, 17, 33)),
          "qcnn_stem_res": (stem_res, (3, 21, 18)), "qcnn_stem_a3": (stem_a3, (3, 17, 16)),
          "qcnn_stem_nopool": (stem_nopool, (3, 13, 12))}


def main():
    import onnx
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for i, (name, (make, _)) in enumerate(sorted(MODELS.items())):
        onnx.save(make(np.random.default_rng(100 + i)), os.path.join(out, name + ".onnx"))
        print(name)


if __name__ == "__main__":
    main()
