"""Reused device buffers for the quantized activations of eager prepared calls.

A prepared 8-bit-activation call (kernels/w8a8/call.py) quantizes x into one buffer (q, then the
scales) that its GEMM reads right after on the same stream. A fresh allocation per call cost
2.1-3.5 us of a 16.8-22 us call on the H200 host (torch's caching allocator; session 28,
benchmarks/notes/session28.md; KERNELS.md asks <= 15 us per eager call). One buffer per thread,
device and stream serves every layer instead, grown to the largest call: on one stream the next
call's quantizer runs after the GEMM that read the buffer (launched with PDL it may start
earlier, but it waits for the grid before it before touching global memory:
include/humming/kernel/act_quant.cuh), and two threads or two streams never share one.
Under CUDA-graph capture the buffer comes from torch as before (the graph's private pool): a
captured graph may be replayed on another stream than the eager calls use.
"""

from __future__ import annotations

import threading

import torch

from ... import launch

# whether torch's current stream is capturing a CUDA graph (a torch without CUDA has only a stub
# that raises: never)
_capturing = (
    torch._C._cuda_isCurrentStreamCapturing if torch.backends.cuda.is_built() else lambda: False
)


class _ThreadBuffers(threading.local):
    def __init__(self) -> None:
        self.by_stream: dict[tuple[int, int], torch.Tensor] = {}


_BUFFERS = _ThreadBuffers()


def quant_buffer(size: int, device: torch.device) -> torch.Tensor:
    """At least `size` bytes on `device` for this thread's quantized activations on the current
    stream (see the module docstring); a fresh allocation under graph capture."""
    if _capturing():
        return torch.empty(size, dtype=torch.uint8, device=device)
    key = (device.index, launch.current_stream(device.index))
    held = _BUFFERS.by_stream
    buffer = held.get(key)
    if buffer is None or buffer.numel() < size:
        # the old buffer goes back to torch's allocator on this stream, after the kernels
        # already enqueued on it (stream-ordered reuse)
        buffer = held[key] = torch.empty(size, dtype=torch.uint8, device=device)
    return buffer
