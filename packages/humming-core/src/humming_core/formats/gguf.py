"""GGUF (llama.cpp) block formats converted exactly to the canonical form.

Blocks run along K (a row of a GGUF tensor is one output channel). Per type:

| type | stored | canonical spec | value |
|---|---|---|---|
| Q8_0 | fp16 d, 32 int8 q | int8, group 32, fp16 scale | d·q |
| Q4_0 | fp16 d, 32 nibbles | int4 (code = nibble), group 32, fp16 | d·(q−8) |
| Q5_0 | fp16 d, 32 high bits, 32 nibbles | int5, group 32, fp16 | d·(q−16) |
| Q4_K | fp16 d, dmin, 8×(6-bit sc, 6-bit m), 256 nibbles | uint4, group 32, fp32 scale, float zero | (d·sc)·q − dmin·m |
| Q5_K | as Q4_K plus 256 high bits | uint5, group 32, fp32, float zero | (d·sc)·q − dmin·m |
| Q6_K | fp16 d, 16 int8 sc, 256 6-bit q | int6, group 16, fp32 | (d·sc)·(q−32) |

K-quants' two-level scales are folded into one fp32 scale per sub-block: d has 11 significant bits
and sc at most 8, so d·sc (and dmin·m) is exact in fp32 — but not in fp16 or bf16, which is why
these specs use fp32 group scales rather than the 16-bit ones of the `GGUF_Q4_K` preset. The value
formulas are then the very operations `gguf.quants.dequantize` performs in fp32, so the
dequantized weights agree bit for bit (the tests check it on a real model).
"""

from __future__ import annotations

import torch

from ..packing import CanonicalWeight
from ..packing.bits import pack_k
from ..spec import QuantSpec, ScaleSpec, WeightSpec
from .base import CheckpointFormat, QuantLayer, register
from .errors import FormatError

# type -> (weight dtype, group size, scale dtype, zero point)
_SPECS: dict[str, tuple[str, int, str, str]] = {
    "Q8_0": ("int8", 32, "fp16", "none"),
    "Q4_0": ("int4", 32, "fp16", "none"),
    "Q5_0": ("int5", 32, "fp16", "none"),
    "Q4_K": ("uint4", 32, "fp32", "float"),
    "Q5_K": ("uint5", 32, "fp32", "float"),
    "Q6_K": ("int6", 16, "fp32", "none"),
}
PLAIN_TYPES = ("F32", "F16", "BF16")
_ROWS_PER_CHUNK = 4096


def gguf_spec(type_name: str) -> QuantSpec:
    if type_name not in _SPECS:
        raise FormatError(
            f"GGUF type {type_name} is not supported: humming reads {', '.join(_SPECS)} (and keeps "
            f"{', '.join(PLAIN_TYPES)} tensors as they are)"
        )
    dtype, group, scale, zero = _SPECS[type_name]
    scale_spec = ScaleSpec(granularity="group", group_size=group, dtype=scale)
    return QuantSpec(weight=WeightSpec(dtype=dtype, scale=scale_spec, zero_point=zero))


def _f16(raw: torch.Tensor) -> torch.Tensor:
    """Little-endian fp16 from (..., 2) bytes, widened to fp32 (exact)."""
    return raw.contiguous().view(torch.float16).to(torch.float32).squeeze(-1)


def _nibbles(qs: torch.Tensor) -> torch.Tensor:
    """(blocks, chunks, 32 bytes) -> (blocks, chunks, 64): low nibbles first, then high nibbles."""
    return torch.cat([qs & 0x0F, qs >> 4], dim=-1)


def _decode_q8_0(b: torch.Tensor):
    codes = (b[:, 2:].view(torch.int8).to(torch.int16) + 128).to(torch.uint8)
    return codes, _f16(b[:, :2]).to(torch.float16).unsqueeze(-1), None


def _decode_q4_0(b: torch.Tensor):
    return (
        _nibbles(b[:, 2:].unsqueeze(1)).squeeze(1),
        _f16(b[:, :2]).to(torch.float16).unsqueeze(-1),
        None,
    )


def _decode_q5_0(b: torch.Tensor):
    high_bits = b[:, 2:6].contiguous().view(torch.int32).to(torch.int64)
    high = ((high_bits >> torch.arange(32)) & 1).to(torch.uint8)
    codes = _nibbles(b[:, 6:].unsqueeze(1)).squeeze(1) | (high << 4)
    return codes, _f16(b[:, :2]).to(torch.float16).unsqueeze(-1), None


