"""vLLM-free core: the per-rank parameters of GPTQ and compressed-tensors pack-quantized layers.

Both store integer codes as little-endian bitstreams along K plus per-group scales, optional packed
zero points and an optional act-order `g_idx`; they differ in orientation (GPTQ is K-major:
`qweight (K·b/32, N)`, `scales (G, N)`, `qzeros (G, N·b/32)`; compressed-tensors is N-major:
`weight_packed (N, K·b/32)`, `weight_scale (N, G)`, `weight_zero_point (N·b/32, G)`) and in names.

Sharding rules (what makes every tensor-parallel rank hold consistent pieces):
- codes shard along K (row parallel) and N (column parallel); offsets along the packed dim are
  divided by 32/b, so each rank's K (and each fused sub-layer's N, for packed zero points) must be
  a multiple of 32/b codes — checked in `params`.
- group scales and zero points shard along K with the codes, which needs each rank's K to be a
  multiple of group_size; per-channel ones are whole along K on every rank.
- act-order under row parallelism: a rank's rows belong to any group, so scales and zero points
  are kept whole along K (every group) and `g_idx` is sharded with the codes.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import torch

from .layout import (
    LoadedWeight,
    ParamDef,
    Partition,
    gather_codes,
    load_with_format,
    regroup_act_order,
)


@dataclass(frozen=True)
class IntScheme:
    """Packed integer weights with per-group (or per-channel) scales; the shared logic."""

    method: str  # the humming_core.formats reader
    config: dict[str, Any]  # the quantization config that reader is given
    bits: int
    group_size: int | None  # None: one scale per output channel
    symmetric: bool
    act_order: bool

    @property
    def factor(self) -> Fraction:
        return Fraction(32, self.bits)

    def check(self, part: Partition) -> None:
        per_word = 32 // self.bits if 32 % self.bits == 0 else 32
        if part.k % per_word:
            raise ValueError(
                f"this rank holds K={part.k} input features, not a multiple of {per_word}: {self.bits}-bit "
                f"codes are packed {per_word} to a word boundary along K; use a tensor-parallel size "
                "that splits K into such multiples"
            )
        if self.group_size and not self.act_order and part.k % self.group_size:
            raise ValueError(
                f"this rank holds K={part.k} input features, not a multiple of group_size="
                f"{self.group_size}: group scales cannot be split there; use a smaller tensor-parallel size"
            )
        if not self.symmetric and any(n * self.bits % 32 for n in part.n_parts):
            raise ValueError(
                f"output partitions {part.n_parts}: zero points are packed along N, so each needs a "
                f"multiple of {32 // self.bits if 32 % self.bits == 0 else 32} columns per rank"
            )

    def scale_rows(self, part: Partition) -> tuple[int, bool]:
        """(groups of K this rank holds scales for, whether they are sharded along K)."""
        if self.group_size is None:
            return 1, False
        if self.act_order and part.row_sharded:
            return -(-part.k_full // self.group_size), False
        return -(-part.k // self.group_size), True

    def claim_reasons(self) -> set[str]:
        """Why vLLM's own kernels cannot serve this scheme (see plan.CLAIM_REASONS)."""
        reasons = set()
        if self.bits not in (4, 8):
            reasons.add("low_bits")
        if not self.symmetric:
            reasons.add("asymmetric")
        if self.act_order:
            reasons.add("act_order")
        return reasons

    def regroup(self, g_idx: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor] | None:
        if g_idx is None or not self.act_order or self.group_size is None:
            return None
        return regroup_act_order(g_idx.cpu(), self.group_size)


def _index_or_none(source: torch.Tensor) -> torch.Tensor | None:
    """None when the regrouped order is the stored order (no gather needed)."""
    if torch.equal(source, torch.arange(source.numel())):
        return None
    return source


