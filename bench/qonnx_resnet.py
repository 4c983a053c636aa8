#!/usr/bin/env python3
"""qonnx_resnet.py: a w1a2 ResNet-18 in the QONNX form a Brevitas export has (issue 7), written
with onnx.helper and numpy only (no torch: the generator runs where the tests run).

    bench/qonnx_resnet.py OUTDIR [--only NAME,...]    writes OUTDIR/NAME.onnx
    import qonnx_resnet; qonnx_resnet.make(name)      the onnx.ModelProto

What a Brevitas QuantResNet18 with 1-bit weights and 2-bit activations exports:

- float stem: Conv 7x7/2 (float weights), BatchNormalization, then the stem's QuantReLU
  (Relu, Quant: unsigned 2-bit) and MaxPool 3x3/2 pad 1 on its values (a QuantMaxPool2d
  passes the quantized tensor through);
- every conv of the 4 stages, the 1x1 stride-2 downsample convs included, a Conv whose weight
  is a BipolarQuant of a float initializer (Brevitas' binary weight quantizer, one power-of-two
  scale per output channel), no bias, then BatchNormalization;
- a basic block: conv1, BN, QuantReLU (Relu, Quant) -> conv2, BN; the residual Add in float
  (the shortcut is the block input's dequantized values, or BN(downsample conv)); the sum
  through the next QuantReLU (Relu, Quant), which is the next block's input;
- float head: GlobalAveragePool, Flatten, Gemm (fc with bias).

The downsample convs are binary too: they read the block input, which is already the 2-bit
quantized activation, so Brevitas users quantize them with the same weight quantizer as the
other convs (keeping them float would keep a float conv over 2-bit codes in every stage for
about 2 % of the multiply-accumulates).

Scales are powers of two, as Brevitas' fixed-point quantizers (`Uint8ActPerTensorFixedPoint`,
`restrict_scaling_type=POWER_OF_TWO`) give them: the float convolutions over the dequantized
values are then exact sums, and bnncc's lowbit pass proves each layer integer (docs/passes.md).
Batch-norm statistics are calibrated: the graph is run in numpy on a seeded random batch while
it is built, each BatchNormalization gets the measured per-channel mean and variance of its
input (perturbed a little), gammas in [0.6, 1.4] with every 8th one negative, betas around 0,
so the 2-bit codes spread over all four levels instead of saturating; each activation's scale
is the power of two nearest to the standard deviation of its input over 2.

- w1a2resnet18: ImageNet shapes, 3x224x224 in, 1000 classes, widths 64-128-256-512.
- w1a2resnet18_tiny: the same graph at 3x32x32, 10 classes, widths 16-64-128-160 (a quick test:
  1, 2, 4 and 8 words a pixel, the four image-plane widths of the qconv step)."""
import argparse
import os
import sys

import numpy as np

QDOM = "qonnx.custom_op.general"

# name: (input size, stage widths, classes, seed)
MODELS = {
    "w1a2resnet18": (224, (64, 128, 256, 512), 1000, 18),
    "w1a2resnet18_tiny": (32, (16, 64, 128, 160), 10, 19),
}


def shape(name):
    """The input shape of one item."""
    return (3, MODELS[name][0], MODELS[name][0])


