"""vLLM-free core: schemes whose tensors are N-major matrices or per-tensor scalars, converted shard
by shard — compressed-tensors int/float/nvfp4/mxfp4-quantized, HF FP8 block, ModelOpt.

Tensor-parallel rules (what each rank's parameters hold):
- N-major tensors (`weight` (N, K), FP4 `weight_packed` (N, K/2), group scales (N, K/g), block
  scales (N/bn, K/bk)) shard along N under column parallelism and along their K columns under row
  parallelism, so a rank's K must be a multiple of what one stored column covers (2 FP4 codes, g
  or bk columns) and, for block scales, each fused sub-layer's N per rank a multiple of bn (vLLM
  divides the block grid's N offsets by bn: `layer.weight_block_size`).
- per-channel scales (N, 1) shard along N only.
- per-tensor scales (FP8 `weight_scale`, NVFP4 global scales, static `input_scale`) are one value
  per logical shard of a fused layer (vLLM's PerTensorScaleParameter: 3 for QKV, 2 for gate/up)
  and whole on every rank. Each sub-layer is converted with its own value and the shards are
  fused exactly (`humming_core.formats.fuse`: differing per-tensor weight scales become
  per-channel; differing NVFP4 global scales are folded into fp32 group scales only if exact).
  One static activation scale serves the fused layer: the largest of the shards', as vLLM does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from humming_core.formats.fuse import fuse_shards

from .layout import LoadedWeight, ParamDef, Partition, load_with_format


@dataclass(frozen=True)
class Stored:
    """One checkpoint tensor of a layer.

    `per`: K columns one stored column covers (1 for 8-bit codes, 2 for FP4 bytes, g for group
    scales, bk for block scales); None for a per-tensor scalar. `rows`: N rows per stored row
    (bn for block scales). `channel`: one column whatever K (per-channel scales).
    """

    name: str
    dtype: torch.dtype
    per: int | None
    rows: int = 1
    channel: bool = False


@dataclass(frozen=True)
class ShardedScheme:
    """A layer's stored tensors, the format reader that converts one shard of them, and where
    its static activation scale (if any) comes from."""

    method: str  # the humming_core.formats reader
    config: dict[str, Any]  # the config that reader is given (one layer group)
    stored: tuple[Stored, ...]
    act_scale: str | None = None  # stored per-tensor activation scale
    act_scale_divisor: bool = False  # stored as 1/scale (compressed-tensors input_global_scale)
    block: tuple[int, int] | None = None  # weight_block_size (bn, bk) for vLLM's loaders
    allow_rounding: bool = False  # accept fp32(1/x) for divisor-style global scales, as vLLM does
    act_order = False  # no g_idx in these formats

    def claim_reasons(self) -> set[str]:
        return set()  # vLLM's own kernels serve every format of this kind

    def _check(self, part: Partition, s: Stored) -> None:
        if s.per and part.row_sharded and part.k % s.per:
            raise ValueError(
                f"this rank holds K={part.k} input features, not a multiple of {s.per}: each "
                f"column of {s.name!r} covers {s.per} of them; use a smaller tensor-parallel size"
            )
        if s.rows > 1 and len(part.n_parts) > 1 and any(n % s.rows for n in part.n_parts):
            raise ValueError(
                f"output partitions {part.n_parts}: {s.name!r} holds one scale per {s.rows} rows, "
                "so each fused sub-layer needs a multiple of that many rows per rank; use a smaller "
                "tensor-parallel size"
            )

    def params(self, part: Partition, params_dtype: torch.dtype) -> list[ParamDef]:
        defs = []
        for s in self.stored:
            if s.per is None:
                defs.append(ParamDef(s.name, (len(part.n_parts),), s.dtype, kind="per_tensor"))
                continue
            self._check(part, s)
            rows = -(-part.n // s.rows)
            if s.channel:
                defs.append(ParamDef(s.name, (rows, 1), s.dtype, output_dim=0))
                continue
            kind = "block" if s.rows > 1 else None
            cols = -(-part.k // s.per)
            defs.append(ParamDef(s.name, (rows, cols), s.dtype, 1, 0, kind=kind))
        return defs

    def _shard(self, tensors: dict[str, torch.Tensor], i: int, start: int, n: int) -> dict:
        piece = {}
        for s in self.stored:
            t = tensors[s.name]
            if s.per is None:
                piece[s.name] = t[i : i + 1]
            else:
                piece[s.name] = t[start // s.rows : -(-(start + n) // s.rows)].contiguous()
        return piece

    def to_canonical(
        self, tensors: dict[str, torch.Tensor], part: Partition, act_dtype: torch.dtype
    ) -> LoadedWeight:
        shards, start = [], 0
        for i, n in enumerate(part.n_parts):
            piece = self._shard(tensors, i, start, n)
            shards.append(
                load_with_format(
                    self.method, self.config, "layer", piece, act_dtype, self.allow_rounding
                )
            )
            start += n
        cw = shards[0] if len(shards) == 1 else fuse_shards(shards)
        return LoadedWeight(cw, None, self._act_scale(tensors))

    def _act_scale(self, tensors: dict[str, torch.Tensor]) -> torch.Tensor | None:
        if self.act_scale is None:
            return None
        worst = tensors[self.act_scale].to(torch.float32).max().reshape(1)
        if not bool(torch.isfinite(worst).all()) or float(worst) <= 0:
            raise ValueError(
                f"{self.act_scale} is {float(worst)}: a static activation scale must be a finite "
                "positive number; the checkpoint's scale was not loaded or is corrupt"
            )
        return 1.0 / worst if self.act_scale_divisor else worst
