"""Bind a loaded W4A4 module into a callable kernel: quantize x (its own entries), then the GEMM."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from humming_core.spec import QuantSpec

from ...args import ScalarArg, Signature, TensorArg
from ..act_quant.act4 import Act4Quantizer
from ..common_bind import ActQuantGemmKernel, out_arg
from .config import W4a4Config, W4a4Format


def _scale_args(fmt: W4a4Format) -> tuple[TensorArg, TensorArg]:
    """(activation scales, weight scales): AG / WG scale groups along K, KV = K / block size."""
    if fmt.scaled:
        return (
            TensorArg("a_scales", torch.uint8, ("M", "KV"), align=4),
            TensorArg("weight_scale", torch.uint8, ("N", "KV"), align=4),
        )
    w_shape = ("WG", "N") if fmt.w_grouped else ("N",)
    return (
        TensorArg("a_scales", torch.float32, ("AG", "M"), align=4),
        TensorArg("weight_scale", torch.float32, w_shape, align=4),
    )


def signature(fmt: W4a4Format, name: str) -> Signature:
    """Parameters in the order of HUMMING_W4A4_ENTRY (include/humming/kernel/w4a4.cuh)."""
    a_scales, w_scales = _scale_args(fmt)
    nvfp4 = fmt.path == "nvfp4"
    return Signature(
        TensorArg("a", torch.uint8, ("M", "KH")),
        a_scales,
        TensorArg("a_global", torch.float32, (1,), optional=not nvfp4, align=4),
        TensorArg("qweight", torch.uint8, ("N", "KH")),
        w_scales,
        TensorArg("weight_global", torch.float32, (1,), optional=not nvfp4, align=4),
        TensorArg("bias", torch.float32, ("N",), optional=not fmt.bias, align=4),
        out_arg(fmt.out),
        *(ScalarArg(n, "int32", dim=n) for n in ("M", "N", "K")),
        ScalarArg("ldc", "int32", dim="LDC"),
        kernel=name,
    )


class W4a4Kernel(ActQuantGemmKernel):
    """`kernel(x=..., out=..., [act_scale=...], **packed)`: out[M, N] = quant4(x) @ W^T (+ bias).

    x is fp16 or bf16 with K a multiple of 64; it is quantized by the module's own 4-bit quantizer
    entries into fresh buffers (torch's caching allocator: no synchronisation), then multiplied.
    act_scale: the static int4 scale, or the NVFP4 global activation scale (else computed)."""

    def __init__(self, function: Any, spec: QuantSpec, config: W4a4Config) -> None:
        self.fmt = W4a4Format.from_spec(spec)
        self.quantizer = Act4Quantizer.from_module(self.fmt.act, function, function.symbol)
        super().__init__(function, config, signature(self.fmt, function.symbol))

    def _quantize(
        self, x: torch.Tensor, act_scale: torch.Tensor | None
    ) -> tuple[dict[str, Any], Callable[[], None]]:
        # the 4-bit quantizer (one or two kernels) runs as it is called: nothing left to launch
        q, scales, global_scale = self.quantizer(x, act_scale)
        return {"a": q, "a_scales": scales, "a_global": global_scale}, _nothing

    def _k_dims(self, k: int) -> dict[str, int]:
        dims = {"K": k, "KH": k // 2}
        if self.fmt.scaled:
            dims["KV"] = k // self.fmt.act.group
        elif self.fmt.w_grouped:
            dims["WG"] = -(-k // self.fmt.w_group)
        return dims


def _nothing() -> None:
    """The launch of a quantizer that has already run."""
