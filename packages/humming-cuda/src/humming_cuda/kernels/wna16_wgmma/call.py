"""A WnA16-wgmma kernel with one layer's weights bound (kernels/dense_call.py): x reaches the
kernel as its TMA tensor map, cached per pointer by the kernel's map cache. A stream-K kernel
launches its resident CTAs (at most one per iteration) with the workspace it holds, whose size
does not depend on M."""

from __future__ import annotations

from typing import Any

import torch

from ..common_bind import OUT_DTYPES
from ..dense_call import PreparedDenseCall
from ..wna16.bind import _ACT
from .bind import WgmmaWna16Kernel


class WgmmaWna16Call(PreparedDenseCall):
    def __init__(self, kernel: WgmmaWna16Kernel, packed: dict[str, torch.Tensor]) -> None:
        out = OUT_DTYPES[kernel.fmt.out]
        act = _ACT[kernel.fmt.act]
        super().__init__(kernel, packed, act, out, 2 * out.itemsize, kernel.config.smem_bytes)

    def patch_x(self, struct: Any, x: torch.Tensor, address: int, lda: int, m: int) -> None:
        struct.x = self.kernel.maps.get(x, "activations x")

    def keep_template(self, grid: tuple[int, int, int], params: list, dims: dict[str, int]) -> None:
        super().keep_template(grid, params, dims)
        if self.kernel.cluster_ctas(self.split) == self.split:
            self.uses_workspace = False  # the splits sum over distributed shared memory
        if self.kernel.resident:
            # the tiles across N (the checked grid's x is its CTAs); every quick call patches the
            # workspace this call holds (patch_workspace: the kernel's split_k_buffers size it
            # per device for stream-K, whatever M)
            self.grid_n = -(-dims["N"] // self.kernel.config.block_n)
            self.uses_workspace = True

    def grid(self, grid_m: int) -> tuple[int, int, int]:
        if self.kernel.resident:
            return (self.kernel.stream_ctas(self.grid_n, grid_m, self.k), 1, 1)
        return super().grid(grid_m)
