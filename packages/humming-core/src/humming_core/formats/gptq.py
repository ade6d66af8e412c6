"""GPTQ checkpoints (AutoGPTQ, GPTQModel, auto-round "auto_gptq"): `quant_method: "gptq"`.

Stored per layer: `qweight` int32 (K·b/32, N), codes packed along K as a continuous little-endian
bitstream (3-bit codes straddle words) — the canonical stream, transposed; `scales` fp16 (G, N);
`qzeros` int32 (G, N·b/32) packed along N; `g_idx` int32 (K); optional `bias`.
W[k, n] = scales[g_idx[k], n] · (q[k, n] − z[g_idx[k], n]).

- Format v1 (`checkpoint_format`/`format` "gptq", the default) stores z − 1 per code; v2
  ("gptq_v2") stores z. So v1 zero points run from 1 to 2^b (auto-round's loader reads the code
  2^b − 1 as z = 2^b, and its 2-bit exports use it). b-bit integer zero points cannot hold 2^b:
  such a layer is converted to fp32 group scales with float offsets s·z instead — exact, since s
  (fp16, 11 significant bits) times z (at most 9 bits) fits fp32's 24.
- Symmetric checkpoints (`sym: true`) must carry the midpoint 2^(b−1) as every zero: they become
  signed `int{b}` codes without zero points (u = q, value q − 2^(b−1)); anything else is rejected
  as inconsistent. Asymmetric ones become `uint{b}` with integer zero points.
- `desc_act: true`: `g_idx` is an act-order permutation. K is reordered so groups are contiguous;
  `k_permutation(name)` returns that order, which the run time applies to the activations (see
  `common.k_permutation`).
"""

from __future__ import annotations

import torch

from ..packing import CanonicalWeight
from ..packing.bits import pack_k, pack_n, unpack_k, unpack_n
from ..spec import EpilogueSpec, QuantSpec, ScaleSpec, WeightSpec
from .base import CheckpointFormat, QuantLayer, register
from .common import k_permutation, permute_k, wide_act
from .errors import FormatError, expect_dtype, expect_shape


