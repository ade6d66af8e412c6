"""The W8A8 family: 8-bit activations (quantized on the GPU) x 8- or 4-bit weights, dense GEMM
(mma.sync on the 8-bit tensor cores).

W8A8: int8 x int8 (sm80+) and fp8 E4M3 x E4M3 (sm89+) with per-tensor / per-channel / 128x128 block
weight scales (W8A8_INT8, W8A8_FP8, FP8_BLOCK128).
W4A8: int4, and uint4 with integer zero points, x int8 (sm80+, W4A8_INT8); int4 and E2M1 x E4M3
(sm89+, W4A8_FP8, MXFP4_A8). Weights stay 4-bit packed (half the bytes of W8A8, layout in
`nibbles`) and become exact 8-bit operands in registers; group scales (fp32/fp16/bf16/e8m0, groups
of 32, 64 or multiples of 128) apply when partial sums are promoted into fp32.
Activations: per-token / per-group-128 / static per-tensor scales. wgmma for large M on sm90a is
later work.
"""

from __future__ import annotations

from humming_core.device import DeviceCaps
from humming_core.spec import QuantSpec

from ..family import ModuleFamily
from .bind import W8a8Kernel
from .config import W8a8Config, W8a8Format
from .heuristics import candidates, supports
from .layout import W8a8Layout
from .render import render


class W8a8Family(ModuleFamily):
    """`KernelFamily` implementation (see humming_cuda.kernels.base)."""

    # Its cuda conformance and bit-exactness tests (W8A8 int8/fp8, block128, W4A8, act quant)
    # passed on the H200 (sm_90a) on 2026-11-29.
    hardware_verified = True

    name = "w8a8"
    config_type = W8a8Config
    kernel_type = W8a8Kernel
    supports = staticmethod(supports)
    candidates = staticmethod(candidates)
    render = staticmethod(render)

    def weight_layout(self, spec: QuantSpec, config: W8a8Config, caps: DeviceCaps) -> W8a8Layout:
        return W8a8Layout(W8a8Format.from_spec(spec))


FAMILY = W8a8Family()

__all__ = ["FAMILY", "W8a8Config", "W8a8Family", "W8a8Kernel", "W8a8Layout"]
