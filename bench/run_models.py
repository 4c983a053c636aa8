#!/usr/bin/env python3
"""run_models.py: issue 6's model benchmark, bnncc against PyTorch fp16 in one run.

    bench/run_models.py --bin DIR --models DIR [--out DIR] [--only NAME,...] [--commit C]

DIR of --bin holds bnncc, bnnrun and capi_bench (bench/capi_bench.c); --models holds NAME.onnx
(or NAME.onnx.gz) from bench/models.py. For each model and batch: compile with bnncc -O3, run
the batch on the GPU with bnnrun, run the first and last items on the CPU path and require the
same outputs (the CPU path equals the reference interpreter: checked where the models are
generated, `--reference-check`); only then time `bnnrun --bench` (device events, copies
included), `bnnrun --bench --resident` (device events around the graph, no copies), the C API
(capi_bench: wall clock per bnn_session_run with pageable and pinned host buffers, and per
bnn_session_run_resident on the session's device buffers; its outputs checked too), and the
float twin of the architecture in PyTorch fp16
(cuDNN, channels_last, a CUDA graph at batch <= 8, CUDA events). Prints a markdown table last.

    --bnncc-flags "--float-convs=fp16": more bnncc options. Where they make the GPU differ from
the exact CPU path on purpose (fp16 float convolutions), the difference is printed and the
point is timed anyway, marked "fp16 convs" in the table.
    --resident-only: time only `bnnrun --bench --resident` and PyTorch (a shorter run).
    --tune (with --resident-only): also compile each model with `bnncc --tune=BATCH` for each
batch (winners in OUT/NAME.tune), require its GPU outputs to equal the untuned blob's byte for
byte, and time it resident: a column with its time, how many layers changed tile, and the
tuning's seconds.

    bench/run_models.py --reference-check --bin DIR --models DIR   (no GPU needed)
compares the CPU path with `bnnrun --reference` at batch 2 for every model."""
import argparse
import gzip
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

BATCHES = {"tfc": (1, 256, 10000), "vggsmall": (1, 256), "birealnet18": (1, 8, 256),
           "xnorresnet18": (1, 8, 256), "w1a2resnet18": (1, 8, 256)}
SHAPES = {"birealnet18": (3, 224, 224), "xnorresnet18": (3, 224, 224), "vggsmall": (3, 32, 32),
          "tfc": (1, 28, 28), "w1a2resnet18": (3, 224, 224)}
CPU_ITEMS = {"birealnet18": 1, "xnorresnet18": 1, "vggsmall": 4, "tfc": 10000,
             "w1a2resnet18": 1}  # per end


