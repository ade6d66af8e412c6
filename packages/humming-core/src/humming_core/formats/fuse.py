"""Fusing shards (q/k/v, gate/up) into one canonical weight along N, exactly.

Group, channel and block scales simply concatenate. Per-tensor quantities need care when shards
differ:
- per-tensor scales (FP8 "tensor") become per-channel scales: each row keeps its shard's scale,
  which is the same number, so nothing rounds;
- second-level global scales (NVFP4) are kept when all shards share one (llm-compressor and
  ModelOpt tie q/k/v and gate/up). When they differ they are folded into fp32 group scales
  (ue4m3 · global) only if every product is exact in fp32; otherwise fusing is refused and the
  shards must run as separate GEMMs — never a silent rounding.
"""

from __future__ import annotations

import torch

from ..numerics.scales import scale_values
from ..packing import CanonicalWeight
from ..spec import ScaleSpec
from .errors import FormatError


def _concat(parts: list[torch.Tensor | None], what: str) -> torch.Tensor | None:
    if all(p is None for p in parts):
        return None
    if any(p is None for p in parts):
        raise FormatError(f"cannot fuse: some shards have {what} and some do not")
    return torch.cat(parts, dim=-2)


def _fold_global(shards: list[CanonicalWeight]) -> tuple[list[torch.Tensor], ScaleSpec]:
    folded = []
    for cw in shards:
        exact = scale_values(cw.scales, cw.spec.weight.scale.dtype).to(
            torch.float64
        ) * cw.global_scale.to(torch.float64)
        as32 = exact.to(torch.float32)
        if not torch.equal(as32.to(torch.float64), exact):
            raise FormatError(
                "cannot fuse shards with different global scales exactly: folding them into fp32 "
                "group scales would round; run the shards as separate GEMMs"
            )
        folded.append(as32)
    scale = shards[0].spec.weight.scale
    return folded, ScaleSpec(
        granularity=scale.granularity, group_size=scale.group_size, dtype="fp32"
    )


def fuse_shards(shards: list[CanonicalWeight]) -> CanonicalWeight:
    """Stack shards with the same weight format along N (rows of shard 0 first)."""
    first = shards[0]
    w = first.spec.weight
    for cw in shards[1:]:
        if cw.spec != first.spec or cw.k != first.k:
            raise FormatError(
                f"cannot fuse shards of different specs or K ({cw.spec.weight} vs {w}, {cw.k} vs {first.k})"
            )
    if w.scale.granularity == "block" and any(cw.n % w.scale.block[0] for cw in shards[:-1]):
        raise FormatError(
            f"cannot fuse block-scaled shards whose N is not a multiple of block {w.scale.block}"
        )
    n = sum(cw.n for cw in shards)
    spec, scales, global_scale = first.spec, [cw.scales for cw in shards], first.global_scale
    if w.scale.granularity == "tensor" and any(
        not torch.equal(cw.scales, first.scales) for cw in shards
    ):
        scales = [cw.scales.expand(cw.n, 1) for cw in shards]
        spec = spec.replace(
            weight=w.model_copy(
                update={"scale": ScaleSpec(granularity="channel", dtype=w.scale.dtype)}
            )
        )
    elif w.scale.granularity == "tensor":
        scales = [first.scales]
    if w.global_scale and any(
        not torch.equal(cw.global_scale, first.global_scale) for cw in shards
    ):
        scales, scale_spec = _fold_global(shards)
        spec = spec.replace(
            weight=w.model_copy(update={"scale": scale_spec, "global_scale": False})
        )
        global_scale = None
    fused_scales = scales[0] if len(scales) == 1 else torch.cat(scales, dim=-2)
    zeros = None
    if w.zero_point == "float":
        zeros = _concat([cw.zeros for cw in shards], "zero points")
    elif w.zero_point == "int":
        from ..packing.bits import pack_n, unpack_n

        codes = [unpack_n(cw.zeros, w.dtype.bits, cw.n) for cw in shards]
        zeros = pack_n(torch.cat(codes, dim=-2), w.dtype.bits)
    biases = [None if cw.bias is None else cw.bias.unsqueeze(-1) for cw in shards]
    bias = _concat(biases, "bias")
    qweight = torch.cat([cw.qweight for cw in shards], dim=-2)
    return CanonicalWeight(
        spec,
        n,
        first.k,
        qweight,
        fused_scales,
        zeros,
        global_scale,
        None if bias is None else bias.squeeze(-1),
    )
