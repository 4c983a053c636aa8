"""test_ops.py: small ONNX models built here, one per group of ops, run through
`bnnrun --reference` and compared with onnxruntime (max abs diff <= 1e-4 of the output's
scale, identical argmax), plus the binary-layer report of `bnncc --report`. Models with
QONNX/FINN custom ops are compared with qonnx_ref.py instead. Exit 77 without
numpy/onnx/onnxruntime."""
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:
    print("skipping:", e)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qonnx_ref  # noqa: E402

BUILD = os.environ.get("BNN_BUILD_ROOT", "build")
BNNRUN = os.path.join(BUILD, "runtime", "bnnrun")
BNNCC = os.path.join(BUILD, "compiler", "bnncc")
rng = np.random.default_rng(7)
passes = failures = 0
TMP = tempfile.mkdtemp(prefix="bnn_onnx_ops_")


def check(cond, msg):
    global passes, failures
    if cond:
        passes += 1
        print("ok:", msg)
    else:
        failures += 1
        print("FAIL:", msg)


def init(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def model(nodes, inits, in_shape, out_name="y", opset=13, extra_opsets=(), batch="N",
          out_type=TensorProto.FLOAT):
    shape = [batch] + list(in_shape[1:])
    g = helper.make_graph(nodes, "t", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info(out_name, out_type, None)],
                          initializer=inits)
    ops = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in extra_opsets]
    m = helper.make_model(g, opset_imports=ops)
    m.ir_version = 8
    return m