def sh(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    return r.stdout + r.stderr


def model_path(models, name):
    p = os.path.join(models, name + ".onnx")
    if not os.path.exists(p) and os.path.exists(p + ".gz"):
        p = os.path.join("/tmp", name + ".onnx")
        with gzip.open(os.path.join(models, name + ".onnx.gz")) as f, open(p, "wb") as g:
            shutil.copyfileobj(f, g)
    return p


def same(a, b):
    """Outputs equal: integers exactly, floats within 1e-5 of the output's scale."""
    if a.shape != b.shape:
        return False, f"shapes {a.shape} vs {b.shape}"
    if not np.isfinite(a).all() or not np.isfinite(b).all():
        return False, "non-finite values"
    d = float(np.abs(a.astype(np.float64) - b).max()) if a.size else 0.0
    scale = float(np.abs(b).max()) if b.size else 1.0
    ok = d <= 1e-5 * max(scale, 1.0) and (a.ndim < 2 or (a.argmax(1) == b.argmax(1)).all())
    return ok, f"max |diff| {d:.3g} (scale {scale:.3g})"


def reference_check(a):
    tmp = a.out
    for name in a.names:
        onnx = model_path(a.models, name)
        x = np.random.default_rng(3).standard_normal((2,) + SHAPES[name]).astype(np.float32)
        xp, yr, yc, mb = (os.path.join(tmp, f"{name}_{s}") for s in ("x.npy", "ref.npy", "cpu.npy", "m.bin"))
        np.save(xp, x)
        sh([a.bnncc, onnx, "-O3", "--target=cpu", "-o", mb])
        sh([a.bnnrun, "--reference", onnx, "--input", xp, "--output", yr])
        sh([a.bnnrun, mb, "--device", "cpu", "--input", xp, "--output", yc])
        ok, msg = same(np.load(yc), np.load(yr))
        print(f"{name}: CPU path vs reference at batch 2: {'equal' if ok else 'DIFFERENT'}, {msg}")
        if not ok:
            return 1
    return 0


def binary_ops(name):
    """2 * multiply-accumulates of the binary layers per item (from the PyTorch model; of the
    binary-weight convs for the QONNX w1a2 ResNet-18)."""
    import qonnx_resnet
    if name in qonnx_resnet.MODELS:
        return qonnx_resnet.lowbit_ops(name)
    import torch
    import models
    net, shape = models.build(name, binary=True)
    total = [0]

    def hook(mod, inp, out):
        if getattr(mod, "binary", False):
            k = mod.weight[0].numel()
            total[0] += 2 * k * out[0].numel()
    for m in net.modules():
        if isinstance(m, (models.QConv, models.QLinear)):
            m.register_forward_hook(hook)
    with torch.no_grad():
        net(torch.randn(1, *shape))
    return total[0]


def torch_time(net, shape, batch, runs):
    """Median ms of net in fp16 (cuDNN, channels_last, CUDA graph at batch <= 8)."""
    import torch
    torch.backends.cudnn.benchmark = True
    net = net.eval()
    conv = shape[0] == 3  # the image models; TFC is an MLP
    fmt = torch.channels_last if conv else torch.contiguous_format
    net = net.cuda().half().to(memory_format=fmt)
    x = torch.randn(batch, *shape, device="cuda", dtype=torch.half).to(memory_format=fmt)
    graphed = batch <= 8
    with torch.no_grad():
        for _ in range(5):
            net(x)
        torch.cuda.synchronize()
        if graphed:
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    net(x)
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                net(x)
            step = g.replay
        else:
            def step():
                net(x)
        for _ in range(10):
            step()
        ts = []
        for _ in range(runs):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            step()
            e1.record()
            e1.synchronize()
            ts.append(e0.elapsed_time(e1))
    return float(np.median(ts)), ("graph" if graphed else "eager")


def copy_time(nbytes, pinned):
    """Median ms of one host-to-device copy of nbytes (what every bnn_session_run pays)."""
    import torch
    h = torch.empty(nbytes, dtype=torch.uint8, pin_memory=pinned)
    h.random_(0, 255)
    d = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    ts = []
    for _ in range(20):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        d.copy_(h, non_blocking=pinned)
        e1.record()
        e1.synchronize()
        ts.append(e0.elapsed_time(e1))
    return float(np.median(ts[3:]))


def run_model(a, name, work, rows, notes):
    """Compile, check and time one model at each of its batches; returns the failures."""
    import models
    capi = os.path.join(a.bin, "capi_bench")
    bad = 0
    onnx = model_path(a.models, name)
    mb = os.path.join(work, name + ".bin")
    # Two cores, as issue 6's compile-time target says (taskset, where there is one).
    two = ["taskset", "-c", "0,1"] if shutil.which("taskset") else []
    t0 = time.time()
    rep = sh(two + [a.bnncc, onnx, "-O3", "--report", "-o", mb] + a.bnncc_flags.split())
    ct = time.time() - t0
    plan = re.search(r"codegen: (\d+) plan steps \((\d+) GPU kernels, (\d+) CPU-only\)", rep)
    summ = re.search(r"summary: (.*)", rep)
    low = re.search(r"lowbit: (\d+) of \d+ quantized dense/conv layers on integer codes", rep)
    what = (summ.group(1) if summ else "?") + (f", {low.group(1)} low-bit" if low and low.group(1) != "0" else "")
    notes.append(f"{name}: bnncc -O3 {ct:.1f} s{' on 2 cores' if two else ''}, {what}, "
                 f"{plan.group(1) if plan else '?'} plan steps ({plan.group(2) if plan else '?'} GPU kernels)")
    print(notes[-1], flush=True)
    ops = binary_ops(name)
    for batch in BATCHES[name]:
        rng = np.random.default_rng(batch)
        x = rng.standard_normal((batch,) + SHAPES[name]).astype(np.float32)
        xp, xr = os.path.join(work, "x.npy"), os.path.join(work, "x.f32")
        np.save(xp, x)
        x.tofile(xr)
        yg, yc, yr = (os.path.join(work, s) for s in ("yg.npy", "yc.npy", "y.raw"))
        for p in (yg, yc, yr):
            if os.path.exists(p):
                os.remove(p)
        # Correctness: the GPU's whole batch, the CPU path's first and last items.
        sh([a.bnnrun, mb, "--device", "gpu", "--input", xp, "--output", yg])
        k = min(CPU_ITEMS[name], batch)
        idx = np.unique(np.r_[np.arange(k), np.arange(batch - k, batch)])
        np.save(os.path.join(work, "xs.npy"), x[idx])
        sh([a.bnnrun, mb, "--device", "cpu", "--input", os.path.join(work, "xs.npy"), "--output", yc])
        g = np.load(yg)
        ok, msg = same(g[idx], np.load(yc))
        row = {"model": name, "batch": batch, "ops": ops * batch}
        if not ok and "--float-convs=fp16" in a.bnncc_flags:  # inexact by request: timed anyway
            row["inexact"] = True
        print(f"{name} batch {batch}: GPU vs CPU path on {len(idx)} items: "
              f"{'equal' if ok else 'differ (fp16 convs, by request)' if row.get('inexact') else 'WRONG'}, {msg}",
              flush=True)
        ok = ok or row.get("inexact", False)
        if not ok:
            bad += 1
            row["wrong"] = msg
            rows.append(row)
            continue
        n = runs_for(name, batch)
        out = sh([a.bnnrun, mb, "--device", "gpu", "--input", xp, "--bench", str(n), "--resident"])
        m = re.search(r"median ([\d.]+) ms, min ([\d.]+) ms", out)
        row["bnnrun_resident"] = float(m.group(1))
        if a.tune:
            tuned_time(a, name, onnx, work, batch, xp, g, n, row)
        if a.resident_only:
            row["torch"], row["torch_mode"] = torch_time(*models.build(name, binary=False), batch, n)
            print(f"{name} batch {batch}: {row}", flush=True)
            rows.append(row)
            continue
        out = sh([a.bnnrun, mb, "--device", "gpu", "--input", xp, "--bench", str(n)])
        m = re.search(r"median ([\d.]+) ms, min ([\d.]+) ms", out)
        row["bnnrun"] = float(m.group(1))
        for mode in ("pageable", "pinned", "resident"):
            out = sh([capi, mb, str(batch), str(n), xr, yr, mode])
            m = re.search(r"wall_median_ms ([\d.]+) .*events_median_ms ([\d.]+)", out)
            got = np.fromfile(yr, dtype=g.dtype).reshape(g.shape)
            cok, cmsg = same(got, g)
            if not cok and not row.get("inexact"):
                bad += 1
                row[mode] = None
                print(f"{name} batch {batch}: C API output ({mode}) WRONG: {cmsg}")
                continue
            row[mode] = float(m.group(1))
            row[mode + "_ev"] = float(m.group(2))
        row["copy_in"] = copy_time(x.nbytes, True)
        row["copy_in_pageable"] = copy_time(x.nbytes, False)
        row["torch"], row["torch_mode"] = torch_time(*models.build(name, binary=False), batch, n)
        print(f"{name} batch {batch}: {row}", flush=True)
        rows.append(row)
    return bad


def tuned_time(a, name, onnx, work, batch, xp, g, n, row):
    """--tune: the model compiled with bnncc --tune=BATCH (winners in OUT/NAME.tune); its GPU
    outputs must be byte-identical to the untuned blob's (g) before its resident time counts."""
    mt, yt = os.path.join(work, name + ".tuned.bin"), os.path.join(work, "yt.npy")
    t0 = time.time()
    rep = sh([a.bnncc, onnx, "-O3", f"--tune={batch}", f"--tune-file={os.path.join(a.out, name + '.tune')}",
              "-o", mt] + a.bnncc_flags.split())
    row["tune_s"] = time.time() - t0
    row["tune_changed"] = (re.findall(r"tune: (\d+) of (\d+) layers on another configuration", rep) or [("?", "?")])[0]
    print(rep.strip(), flush=True)
    sh([a.bnnrun, mt, "--device", "gpu", "--input", xp, "--output", yt])
    ok, msg = same(np.load(yt), g)
    print(f"{name} batch {batch}: tuned blob vs untuned on the GPU: {'equal' if ok else 'WRONG'}, {msg}", flush=True)
    if not ok:
        row["tuned"] = None
        return
    out = sh([a.bnnrun, mt, "--device", "gpu", "--input", xp, "--bench", str(n), "--resident"])
    row["tuned"] = float(re.search(r"median ([\d.]+) ms", out).group(1))


def runs_for(name, batch):
    if batch >= 256 and "resnet" in name:
        return 30
    return 200 if batch <= 256 else 50


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True, help="folder with bnncc, bnnrun, capi_bench")
    ap.add_argument("--models", required=True)
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/bnn_models"))
    ap.add_argument("--only", default="")
    ap.add_argument("--commit", default="?")
    ap.add_argument("--reference-check", action="store_true")
    ap.add_argument("--bnncc-flags", default="", help="more bnncc options, e.g. --float-convs=fp16")
    ap.add_argument("--resident-only", action="store_true", help="time the resident run and PyTorch only")
    ap.add_argument("--tune", action="store_true",
                    help="also compile each model with bnncc --tune=BATCH for each batch and time that blob")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    a.bnncc, a.bnnrun = os.path.join(a.bin, "bnncc"), os.path.join(a.bin, "bnnrun")
    a.names = [n for n in a.only.split(",") if n] or list(BATCHES)
    if a.reference_check:
        return reference_check(a)

    import torch
    dev = torch.cuda.get_device_name(0)
    print(f"device: {dev}, torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}", flush=True)
    rows, notes, bad = [], [], 0
    work = "/tmp/bnn_models_work"
    os.makedirs(work, exist_ok=True)
    for name in a.names:
        try:
            bad += run_model(a, name, work, rows, notes)
        except Exception as e:  # one model's failure must not hide the others' figures
            bad += 1
            notes.append(f"{name}: FAILED: {e}")
            print(notes[-1], flush=True)
    try:  # torchvision's ResNet-18, for scale against HARDWARE.md's peer figures
        import torchvision
        for batch in (1, 256):
            t, mode = torch_time(torchvision.models.resnet18(), (3, 224, 224), batch, 30 if batch > 8 else 200)
            notes.append(f"torchvision resnet18 fp16 batch {batch} ({mode}): {t:.4f} ms, "
                         f"{batch * 1e3 / t:,.0f} images/s")
    except ImportError as e:
        notes.append(f"torchvision resnet18: not timed ({e})")

    lines = ["| model | batch | bnncc ms (bnnrun --bench) | resident ms (bnnrun --bench --resident, "
             "ratio) | C API wall ms (pageable / pinned / resident) | input copy ms "
             "(pageable / pinned) | PyTorch fp16 ms | ratio | bnncc images/s | PyTorch images/s | binary TOPS |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    if a.resident_only:
        tcol = " --tune=BATCH resident ms (ratio; layers retiled, tuning time) |" if a.tune else ""
        lines = ["| model | batch | resident ms (bnnrun --bench --resident) |" + tcol + " PyTorch fp16 ms | ratio | "
                 "bnncc images/s | PyTorch images/s | binary TOPS |",
                 "|---|---:|---:|" + ("---:|" if a.tune else "") + "---:|---:|---:|---:|---:|"]
    if a.tune and not a.resident_only:
        sys.exit("run_models: --tune goes with --resident-only")
    for r in rows:
        if "wrong" in r:
            lines.append(f"| {r['model']} | {r['batch']} | WRONG ({r['wrong']}): no time | | | | | | | | |")
            continue
        model = r["model"] + (" (fp16 convs)" if r.get("inexact") else "")
        if a.resident_only:
            t = r["bnnrun_resident"]
            tuned = ""
            if a.tune:
                tt = r.get("tuned")
                tuned = (f" {tt:.4f} ({r['torch'] / tt:.2f}x; {r['tune_changed'][0]} of {r['tune_changed'][1]} "
                         f"layers retiled, {r['tune_s']:.0f} s) |" if tt else " WRONG |")
            lines.append(f"| {model} | {r['batch']} | {t:.4f} |{tuned} {r['torch']:.4f} ({r['torch_mode']}) | "
                         f"{r['torch'] / t:.2f}x | {r['batch'] * 1e3 / t:,.0f} | {r['batch'] * 1e3 / r['torch']:,.0f} | "
                         f"{r['ops'] / t / 1e9:.1f} |")
            continue
        best = r["bnnrun"]
        res = f"{r['bnnrun_resident']:.4f} ({r['torch'] / r['bnnrun_resident']:.2f}x)"
        capis = " / ".join("-" if r.get(k) is None else f"{r[k]:.4f}"
                           for k in ("pageable", "pinned", "resident"))
        lines.append(
            f"| {model} | {r['batch']} | {best:.4f} | {res} | {capis} | {r['copy_in_pageable']:.4f} / "
            f"{r['copy_in']:.4f} | {r['torch']:.4f} ({r['torch_mode']}) | {r['torch'] / best:.2f}x | "
            f"{r['batch'] * 1e3 / best:,.0f} | {r['batch'] * 1e3 / r['torch']:,.0f} | "
            f"{r['ops'] / best / 1e9:.1f} |")
    table = "\n".join(lines)
    with open(os.path.join(a.out, "models.md"), "w") as f:
        f.write(f"device: {dev}; commit {a.commit}; bnncc -O3 {a.bnncc_flags}\n\n" + "\n".join(notes) + "\n\n" + table + "\n")
    print()
    print("\n".join(notes))
    print()
    print(table)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
