"""The MoE WnA16-wgmma family: the indexed MoE WnA16 GEMM of moe_wna16 (same call, same packed
weights, same epilogues) on sm_90a at large M, with wna16_wgmma's register-A kernel per routing
alignment block of 64, 96, 128 or 160 rows; x's rows are gathered by the producer warpgroup
(include/humming/kernel/moe_wna16_wgmma.cuh). Its e4m3 form (config `e4m3`, only moe_wna16_a8
asks for it) runs MXFP4 x e4m3 on fp8 wgmma (include/humming/kernel/moe_wna16_wgmma_e4m3.cuh).

Verified on the H200 on 2026-11-30 (session 12): tests/test_moe_wna16_wgmma_conformance.py passes,
compute-sanitizer memcheck and racecheck are clean on its E8k2 cases, and benchmarks/moe_family_ab.py
measured the thresholds in heuristics.py.
"""

from __future__ import annotations

from humming_core.device import DeviceCaps
from humming_core.spec import QuantSpec

from ..family import ModuleFamily
from ..moe_wna16.layout import MoeWna16Layout, moe_layout
from .bind import MoeWna16WgmmaKernel
from .config import MoeWna16WgmmaConfig
from .heuristics import candidates, prefers, supports
from .render import render


class MoeWna16WgmmaFamily(ModuleFamily):
    """`KernelFamily` implementation (see humming_cuda.kernels.base)."""

    name = "moe_wna16_wgmma"
    config_type = MoeWna16WgmmaConfig
    kernel_type = MoeWna16WgmmaKernel
    supports = staticmethod(supports)
    candidates = staticmethod(candidates)
    prefers = staticmethod(prefers)
    render = staticmethod(render)

    def weight_layout(
        self, spec: QuantSpec, config: MoeWna16WgmmaConfig, caps: DeviceCaps
    ) -> MoeWna16Layout:
        # moe_wna16's layout (same identity): a layer packs its weights once for both families
        return moe_layout(spec)


FAMILY = MoeWna16WgmmaFamily()

__all__ = ["FAMILY", "MoeWna16WgmmaConfig", "MoeWna16WgmmaFamily", "MoeWna16WgmmaKernel"]
