"""Bind a loaded W8A8 / W4A8 module into a callable kernel: quantize x (its own entries), then the GEMM."""

from __future__ import annotations

from typing import Any

import torch

from humming_core.spec import QuantSpec

from ...args import ScalarArg, Signature, TensorArg
from ..act_quant import CODE_DTYPES, ActQuantizer, QuantLaunch
from ..common_bind import ActQuantGemmKernel, out_arg
from ..split_k import split_launch, tile_workspace
from .call import W8a8Call
from .config import W8a8Config, W8a8Format
from .nibbles import slab_words

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
        out_arg(fmt.out),
        *(ScalarArg(n, "int32", dim=n) for n in ("M", "N", "K")),
        ScalarArg("ldc", "int32", dim="LDC"),
        ScalarArg("ws_ld", "int32", dim="KB"),
        TensorArg("workspace", torch.float32, ("WS",), optional=True, align=4),
        TensorArg("counters", torch.int32, ("CT",), optional=True, align=4),
        ScalarArg("iters_per_split", "int32", dim="IPS"),
        kernel=name,
    )


class W8a8Kernel(ActQuantGemmKernel):
    """`kernel(x=..., out=..., [act_scale=...], **packed)`: out[M, N] = quant(x) @ W^T (+ bias).

    x is fp16 or bf16 ([M, 2K] = [gate | up] with an input GLU, ActSpec.input_glu); it is
    quantized by the module's own quantizer entry into a fresh 8-bit
    buffer (torch's caching allocator: no synchronisation, graph-capturable), then multiplied."""

    def __init__(self, function: Any, spec: QuantSpec, config: W8a8Config) -> None:
        self.fmt = W8a8Format.from_spec(spec)
        self.x_columns = self.fmt.act.x_columns
        self.quantizer = ActQuantizer.from_module(
            self.fmt.act, function, function.symbol, config.pdl
        )
        super().__init__(function, config, signature(self.fmt, function.symbol), pdl=config.pdl)

    def _smem_bytes(self) -> int:
        return self.config.smem_bytes + self.config.stages * self.config.factor_bytes(self.fmt)

    def _quantize(
        self, x: torch.Tensor, act_scale: torch.Tensor | None
    ) -> tuple[dict[str, Any], QuantLaunch]:
        a, a_scales, launch = self.quantizer.checked(x, act_scale)
        return {"a": a, "a_scales": a_scales}, launch

    def prepare(self, **packed: torch.Tensor) -> W8a8Call:
        return W8a8Call(self, packed)

    def split_k_buffers(
        self, device: torch.device, grid_n: int, grid_m: int, split: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Shared fp32 workspace and zeroed tile counters big enough for this grid."""
        cfg = self.config
        return tile_workspace(device, grid_n * grid_m, split, cfg.block_m * cfg.block_n)

    def _split_k(
        self, k: int, tiles: int, device: torch.device
    ) -> tuple[int, dict[str, Any], dict[str, int]]:
        # every kernel takes IPS; the unsplit ones run all iterations
        cfg = self.config
        steps = -(-k // cfg.stage_k)
        return split_launch(steps, cfg.split_k, tiles, cfg.block_m * cfg.block_n, device)

    def _k_dims(self, k: int) -> dict[str, int]:
        dims = {"KB": -(-k // 128) if self.fmt.weight_scale == "block" else 0}
        if self.fmt.weight_bits == 4:
            dims.update(KW=slab_words(k), WG=-(-k // self.fmt.group))
        return dims
