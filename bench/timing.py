"""timing.py: the one GPU timer of the benchmarks that time single calls (bgemm_bench.py,
gemm_peer.py): calls captured back to back in a CUDA graph, replays timed with device events."""
import torch


def events_ms(fn):
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    fn()
    e1.record()
    e1.synchronize()
    return e0.elapsed_time(e1)


def time_ms(fn, reps, warm=3):
    """Milliseconds per call: `inner` calls captured back to back in one CUDA graph (so host
    launch costs, ~20 us through ctypes, do not hide short kernels), the graph replayed `reps`
    times with device events around each replay; the median replay over `inner`."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up off the default stream, as graph capture wants
        for _ in range(warm):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    one = events_ms(fn)
    inner = max(1, min(50, int(1.0 / max(one, 1e-3)) + 1))
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(inner):
            fn()
    g.replay()
    torch.cuda.synchronize()
    ts = sorted(events_ms(g.replay) / inner for _ in range(reps))
    del g
    return ts[len(ts) // 2]