def _k_scale_min(s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The eight 6-bit scales and mins packed in 12 bytes (ggml's get_scale_min_k4)."""
    d, m, md = s[:, 0:4], s[:, 4:8], s[:, 8:12]
    sc = torch.cat([d & 0x3F, (md & 0x0F) | ((d >> 2) & 0x30)], dim=-1)
    mn = torch.cat([m & 0x3F, (md >> 4) | ((m >> 2) & 0x30)], dim=-1)
    return sc.to(torch.float32), mn.to(torch.float32)


def _decode_q4_k_like(b: torch.Tensor, with_high: bool):
    d, dmin = _f16(b[:, 0:2]).unsqueeze(-1), _f16(b[:, 2:4]).unsqueeze(-1)
    sc, mn = _k_scale_min(b[:, 4:16])
    qs = b[:, 48:] if with_high else b[:, 16:]
    codes = _nibbles(qs.reshape(-1, 4, 32)).reshape(-1, 256)
    if with_high:
        qh = b[:, 16:48].unsqueeze(1)  # bit j of byte l: high bit of element l of sub-block j
        high = (qh >> torch.arange(8, dtype=torch.uint8).view(1, 8, 1)) & 1
        codes = codes | (high.reshape(-1, 256) << 4)
    return codes, d * sc, dmin * mn


def _decode_q6_k(b: torch.Tensor):
    ql, qh = b[:, :128].reshape(-1, 2, 64), b[:, 128:192].reshape(-1, 2, 32)
    low = torch.cat([ql & 0x0F, ql >> 4], dim=-1)  # (blocks, half, 128)
    high = torch.cat([(qh >> s) & 3 for s in (0, 2, 4, 6)], dim=-1)
    codes = (low | (high << 4)).reshape(-1, 256)
    sc = b[:, 192:208].contiguous().view(torch.int8).to(torch.float32)
    return codes, _f16(b[:, 208:210]).unsqueeze(-1) * sc, None


_DECODERS = {
    "Q8_0": _decode_q8_0,
    "Q4_0": _decode_q4_0,
    "Q5_0": _decode_q5_0,
    "Q4_K": lambda b: _decode_q4_k_like(b, with_high=False),
    "Q5_K": lambda b: _decode_q4_k_like(b, with_high=True),
    "Q6_K": _decode_q6_k,
}


def decode_blocks(type_name: str, raw: torch.Tensor, k: int):
    """Raw bytes (rows, bytes per row) -> codes (rows, K) uint8, scales (rows, K/g), float zeros."""
    from .gguf_io import GGML_TYPES

    rows = raw.shape[0]
    block_bytes = next(bb for n, _, bb in GGML_TYPES.values() if n == type_name)
    codes, scales, zeros = _DECODERS[type_name](raw.reshape(-1, block_bytes))
    codes = codes.reshape(rows, k)
    scales = scales.reshape(rows, -1)
    return codes, scales, None if zeros is None else zeros.reshape(rows, -1)


def gguf_to_canonical(type_name: str, raw: torch.Tensor, shape: tuple[int, ...]) -> CanonicalWeight:
    """One GGUF tensor (raw bytes, torch-order shape (N, K) or (E, N, K)) as a CanonicalWeight."""
    spec = gguf_spec(type_name)
    bits = spec.weight.dtype.bits
    k = shape[-1]
    parts = [
        decode_blocks(type_name, raw[i : i + _ROWS_PER_CHUNK], k)
        for i in range(0, raw.shape[0], _ROWS_PER_CHUNK)
    ]
    qweight = torch.cat([pack_k(c, bits) for c, _, _ in parts])
    scales = torch.cat([s for _, s, _ in parts])
    zeros = None if parts[0][2] is None else torch.cat([z for _, _, z in parts])
    lead = tuple(shape[:-1])

    def shaped(t: torch.Tensor | None) -> torch.Tensor | None:
        return None if t is None else t.reshape(*lead, t.shape[-1])

    return CanonicalWeight(
        spec=spec if len(shape) == 2 else spec.replace(layout="moe"),
        n=shape[-2],
        k=k,
        qweight=shaped(qweight),
        scales=shaped(scales),
        zeros=shaped(zeros),
    )


@register
class GGUFFormat(CheckpointFormat):
    """A .gguf file: every tensor of a supported quantized type with 2 (or 3, MoE) dims is a layer."""

    methods = ("gguf",)
    name = "gguf"

    def find_layers(self) -> list[QuantLayer]:
        found = []
        for t in self.tensors.tensors.values():
            if t.type_name in PLAIN_TYPES:
                continue
            if len(t.shape) not in (2, 3):
                raise FormatError(
                    f"GGUF tensor {t.name!r} of type {t.type_name} has shape {t.shape}: expected 2 or 3 dims"
                )
            spec = gguf_spec(t.type_name)
            found.append(
                QuantLayer(
                    name=t.name.removesuffix(".weight"),
                    spec=spec if len(t.shape) == 2 else spec.replace(layout="moe"),
                    n=t.shape[-2],
                    k=t.shape[-1],
                    experts=t.shape[0] if len(t.shape) == 3 else 0,
                )
            )
        return found

    def _tensor_name(self, layer: str) -> str:
        return layer + ".weight" if layer + ".weight" in self.tensors else layer

    def load(self, name: str) -> CanonicalWeight:
        self.layer(name)
        t = self.tensors.tensor(self._tensor_name(name))
        return gguf_to_canonical(t.type_name, self.tensors.raw(t.name), t.shape)

    def plain_tensors(self) -> list[str]:
        return [t.name for t in self.tensors.tensors.values() if t.type_name in PLAIN_TYPES]

    def read_plain(self, name: str) -> torch.Tensor:
        t = self.tensors.tensor(name)
        dtype = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}[t.type_name]
        return self.tensors.raw(name).view(dtype).reshape(t.shape)
