"""The WnA16-wgmma family: fp16 / bf16 activations x 1- to 8-bit integer weights on sm_90a at
large M, with wgmma, a TMA ring for the activations and in-kernel dequantization into the swizzled
wgmma B tile (include/humming/kernel/wna16_wgmma.cuh).

Specs: every integer spec of the wna16 family (int1-8 symmetric, uint1-8 with or without integer
or float zero points; group, channel or tensor scales of any dtype the wna16 layout takes; global
scale; fp16 / bf16 / fp32 output, bias). M >= 17 (>= 9 for 8-bit codes): a cost model
(heuristics.best_plan) picks the register-A form's token tile (16 / 32 / 64 / 128 rows), K split
and CTAs per SM, or the shared-memory form; smaller M is the mma.sync families'.
Weights use the wna16 layout (humming_cuda.kernels.wna16.layout) with the same identity, so a
layer that switches family per M bucket packs its weights once.

Verified on an H200 (tests/test_wna16_wgmma_conformance.py, 2026-11-29), integer codes and the
float codes of wna16's float dequantizer (MXFP4, E4M3, NVFP4, E5M2) alike; the narrow tiles and
split-K on 2026-11-30, two CTAs per SM on 2026-11-30 (session 15). CudaDevice picks it over wna16 from heuristics.min_m on (`prefers`).
"""

from __future__ import annotations

from humming_core.device import DeviceCaps
from humming_core.spec import QuantSpec

from ..family import ModuleFamily
from ..wna16.config import KernelFormat
from ..wna16.layout import Wna16Layout
from .bind import WgmmaWna16Kernel
from .config import WgmmaWna16Config
from .heuristics import candidates, prefers, supports
from .render import render


class WgmmaWna16Family(ModuleFamily):
    """`KernelFamily` implementation (see humming_cuda.kernels.base)."""

    # tests/test_wna16_wgmma_conformance.py passed on an H200 on 2026-11-29: integer codes in
    # session 4, float codes (test_float_codes_match_reference) in session 5.
    hardware_verified = True

    name = "wna16_wgmma"
    config_type = WgmmaWna16Config
    kernel_type = WgmmaWna16Kernel
    supports = staticmethod(supports)
    candidates = staticmethod(candidates)
    prefers = staticmethod(prefers)
    render = staticmethod(render)

    def weight_layout(
        self, spec: QuantSpec, config: WgmmaWna16Config, caps: DeviceCaps
    ) -> Wna16Layout:
        return Wna16Layout(KernelFormat.from_spec(spec))


FAMILY = WgmmaWna16Family()

__all__ = ["FAMILY", "WgmmaWna16Config", "WgmmaWna16Family", "WgmmaWna16Kernel"]
