"""The canonical weight form every checkpoint format converts to and every device repacks from.

Conventions (DESIGN.md, "Canonical weight form"):
- `qweight` int32 `(N, ceil(K*b/32))` (MoE: `(E, N, ...)`): the codes of each row as a little-endian
  continuous bitstream along K (element i at bits [i*b, (i+1)*b); 3/5/6/7-bit codes straddle words).
  Integer codes are unsigned offset-binary (`u = q + 2^(b-1)` for signed types); float codes are raw
  bit patterns of the type.
- `scales` `(N, ceil(K/g))` for groups, `(N, 1)` per channel, `(1, 1)` per tensor, `(ceil(N/bn),
  ceil(K/bk))` for blocks (MoE: leading E). torch dtype float16/bfloat16/float32 for those scale
  types; `torch.uint8` raw codes for e8m0; `torch.float8_e4m3fn` for ue4m3.
- `zeros`: integer zero points `(ceil(G), ceil(N*b/32))` int32, each group's N codes as a bitstream
  along N (unsigned, no offset); float zero points (GGUF-style offsets, `w = s*q - z` convention
  below) same shape and dtype as `scales`.
- `global_scale`: float32 `(1,)` (MoE: `(E,)`), a direct multiplier, when `spec.weight.global_scale`.
- Value: `w = s * (q - z)` for integer zero points, `w = s * q - z` for float zero points (z is then an
  offset in weight units), `w = s * value(code)` otherwise, times `global_scale` when present.
  With a zero point (int or float), q is the stored unsigned code itself (0 .. 2^b-1, also for a
  signed type); without one, it is the element value of the code
  (`humming_core.numerics.codec.canonical_table`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from ..spec import QuantSpec


@dataclass(frozen=True, eq=False)  # identity semantics: fields are tensors
class CanonicalWeight:
    spec: QuantSpec
    n: int
    k: int
    qweight: torch.Tensor
    scales: torch.Tensor
    zeros: torch.Tensor | None = None
    global_scale: torch.Tensor | None = None
    bias: torch.Tensor | None = None

    @property
    def num_experts(self) -> int:
        return self.qweight.shape[0] if self.qweight.dim() == 3 else 1

    @property
    def is_moe(self) -> bool:
        return self.qweight.dim() == 3

    @property
    def device(self) -> torch.device:
        return self.qweight.device

    def to(self, device: torch.device | str) -> CanonicalWeight:
        move = lambda t: None if t is None else t.to(device)  # noqa: E731
        return replace(
            self,
            qweight=move(self.qweight),
            scales=move(self.scales),
            zeros=move(self.zeros),
            global_scale=move(self.global_scale),
            bias=move(self.bias),
        )
