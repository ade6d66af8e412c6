"""vLLM-free core: which tensors a quantized linear layer holds on one tensor-parallel rank, and how
that rank's tensors become a `CanonicalWeight`.

A layout lists its parameters (`ParamDef`: per-rank shape, and which dims vLLM's loaders shard) for
one `Partition` of the layer; after loading, `to_canonical` hands the rank's tensors to the
`humming_core.formats` reader of the checkpoint's method, so a layer served by vLLM is converted by
exactly the code that converts a whole checkpoint.

Act-order (`g_idx`) is resolved here, not in the format reader: under row parallelism a rank holds a
slice of K whose rows belong to arbitrary groups, so its groups are neither contiguous nor full.
`regroup_act_order` sorts the rank's rows by group and pads every group present to `group_size`
rows; the padding rows read a zero activation, so they add nothing. The layer then gathers its input
columns with `LoadedWeight.input_index` before the GEMM.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import torch

from humming_core.formats.base import Checkpoint
from humming_core.packing import CanonicalWeight
from humming_core.packing.bits import pack_k, unpack_k

_DTYPE_NAMES = {torch.float16: "float16", torch.bfloat16: "bfloat16"}


@dataclass(frozen=True)
class ParamDef:
    """One checkpoint tensor of a layer, as this rank holds it.

    `input_dim` / `output_dim`: the dims vLLM shards under row / column parallelism (None: the
    tensor is whole on every rank along that axis). `packed_dim` holds `packed_factor` codes per
    element, so vLLM divides shard offsets along it by that factor.
    """

    name: str
    shape: tuple[int, ...]
    dtype: torch.dtype
    input_dim: int | None = None
    output_dim: int | None = None
    packed_dim: int | None = None
    packed_factor: Fraction | None = None
    # "per_tensor": one value per fused sub-layer (vLLM's PerTensorScaleParameter); "block": a
    # block-scale grid whose N offsets vLLM divides by the layer's weight_block_size.
    kind: str | None = None


@dataclass(frozen=True)
class Partition:
    """The part of an `input_size × output_size` layer one rank holds (vLLM's create_weights args)."""

    k: int  # input_size_per_partition
    n_parts: tuple[int, ...]  # output_partition_sizes (one per fused sub-layer, already per rank)
    k_full: int  # input_size

    @property
    def n(self) -> int:
        return sum(self.n_parts)

    @property
    def row_sharded(self) -> bool:
        return self.k != self.k_full


@dataclass(frozen=True)
class LoadedWeight:
    weight: CanonicalWeight
    input_index: torch.Tensor | None  # gather x[..., index] (index == k reads a zero column)
    act_scale: torch.Tensor | None = None  # static activation scale (a multiplier), fp32 (1,)


_SAFETENSORS_DTYPES = {
    torch.float32: "F32",
    torch.float16: "F16",
    torch.bfloat16: "BF16",
    torch.uint8: "U8",
    torch.int8: "I8",
    torch.int32: "I32",
    torch.int64: "I64",
    torch.float8_e4m3fn: "F8_E4M3",
}


@dataclass(frozen=True)
class _Info:
    dtype: str  # safetensors' dtype name, as the format readers' header checks expect


class DictTensors:
    """The tensor-reader interface of `humming_core.formats` over an in-memory dict."""

    def __init__(self, tensors: dict[str, torch.Tensor]) -> None:
        self._tensors = tensors
        self.infos = {k: _Info(_SAFETENSORS_DTYPES.get(v.dtype, "?")) for k, v in tensors.items()}

    def __contains__(self, name: str) -> bool:
        return name in self._tensors

    def names(self) -> list[str]:
        return list(self._tensors)

    keys = names  # the older spelling of the same listing

    def shape(self, name: str) -> tuple[int, ...]:
        return tuple(self._tensors[name].shape)

    def get(self, name: str) -> torch.Tensor:
        return self._tensors[name]

    def get_optional(self, name: str) -> torch.Tensor | None:
        return self._tensors.get(name)


def regroup_act_order(g_idx: torch.Tensor, group_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(present groups, source row of each new K row) for one rank's slice of an act-order layer.

    New row `i*group_size + r` is the r-th row (in stored order) of the i-th group present; rows a
    group lacks on this rank have source `len(g_idx)`, the zero column the layer appends to x.
    """
    k = g_idx.numel()
    present, inverse = torch.unique(g_idx.to(torch.int64), return_inverse=True)
    counts = torch.bincount(inverse, minlength=present.numel())
    if bool((counts > group_size).any()):
        worst = int(counts.max())
        raise ValueError(
            f"g_idx puts {worst} rows of K in one group but group_size is {group_size}: the "
            "checkpoint's g_idx does not match its group_size; check the quantization config"
        )
    order = torch.argsort(inverse, stable=True)
    starts = torch.cumsum(counts, 0) - counts
    group_of_row = inverse[order]
    slot = group_of_row * group_size + torch.arange(k) - starts[group_of_row]
    source = torch.full((present.numel() * group_size,), k, dtype=torch.int64)
    source[slot] = order
    return present, source


def gather_codes(words: torch.Tensor, bits: int, k: int, source: torch.Tensor) -> torch.Tensor:
    """Bitstreams along the last dim (codes [.., k]) re-ordered by `source`; source k yields code 0."""
    codes = unpack_k(words, bits, k)
    codes = torch.nn.functional.pad(codes, (0, 1))
    return pack_k(codes.index_select(-1, source.to(codes.device)), bits)


def load_with_format(
    method: str,
    config: dict[str, Any],
    name: str,
    tensors: dict[str, torch.Tensor],
    act_dtype: torch.dtype,
    allow_rounding: bool = False,
    model_config: dict[str, Any] | None = None,
    sep: str = ".",
) -> CanonicalWeight:
    """Convert one layer's tensors (named `<name>.<suffix>`) with the checkpoint format's reader.

    `allow_rounding` accepts the fp32 reciprocal of a divisor-style global scale (compressed-tensors
    NVFP4), the multiplier vLLM's own kernels use. `model_config` adds model-config keys a reader
    needs (gpt-oss: swiglu_limit); `sep` joins name and suffix (gpt-oss: "gate_up_proj_blocks")."""
    from humming_core.formats import FORMATS

    if act_dtype not in _DTYPE_NAMES:
        raise ValueError(
            f"activation dtype {act_dtype} is not supported: serve the model in float16 or bfloat16"
        )
    reader = DictTensors({f"{name}{sep}{key}": value for key, value in tensors.items()})
    ckpt = Checkpoint(
        path=Path(name),
        config=config,
        tensors=reader,
        model_config={"torch_dtype": _DTYPE_NAMES[act_dtype], **(model_config or {})},
        allow_rounding=allow_rounding,
    )
    return FORMATS[method](ckpt).load(name)
