#!/usr/bin/env python3
"""lowbit_mlp.py OUT.onnx WIDTH LAYERS WBITS ABITS: a QONNX low-bit MLP for timing the qgemm
kernels (bit-planes against int8, bench/lowbit_int8_bench.sh): an ABITS-bit input quant, then
LAYERS dense layers of WIDTH x WIDTH with WBITS-bit signed weights, batch-norm, relu and an
ABITS-bit quant after each but the last (an i32 output layer behind its float epilogue).
The weights are sparse (1 in 64 non-zero, mostly +-1, one full-range code per layer so the
layer really has WBITS bits): with dense 8-bit weights at K = 4096 the float sums round (past
2^24 units), and the lowbit pass keeps a layer float wherever a sum's rounding interval holds a
level boundary (docs/passes.md). The timings do not depend on the values."""
import os
import sys

import numpy as np
from onnx import save

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "lowbit"))
import qconv_models  # noqa: E402


class SparseNet(qconv_models.Net):
    def weights(self, shape, wbits):
        lo, hi = -(1 << (wbits - 1)), (1 << (wbits - 1)) - 1
        lv = np.where(self.rng.integers(0, 64, size=shape) == 0, self.rng.choice([-1, 1], size=shape), 0)
        lv[0, 0], lv[-1, -1] = lo, hi
        scale = np.float32(2.0) ** -self.rng.integers(1, 4, size=(shape[0], 1))
        return self.node("Quant", [self.const((lv * scale).astype(np.float32)),
                                   self.const(scale.astype(np.float32)), self.const(np.float32(0)),
                                   self.const(np.float32(wbits))], qconv_models.QDOM, signed=1, narrow=0,
                         rounding_mode="ROUND")


def main():
    out, width, layers, wbits, abits = sys.argv[1], *map(int, sys.argv[2:6])
    n = SparseNet(f"mlp_w{wbits}a{abits}", np.random.default_rng(wbits * 16 + abits))
    x = n.quant("x", 0.25, abits, 0)
    for i in range(layers):
        y = n.dense(x, width, width, wbits)
        if i == layers - 1:
            break
        x = n.quant(n.node("Relu", [n.bn(y, width)]), 0.5, abits, 0)
    save(n.model((width,), y), out)


if __name__ == "__main__":
    main()