@register
class GPTQFormat(CheckpointFormat):
    methods = ("gptq",)
    name = "gptq"

    def __init__(self, ckpt) -> None:
        super().__init__(ckpt)
        cfg = ckpt.config
        self.bits = int(cfg.get("bits", 4))
        if self.bits not in (2, 3, 4, 8):
            raise FormatError(f"GPTQ bits={self.bits} is not supported: use 2, 3, 4 or 8")
        self.group_size = int(cfg.get("group_size", 128))
        self.sym = bool(cfg.get("sym", True))
        self.desc_act = bool(cfg.get("desc_act", False))
        version = str(cfg.get("checkpoint_format") or cfg.get("format") or "gptq").lower()
        if version not in ("gptq", "gptq_v2"):
            raise FormatError(
                f"GPTQ checkpoint_format {version!r} is not supported: 'gptq' (v1) or 'gptq_v2'"
            )
        self.v1 = version == "gptq"

    def _spec(self, has_bias: bool, zero_overflow: bool) -> QuantSpec:
        scale_dtype = "fp32" if zero_overflow else "fp16"
        if self.group_size == -1:
            scale = ScaleSpec(granularity="channel", dtype=scale_dtype)
        else:
            try:
                scale = ScaleSpec(
                    granularity="group", group_size=self.group_size, dtype=scale_dtype
                )
            except ValueError as exc:
                raise FormatError(f"GPTQ group_size={self.group_size}: {exc}") from None
        dtype = f"int{self.bits}" if self.sym else f"uint{self.bits}"
        zero = "none" if self.sym else ("float" if zero_overflow else "int")
        weight = WeightSpec(dtype=dtype, scale=scale, zero_point=zero)
        return QuantSpec(
            weight=weight,
            act=wide_act(self.ckpt.model_config),
            epilogue=EpilogueSpec(bias=has_bias),
        )

    def find_layers(self) -> list[QuantLayer]:
        found = []
        for key in self.tensors.names():
            if not key.endswith(".qweight"):
                continue
            prefix = key.removesuffix(".qweight")
            rows, n = self.tensors.shape(key)
            k = rows * 32 // self.bits
            groups = self.tensors.shape(f"{prefix}.scales")[0]
            g = k if self.group_size == -1 else self.group_size
            if groups != -(-k // g):
                raise FormatError(
                    f"{prefix}.scales has {groups} groups but bits={self.bits} and group_size="
                    f"{self.group_size} give K={k} and {-(-k // g)} groups: the config's bits or "
                    "group_size does not match the tensors"
                )
            spec = self._spec(f"{prefix}.bias" in self.tensors, self._zero_overflow(prefix, n))
            found.append(QuantLayer(prefix, spec, n, k))
        return sorted(found, key=lambda layer: layer.name)

    def load(self, name: str) -> CanonicalWeight:
        layer = self.layer(name)
        b, n, k = self.bits, layer.n, layer.k
        qweight = self.tensors.get(f"{name}.qweight")
        expect_dtype(f"{name}.qweight", qweight.dtype, (torch.int32,))
        expect_shape(
            f"{name}.qweight", qweight.shape, (k * b // 32, n), f"{b}-bit codes packed along K"
        )
        scales = self.tensors.get(f"{name}.scales")
        groups = scales.shape[0]
        expect_shape(f"{name}.scales", scales.shape, (groups, n), "one scale per group and column")
        codes_words = qweight.t().contiguous()
        perm = self.k_permutation(name)
        if perm is not None:
            codes_words = pack_k(permute_k(unpack_k(codes_words, b, k), perm), b)
        scales = scales.t().contiguous()
        z = self._zero_points(name, n, groups)
        bias = self.tensors.get_optional(f"{name}.bias")
        if layer.spec.weight.zero_point == "float":
            scales = scales.to(torch.float32)
            return CanonicalWeight(layer.spec, n, k, codes_words, scales, scales * z, bias=bias)
        zeros = self._check_sym(name, z)
        return CanonicalWeight(layer.spec, n, k, codes_words, scales, zeros, bias=bias)

    def _zero_overflow(self, prefix: str, n: int) -> bool:
        """Whether a v1 asymmetric layer holds the zero point 2^b (stored code 2^b - 1)."""
        if not self.v1 or self.sym:
            return False
        codes = unpack_n(self.tensors.get(f"{prefix}.qzeros"), self.bits, n)
        return bool((codes == (1 << self.bits) - 1).any())

    def _zero_points(self, name: str, n: int, groups: int) -> torch.Tensor:
        """Zero points (N, G) as integers; v1 codes + 1 per code (never on whole words, whose
        carries would spill into the next code)."""
        b = self.bits
        qzeros = self.tensors.get(f"{name}.qzeros")
        expect_shape(
            f"{name}.qzeros",
            qzeros.shape,
            (groups, -(-n * b // 32)),
            f"{b}-bit zeros packed along N",
        )
        z = unpack_n(qzeros, b, n)
        return z + 1 if self.v1 else z

    def _check_sym(self, name: str, z: torch.Tensor) -> torch.Tensor | None:
        b = self.bits
        if self.sym:
            if not bool((z == 1 << (b - 1)).all()):
                raise FormatError(
                    f"{name}.qzeros: the config says sym=true but the zero points are not all "
                    f"{1 << (b - 1)} (found {sorted(set(z.unique().tolist()))[:6]}): set sym=false "
                    "or check checkpoint_format (v1 stores z-1, v2 stores z)"
                )
            return None
        return pack_n(z, b)

    def k_permutation(self, name: str) -> torch.Tensor | None:
        g_idx = self.tensors.get_optional(f"{name}.g_idx")
        layer = self.layer(name)
        if g_idx is None or self.group_size == -1:
            return None
        expect_shape(f"{name}.g_idx", g_idx.shape, (layer.k,), "one group index per column of K")
        perm = k_permutation(g_idx, self.group_size, f"{name}.g_idx")
        if perm is not None and not self.desc_act:
            raise FormatError(
                f"{name}.g_idx is not k // group_size but the config says desc_act=false: set "
                "desc_act=true if the checkpoint was quantized with act-order"
            )
        return perm
