"""Bind a loaded W4A8-wgmma module: quantize x (the module's own entries), encode the tensor maps
of the activations and of the packed weight slabs (cached per pointer), launch one CTA of 384
threads per tile of out (the config's tokens x 128 columns) and K split (grid z), with the shared split-K workspace when the
config splits (W8a8WgmmaKernel's launch)."""

from __future__ import annotations

import torch

from ...args import ScalarArg, Signature, TensorArg
from ..common_bind import out_arg
from ..w8a8.config import W8a8Format
from ..w8a8.nibbles import slab_words
from ..w8a8_wgmma.bind import W8a8WgmmaKernel


def signature(fmt: W8a8Format, name: str) -> Signature:
    """The checked arguments. `a` and `qweight` are checked here but reach the kernel as the
    tensor maps that replace them (HUMMING_W4A8_WGMMA_ENTRY's first two parameters); the split-K
    arguments (resident included) are W8A8-wgmma's."""
    return Signature(
        TensorArg("a", torch.float8_e4m3fn, ("M", "K")),
        TensorArg("qweight", torch.int32, ("N", "KW")),
        TensorArg("a_scales", torch.float32, ("G", "M"), align=4),
        TensorArg("weight_scale", torch.float32, ("WG", "N"), align=4),
        TensorArg("bias", torch.float32, ("N",), optional=not fmt.bias, align=4),
        out_arg(fmt.out),
        *(ScalarArg(n, "int32", dim=n) for n in ("M", "N", "K")),
        ScalarArg("ldc", "int32", dim="LDC"),
        TensorArg("workspace", torch.float32, ("WS",), optional=True, align=4),
        TensorArg("counters", torch.int32, ("CT",), optional=True, align=4),
        ScalarArg("iters_per_split", "int32", dim="IPS"),
        ScalarArg("resident", "int32", dim="RES"),
        kernel=name,
    )


class W4a8WgmmaKernel(W8a8WgmmaKernel):
    """`kernel(x=..., out=..., [act_scale=...], **packed)`: out[M, N] = quant(x) @ W^T (+ bias).

    x is fp16 or bf16 [M, K]; `packed` is the w8a8 layout's W4A8 qweight / weight_scale / bias.
    The call is W8A8-wgmma's with the packed slabs' tensor map and the W4A8 shapes."""

    signature_of = staticmethod(signature)
    PACKED = True

    def k_dims(self, k: int) -> dict[str, int]:
        return {"KW": slab_words(k), "WG": -(-k // self.fmt.group)}

    def a_box_rows(self, m: int) -> int:
        """The tile's tokens: both of the W4A8 kernel's consumer warpgroups read all of them."""
        return self.config.rs_block_m
