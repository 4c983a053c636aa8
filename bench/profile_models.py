#!/usr/bin/env python3
"""profile_models.py: where a model.bin's GPU time goes, kernel by kernel kind.

    bench/profile_models.py --lib LIBBNNRT.so [--steps] NAME.bin:BATCH [...]

Loads libbnnrt through ctypes into a process that also holds torch, runs the session a few
times under torch.profiler (CUPTI records every kernel of the process, those that libbnnrt's
CUDA graph launches too), and prints per model and batch: the run's event time
(bnn_session_last_run_ms, copies included), the summed time of its kernels grouped by plan
step kind (the generated kernels are named s<step>_<kind>), the copies, the number of
kernels per run, and what is left (gaps between kernels: launch and dependency latency).
--steps: one line per plan step (kernel name) instead of per kind."""
import argparse
import ctypes
import re
import sys
from collections import defaultdict

import numpy as np
import torch


class Info(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int),
                ("batch_axis", ctypes.c_int), ("dims", ctypes.c_int64 * 8),
                ("item_bytes", ctypes.c_size_t)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--steps", action="store_true", help="one line per plan step's kernel, not per kind")
    ap.add_argument("cases", nargs="+")
    a = ap.parse_args()
    lib = ctypes.CDLL(a.lib)
    lib.bnn_last_error.restype = ctypes.c_char_p
    lib.bnn_session_last_run_ms.restype = ctypes.c_double
    torch.cuda.init()
    torch.zeros(1, device="cuda")  # the primary context, shared with libbnnrt
    for case in a.cases:
        path, batch = case.rsplit(":", 1)
        batch = int(batch)
        m, s = ctypes.c_void_p(), ctypes.c_void_p()

        def ok(st):
            if st != 0:
                sys.exit(f"{case}: status {st}: {lib.bnn_last_error().decode()}")
        ok(lib.bnn_model_load_file(path.encode(), ctypes.byref(m)))
        ii, oi = Info(), Info()
        ok(lib.bnn_model_input_info(m, 0, ctypes.byref(ii)))
        ok(lib.bnn_model_output_info(m, 0, ctypes.byref(oi)))
        ok(lib.bnn_session_create(m, 2, batch, ctypes.byref(s)))
        ok(lib.bnn_session_set_device_timing(s, 1))  # last_run_ms = device events, not wall
        x = np.random.default_rng(0).standard_normal(ii.item_bytes * batch // 4).astype(np.float32)
        y = np.empty(oi.item_bytes * batch, np.uint8)
        ins = (ctypes.c_void_p * 1)(x.ctypes.data)
        outs = (ctypes.c_void_p * 1)(y.ctypes.data)
        for _ in range(5):
            ok(lib.bnn_session_run(s, batch, ins, outs))
        ev = []
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(a.runs):
                ok(lib.bnn_session_run(s, batch, ins, outs))
                ev.append(lib.bnn_session_last_run_ms(s))
        by_kind, count = defaultdict(float), defaultdict(int)
        for e in prof.events():
            if not str(e.device_type).endswith("CUDA"):
                continue
            t = e.time_range.elapsed_us()
            name = e.name
            mk = re.match(r"s\d+_(\w+)", name)
            kind = (name if a.steps else mk.group(1)) if mk else ("copy " + name if "emcpy" in name else name[:40])
            by_kind[kind] += t / 1e3 / a.runs
            count[kind] += 1
        total = float(np.median(ev))
        ksum = sum(v for k, v in by_kind.items() if not k.startswith("copy"))
        csum = sum(v for k, v in by_kind.items() if k.startswith("copy"))
        nk = sum(v for k, v in count.items() if not k.startswith("copy")) / a.runs
        print(f"\n{path} batch {batch}: events {total:.4f} ms per run; kernels {ksum:.4f} ms "
              f"({nk:.0f} per run), copies {csum:.4f} ms, rest (gaps) {total - ksum - csum:.4f} ms")
        for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1]):
            print(f"  {k:40s} {v:9.4f} ms  {count[k] / a.runs:5.0f} per run  {100 * v / total:5.1f}%")
        lib.bnn_session_free(s)
        lib.bnn_model_free(m)
    return 0


if __name__ == "__main__":
    sys.exit(main())
