"""The MoE W4A8 weight layout: the MoE WnA16 layout of the codes spec, plus, for MXFP4 weights, the
largest scale exponent of every weight row that the e4m3 kernel folds the group scales against.

`row_exp` (E, N_pad) int32, columns in the lane order of the scales (and in the GLU order of the
packed N axis): smax + 127, smax the largest e8m0 exponent over the row's groups that hold a
nonzero code (127 for a row of zeros, 0 for padding columns). A group of zeros is left out because
its scale is arbitrary: counted, a large one would push the row's real groups below the e4m3
window (include/humming/kernel/moe_wna16_wgmma_e4m3.cuh). The table costs 4 bytes per row and
expert next to the row's K / 2 bytes of codes.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import torch

from humming_core.packing.bits import unpack_k
from humming_core.packing.canonical import CanonicalWeight

from ..moe_wna16.layout import MoeWna16Layout, _rows, glu_order
from ..wna16.config import LAYOUT_TILE_N
from ..wna16.layout import _columns, nonzero_groups

E8M0_ONE = 127  # the e8m0 code (and bf16 exponent field) of 2^0


def row_exponents(codes: torch.Tensor, scales: torch.Tensor, group: int) -> torch.Tensor:
    """One expert: e2m1 codes (N, K) and e8m0 scale codes (N, G) -> smax + 127 per row (N,)."""
    nonzero = nonzero_groups(codes, 4, group, scales.shape[1])
    exps = torch.where(nonzero, scales.to(torch.int32), -1).amax(-1)
    return torch.where(exps < 0, E8M0_ONE, exps).to(torch.int32)


def lane_order(per_row: torch.Tensor, glu_layout: str | None) -> torch.Tensor:
    """(N,) values of the canonical rows -> (N_pad,) in the packed order: GLU-reordered when
    `glu_layout` is set, padded with 0, permuted like the scale columns."""
    if glu_layout is not None:
        per_row = _rows(per_row, glu_order(per_row.shape[0], glu_layout))
    n = per_row.shape[0]
    n_pad = -(-n // LAYOUT_TILE_N) * LAYOUT_TILE_N
    return _columns(per_row.view(n, 1), 1, n_pad).reshape(n_pad)


@dataclass(frozen=True)
class MoeWna16A8Layout:
    """`WeightLayout` of moe_wna16_a8: every config of a layer (each inner kernel, bf16 or e4m3
    MMA) shares it. `row_exp`: whether row_exp is packed (e2m1 codes with e8m0 scales)."""

    inner: MoeWna16Layout
    row_exp: bool

    @property
    def identity(self) -> Hashable:
        return ("moe_wna16_a8", self.inner.identity, self.row_exp)

    def pack(self, cw: CanonicalWeight, device: torch.device | str) -> dict[str, torch.Tensor]:
        out = self.inner.pack(cw, device)
        if self.row_exp:
            group = cw.spec.weight.scale.group_size
            rows = [
                lane_order(
                    row_exponents(
                        unpack_k(cw.qweight[e].to(device).contiguous(), 4, cw.k),
                        cw.scales[e].to(device),
                        group,
                    ),
                    self.inner.glu_layout,
                )
                for e in range(cw.num_experts)
            ]
            out["row_exp"] = torch.stack(rows).contiguous()
        return out
