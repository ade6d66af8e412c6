"""The warp-grid tile shared by the families that quantize activations on the GPU (w8a8, w4a4).

Both run the same CTA shape (humming::W8a8Tile in include/humming/kernel): a warps_m x warps_n grid
of warps, each holding m_frags x n_frags MMA fragments of 16 x 8, with a multi-stage cp.async
pipeline. `WarpTileConfig` checks that shape; a family's config adds `family` and `smem_bytes` (its
K depth per stage and weight bytes differ). The heuristic helpers pick the tile per M and fit the
pipeline into the arch's shared memory.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import Field, model_validator

from humming_core.device import DeviceCaps

from .base import KernelConfig

# Decode: one m16 row of fragments and 64 columns per CTA, so small layers still fill the GPU.
DECODE_TILE = {"m_frags": 1, "n_frags": 2, "warps_m": 1, "warps_n": 4}
MID_TILE = {"m_frags": 2, "n_frags": 4, "warps_m": 2, "warps_n": 2}


def _pow2(v: int) -> bool:
    return v > 0 and v & (v - 1) == 0


class WarpTileConfig(KernelConfig):
    """Block tile 16*m_frags*warps_m (M) x 8*n_frags*warps_n (N); subclasses define smem_bytes."""

    arch: str
    m_frags: int = Field(1, ge=1, le=4)
    n_frags: int = Field(4, ge=2, le=8)
    warps_m: int = Field(1, ge=1, le=8)
    warps_n: int = Field(4, ge=1, le=8)
    stages: int = Field(4, ge=2, le=8)

    @model_validator(mode="after")
    def _check(self) -> WarpTileConfig:
        for name in ("m_frags", "n_frags", "warps_m", "warps_n"):
            if not _pow2(getattr(self, name)):
                raise ValueError(f"{name}={getattr(self, name)} must be a power of two")
        if self.warps_m * self.warps_n > 8:
            raise ValueError(
                f"warps_m*warps_n={self.warps_m * self.warps_n} warps: at most 8 per CTA"
            )
        return self

    @property
    def block_m(self) -> int:
        return 16 * self.m_frags * self.warps_m

    @property
    def block_n(self) -> int:
        return 8 * self.n_frags * self.warps_n

    @property
    def threads(self) -> int:
        return 32 * self.warps_m * self.warps_n


C = TypeVar("C", bound=WarpTileConfig)


def tile_for_m(m: int | None, large: dict[str, int]) -> dict[str, int]:
    """The tile fields for M rows (None: unknown, tiled as decode): the decode and mid tiles, else
    the family's `large` tile."""
    if m is None or m <= 16:
        return dict(DECODE_TILE)
    if m <= 64:
        return dict(MID_TILE)
    return large


def _fit_stages(cfg: C, caps: DeviceCaps) -> C:
    while cfg.stages > 2 and cfg.smem_bytes > caps.smem_per_block:
        cfg = cfg.with_fields(stages=cfg.stages - 1)
    return cfg


def staged_candidates(first: C, caps: DeviceCaps) -> list[C]:
    """`first` with as many stages as fit in shared memory, then a 3-stage variant if it differs;
    configs that do not fit even with 2 stages are dropped."""
    best = _fit_stages(first, caps)
    out = [best]
    shallow = _fit_stages(best.with_fields(stages=3), caps)
    if shallow != best:
        out.append(shallow)
    return [c for c in out if c.smem_bytes <= caps.smem_per_block]
