"""QuantLinear: a linear layer whose weight is quantized; kernels compile when it is built."""

from __future__ import annotations

import torch
from torch import nn

from ..ops import PreparedGemm, prepare
from ..ops.gemm import run_layer
from ..packing import CanonicalWeight
from ..spec import QuantSpec


class QuantLinear(nn.Module):
    """y = x @ dequant(W)^T + b on the active (or named) device.

    Build it with `from_float` (quantize an fp weight with a spec) or `from_canonical` (tensors from
    a checkpoint). Every kernel the layer can need is compiled in the constructor, never in forward.
    """

    def __init__(self, weight: CanonicalWeight, device: str | None = None) -> None:
        super().__init__()
        self.spec: QuantSpec = weight.spec
        self._layer: PreparedGemm = prepare(weight, device)
        # x's width: K, or [gate | up] = 2K with a fused input GLU (act.input_glu)
        self.in_features, self.out_features = self._layer.x_k, weight.n
        # Expose the packed tensors as buffers so .state_dict() and memory accounting see them.
        for name, tensor in self._layer.packed.items():
            self.register_buffer(name, tensor, persistent=False)

    @classmethod
    def from_float(
        cls,
        weight: torch.Tensor,
        spec: QuantSpec,
        bias: torch.Tensor | None = None,
        device: str | None = None,
    ) -> QuantLinear:
        from ..numerics import quantize_weight

        return cls(quantize_weight(weight.detach().float(), spec, bias=bias), device)

    @classmethod
    def from_canonical(cls, weight: CanonicalWeight, device: str | None = None) -> QuantLinear:
        return cls(weight, device)

    @property
    def device_name(self) -> str:
        return self._layer.device.name

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return run_layer(x, self._layer)

    def extra_repr(self) -> str:
        w = self.spec.weight
        glu = f", input_glu={self.spec.act.input_glu}" if self.spec.act.input_glu != "none" else ""
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, weight={w.dtype.name}, "
            f"scale={w.scale.granularity}{w.scale.group_size or ''}/{w.scale.dtype.name}, "
            f"act={self.spec.act.dtype.name}{glu}, device={self.device_name}"
        )
