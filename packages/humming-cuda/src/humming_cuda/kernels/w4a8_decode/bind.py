"""Bind a loaded W4A8 decode function: w8a8's quantizer, arguments, grid, split-K and prepared
call, for at most config.tokens rows of x (the kernel computes tokens 0-7, or 0-15, of its tile
and would leave the rest unwritten, so more are refused)."""

from __future__ import annotations

from typing import Any

import torch

from humming_core.spec import QuantSpec

from ..split_k import split_launch
from ..w8a8.bind import W8a8Kernel
from ..w8a8.config import BLOCK_K, W8a8Format
from .config import W4a8DecodeConfig


class W4a8DecodeKernel(W8a8Kernel):
    """`kernel(x=..., out=..., [act_scale=...], **packed)` for M <= config.tokens."""

    def __init__(self, function: Any, spec: QuantSpec, config: W4a8DecodeConfig) -> None:
        # the stages' scale tiles are sized for this spec's weight group
        self.smem = config.stages * config.stage_bytes(W8a8Format.from_spec(spec).group)
        super().__init__(function, spec, config)
        self.max_m = config.tokens

    def _split_k(
        self, k: int, tiles: int, device: torch.device
    ) -> tuple[int, dict[str, Any], dict[str, int]]:
        # the kernel's K steps are stages of config.slabs slabs
        cfg = self.config
        steps = -(-k // (BLOCK_K * cfg.slabs))
        return split_launch(steps, cfg.split_k, tiles, cfg.block_m * cfg.block_n, device)
