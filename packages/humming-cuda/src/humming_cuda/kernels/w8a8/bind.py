"""Bind a loaded W8A8 / W4A8 module into a callable kernel: quantize x (its own entries), then the GEMM."""

from __future__ import annotations

from typing import Any

import torch

from humming_core.spec import QuantSpec

from ...args import ScalarArg, Signature, TensorArg
from ...launch import Launcher
from ..act_quant import CODE_DTYPES, ActQuantizer
from .config import W8a8Config, W8a8Format
from .nibbles import slab_words

_OUT = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
_OUT_BYTES = {"fp16": 2, "bf16": 2, "fp32": 4}
# WG: weight groups along K; KW: int32 words per row of the W4A8 layout
_WS_SHAPE = {"tensor": (1,), "channel": ("N",), "block": ("NB", "KB"), "group": ("WG", "N")}


def signature(fmt: W8a8Format, name: str) -> Signature:
    """Parameters in the order of HUMMING_W8A8_ENTRY (include/humming/kernel/w8a8.cuh)."""
    code = CODE_DTYPES[fmt.code]
    if fmt.weight_bits == 4:
        qweight = TensorArg("qweight", torch.int32, ("N", "KW"))
    else:
        qweight = TensorArg("qweight", CODE_DTYPES[fmt.weight], ("N", "K"))
    return Signature(
        TensorArg("a", code, ("M", "K")),
        TensorArg("a_scales", torch.float32, ("G", "M"), align=4),
        qweight,
        TensorArg("weight_scale", torch.float32, _WS_SHAPE[fmt.weight_scale], align=4),
        TensorArg("zeros", torch.uint8, ("WG", "N"), optional=not fmt.zero, align=1),
        TensorArg("bias", torch.float32, ("N",), optional=not fmt.bias, align=4),
        # pairs of columns are stored with one 2-element vector store
        TensorArg(
            "out", _OUT[fmt.out], ("M", "N"), layout="strided", align=2 * _OUT_BYTES[fmt.out]
        ),
        *(ScalarArg(n, "int32", dim=n) for n in ("M", "N", "K")),
        ScalarArg("ldc", "int32", dim="LDC"),
        ScalarArg("ws_ld", "int32", dim="KB"),
        kernel=name,
    )


class W8a8Kernel:
    """`kernel(x=..., out=..., [act_scale=...], **packed)`: out[M, N] = quant(x) @ W^T (+ bias).

    x is fp16 or bf16; it is quantized by the module's own quantizer entry into a fresh 8-bit
    buffer (torch's caching allocator: no synchronisation, graph-capturable), then multiplied."""

    def __init__(self, function: Any, spec: QuantSpec, config: W8a8Config) -> None:
        self.fmt = W8a8Format.from_spec(spec)
        self.config = config
        self.name = function.symbol
        self.function = function
        self.quantizer = ActQuantizer.from_module(self.fmt.act, function, function.symbol)
        self.signature = signature(self.fmt, self.name)
        self.launcher = Launcher(function, self.signature.ctypes)
        function.reserve_smem(config.smem_bytes)

    def __call__(self, **values: Any) -> None:
        values = dict(values)
        x, out = values.pop("x"), values["out"]
        if x.dim() != 2 or out.dim() != 2 or out.stride(-1) != 1:
            raise ValueError(
                f"{self.name}: expected x [M, K] and out [M, N] with innermost stride 1, got x "
                f"{tuple(x.shape)} and out {tuple(out.shape)} strides {tuple(out.stride())}"
            )
        values["a"], values["a_scales"] = self.quantizer(x, values.pop("act_scale", None))
        k = x.shape[1]
        dims = {"LDC": out.stride(0), "KB": -(-k // 128) if self.fmt.weight_scale == "block" else 0}
        if self.fmt.weight_bits == 4:
            dims.update(KW=slab_words(k), WG=-(-k // self.fmt.group))
        _, params = self.signature.bind(values, dims, self.function.device_index)
        m, n = out.shape
        if m == 0:
            return
        cfg = self.config
        grid = (-(-n // cfg.block_n), -(-m // cfg.block_m), 1)
        self.launcher(grid, (cfg.threads, 1, 1), params, cfg.smem_bytes)
