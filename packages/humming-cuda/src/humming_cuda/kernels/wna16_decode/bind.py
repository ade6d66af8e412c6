"""Bind a loaded decode WnA16 function: wna16's arguments, grid, split-K and prepared call, for at
most MAX_M rows of x (the kernel computes tokens 0-7 of its 16-row tile and would leave the rest
unwritten, so more are refused)."""

from __future__ import annotations

from ..wna16.bind import Wna16Kernel
from .heuristics import MAX_M


class Wna16DecodeKernel(Wna16Kernel):
    """`kernel(x=..., out=..., **packed_weights)` for M <= 8: out[M, N] = x[M, K] @ W^T (+ bias)."""

    max_m = MAX_M
