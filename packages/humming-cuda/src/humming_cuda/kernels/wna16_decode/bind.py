"""Bind a loaded decode WnA16 function: wna16's arguments, grid, split-K and prepared call, for at
most config.tokens rows of x (the kernel computes tokens 0-7, or 0-15, of its 16-row tile and
would leave the rest unwritten, so more are refused)."""

from __future__ import annotations

from typing import Any

from humming_core.spec import QuantSpec

from ..wna16.bind import Wna16Kernel
from .config import Wna16DecodeConfig


class Wna16DecodeKernel(Wna16Kernel):
    """`kernel(x=..., out=..., **packed_weights)` for M <= config.tokens: out[M, N] = x[M, K] @
    W^T (+ bias)."""

    def __init__(self, function: Any, spec: QuantSpec, config: Wna16DecodeConfig) -> None:
        super().__init__(function, spec, config, pdl=config.pdl)
        self.max_m = config.tokens
