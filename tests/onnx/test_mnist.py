"""test_mnist.py: the real TFC models on the full MNIST test set through
`bnnrun --reference`: 92.96 % top-1 for both qonnx/TFC_1W1A.onnx and
finn/tfc_w1a1_streamlined.onnx, the same prediction for each of the 10,000 images; and
every real model in ../shared/models against a numpy implementation of the QONNX/FINN
ops' published semantics (qonnx_ref.py). Exit 77 (skipped) without numpy/onnx or data."""
import gzip
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import onnx
except ImportError as e:
    print("skipping:", e)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qonnx_ref  # noqa: E402

SHARED = os.environ.get("BNN_SHARED", os.path.join(os.path.dirname(__file__), "../../../shared"))
BUILD = os.environ.get("BNN_BUILD_ROOT", "build")
BNNRUN = os.path.join(BUILD, "runtime", "bnnrun")
failures = 0
passes = 0


def check(cond, msg):
    global failures, passes
    if not cond:
        failures += 1
        print("FAIL:", msg)
    else:
        passes += 1
        print("ok:", msg)


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * k:8 + 4 * k], "big") for k in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def bnnrun(model, x, tmp):
    xin, yout = os.path.join(tmp, "x.npy"), os.path.join(tmp, "y.npy")
    np.save(xin, x)
    r = subprocess.run([BNNRUN, "--reference", model, "--input", xin, "--output", yout],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("bnnrun failed on %s: %s" % (model, r.stderr))
    return np.load(yout)


def main():
    mnist = os.path.join(SHARED, "data", "mnist")
    img_path = os.path.join(mnist, "t10k-images-idx3-ubyte.gz")
    if not os.path.exists(img_path) or not os.path.exists(BNNRUN):
        print("skipping: no MNIST data or no bnnrun")
        return 77
    images = read_idx(img_path).astype(np.float32).reshape(-1, 1, 28, 28)
    labels = read_idx(os.path.join(mnist, "t10k-labels-idx1-ubyte.gz")).astype(np.int64)
    models = os.path.join(SHARED, "models")
    tfc = os.path.join(models, "qonnx", "TFC_1W1A.onnx")
    finn = os.path.join(models, "finn", "tfc_w1a1_streamlined.onnx")
    with tempfile.TemporaryDirectory() as tmp:
        x01 = (images / np.float32(255)).astype(np.float32)
        y_tfc = bnnrun(tfc, x01, tmp)
        y_finn = bnnrun(finn, images, tmp)
        p_tfc = y_tfc.argmax(axis=1)
        p_finn = y_finn.reshape(-1)
        acc_tfc = float((p_tfc == labels).mean())
        acc_finn = float((p_finn == labels).mean())
        print("TFC_1W1A accuracy %.2f %%, FINN streamlined %.2f %%" % (100 * acc_tfc,
                                                                        100 * acc_finn))
        check(int((p_tfc == labels).sum()) == 9296, "TFC_1W1A: 92.96 % on MNIST")
        check(int((p_finn == labels).sum()) == 9296, "FINN tfc_w1a1: 92.96 % on MNIST")
        check(bool((p_tfc == p_finn).all()), "TFC_1W1A and FINN agree on all 10,000 images")
        ref_tfc = qonnx_ref.run(onnx.load(tfc), {"0": x01[:2000]})[0]
        check(np.abs(ref_tfc - y_tfc[:2000]).max() <= 1e-4 * max(1.0, np.abs(ref_tfc).max()),
              "TFC_1W1A logits equal the numpy QONNX reference")
        ref_finn = qonnx_ref.run(onnx.load(finn), {"global_in": images[:2000]})[0]
        check(bool((ref_finn == y_finn[:2000]).all()), "FINN classes equal the numpy reference")

        # The multi-bit models: against the numpy reference on MNIST or random inputs.
        rng = np.random.default_rng(1)
        for rel, x in [("qonnx/TFC_1W2A.onnx", x01[:1000]), ("qonnx/TFC_2W2A.onnx", x01[:1000]),
                       ("qonnx/unsw_nb15-mlp-w2a2.onnx",
                        rng.integers(0, 2, (500, 600)).astype(np.float32)),
                       ("qonnx/kwsmlp_w3a3.onnx",
                        rng.normal(0, 1, (500, 490)).astype(np.float32))]:
            path = os.path.join(models, rel)
            m = onnx.load(path)
            inits = {t.name for t in m.graph.initializer}
            name = [i.name for i in m.graph.input if i.name not in inits][0]
            if rel.startswith("qonnx/kws"):
                shape = [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]
                x = x.reshape([-1] + shape[1:])
            ref = qonnx_ref.run(m, {name: x})[0]
            got = bnnrun(path, x, tmp)
            scale = max(1.0, float(np.abs(ref).max()))
            close = np.abs(ref - got).max(axis=tuple(range(1, ref.ndim))) <= 1e-4 * scale
            # A float sum in another order can move a value across a quantization step;
            # allow that on a handful of rows, never on most.
            check(close.mean() >= 0.99, "%s: %.2f %% of rows equal the numpy reference "
                  "(max diff %.3g)" % (rel, 100 * close.mean(), np.abs(ref - got).max()))
            if ref.shape[-1] > 1:
                agree = (ref.argmax(-1) == got.argmax(-1)).mean()
                check(agree >= 0.99, "%s: argmax agrees on %.2f %%" % (rel, 100 * agree))
    print("%d passed, %d failed" % (passes, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
