"""The MoE WnA16 weight layout: every expert packed in the dense WnA16 layout, stacked on a leading E.

Tensors: `qweight` (E, N_pad/64, K_pad/16, 32*b), `scales` / `zeros` (E, groups, N_pad),
`channel_scale` (E, N_pad) or (E, 1), `global_scale` (E,) (each expert carries its own fp16 scale
shift, see wna16.layout), `bias` (E, N).

With a GLU epilogue the N axis (weight rows, scales, zero points, bias) is first reordered so that
every 64-column layout tile holds 32 gate columns followed by the 32 matching up columns: packed
column 64t + i is gate column 32t + i, packed column 64t + 32 + i its up column (from the 'split'
or 'interleaved' GLU layout). Each half is padded to a multiple of 32 with zero-scaled columns,
which the kernel never stores. The kernel then finds gate and up of one output column in the same
lane (include/humming/kernel/moe_wna16.cuh).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, replace

import torch

from humming_core.packing.bits import pack_n, unpack_n
from humming_core.packing.canonical import CanonicalWeight
from humming_core.spec import QuantSpec

from ..wna16.config import KernelFormat
from ..wna16.layout import Wna16Layout
from .config import GLU_HALF_TILE


def glu_order(n: int, glu_layout: str, half_tile: int = GLU_HALF_TILE) -> torch.Tensor:
    """Source row of every packed GLU column (n = gate + up rows); n marks a padding column.
    `half_tile`: gate (and up) columns per layout tile (the moe_w8a8 family pairs n8 blocks)."""
    half = n // 2
    width = -(-half // half_tile) * half_tile
    c = torch.arange(width).view(-1, half_tile)  # output columns, one row per layout tile
    gate, up = (c, c + half) if glu_layout == "split" else (2 * c, 2 * c + 1)
    valid = c < half
    order = torch.cat([torch.where(valid, gate, n), torch.where(valid, up, n)], dim=1)
    return order.reshape(-1)


def _rows(t: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
    """t[order] along dim 0, where index t.shape[0] selects a zero row."""
    padded = torch.cat([t, torch.zeros_like(t[:1])], dim=0)
    return padded[order.to(t.device)].contiguous()


def expert_weight(cw: CanonicalWeight, e: int) -> CanonicalWeight:
    """Expert e of an (E, N, K) canonical weight as a dense (N, K) one."""
    pick = lambda t: None if t is None else t[e]  # noqa: E731
    gs = None if cw.global_scale is None else cw.global_scale.reshape(-1)[e : e + 1]
    return replace(
        cw,
        qweight=cw.qweight[e],
        scales=cw.scales[e],
        zeros=pick(cw.zeros),
        global_scale=gs,
        bias=pick(cw.bias),
    )


def reorder_glu(
    cw: CanonicalWeight, glu_layout: str, half_tile: int = GLU_HALF_TILE
) -> CanonicalWeight:
    """A dense weight's N axis in the packed GLU order (see the module docstring)."""
    order = glu_order(cw.n, glu_layout, half_tile)
    scales = cw.scales if cw.scales.shape[0] == 1 and cw.n > 1 else _rows(cw.scales, order)
    zeros = cw.zeros
    if zeros is not None and cw.spec.weight.zero_point == "int":
        bits = cw.spec.weight.dtype.bits
        zeros = pack_n(_rows(unpack_n(zeros, bits, cw.n), order), bits)
    elif zeros is not None:
        zeros = _rows(zeros, order)
    bias = None if cw.bias is None else _rows(cw.bias, order)
    return replace(
        cw,
        n=order.numel(),
        qweight=_rows(cw.qweight, order),
        scales=scales,
        zeros=zeros,
        bias=bias,
    )


@dataclass(frozen=True)
class MoeWna16Layout:
    """`WeightLayout` of the MoE WnA16 family: one packed copy serves every tile config."""

    fmt: KernelFormat
    glu_layout: str | None  # None: no GLU (plain N order)

    @property
    def identity(self) -> Hashable:
        return ("moe_wna16", Wna16Layout(self.fmt).identity, self.glu_layout)

    def pack(self, cw: CanonicalWeight, device: torch.device | str) -> dict[str, torch.Tensor]:
        if not cw.is_moe:
            raise ValueError(
                "the moe_wna16 layout packs expert-stacked weights (E, N, K); dense weights need "
                "the wna16 family"
            )
        dense = Wna16Layout(self.fmt)
        parts: dict[str, list[torch.Tensor]] = {}
        for e in range(cw.num_experts):
            one = expert_weight(cw, e)
            if self.glu_layout is not None:
                one = reorder_glu(one, self.glu_layout)
            for name, t in dense.pack(one, device).items():
                parts.setdefault(name, []).append(t)
        out = {name: torch.stack(ts).contiguous() for name, ts in parts.items()}
        if "global_scale" in out:
            out["global_scale"] = out["global_scale"].reshape(-1).contiguous()
        if "channel_scale" in out:
            out["channel_scale"] = out["channel_scale"].reshape(cw.num_experts, -1).contiguous()
        return out


def moe_layout(spec: QuantSpec) -> MoeWna16Layout:
    """The layout `spec`'s weights take in the MoE WnA16 families (moe_wna16, moe_wna16_wgmma):
    one packed copy serves both, so a layer can switch family per M bucket."""
    ep = spec.epilogue
    return MoeWna16Layout(KernelFormat.from_spec(spec), ep.glu_layout if ep.glu != "none" else None)
