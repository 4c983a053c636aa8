"""qonnx_ref.py: a small numpy executor of ONNX graphs with the QONNX / FINN custom ops,
written from their published semantics, to check bnnrun on models onnxruntime cannot run.

Standard ops are computed in float32 as ONNX does; only the ops the real models in
../shared/models use (and a few more) are implemented."""
import numpy as np
from onnx import numpy_helper, helper


def _round(x, mode):
    mode = mode.upper()
    if mode in ("ROUND", "HALF_EVEN"):
        return np.round(x)
    if mode == "CEIL":
        return np.ceil(x)
    if mode == "FLOOR":
        return np.floor(x)
    if mode in ("ROUND_TO_ZERO", "DOWN"):
        return np.fix(x)
    if mode == "UP":
        return np.sign(x) * np.ceil(np.abs(x))
    if mode == "HALF_UP":
        return np.sign(x) * np.floor(np.abs(x) + 0.5)
    if mode == "HALF_DOWN":
        return np.sign(x) * np.ceil(np.abs(x) - 0.5)
    raise ValueError(mode)


def quant(x, scale, zeropt, bitwidth, signed, narrow, rounding_mode):
    """QONNX Quant: y = (clip(round(x / scale + zeropt)) - zeropt) * scale."""
    b = float(bitwidth)
    if signed:
        lo = -(2 ** (b - 1)) + (1 if narrow else 0)
        hi = 2 ** (b - 1) - 1
    else:
        lo = 0
        hi = 2 ** b - 1 - (1 if narrow else 0)
    q = x / scale + zeropt
    q = np.clip(q, lo, hi)
    q = _round(q, rounding_mode)
    return ((q - zeropt) * scale).astype(np.float32)


def bipolar_quant(x, scale):
    """QONNX BipolarQuant: +scale where x >= 0, -scale elsewhere (0 maps to +1)."""
    return (np.where(x >= 0, np.float32(1), np.float32(-1)) * scale).astype(np.float32)


def multithreshold(x, thr, out_scale=1.0, out_bias=0.0, layout="NCHW"):
    """FINN MultiThreshold: out_scale * #{t in thr[c] : x >= t} + out_bias."""
    if x.ndim == 4 and layout == "NHWC":
        x = x.transpose(0, 3, 1, 2)
    c = x.shape[1]
    t = np.broadcast_to(thr, (c, thr.shape[1]))
    shape = [1, c] + [1] * (x.ndim - 2)
    count = np.zeros(x.shape, dtype=np.float32)
    for level in range(t.shape[1]):
        count += (x >= t[:, level].reshape(shape)).astype(np.float32)
    y = np.float32(out_scale) * count + np.float32(out_bias)
    if x.ndim == 4 and layout == "NHWC":
        y = y.transpose(0, 2, 3, 1)
    return y.astype(np.float32)


def _attrs(node):
    out = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        if isinstance(v, bytes):
            v = v.decode()
        out[a.name] = v
    return out


def run(model, feeds):
    """Run model (an onnx.ModelProto) on feeds {name: array}; returns the outputs."""
    g = model.graph
    opset = max([o.version for o in model.opset_import if o.domain in ("", "ai.onnx")] or [13])
    env = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    env.update(feeds)
    for n in g.node:
        a = _attrs(n)
        x = [env[i] if i else None for i in n.input]
        op = n.op_type
        f32 = np.float32
        if op == "Shape":
            y = np.array(x[0].shape, dtype=np.int64)
        elif op == "Gather":
            y = np.take(x[0], x[1], axis=a.get("axis", 0))
        elif op == "Unsqueeze":
            axes = a["axes"] if "axes" in a else list(x[1])
            y = x[0]
            for ax in sorted(int(v) % (y.ndim + len(axes)) for v in axes):
                y = np.expand_dims(y, ax)
        elif op == "Squeeze":
            axes = a.get("axes", list(x[1]) if len(x) > 1 and x[1] is not None else None)
            y = np.squeeze(x[0], axis=tuple(int(v) for v in axes) if axes is not None else None)
        elif op == "Concat":
            y = np.concatenate(x, axis=a["axis"])
        elif op == "Reshape":
            shape = [d if d != 0 else x[0].shape[i] for i, d in enumerate(x[1])]
            if shape and shape[0] == 1:  # exports declare batch 1: keep the real batch
                shape[0] = x[0].shape[0]
            y = x[0].reshape(shape)
        elif op == "Flatten":
            ax = a.get("axis", 1)
            y = x[0].reshape(int(np.prod(x[0].shape[:ax])), -1)
        elif op in ("Add", "Sub", "Mul", "Div", "Pow"):
            fn = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide,
                  "Pow": np.power}[op]
            y = fn(x[0], x[1])
            if x[0].dtype == np.float32:
                y = y.astype(np.float32)
        elif op == "Transpose":
            y = np.transpose(x[0], a.get("perm"))
        elif op == "MatMul":
            y = np.matmul(x[0].astype(np.float64), x[1].astype(np.float64)).astype(f32)
        elif op == "Gemm":
            A = x[0].T if a.get("transA", 0) else x[0]
            B = x[1].T if a.get("transB", 0) else x[1]
            y = (f32(a.get("alpha", 1.0)) * np.matmul(A.astype(np.float64), B.astype(np.float64))
                 .astype(f32))
            if len(x) > 2 and x[2] is not None:
                y = (y + f32(a.get("beta", 1.0)) * x[2]).astype(f32)
        elif op == "BatchNormalization":
            s, b, m, v = x[1:5]
            shape = [1, -1] + [1] * (x[0].ndim - 2)
            eps = f32(a.get("epsilon", 1e-5))
            y = ((x[0] - m.reshape(shape)) / np.sqrt(v.reshape(shape) + eps) * s.reshape(shape)
                 + b.reshape(shape)).astype(f32)
        elif op == "Relu":
            y = np.maximum(x[0], f32(0))
        elif op == "TopK":
            k = int(x[1][0]) if opset >= 10 else a["k"]
            idx = np.argsort(-x[0], axis=a.get("axis", -1), kind="stable")[..., :k]
            env[n.output[0]] = np.take_along_axis(x[0], idx, axis=-1)
            y = idx.astype(np.int64)
            env[n.output[1]] = y
            continue
        elif op == "BipolarQuant":
            y = bipolar_quant(x[0], x[1])
        elif op in ("Quant", "IntQuant"):
            y = quant(x[0], x[1], x[2], x[3], a.get("signed", 1), a.get("narrow", 0),
                      a.get("rounding_mode", "ROUND"))
        elif op == "MultiThreshold":
            y = multithreshold(x[0], x[1], a.get("out_scale", 1.0), a.get("out_bias", 0.0),
                               a.get("data_layout", "NCHW"))
        else:
            raise NotImplementedError(op)
        env[n.output[0]] = y
    return [env[o.name] for o in g.output]
