"""GPU time by CUDA-graph replay over rotated inputs; host overhead from eager calls.

Method (KERNELS.md, "How to measure"): capture `calls` launches in one graph, each reading a
different weight copy (the copies together exceed 3x L2, so every call streams from HBM), replay it
several times and keep the best replay divided by `calls`.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

Fn = Callable[[int], object]  # fn(i) runs call number i (it picks weight copy i % copies)


def copies_for(bytes_per_copy: int, l2_bytes: int, at_least: int = 2) -> int:
    """How many weight copies make the rotation exceed 3x L2."""
    return max(at_least, -(-3 * l2_bytes // max(bytes_per_copy, 1)) + 1)


def captured(fn: Fn, calls: int) -> torch.cuda.CUDAGraph:
    """A CUDA graph of fn(0) .. fn(calls - 1), after warm-up calls outside the capture (lazy init,
    autotuning, workspaces)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for i in range(min(calls, 3)):
            fn(i)
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(calls):
            fn(i)
    return graph


def graph_time_us(fn: Fn, calls: int, replays: int = 5) -> float:
    graph = captured(fn, calls)
    best = float("inf")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    graph.replay()
    torch.cuda.synchronize()
    for _ in range(replays):
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end) * 1e3 / calls)
    del graph
    return best


def host_overhead_us(fn: Fn, gpu_us: float, calls: int = 200) -> float:
    """Eager wall time per call minus its GPU time (clamped at 0): what the host adds per launch."""
    for i in range(10):
        fn(i)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(calls):
        fn(i)
    torch.cuda.synchronize()
    wall_us = (time.perf_counter() - t0) * 1e6 / calls
    return max(0.0, wall_us - gpu_us)
