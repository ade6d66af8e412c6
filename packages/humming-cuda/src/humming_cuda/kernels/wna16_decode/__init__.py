"""The WnA16 decode family: 16-bit activations x wna16's low-bit weights at M <= 8, computing out^T
with the weights as the MMA's A operand and group scales on fp32 partial sums
(include/humming/kernel/wna16_decode.cuh).

Specs: wna16's, except float zero points. Weights use the wna16 layout with the same identity, so a
layer packs once for this family and wna16. Written and compile-tested for every mma.sync arch
(2026-11-29, session 5); not yet run on a GPU: `hardware_verified = False`, so CudaDevice offers it
only with HUMMING_UNVERIFIED_KERNELS=1, and tests/test_wna16_decode_conformance.py is its hardware
check. Registered before wna16, which keeps decode until then.
"""

from __future__ import annotations

from humming_core.device import DeviceCaps
from humming_core.spec import QuantSpec

from ..family import ModuleFamily
from ..wna16.bind import Wna16Kernel
from ..wna16.config import KernelFormat
from ..wna16.layout import Wna16Layout
from .config import Wna16DecodeConfig
from .heuristics import candidates, supports
from .render import render


class Wna16DecodeFamily(ModuleFamily):
    """`KernelFamily` implementation (see humming_cuda.kernels.base)."""

    # Compile-tested only (session 5); its conformance test has not run on a GPU yet.
    hardware_verified = False

    name = "wna16_decode"
    config_type = Wna16DecodeConfig
    kernel_type = Wna16Kernel  # same parameters, grid, split-K workspace and prepared call
    supports = staticmethod(supports)
    candidates = staticmethod(candidates)
    render = staticmethod(render)

    def weight_layout(
        self, spec: QuantSpec, config: Wna16DecodeConfig, caps: DeviceCaps
    ) -> Wna16Layout:
        return Wna16Layout(KernelFormat.from_spec(spec))


FAMILY = Wna16DecodeFamily()

__all__ = ["FAMILY", "Wna16DecodeConfig", "Wna16DecodeFamily"]
