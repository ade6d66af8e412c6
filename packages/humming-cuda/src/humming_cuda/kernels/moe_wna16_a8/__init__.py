"""The MoE W4A8 family on the WnA16 MoE kernels: specs with 8-bit per-token activations and 4-bit
weights with power-of-two scales (MXFP4, MXINT4 x e4m3 or int8) run as exact bf16 codes through
moe_wna16 (its decode form at few rows per expert) or moe_wna16_wgmma, the token's scale applied
to its rows before the epilogue (include/humming/kernel/moe_wna16.cuh, MoeRowScaled). MXFP4 x e4m3
on sm_90a from 4 rows per expert (heuristics.e4m3_block) takes moe_wna16_wgmma's e4m3 form instead
(fp8 wgmma on the e4m3 codes, written by the quantizer in the kernel's interleaved order; the group
scales folded into the e4m3 weight operands against each row's largest scale, packed as `row_exp`
by MoeWna16A8Layout:
include/humming/kernel/moe_wna16_wgmma_e4m3.cuh). H200, session 20: 1.36-1.43x the bf16-code
kernel at M = 512 / 2048 / 8192 of the MoE bench's layer, conformance and racecheck passed. Since
session 21 it also runs from 8 rows per expert in 16-row blocks on two CTAs per SM (M = 128 of the
bench's layer: 143.8 against 188.5 us on the decode kernel, same run), since session 37 from 4
(M = 64: 141.0 against 153.4 us, H100). Why: the
mma.sync moe_w8a8 kernels run these layers at 0.13-0.41x the published humming-kernels' speed
(benchmarks/notes/session13.md), while the WnA16 MoE kernels run MXFP4 with bf16 activations at
0.59-1.17x.

Verified on the H200 on 2026-11-30 (session 14): tests/test_moe_wna16_a8_conformance.py passes (18
cases: both inner kernels, int8 and e4m3 codes, GLU epilogues, router weights, expert maps) and
compute-sanitizer racecheck is clean on scripts/sanitize_moe.py's two MXFP4_A8 cases.
"""

from __future__ import annotations

from humming_core.device import DeviceCaps
from humming_core.spec import QuantSpec

from ..family import ModuleFamily
from ..moe_wna16.layout import moe_layout
from .bind import MoeWna16A8Kernel
from .config import MoeWna16A8Config
from .heuristics import candidates, codes_spec, e4m3_reason, supports
from .layout import MoeWna16A8Layout
from .render import render


class MoeWna16A8Family(ModuleFamily):
    """`KernelFamily` implementation (see humming_cuda.kernels.base)."""

    hardware_verified = True
    name = "moe_wna16_a8"
    config_type = MoeWna16A8Config
    kernel_type = MoeWna16A8Kernel
    supports = staticmethod(supports)
    candidates = staticmethod(candidates)
    render = staticmethod(render)

    def weight_layout(
        self, spec: QuantSpec, config: MoeWna16A8Config, caps: DeviceCaps
    ) -> MoeWna16A8Layout:
        # the WnA16 MoE layout of the codes spec, whichever inner kernel a bucket runs, with the
        # e4m3 kernel's row exponents wherever the spec could run it (one layout per layer)
        return MoeWna16A8Layout(moe_layout(codes_spec(spec)), not e4m3_reason(spec))


FAMILY = MoeWna16A8Family()

__all__ = ["FAMILY", "MoeWna16A8Config", "MoeWna16A8Family", "MoeWna16A8Kernel"]
