"""vLLM-free core: the expert-stacked parameters of a MoE layer and their conversion to two
expert-stacked canonical weights (w13 with the GLU epilogue, w2 with the router weight).

Two kinds:
- `ExpertScheme` wraps the dense scheme of the checkpoint's expert linears (GPTQ, AWQ,
  compressed-tensors pack-quantized, MXFP4 pack-quantized, ...): the parameters are that
  scheme's per-rank tensors with a leading expert dim, named `w13_<name>` / `w2_<name>`, and each
  expert is converted by the same format reader as a dense layer, then stacked.
- `GptOssScheme`: gpt-oss MXFP4 (`w13_weight` uint8 [E, 2I, H/2], `w13_weight_scale` e8m0
  [E, 2I, H/32], `w13_bias` [E, 2I], same for w2 over [H, I]), read by the gpt-oss format reader.

Tensor parallelism (vLLM's RoutedExperts.weight_loader, shard ids w1/w3/w2): w1 (gate) and w3 (up)
of each expert are split along the intermediate dim I into the two halves of w13 ([gate | up],
the 'split' GLU layout); w2 is split along its K = I. Per rank, I/tp must therefore be a multiple
of the group size and of the codes per packed word. w2's bias is added on rank 0 only (the ranks'
outputs are summed). Per-tensor scales and act-order are not served for MoE layers (refused).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from humming_core.packing import CanonicalWeight

from .layout import ParamDef, Partition, load_with_format

_GLU = {"silu": "silu_mul", "gelu": "gelu_mul", "gelu_tanh": "gelu_tanh_mul"}


@dataclass(frozen=True)
class MoeParam:
    """One expert-stacked parameter. `is_transposed`: stored K-major (GPTQ/AWQ), so vLLM's MoE
    loader shards it along the other dim; `quant_method`: vLLM's FusedMoeWeightScaleSupported
    value for scales and zero points (None for codes, biases and shapes)."""

    name: str
    shape: tuple[int, ...]
    dtype: torch.dtype
    is_transposed: bool = False
    quant_method: str | None = None


@dataclass(frozen=True)
class MoeShape:
    experts: int  # experts on this rank
    hidden: int
    inter: int  # intermediate size per rank
    inter_full: int
    act_dtype: torch.dtype
    activation: str  # vLLM's MoEActivation value: "silu", "swigluoai", ...
    swiglu_limit: float | None = None

    def w13(self) -> Partition:
        return Partition(self.hidden, (self.inter, self.inter), self.hidden)

    def w2(self) -> Partition:
        return Partition(self.inter, (self.hidden,), self.inter_full)


def _stack(parts: list[CanonicalWeight], spec) -> CanonicalWeight:
    first = parts[0]
    pick = lambda name: (  # noqa: E731
        None if getattr(first, name) is None else torch.stack([getattr(p, name) for p in parts])
    )
    global_scale = (
        None if first.global_scale is None else torch.cat([p.global_scale for p in parts])
    )
    return CanonicalWeight(
        spec,
        first.n,
        first.k,
        pick("qweight"),
        pick("scales"),
        pick("zeros"),
        global_scale,
        pick("bias"),
    )


@dataclass(frozen=True)
class ExpertScheme:
    """A MoE layer whose experts are stored as the dense linears of `scheme`."""

    scheme: Any  # a dense scheme (schemes.py / sharded.py)

    def _check(self, shape: MoeShape) -> None:
        if self.scheme.act_order:
            raise ValueError(
                "act-order (g_idx) MoE experts are not served by humming_q; re-quantize the "
                "experts without act-order (desc_act=false / actorder=null)"
            )
        if shape.activation not in _GLU:
            raise ValueError(
                f"MoE activation {shape.activation!r} is not served for {self.scheme.method} "
                f"experts; served: {', '.join(_GLU)} (gated)"
            )

    def _defs(self, part: Partition, act_dtype: torch.dtype) -> list[ParamDef]:
        defs = self.scheme.params(part, act_dtype)
        if any(d.kind for d in defs) or getattr(self.scheme, "act_scale", None):
            raise ValueError(
                f"{self.scheme.method} experts with per-tensor or block scales are not served by "
                "humming_q's MoE method (vLLM's MoE loader keeps them per expert and shard); serve "
                "this model with vLLM's own quantization method"
            )
        return defs

    def params(self, shape: MoeShape) -> list[MoeParam]:
        self._check(shape)
        out = []
        for prefix, part in (("w13", shape.w13()), ("w2", shape.w2())):
            for d in self._defs(part, shape.act_dtype):
                scale = "scale" in d.name or "zero" in d.name
                method = ("group" if self.scheme_grouped() else "channel") if scale else None
                out.append(
                    MoeParam(
                        f"{prefix}_{d.name}",
                        (shape.experts, *d.shape),
                        d.dtype,
                        d.output_dim == 1,
                        method,
                    )
                )
        return out

    def scheme_grouped(self) -> bool:
        return getattr(self.scheme, "group_size", True) is not None

    def _convert(self, tensors, prefix: str, part: Partition, shape: MoeShape) -> list:
        names = [d.name for d in self._defs(part, shape.act_dtype)]
        experts = []
        for e in range(shape.experts):
            one = {n: tensors[f"{prefix}_{n}"][e] for n in names}
            experts.append(self.scheme.to_canonical(one, part, shape.act_dtype).weight)
        return experts

    def to_canonical(
        self, tensors: dict[str, torch.Tensor], shape: MoeShape
    ) -> tuple[CanonicalWeight, CanonicalWeight]:
        w13 = self._convert(tensors, "w13", shape.w13(), shape)
        w2 = self._convert(tensors, "w2", shape.w2(), shape)
        glu = {"glu": _GLU[shape.activation], "glu_layout": "split"}
        spec13 = w13[0].spec.replace(layout="moe", epilogue=glu)
        spec2 = w2[0].spec.replace(layout="moe", epilogue={"topk_weight": True})
        return _stack(w13, spec13), _stack(w2, spec2)


@dataclass(frozen=True)
class GptOssScheme:
    """gpt-oss MXFP4 experts with biases and the clamped SwiGLU ('swigluoai' in vLLM)."""

    method = "mxfp4"
    act_order = False

    def params(self, shape: MoeShape) -> list[MoeParam]:
        if shape.activation != "swigluoai":
            raise ValueError(
                f"gpt-oss MXFP4 experts use the 'swigluoai' activation, the layer has "
                f"{shape.activation!r}: the model config does not match the checkpoint"
            )
        if shape.inter % 32 or shape.hidden % 32:
            raise ValueError(
                f"MXFP4 experts need hidden ({shape.hidden}) and per-rank intermediate "
                f"({shape.inter}) sizes that are multiples of 32; use a smaller tensor-parallel size"
            )
        e, h, i = shape.experts, shape.hidden, shape.inter
        u8 = torch.uint8
        return [
            MoeParam("w13_weight", (e, 2 * i, h // 2), u8),
            MoeParam("w13_weight_scale", (e, 2 * i, h // 32), u8, quant_method="group"),
            MoeParam("w13_bias", (e, 2 * i), shape.act_dtype),
            MoeParam("w2_weight", (e, h, i // 2), u8),
            MoeParam("w2_weight_scale", (e, h, i // 32), u8, quant_method="group"),
            MoeParam("w2_bias", (e, h), shape.act_dtype),
        ]

    def _read(self, tensors, prefix: str, name: str, shape: MoeShape) -> CanonicalWeight:
        weight = tensors[f"{prefix}_weight"]
        e, n, half = weight.shape
        stored = {
            "blocks": weight.reshape(e, n, half // 16, 16),
            "scales": tensors[f"{prefix}_weight_scale"],
            "bias": tensors[f"{prefix}_bias"],
        }
        extra = {"swiglu_limit": shape.swiglu_limit} if shape.swiglu_limit is not None else {}
        return load_with_format(
            "mxfp4", {}, f"mlp.experts.{name}", stored, shape.act_dtype, model_config=extra, sep="_"
        )

    def to_canonical(
        self, tensors: dict[str, torch.Tensor], shape: MoeShape
    ) -> tuple[CanonicalWeight, CanonicalWeight]:
        w13 = self._read(tensors, "w13", "gate_up_proj", shape)
        # vLLM's loader stacks gate and up halves ([gate | up]), not gpt-oss's row interleave.
        epilogue = w13.spec.epilogue.model_copy(update={"glu_layout": "split"})
        w13 = CanonicalWeight(
            w13.spec.replace(epilogue=epilogue),
            w13.n,
            w13.k,
            w13.qweight,
            w13.scales,
            bias=w13.bias,
        )
        return w13, self._read(tensors, "w2", "down_proj", shape)
