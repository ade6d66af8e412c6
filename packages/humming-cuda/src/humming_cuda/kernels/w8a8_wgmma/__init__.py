"""The W8A8-wgmma family: e4m3 activations (quantized on the GPU) x e4m3 weights on sm_90a above
decode size, with wgmma, TMA tensor maps and a warp-specialized mbarrier pipeline
(include/humming/kernel/w8a8_wgmma.cuh).

Specs: W8A8_FP8 (per-token activation scales, per-channel weight scales), FP8_BLOCK128 (1x128
activation groups, 128x128 weight blocks, promoted per 128 K in fp32 registers), and the other
e4m3 x e4m3 combinations of per-tensor / per-channel / block weight scales with per-token, static
or group-128 activation scales; bf16 / fp16 / fp32 output, bias. Grids of fewer 128x128 tiles
than SMs split K across CTAs (config.split_k); larger ones run persistent CTAs, one per SM
(config.persistent); at M <= 64 on grids that fill the SMs unsplit, a
64-row tile runs two CTAs per SM (config.tile_rows). M > 16 only (heuristics.MIN_M):
decode-size M is the mma.sync w8a8 family's. Weights use the w8a8 layout ([N, K] e4m3 row-major, what TMA reads), so
a layer that switches family per M bucket packs its weights once.

Verified on an H200 (tests/test_w8a8_wgmma_conformance.py, 2026-11-29; split-K, the skipped
all-padding warpgroup and the 64-row activation boxes on 2026-11-30: 101 cases with w4a8_wgmma;
the 64-row tile on 2026-12-04, session 23: 90 tests with it first at M <= 64, racecheck clean;
persistent CTAs, the issue turns and the epilogue's early loads on 2026-12-04, session 25:
173 tests with w4a8_wgmma, the persistent form on the resident grid, 3 CTAs and 1).
"""

from __future__ import annotations

from humming_core.device import DeviceCaps
from humming_core.spec import QuantSpec

from ..family import ModuleFamily
from ..w8a8.config import W8a8Format
from ..w8a8.layout import W8a8Layout
from .bind import W8a8WgmmaKernel
from .config import W8a8WgmmaConfig
from .heuristics import candidates, supports
from .render import render


class W8a8WgmmaFamily(ModuleFamily):
    """`KernelFamily` implementation (see humming_cuda.kernels.base)."""

    # tests/test_w8a8_wgmma_conformance.py passed on an H200 on 2026-11-29.
    hardware_verified = True

    name = "w8a8_wgmma"
    config_type = W8a8WgmmaConfig
    kernel_type = W8a8WgmmaKernel
    supports = staticmethod(supports)
    candidates = staticmethod(candidates)
    render = staticmethod(render)

    def weight_layout(
        self, spec: QuantSpec, config: W8a8WgmmaConfig, caps: DeviceCaps
    ) -> W8a8Layout:
        return W8a8Layout(W8a8Format.from_spec(spec))


FAMILY = W8a8WgmmaFamily()

__all__ = ["FAMILY", "W8a8WgmmaConfig", "W8a8WgmmaFamily", "W8a8WgmmaKernel"]
