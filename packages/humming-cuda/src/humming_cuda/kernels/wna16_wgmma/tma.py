"""The TMA tensor map of the activations x ([M, K] fp16 / bf16, K contiguous), encoded on the host.

Boxes of `box_rows` rows (the kernel's block_m: 128, or 16 / 32 / 64 for the register form at
small M) x 64 elements: 128 bytes inside a row, exactly the 128B swizzle span TMA allows and the
K-major layout the wgmma descriptors expect. Encoding reuses the W8A8-wgmma helpers
(w8a8_wgmma.tma) with 2-byte elements; maps are cached per (pointer, M, K, row stride) as there.
"""

from __future__ import annotations

import torch

from ..w8a8_wgmma.tma import TMA_ALIGN, TensorMapParam, TileMapParams, encode
from .config import BLOCK_K, BLOCK_M

_MAX_CACHED = 256


def act_map_params(
    rows: int, k: int, row_stride: int, what: str, box_rows: int = BLOCK_M
) -> TileMapParams:
    """The tensor-map arguments for a [rows, k] 16-bit matrix with `row_stride` bytes per row,
    read in boxes of `box_rows` x 64."""
    if rows < 1 or k < 1:
        raise ValueError(f"{what}: shape ({rows}, {k}) must be positive in both dimensions")
    if row_stride % TMA_ALIGN or row_stride < 2 * k:
        raise ValueError(
            f"{what}: row stride {row_stride} bytes for K={k}: TMA needs a row stride of at least "
            f"2*K bytes that is a multiple of {TMA_ALIGN} (K a multiple of 8, rows not offset)"
        )
    return TileMapParams(
        global_dim=(k, rows),
        global_strides=(row_stride,),
        box_dim=(BLOCK_K, box_rows),
        element_bytes=2,
    )


class ActMapCache:
    """Encoded maps by (address, rows, K, row stride), boxes of `box_rows` rows; bounded
    (activation buffers come and go)."""

    def __init__(self, box_rows: int = BLOCK_M) -> None:
        self.box_rows = box_rows
        self._maps: dict[tuple[int, int, int, int], TensorMapParam] = {}

    def get(self, x: torch.Tensor, what: str) -> TensorMapParam:
        rows, k = x.shape
        if x.stride(1) != 1:
            raise ValueError(f"{what}: needs K contiguous (stride 1), got strides {x.stride()}")
        key = (x.data_ptr(), rows, k, x.stride(0) * x.element_size())
        tmap = self._maps.get(key)
        if tmap is None:
            if len(self._maps) >= _MAX_CACHED:
                self._maps.clear()
            params = act_map_params(rows, k, key[3], what, self.box_rows)
            tmap = self._maps[key] = encode(key[0], params)
        return tmap
