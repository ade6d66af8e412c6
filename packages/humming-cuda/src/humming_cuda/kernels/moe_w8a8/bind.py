"""Bind a loaded MoE W8A8 module: quantize x per token (its own entries), then the gathered GEMM."""

from __future__ import annotations

from typing import Any

import torch

from humming_core.spec import QuantSpec

from ...args import ScalarArg, Signature, TensorArg
from ...launch import Launcher
from ..act_quant import CODE_DTYPES, ActQuantizer
from ..common_bind import OUT_DTYPES
from ..family import arch_has_pdl
from ..moe_bind import check_routing, flatten_topk_weights, launch_blocks
from ..w8a8.config import W8a8Format
from ..w8a8.nibbles import slab_words
from .config import MoeW8a8Config

# NP: packed columns per expert (the GLU order pads); WG: weight groups; KW: int32 words per row
_WS_SHAPE = {"tensor": ("E", 1), "channel": ("E", "NP"), "group": ("E", "WG", "NP")}
_SCALARS = (
    ("M", "M"),
    ("N", "NP"),
    ("n_out", "NOUT"),
    ("K", "K"),
    ("ldc", "LDC"),
    ("top_k", "TOPK"),
    ("numel", "NUMEL"),
    ("num_ids", "LEN"),
    ("num_experts", "E"),
)


def signature(fmt: W8a8Format, name: str) -> Signature:
    """Parameters in the order of HUMMING_MOE_W8A8_ENTRY (include/humming/kernel/moe_w8a8.cuh)."""
    i32 = torch.int32
    if fmt.weight_bits == 4:
        qweight = TensorArg("qweight", i32, ("E", "NP", "KW"))
    else:
        qweight = TensorArg("qweight", CODE_DTYPES[fmt.weight], ("E", "NP", "K"))
    out = OUT_DTYPES[fmt.out]
    return Signature(
        TensorArg("a", CODE_DTYPES[fmt.code], ("M", "K")),
        TensorArg("a_scales", torch.float32, (1, "M"), align=4),
        qweight,
        TensorArg("weight_scale", torch.float32, _WS_SHAPE[fmt.weight_scale], align=4),
        TensorArg("zeros", torch.uint8, ("E", "WG", "NP"), optional=not fmt.zero, align=1),
        TensorArg("bias", torch.float32, ("E", "NP"), optional=not fmt.bias, align=4),
        TensorArg("topk_weights", torch.float32, ("NUMEL",), optional=True, align=4),
        TensorArg("sorted_token_ids", i32, ("LEN",), align=4),
        TensorArg("expert_ids", i32, ("BLOCKS",), align=4),
        TensorArg("num_tokens_post_padded", i32, (1,), align=4),
        TensorArg("out", out, ("NUMEL", "NOUT"), layout="strided", align=2 * out.itemsize),
        *(ScalarArg(n, "int32", dim=d) for n, d in _SCALARS),
        kernel=name,
    )


class MoeW8a8Kernel:
    """`kernel(x=, out=, sorted_token_ids=, expert_ids=, num_tokens_post_padded=, top_k=,
    block_size=, topk_weights=None, **packed)`: see humming_core.ops.moe.PreparedMoe.run.

    x (fp16 or bf16) [M, K] is quantized per token into fresh 8-bit codes (torch's caching
    allocator: no synchronisation, graph-capturable), then the kernel gathers row id // top_k of the
    codes and its scale for every routed id. `block_size` must be the config's block_m. Rows of
    `out` that no block routes are left as they are (PreparedMoe.run zeroes them when they are
    read)."""

    def __init__(self, function: Any, spec: QuantSpec, config: MoeW8a8Config) -> None:
        self.fmt = W8a8Format.from_spec(spec)
        self.glu = spec.epilogue.glu != "none"
        self.config = config
        self.name = function.symbol
        self.function = function
        self.quantizer = ActQuantizer.from_module(
            self.fmt.act, function, function.symbol, arch_has_pdl(config.arch)
        )
        self.signature = signature(self.fmt, self.name)
        self.launcher = Launcher(function, self.signature.ctypes)
        function.reserve_smem(config.smem_bytes)

    def _check_call(self, values: dict[str, Any]) -> None:
        x, out = values["x"], values["out"]
        check_routing(self.name, self.config.block_m, values)
        if x.dim() != 2 or out.dim() != 2 or out.stride(-1) != 1:
            raise ValueError(
                f"{self.name}: expected x [M, K] and out [M*top_k, n_out] with innermost stride 1, "
                f"got x {tuple(x.shape)} and out {tuple(out.shape)} strides {tuple(out.stride())}"
            )

    def _dims(self, x: torch.Tensor, out: torch.Tensor, qweight: torch.Tensor, top_k: int):
        packed_n, k, n_out = qweight.shape[1], x.shape[1], out.shape[1]
        if packed_n < (2 * n_out if self.glu else n_out):
            raise ValueError(
                f"{self.name}: packed weights hold {packed_n} columns but the call needs {n_out} "
                f"output columns{' (GLU: twice as many packed)' if self.glu else ''}: pack this "
                "layer with this family's layout"
            )
        dims = {"NOUT": n_out, "LDC": out.stride(0), "TOPK": top_k, "NUMEL": x.shape[0] * top_k}
        if self.fmt.weight_bits == 4:
            dims.update(KW=slab_words(k), WG=-(-k // self.fmt.group))
        return dims

    def __call__(self, **values: Any) -> None:
        values = dict(values)
        self._check_call(values)
        x, out, top_k = values.pop("x"), values["out"], values.pop("top_k")
        values.pop("block_size")
        flatten_topk_weights(values)
        dims = self._dims(x, out, values["qweight"], top_k)
        a, a_scales = self.quantizer(x, None)
        values.update(a=a, a_scales=a_scales)
        dims, params = self.signature.bind(values, dims, self.function.device_index)
        launch_blocks(self, out, dims["NP"], dims["LEN"], lambda: params, self.config.smem_bytes)