def conv_nchw(x, w, stride, pad):
    """A plain float64 convolution (im2col and a matrix product), for the calibration."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    cols = np.empty((n, c, kh, kw, oh, ow), x.dtype)
    for i in range(kh):
        for j in range(kw):
            cols[:, :, i, j] = xp[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride]
    y = np.tensordot(w.reshape(o, -1), cols.reshape(n, c * kh * kw, oh * ow), axes=([1], [1]))
    return y.transpose(1, 0, 2).reshape(n, o, oh, ow)


class Graph:
    """ONNX nodes, initializers, and the value of every tensor on the calibration batch."""

    def __init__(self, rng):
        # onnx is imported here, not at the top: bench/run_models.py reads MODELS and
        # lowbit_ops on the GPU machine, which may have no onnx.
        from onnx import helper, numpy_helper
        self.helper, self.numpy_helper = helper, numpy_helper
        self.rng, self.nodes, self.inits, self.count = rng, [], [], 0

    def const(self, arr, what):
        self.count += 1
        name = f"{what}_{self.count}"
        self.inits.append(self.numpy_helper.from_array(np.asarray(arr), name))
        return name

    def node(self, op, ins, domain="", **attrs):
        self.count += 1
        out = f"{op.lower()}_{self.count}"
        self.nodes.append(self.helper.make_node(op, ins, [out], name=f"{op}_{self.count}",
                                           domain=domain, **attrs))
        return out

    # Each layer takes and returns (onnx name, calibration value).
    def conv(self, x, o, k, stride, pad, binary):
        name, v = x
        c = v.shape[1]
        if binary:
            # Brevitas' binary weights: sign(w) * scale, a power-of-two scale per channel.
            scale = 2.0 ** -self.rng.integers(4, 8, size=(o, 1, 1, 1))
            w = np.where(self.rng.random((o, c, k, k)) < 0.5, -1.0, 1.0) * scale
            wq = self.node("BipolarQuant", [self.const(w.astype(np.float32), "w"),
                                            self.const(scale.astype(np.float32), "ws")], QDOM)
        else:
            w = self.rng.standard_normal((o, c, k, k)) / np.sqrt(c * k * k)
            wq = self.const(w.astype(np.float32), "w")
        y = self.node("Conv", [name, wq], kernel_shape=[k, k], strides=[stride, stride],
                      pads=[pad] * 4)
        return y, conv_nchw(v, w.astype(np.float32).astype(np.float64), stride, pad)

    def bn(self, x):
        name, v = x
        c, r = v.shape[1], self.rng
        mean = v.mean(axis=(0, 2, 3))
        var = v.var(axis=(0, 2, 3)) + 1e-3
        mean = mean + r.normal(0, 0.1, c) * np.sqrt(var)
        var = var * r.uniform(0.7, 1.4, c)
        gamma = r.uniform(0.6, 1.4, c)
        gamma[3::8] *= -1
        beta = r.normal(0, 0.3, c)
        p = [self.const(a.astype(np.float32), "bn") for a in (gamma, beta, mean, var)]
        y = self.node("BatchNormalization", [name] + p, epsilon=1e-5)
        bc = (None, slice(None), None, None)
        return y, (v - mean[bc]) / np.sqrt(var[bc] + 1e-5) * gamma[bc] + beta[bc]

    def quant_relu(self, x):
        """Brevitas' QuantReLU: Relu, then an unsigned 2-bit Quant of a power-of-two scale."""
        name, v = x
        v = np.maximum(v, 0)
        scale = np.float32(2.0 ** np.round(np.log2(max(v.std(), 1e-3) / 2)))
        q = self.node("Quant", [self.node("Relu", [name]), self.const(scale, "s"),
                                self.const(np.float32(0), "z"), self.const(np.float32(2), "b")],
                      QDOM, signed=0, narrow=0, rounding_mode="ROUND")
        return q, np.clip(np.round(v / scale), 0, 3) * scale

    def maxpool(self, x):
        name, v = x
        vp = np.pad(v, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
        oh, ow = (v.shape[2] - 1) // 2 + 1, (v.shape[3] - 1) // 2 + 1
        y = np.full(v.shape[:2] + (oh, ow), -np.inf)
        for i in range(3):
            for j in range(3):
                y = np.maximum(y, vp[:, :, i:i + 2 * oh:2, j:j + 2 * ow:2])
        return self.node("MaxPool", [name], kernel_shape=[3, 3], strides=[2, 2],
                         pads=[1, 1, 1, 1]), y

    def block(self, x, cout, stride):
        h = self.quant_relu(self.bn(self.conv(x, cout, 3, stride, 1, True)))
        h = self.bn(self.conv(h, cout, 3, 1, 1, True))
        sc = x
        if stride != 1 or x[1].shape[1] != cout:
            sc = self.bn(self.conv(x, cout, 1, stride, 0, True))
        return self.quant_relu((self.node("Add", [h[0], sc[0]]), h[1] + sc[1]))


def make(name, calib=2):
    """The model NAME as an onnx.ModelProto (seeded: the same bytes every time)."""
    size, widths, classes, seed = MODELS[name]
    g = Graph(np.random.default_rng(seed))
    x = ("x", g.rng.standard_normal((calib, 3, size, size)))
    h = g.maxpool(g.quant_relu(g.bn(g.conv(x, widths[0], 7, 2, 3, False))))
    for i, cout in enumerate(widths):
        h = g.block(h, cout, 1 if i == 0 else 2)
        h = g.block(h, cout, 1)
    f = g.node("Flatten", [g.node("GlobalAveragePool", [h[0]])], axis=1)
    c = widths[-1]
    fc_w = (g.rng.standard_normal((classes, c)) / np.sqrt(c)).astype(np.float32)
    fc_b = (g.rng.standard_normal(classes) * 0.1).astype(np.float32)
    y = g.node("Gemm", [f, g.const(fc_w, "fc"), g.const(fc_b, "fcb")], transB=1)
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        g.nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, size, size])],
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, ["N", classes])], initializer=g.inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                helper.make_opsetid(QDOM, 1)])
    m.ir_version = 8
    return m


def lowbit_ops(name):
    """2 * multiply-accumulates of the binary-weight convs per item (the stages' convs)."""
    size, widths, _, _ = MODELS[name]
    hw, cin, total = size // 4, widths[0], 0
    for i, cout in enumerate(widths):
        for b in range(2):
            s = 2 if (i > 0 and b == 0) else 1
            ohw = hw // s
            total += 2 * ohw * ohw * cout * 9 * cin + 2 * ohw * ohw * cout * 9 * cout
            if s != 1 or cin != cout:
                total += 2 * ohw * ohw * cout * cin
            hw, cin = ohw, cout
    return total


def save(name, outdir):
    """Write OUTDIR/NAME.onnx and say how big it is (bench/models.py calls this too)."""
    import onnx
    path = os.path.join(outdir, name + ".onnx")
    onnx.save(make(name), path)
    print(f"{path}: {os.path.getsize(path) / 1e6:.1f} MB")


def command_line(models):
    """OUTDIR (created) and the names of --only, else all of models: the command line of this
    file and of bench/models.py."""
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    return a.outdir, [n for n in a.only.split(",") if n] or list(models)


def main():
    outdir, names = command_line(MODELS)
    for name in names:
        save(name, outdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
