#!/usr/bin/env python3
"""formats_mlp.py OUT.bnn [WIDTH] [LAYERS]: a binary MLP for bench/formats_bench.sh: x f32[N,WIDTH]
-> binarize -> LAYERS binary dense layers of WIDTH (random +-1 weights, integer thresholds
around 0 with both directions) -> a dense layer to 16 i32 outputs. Deterministic (seed 7)."""
import sys

import numpy as np


def main():
    out, width, layers = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 4096, \
        int(sys.argv[3]) if len(sys.argv) > 3 else 4
    rng = np.random.default_rng(7)
    consts, body, cur = [], [f"    %a = b1[N,{width}] binarize %x {{zero=1}}"], "a"
    for li in range(layers + 1):
        n = width if li < layers else 16
        bits = rng.integers(0, 2, n * width, dtype=np.uint8)
        consts.append(f'const $w{li}: b1[{n},{width}] = hex "{np.packbits(bits, bitorder="little").tobytes().hex()}"')
        body.append(f"    %h{li} = i32[N,{n}] dense %{cur}, $w{li}")
        cur = f"h{li}"
        if li < layers:
            t = rng.integers(-64, 65, n)
            d = rng.choice([-1, 1], n)
            consts.append(f"const $t{li}: i32[{n}] = [{', '.join(map(str, t))}]")
            consts.append(f"const $d{li}: i8[{n}] = [{', '.join(map(str, d))}]")
            body.append(f"    %b{li} = b1[N,{n}] threshold %h{li}, $t{li}, $d{li}")
            cur = f"b{li}"
    with open(out, "w") as f:
        f.write("\n".join(consts) + f"\n\ngraph $mlp{layers}x{width}(%x: f32[N,{width}]) -> (i32[N,16]) {{\n" +
                "\n".join(body) + f"\n    ret %{cur}\n}}\n")


if __name__ == "__main__":
    main()
