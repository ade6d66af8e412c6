"""Bind a loaded W4A8 decode function: w8a8's quantizer, arguments, grid, split-K (counted in the
config's stages of `slabs` slabs) and prepared call, for at most config.tokens rows of x (the
kernel computes tokens 0-7, or 0-15, of its tile and would leave the rest unwritten, so more are
refused)."""

from __future__ import annotations

from typing import Any

from humming_core.spec import QuantSpec

from ..w8a8.bind import W8a8Kernel
from .config import W4a8DecodeConfig


class W4a8DecodeKernel(W8a8Kernel):
    """`kernel(x=..., out=..., [act_scale=...], **packed)` for M <= config.tokens."""

    def __init__(self, function: Any, spec: QuantSpec, config: W4a8DecodeConfig) -> None:
        super().__init__(function, spec, config)
        self.max_m = config.tokens

    def _smem_bytes(self) -> int:
        # the stages' scale tiles are sized for this spec's weight group
        return self.config.stages * self.config.stage_bytes(self.fmt.group)