def bnn(m, x, name):
    path = os.path.join(TMP, name + ".onnx")
    onnx.save(m, path)
    xin, yout = os.path.join(TMP, name + "_x.npy"), os.path.join(TMP, name + "_y.npy")
    np.save(xin, x)
    r = subprocess.run([BNNRUN, "--reference", path, "--input", xin, "--output", yout],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip()
    return np.load(yout), ""


def report(m, name):
    path = os.path.join(TMP, name + ".onnx")
    onnx.save(m, path)
    r = subprocess.run([BNNCC, path, "--report", "--emit=ir", "-O0", "-o", os.devnull],
                       capture_output=True, text=True)
    return r.stdout + r.stderr


def compare(name, m, x, expect_report=(), ref=None):
    got, err = bnn(m, x, name)
    if got is None:
        check(False, "%s: bnnrun failed: %s" % (name, err))
        return
    if ref is None:
        sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        ref = sess.run(None, {"x": x})[0]
    scale = max(1.0, float(np.abs(ref).max()))
    ok = got.shape == ref.shape and float(np.abs(got.astype(np.float64) - ref).max()) <= 1e-4 * scale
    if ok and ref.ndim >= 2 and ref.dtype.kind == "f":
        ok = bool((got.argmax(-1) == ref.argmax(-1)).all())
    check(ok, "%s: equals the reference (shape %s, max diff %s)" % (
        name, got.shape, np.abs(got.astype(np.float64) - ref).max() if got.shape == ref.shape
        else "n/a"))
    if expect_report:
        rep = report(m, name)
        for line in expect_report:
            check(line in rep, "%s: report says %r" % (name, line))


def pm1(shape, alpha=None):
    w = np.where(rng.random(shape) < 0.5, -1.0, 1.0).astype(np.float32)
    if alpha is not None:
        w *= np.asarray(alpha, np.float32).reshape([-1] + [1] * (len(shape) - 1))
    return w


def bn_params(c, prefix, negative=True):
    gamma = rng.uniform(0.5, 1.5, c).astype(np.float32)
    if negative:
        gamma[::3] *= -1
    return [init(prefix + "_g", gamma), init(prefix + "_b", rng.normal(0, 1, c).astype(np.float32)),
            init(prefix + "_m", rng.normal(0, 2, c).astype(np.float32)),
            init(prefix + "_v", rng.uniform(0.5, 4, c).astype(np.float32))]


def bn_node(x, y, prefix):
    return helper.make_node("BatchNormalization", [x, prefix + "_g", prefix + "_b", prefix + "_m",
                                                   prefix + "_v"], [y], name=prefix)


def test_float_cnn():
    w1 = rng.normal(0, 0.3, (8, 3, 3, 3)).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1],
                         strides=[1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[3, 3],
                         strides=[2, 2], ceil_mode=1),
        helper.make_node("AveragePool", ["p1"], ["p2"], name="pool2", kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1], count_include_pad=1),
        helper.make_node("AveragePool", ["p2"], ["p3"], name="pool3", kernel_shape=[2, 2],
                         pads=[1, 1, 0, 0], count_include_pad=0),
        helper.make_node("Conv", ["p3", "w2"], ["c2"], name="conv2", auto_pad="SAME_UPPER",
                         strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["c2"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flat"),
        helper.make_node("Gemm", ["f", "wg", "bg"], ["z"], name="fc", transB=1, alpha=0.5,
                         beta=2.0),
        helper.make_node("Softmax", ["z"], ["y"], name="softmax"),
    ]
    inits = [init("w1", w1), init("b1", rng.normal(0, 1, 8).astype(np.float32)),
             init("w2", rng.normal(0, 0.3, (6, 8, 3, 3)).astype(np.float32)),
             init("wg", rng.normal(0, 1, (5, 6)).astype(np.float32)),
             init("bg", rng.normal(0, 1, 5).astype(np.float32))]
    x = rng.normal(0, 1, (3, 3, 15, 15)).astype(np.float32)
    compare("float_cnn", model(nodes, inits, x.shape), x,
            ["node 'conv1' (Conv): activations are not binarized (input is the graph input 'x'), "
             "kept float, 8x3x3x3", "node 'fc' (Gemm): activations are not binarized"])


def test_binary_cnn():
    alpha = rng.uniform(0.1, 2, 8).astype(np.float32)
    nodes = [
        helper.make_node("GreaterOrEqual", ["x", "zero"], ["ge"], name="ge0"),
        helper.make_node("Where", ["ge", "one", "mone"], ["a0"], name="bin0"),
        helper.make_node("Conv", ["a0", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        bn_node("c1", "n1", "bn1"),
        helper.make_node("Greater", ["n1", "zero"], ["gt"], name="gt1"),
        helper.make_node("Where", ["gt", "one", "mone"], ["a1"], name="bin1"),
        helper.make_node("MaxPool", ["a1"], ["p1"], name="pool1", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("Pad", ["p1", "pads"], ["pp"], name="pad1"),
        helper.make_node("Conv", ["pp", "w2"], ["c2"], name="conv2"),
        bn_node("c2", "n2", "bn2"),
        helper.make_node("Less", ["n2", "zero"], ["lt"], name="lt2"),
        helper.make_node("Where", ["lt", "mone", "one"], ["a2"], name="bin2"),
        helper.make_node("Flatten", ["a2"], ["f"], name="flat"),
        helper.make_node("MatMul", ["f", "wm"], ["y"], name="fc"),
    ]
    inits = [init("zero", np.float32(0)), init("one", np.float32(1)), init("mone", np.float32(-1)),
             init("w1", pm1((8, 3, 3, 3))), init("w2", pm1((8, 8, 3, 3), alpha)),
             init("pads", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)),
             init("wm", pm1((8 * 4 * 4, 10)))] + bn_params(8, "bn1") + bn_params(8, "bn2")
    x = rng.normal(0, 1, (4, 3, 8, 8)).astype(np.float32)
    x[0, 0, :2, :] = 0  # exact zeros: Where(x >= 0) maps them to +1
    compare("binary_cnn", model(nodes, inits, x.shape), x,
            ["node 'conv1' (Conv): binary (b1 x b1 -> i32), 8x3x3x3",
             "node 'conv2' (Conv): binary (b1 x b1 -> i32), 8x8x3x3, scaled per output channel",
             "node 'fc' (MatMul): binary (b1 x b1 -> i32), 10x128",
             "summary: 3 of 3 conv/dense layers binary"])


def test_expand_ones_like():
    # torch >= 2.x exports ones_like(x) as Expand(1.0, Shape(x)): a runtime shape whose batch
    # entry is symbolic. The binarize pattern must still be recognised (regression: the
    # PyTorch 2.11 exports on the GPU machine failed with "unsupported op" on Expand).
    nodes = [
        helper.make_node("Shape", ["x"], ["shp"], name="shape0"),
        helper.make_node("Expand", ["one", "shp"], ["ones"], name="node_ones_like"),
        helper.make_node("Neg", ["ones"], ["mones"], name="neg0"),
        helper.make_node("GreaterOrEqual", ["x", "zero"], ["ge"], name="ge0"),
        helper.make_node("Where", ["ge", "ones", "mones"], ["a0"], name="bin0"),
        helper.make_node("Conv", ["a0", "w1"], ["y"], name="conv1", pads=[1, 1, 1, 1]),
    ]
    inits = [init("zero", np.float32(0)), init("one", np.float32(1)), init("w1", pm1((4, 3, 3, 3)))]
    x = rng.normal(0, 1, (3, 3, 6, 6)).astype(np.float32)
    compare("expand_ones_like", model(nodes, inits, x.shape), x,
            ["node 'conv1' (Conv): binary (b1 x b1 -> i32), 4x3x3x3"])
    # A plain constant Expand folds to its broadcast value.
    nodes = [helper.make_node("Expand", ["b", "bshape"], ["bb"], name="expand_b"),
             helper.make_node("Add", ["x", "bb"], ["y"], name="add0")]
    inits = [init("b", np.arange(3, dtype=np.float32).reshape(3, 1, 1)),
             init("bshape", np.array([3, 6, 6], np.int64))]
    compare("expand_constant", model(nodes, inits, x.shape), x)


def test_torch2_exports():
    # export_torch.py's nets as PyTorch 2.11 exports them (Expand for ones_like, ReduceMean,
    # batch-norm folded into the Gemm weights with gamma = 0 rows): against onnxruntime.
    d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch2")
    for name in ("vggish", "birealish"):
        m = onnx.load(os.path.join(d, name + ".onnx"))  # external data loads from d
        x = rng.normal(0, 1, (3, 3, 16, 16)).astype(np.float32)
        compare("torch2_" + name, m, x, ["summary:"])


def test_sign_cnn():
    # Sign(0) = 0 is not a bit: the layer stays float, and zero padding sees zeros.
    nodes = [
        helper.make_node("Sign", ["x"], ["s"], name="sign0"),
        helper.make_node("Conv", ["s", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Sign", ["c1"], ["s1"], name="sign1"),
        helper.make_node("Sub", ["s1", "c1"], ["d"], name="ste_sub"),
        helper.make_node("Add", ["c1", "d"], ["st"], name="ste_add"),
        helper.make_node("Conv", ["st", "w2"], ["y"], name="conv2", pads=[1, 1, 1, 1]),
    ]
    inits = [init("w1", pm1((4, 2, 3, 3))), init("w2", pm1((4, 4, 3, 3)))]
    x = rng.integers(-1, 2, (2, 2, 6, 6)).astype(np.float32)  # many exact zeros
    compare("sign_cnn", model(nodes, inits, x.shape), x,
            ["node 'conv1' (Conv): activations are not binarized (input is Sign, and Sign(0) = 0 "
             "is not a bit), kept float (weights are ±1)",
             "node 'conv2' (Conv): activations are not binarized (input is Sign"])


def test_shapes():
    nodes = [
        helper.make_node("Shape", ["x"], ["sh"], name="shape"),
        helper.make_node("Gather", ["sh", "i0"], ["n"], name="gather", axis=0),
        helper.make_node("Unsqueeze", ["n", "ax0"], ["n1"], name="unsq"),
        helper.make_node("Concat", ["n1", "m1"], ["tgt"], name="cat", axis=0),
        helper.make_node("Reshape", ["x", "tgt"], ["r"], name="reshape"),
        helper.make_node("Unsqueeze", ["r", "ax2"], ["u"], name="unsq2"),
        helper.make_node("Transpose", ["u"], ["t"], name="tr", perm=[0, 2, 1]),
        helper.make_node("Squeeze", ["t", "ax1"], ["q"], name="sq"),
        helper.make_node("Clip", ["q", "lo", "hi"], ["cl"], name="clip"),
        helper.make_node("Max", ["cl", "mlo"], ["mx"], name="max"),
        helper.make_node("Min", ["mx", "mhi"], ["mn"], name="min"),
        helper.make_node("Sub", ["mn", "c3"], ["s"], name="sub"),
        helper.make_node("Div", ["s", "c2"], ["dv"], name="div"),
        helper.make_node("Pow", ["dv", "two"], ["pw"], name="pow"),
        helper.make_node("Mul", ["pw", "c3"], ["ml"], name="mul"),
        helper.make_node("Identity", ["ml"], ["id"], name="ident"),
        helper.make_node("Cast", ["id"], ["cs"], name="cast", to=TensorProto.FLOAT),
        helper.make_node("Reshape", ["cs", "back"], ["y"], name="reshape2"),
    ]
    inits = [init("i0", np.int64(0)), init("ax0", np.array([0], np.int64)),
             init("m1", np.array([-1], np.int64)), init("ax2", np.array([2], np.int64)),
             init("ax1", np.array([1], np.int64)), init("lo", np.float32(-1.5)),
             init("hi", np.float32(1.2)), init("mlo", np.float32(-1)), init("mhi", np.float32(1)),
             init("c3", rng.normal(0, 1, 48).astype(np.float32)), init("c2", np.float32(3)),
             init("two", np.float32(2)), init("back", np.array([-1, 3, 4, 4], np.int64))]
    x = rng.normal(0, 1, (5, 3, 4, 4)).astype(np.float32)
    compare("shapes", model(nodes, inits, x.shape), x)


def test_opset9_and_batch1():
    nodes = [
        helper.make_node("Pad", ["x"], ["p"], name="pad", pads=[0, 0, 1, 2, 0, 0, 2, 1],
                         value=0.5),
        helper.make_node("Clip", ["p"], ["c"], name="clip", min=-1.0, max=1.0),
        helper.make_node("Unsqueeze", ["c"], ["u"], name="unsq", axes=[4]),
        helper.make_node("Squeeze", ["u"], ["s"], name="sq", axes=[4]),
        helper.make_node("Reshape", ["s", "shp"], ["r"], name="reshape"),
        helper.make_node("Gemm", ["r", "w", "b"], ["z"], name="fc"),
        helper.make_node("Softmax", ["z"], ["y"], name="softmax"),
    ]
    inits = [init("shp", np.array([1, -1], np.int64)),
             init("w", rng.normal(0, 0.2, (2 * 7 * 7, 6)).astype(np.float32)),
             init("b", rng.normal(0, 1, 6).astype(np.float32))]
    m = model(nodes, inits, (1, 2, 4, 4), opset=9, batch=1)
    x = rng.normal(0, 1, (3, 2, 4, 4)).astype(np.float32)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    ref = np.concatenate([sess.run(None, {"x": x[i:i + 1]})[0] for i in range(3)])
    compare("opset9_batch1", m, x, ref=ref)


def test_heads():
    for name, node, out_type in [
            ("topk", helper.make_node("TopK", ["x", "k"], ["v", "y"], name="topk", axis=1),
             TensorProto.INT64),
            ("argmax", helper.make_node("ArgMax", ["x"], ["y"], name="argmax", axis=1,
                                        keepdims=0), TensorProto.INT64)]:
        m = model([node], [init("k", np.array([3], np.int64))], (4, 10), out_type=out_type)
        x = rng.normal(0, 1, (4, 10)).astype(np.float32)
        compare(name, m, x)


def test_qonnx_ops():
    # BipolarQuant on activations and weights, Quant, MultiThreshold (NHWC and bipolar).
    nodes = [
        helper.make_node("BipolarQuant", ["x", "one"], ["a0"], name="bq0",
                         domain="qonnx.custom_op.general"),
        helper.make_node("BipolarQuant", ["wf", "one"], ["wb"], name="bqw",
                         domain="qonnx.custom_op.general"),
        helper.make_node("Transpose", ["wb"], ["wt"], name="wt", perm=[1, 0]),
        helper.make_node("MatMul", ["a0", "wt"], ["m0"], name="fc0"),
        helper.make_node("MultiThreshold", ["m0", "thr"], ["t0"], name="mt0",
                         domain="finn.custom_op.general", out_scale=2.0, out_bias=-1.0,
                         out_dtype="BIPOLAR"),
        helper.make_node("MatMul", ["t0", "w1"], ["m1"], name="fc1"),
        helper.make_node("Quant", ["m1", "qs", "qz", "qb"], ["q1"], name="quant1",
                         domain="onnx.brevitas", signed=1, narrow=0, rounding_mode="ROUND"),
        helper.make_node("MultiThreshold", ["q1", "thr3"], ["y"], name="mt1",
                         domain="finn.custom_op.general", out_scale=0.5, out_bias=-1.0),
    ]
    thr3 = np.sort(rng.normal(0, 3, (1, 3)).astype(np.float32), axis=1)
    inits = [init("one", np.float32(1)), init("wf", rng.normal(0, 1, (16, 12)).astype(np.float32)),
             init("thr", rng.normal(0, 2, (16, 1)).astype(np.float32)),
             init("w1", pm1((16, 8), None)), init("qs", np.float32(0.5)),
             init("qz", np.float32(0)), init("qb", np.float32(4)), init("thr3", thr3)]
    m = model(nodes, inits, (6, 12), extra_opsets=["qonnx.custom_op.general", "onnx.brevitas",
                                                    "finn.custom_op.general"])
    x = rng.normal(0, 1, (6, 12)).astype(np.float32)
    x[0, :3] = 0
    ref = qonnx_ref.run(m, {"x": x})[0]
    compare("qonnx_ops", m, x, ["node 'fc0' (MatMul): binary (b1 x b1 -> i32), 16x12",
                                "node 'fc1' (MatMul): binary (b1 x b1 -> i32), 8x16"], ref=ref)
    # NHWC MultiThreshold with several levels, per channel.
    thr = np.sort(rng.normal(0, 1, (3, 4)).astype(np.float32), axis=1)
    nodes = [helper.make_node("MultiThreshold", ["x", "thr"], ["y"], name="mt",
                              domain="finn.custom_op.general", data_layout="NHWC",
                              out_scale=1.5, out_bias=0.25)]
    m = model(nodes, [init("thr", thr)], (2, 5, 5, 3), extra_opsets=["finn.custom_op.general"])
    x = rng.normal(0, 1, (2, 5, 5, 3)).astype(np.float32)
    compare("multithreshold_nhwc", m, x, ref=qonnx_ref.run(m, {"x": x})[0])


def test_quant_rounding():
    # Every QONNX rounding_mode on ties and between them, on a runtime Quant (the interpreter)
    # and on a constant one (folded at import), against the published semantics.
    vals = np.arange(-12, 12, dtype=np.float32).reshape(1, 24) * 0.25  # x / 0.5: every half
    x = np.concatenate([vals, vals + 0.1]).astype(np.float32)
    for mode in ["ROUND", "HALF_EVEN", "CEIL", "FLOOR", "ROUND_TO_ZERO", "DOWN", "UP", "HALF_UP", "HALF_DOWN"]:
        nodes = [helper.make_node("Quant", ["x", "qs", "qz", "qb"], ["qx"], name="qx", domain="qonnx.custom_op.general",
                                  signed=1, narrow=0, rounding_mode=mode),
                 helper.make_node("Quant", ["c", "qs", "qz", "qb"], ["qc"], name="qc", domain="qonnx.custom_op.general",
                                  signed=1, narrow=0, rounding_mode=mode),
                 helper.make_node("Add", ["qx", "qc"], ["y"], name="add")]
        inits = [init("c", (vals[::-1] + 0.1 * (vals > 0)).astype(np.float32)), init("qs", np.float32(0.5)),
                 init("qz", np.float32(0)), init("qb", np.float32(5))]
        m = model(nodes, inits, (2, 24), extra_opsets=["qonnx.custom_op.general"])
        compare("quant_" + mode.lower(), m, x, ref=qonnx_ref.run(m, {"x": x})[0])


def test_errors():
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], name="convx", auto_pad="SAME_MIDDLE")]
    m = model(nodes, [init("w", pm1((2, 3, 3, 3)))], (1, 3, 5, 5))
    got, err = bnn(m, rng.normal(0, 1, (1, 3, 5, 5)).astype(np.float32), "bad_autopad")
    check(got is None and "node 'convx' (Conv): auto_pad 'SAME_MIDDLE' is not supported" in err,
          "bad auto_pad is refused by name: %s" % err)
    nodes = [helper.make_node("LpNormalization", ["x"], ["y"], name="lp")]
    got, err = bnn(model(nodes, [], (1, 4)), np.ones((1, 4), np.float32), "unsupported")
    check(got is None and "node 'lp' (LpNormalization): unsupported op" in err,
          "an unsupported op is named: %s" % err)


def test_zero_pad_avgpool():
    """PyTorch 1.13 exports AvgPool2d(2, 2) as an all-zero Pad + AveragePool: the Pad must
    vanish on import, since the code generator has no 'pad' step (regression: bnncc refused
    Bi-Real ResNet-18's downsampling shortcut)."""
    nodes = [helper.make_node("Pad", ["x", "pads"], ["p"], name="pad0"),
             helper.make_node("AveragePool", ["p"], ["y"], name="avg", kernel_shape=[2, 2],
                              strides=[2, 2])]
    m = model(nodes, [init("pads", np.zeros(8, np.int64))], (1, 3, 6, 6))
    x = rng.normal(0, 1, (2, 3, 6, 6)).astype(np.float32)
    compare("zero_pad_avgpool", m, x)
    path = os.path.join(TMP, "zero_pad_avgpool.onnx")
    ir = subprocess.run([BNNCC, path, "--emit=ir", "-O0", "-o", "-"], capture_output=True, text=True)
    check(ir.returncode == 0 and " pad " not in ir.stdout, "zero_pad_avgpool: no pad op in the IR")
    blob = os.path.join(TMP, "zero_pad_avgpool.bin")
    r = subprocess.run([BNNCC, path, "-O3", "--target=cpu", "-o", blob], capture_output=True, text=True)
    check(r.returncode == 0, "zero_pad_avgpool: bnncc compiles it: %s" % r.stderr.strip())


def main():
    if not os.path.exists(BNNRUN) or not os.path.exists(BNNCC):
        print("skipping: bnnrun or bnncc not built")
        return 77
    for t in [test_float_cnn, test_binary_cnn, test_expand_ones_like, test_torch2_exports, test_sign_cnn, test_shapes, test_opset9_and_batch1,
              test_zero_pad_avgpool, test_heads, test_qonnx_ops, test_quant_rounding, test_errors]:
        try:
            t()
        except Exception as e:  # a crash in one group must not hide the others
            check(False, "%s raised %r" % (t.__name__, e))
    shutil.rmtree(TMP, ignore_errors=True)
    print("%d passed, %d failed" % (passes, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
