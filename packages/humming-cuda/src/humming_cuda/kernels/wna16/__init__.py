"""The WnA16 family: 16-bit activations x any supported low-bit weight, dense GEMM (mma.sync)."""

from __future__ import annotations

from humming_core.device import DeviceCaps
from humming_core.spec import QuantSpec

from ..family import ModuleFamily
from .bind import Wna16Kernel
from .config import KernelFormat, Wna16Config
from .heuristics import candidates, supports
from .layout import Wna16Layout
from .render import DIALECTS, render


class Wna16Family(ModuleFamily):
    """`KernelFamily` implementation (see humming_cuda.kernels.base)."""

    name = "wna16"
    config_type = Wna16Config
    kernel_type = Wna16Kernel
    supports = staticmethod(supports)
    candidates = staticmethod(candidates)
    render = staticmethod(render)

    def weight_layout(self, spec: QuantSpec, config: Wna16Config, caps: DeviceCaps) -> Wna16Layout:
        return Wna16Layout(KernelFormat.from_spec(spec))


FAMILY = Wna16Family()

__all__ = ["DIALECTS", "FAMILY", "Wna16Config", "Wna16Family", "Wna16Kernel", "Wna16Layout"]
