"""Blockwise views: every scale granularity is an (bn, bk) tile over the last two dims.

tensor = (N, K), channel = (1, K), group g = (1, g), block = (bn, bk). Scales then have shape
(ceil(N/bn), ceil(K/bk)) for every granularity, which is the canonical scale layout. A partial last
tile (K not a multiple of the group size, N not a multiple of bn) is padded with zeros inside the
view, which neither changes an absolute maximum nor a min(., 0) / max(., 0) range.
"""

from __future__ import annotations

import torch

from ..spec.quant import ScaleSpec


def tile_of(scale: ScaleSpec, n: int, k: int) -> tuple[int, int]:
    """(rows, columns) covered by one scale of this granularity in an n x k matrix."""
    if scale.granularity == "tensor":
        return n, k
    if scale.granularity == "channel":
        return 1, k
    if scale.granularity == "group":
        return 1, scale.group_size
    return scale.block


def grid_of(n: int, k: int, tile: tuple[int, int]) -> tuple[int, int]:
    """Shape of the scale grid for an n x k matrix cut into tiles."""
    return -(-n // tile[0]), -(-k // tile[1])


def to_tiles(x: torch.Tensor, tile: tuple[int, int]) -> torch.Tensor:
    """[..., N, K] -> [..., N/bn, bn, K/bk, bk], zero padded to whole tiles (a view when nothing pads)."""
    n, k = x.shape[-2:]
    gn, gk = grid_of(n, k, tile)
    pad_n, pad_k = gn * tile[0] - n, gk * tile[1] - k
    if pad_n or pad_k:
        x = torch.nn.functional.pad(x, (0, pad_k, 0, pad_n))
    return x.reshape(*x.shape[:-2], gn, tile[0], gk, tile[1])


def from_tiles(x: torch.Tensor, n: int, k: int) -> torch.Tensor:
    """Inverse of `to_tiles`: [..., gn, bn, gk, bk] -> [..., n, k]."""
    gn, bn, gk, bk = x.shape[-4:]
    out = x.reshape(*x.shape[:-4], gn * bn, gk * bk)
    if gn * bn != n or gk * bk != k:
        out = out[..., :n, :k]
    return out


def per_tile(values: torch.Tensor) -> torch.Tensor:
    """A scale grid [..., gn, gk] broadcastable against tiles [..., gn, bn, gk, bk]."""
    return values[..., :, None, :, None]


def tile_amax(tiles: torch.Tensor) -> torch.Tensor:
    """Largest |x| of each tile: [..., gn, gk]."""
    return tiles.abs().amax(dim=(-3, -1))


def tile_range(tiles: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(min(x, 0), max(x, 0)) of each tile, so that 0 always lies in the range."""
    lo = tiles.amin(dim=(-3, -1)).clamp(max=0.0)
    hi = tiles.amax(dim=(-3, -1)).clamp(min=0.0)
    return lo, hi
