"""A WnA16-wgmma kernel with one layer's weights bound (kernels/dense_call.py): x reaches the
kernel as its TMA tensor map, cached per pointer by the kernel's map cache."""

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