class GptqScheme(IntScheme):
    """GPTQ (`quant_method: gptq`), v1 or v2 zero points, 2/3/4/8 bits, optional act-order."""

    def params(self, part: Partition, params_dtype: torch.dtype) -> list[ParamDef]:
        self.check(part)
        b, n, f = self.bits, part.n, self.factor
        rows, k_sharded = self.scale_rows(part)
        k_dim = 0 if k_sharded else None
        defs = [
            ParamDef("qweight", (part.k * b // 32, n), torch.int32, 0, 1, 0, f),
            # GPTQ stores fp16 scales; keeping them fp16 keeps the conversion exact under bf16 models.
            ParamDef("scales", (rows, n), torch.float16, k_dim, 1),
            ParamDef("qzeros", (rows, -(-n * b // 32)), torch.int32, k_dim, 1, 1, f),
        ]
        if self.act_order and self.group_size:
            defs.append(ParamDef("g_idx", (part.k,), torch.int32, 0))
        return defs

    def to_canonical(
        self, tensors: dict[str, torch.Tensor], part: Partition, act_dtype: torch.dtype
    ) -> LoadedWeight:
        tensors = dict(tensors)
        regrouped = self.regroup(tensors.pop("g_idx", None))
        index = None
        if regrouped is not None:
            present, source = regrouped
            words = gather_codes(tensors["qweight"].t().contiguous(), self.bits, part.k, source)
            tensors["qweight"] = words.t().contiguous()
            tensors["scales"] = tensors["scales"][present.to(tensors["scales"].device)]
            tensors["qzeros"] = tensors["qzeros"][present.to(tensors["qzeros"].device)]
            index = _index_or_none(source)
        cw = load_with_format(self.method, self.config, "layer", tensors, act_dtype)
        return LoadedWeight(cw, index)


class PackQuantizedScheme(IntScheme):
    """compressed-tensors `pack-quantized` int weights (weight-only), optional `actorder: group`."""

    def params(self, part: Partition, params_dtype: torch.dtype) -> list[ParamDef]:
        self.check(part)
        b, n, f = self.bits, part.n, self.factor
        cols, k_sharded = self.scale_rows(part)
        k_dim = 1 if k_sharded else None
        defs = [
            ParamDef("weight_packed", (n, part.k * b // 32), torch.int32, 1, 0, 1, f),
            ParamDef("weight_scale", (n, cols), params_dtype, k_dim, 0),
            # The full (N, K) on disk; replaced by this rank's shape at conversion.
            ParamDef("weight_shape", (2,), torch.int64),
        ]
        if not self.symmetric:
            defs.append(
                ParamDef("weight_zero_point", (-(-n * b // 32), cols), torch.int32, k_dim, 0, 0, f)
            )
        if self.act_order and self.group_size:
            defs.append(ParamDef("weight_g_idx", (part.k,), torch.int32, 0))
        return defs

    def to_canonical(
        self, tensors: dict[str, torch.Tensor], part: Partition, act_dtype: torch.dtype
    ) -> LoadedWeight:
        tensors = dict(tensors)
        regrouped = self.regroup(tensors.pop("weight_g_idx", None))
        index, k = None, part.k
        if regrouped is not None:
            present, source = regrouped
            tensors["weight_packed"] = gather_codes(
                tensors["weight_packed"], self.bits, part.k, source
            )
            cols = present.to(tensors["weight_scale"].device)
            tensors["weight_scale"] = tensors["weight_scale"][:, cols].contiguous()
            if "weight_zero_point" in tensors:
                tensors["weight_zero_point"] = tensors["weight_zero_point"][:, cols].contiguous()
            index, k = _index_or_none(source), source.numel()
        tensors["weight_shape"] = torch.tensor([part.n, k], dtype=torch.int64)
        cw = load_with_format(self.method, self.config, "layer", tensors, act_dtype)
        return LoadedWeight(cw, index)


class AwqScheme(IntScheme):
    """AWQ "gemm" layout: 4-bit codes and zero points packed along N, eight interleaved columns
    to a word, so every fused sub-layer's N per rank must be a multiple of 8."""

    def params(self, part: Partition, params_dtype: torch.dtype) -> list[ParamDef]:
        self.check(part)  # asymmetric 4-bit: each part's N per rank is a multiple of 8
        n, f = part.n, self.factor
        rows, _ = self.scale_rows(part)
        return [
            ParamDef("qweight", (part.k, n // 8), torch.int32, 0, 1, 1, f),
            ParamDef("qzeros", (rows, n // 8), torch.int32, 0, 1, 1, f),
            ParamDef("scales", (rows, n), torch.float16, 0, 1),
        ]

    def claim_reasons(self) -> set[str]:
        return set()  # vLLM serves 4-bit AWQ with zero points itself

    def to_canonical(
        self, tensors: dict[str, torch.Tensor], part: Partition, act_dtype: torch.dtype
    ) -> LoadedWeight:
        return LoadedWeight(load_with_format("awq", self.config, "layer", tensors, act_dtype), None)
