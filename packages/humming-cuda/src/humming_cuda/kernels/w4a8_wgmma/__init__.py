"""The W4A8-wgmma family: e4m3 activations (quantized on the GPU) x 4-bit weights (int4, E2M1)
on sm_90a above decode size, with wgmma, TMA and in-kernel expansion of the 4-bit codes to e4m3
(include/humming/kernel/w4a8_wgmma.cuh).

Specs: W4A8_FP8 and the other int4 / E2M1 x e4m3 formats with per-token or static activation
scales and group weight scales whose groups are multiples of 128 K (MXFP4's 32 stays with the
mma.sync w8a8 family); bf16 / fp16 / fp32 output, bias. M > 16 only (32- and 64-token tiles up to
M = 64, K split on small grids; from session 23 it beats the mma.sync W4A8 kernels at every such
M). Weights use the w8a8 layout's W4A8 form (humming_cuda.kernels.w8a8.nibbles), so a layer that switches family per M bucket packs
its weights once.

Verified on an H200 (tests/test_w4a8_wgmma_conformance.py, 2026-11-29): CudaDevice offers it by
default and routes W4A8 above decode size here.
"""

from __future__ import annotations

from humming_core.device import DeviceCaps
from humming_core.spec import QuantSpec

from ..family import ModuleFamily
from ..w8a8.config import W8a8Format
from ..w8a8.layout import W8a8Layout
from .bind import W4a8WgmmaKernel
from .config import W4a8WgmmaConfig
from .heuristics import candidates, supports
from .render import render


class W4a8WgmmaFamily(ModuleFamily):
    """`KernelFamily` implementation (see humming_cuda.kernels.base)."""

    # tests/test_w4a8_wgmma_conformance.py passed on an H200 on 2026-11-29 (session 5).
    hardware_verified = True

    name = "w4a8_wgmma"
    config_type = W4a8WgmmaConfig
    kernel_type = W4a8WgmmaKernel
    supports = staticmethod(supports)
    candidates = staticmethod(candidates)
    render = staticmethod(render)

    def weight_layout(
        self, spec: QuantSpec, config: W4a8WgmmaConfig, caps: DeviceCaps
    ) -> W8a8Layout:
        return W8a8Layout(W8a8Format.from_spec(spec))


FAMILY = W4a8WgmmaFamily()

__all__ = ["FAMILY", "W4a8WgmmaConfig", "W4a8WgmmaFamily", "W4a8WgmmaKernel"]
