"""AWQ checkpoints, "gemm" layout (AutoAWQ, llm-awq, auto-round "auto_awq"): `quant_method: "awq"`.

Stored per layer: `qweight` int32 (K, N/8) packed along N, `qzeros` int32 (G, N/8) likewise, and
`scales` fp16 (G, N). Nibble i of each word holds column `_ORDER[i]` of its group of eight columns
(the interleave the AWQ GEMM kernel dequantizes with). W[k, n] = (q[k, n] − z[k//g, n]) · s[k//g, n]:
unsigned 4-bit codes with integer zero points, no offset.
"""

from __future__ import annotations

import torch

from ..packing import CanonicalWeight
from ..packing.bits import pack_k, pack_n
from ..spec import EpilogueSpec, QuantSpec, ScaleSpec, WeightSpec
from .base import CheckpointFormat, QuantLayer, register
from .common import wide_act
from .errors import FormatError, expect_dtype, expect_shape

_ORDER = (0, 2, 4, 6, 1, 3, 5, 7)


def unpack_awq(words: torch.Tensor) -> torch.Tensor:
    """int32 (R, N/8) in AWQ's interleaved nibble order -> codes (R, N) in column order."""
    w = words.to(torch.int64) & 0xFFFFFFFF
    nibbles = (w.unsqueeze(-1) >> (4 * torch.arange(8))) & 0xF  # (R, N/8, nibble i)
    codes = torch.empty_like(nibbles)
    codes[..., list(_ORDER)] = nibbles  # nibble i -> column _ORDER[i]
    return codes.reshape(words.shape[0], -1)


@register
class AWQFormat(CheckpointFormat):
    methods = ("awq",)
    name = "awq"

    def __init__(self, ckpt) -> None:
        super().__init__(ckpt)
        cfg = ckpt.config
        self.bits = int(cfg.get("bits", cfg.get("w_bit", 4)))
        self.group_size = int(cfg.get("group_size", cfg.get("q_group_size", 128)))
        version = str(cfg.get("version", "gemm")).lower()
        if self.bits != 4:
            raise FormatError(f"AWQ bits={self.bits} is not supported: AWQ checkpoints are 4-bit")
        if version != "gemm":
            raise FormatError(
                f"AWQ version {version!r} is not supported: humming reads the 'gemm' layout"
            )
        if not cfg.get("zero_point", True):
            raise FormatError(
                "AWQ zero_point=false is not supported: the gemm layout stores zero points"
            )

    def find_layers(self) -> list[QuantLayer]:
        try:
            scale = ScaleSpec(granularity="group", group_size=self.group_size, dtype="fp16")
        except ValueError as exc:
            raise FormatError(f"AWQ group_size={self.group_size}: {exc}") from None
        found = []
        for key in self.tensors.names():
            if not key.endswith(".qweight"):
                continue
            prefix = key.removesuffix(".qweight")
            k, words = self.tensors.shape(key)
            groups = self.tensors.shape(f"{prefix}.scales")[0]
            if groups != -(-k // self.group_size):
                raise FormatError(
                    f"{prefix}.scales has {groups} groups but K={k} with group_size={self.group_size} "
                    f"gives {-(-k // self.group_size)}: the config's group_size does not match the tensors"
                )
            spec = QuantSpec(
                weight=WeightSpec(dtype="uint4", scale=scale, zero_point="int"),
                act=wide_act(self.ckpt.model_config),
                epilogue=EpilogueSpec(bias=f"{prefix}.bias" in self.tensors),
            )
            found.append(QuantLayer(prefix, spec, words * 8, k))
        return sorted(found, key=lambda layer: layer.name)

    def load(self, name: str) -> CanonicalWeight:
        layer = self.layer(name)
        n, k = layer.n, layer.k
        qweight, qzeros = self.tensors.get(f"{name}.qweight"), self.tensors.get(f"{name}.qzeros")
        scales = self.tensors.get(f"{name}.scales")
        groups = -(-k // self.group_size)
        expect_dtype(f"{name}.qweight", qweight.dtype, (torch.int32,))
        expect_shape(f"{name}.qzeros", qzeros.shape, (groups, n // 8), "4-bit zeros packed along N")
        expect_shape(f"{name}.scales", scales.shape, (groups, n), "one scale per group and column")
        codes = unpack_awq(qweight).t()  # (N, K)
        zeros = unpack_awq(qzeros).t()  # (N, G)
        bias = self.tensors.get_optional(f"{name}.bias")
        return CanonicalWeight(
            layer.spec, n, k, pack_k(codes, 4), scales.t().contiguous(), pack_n(zeros, 4), bias=bias
        )
