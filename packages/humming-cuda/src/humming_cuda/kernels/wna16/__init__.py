"""The WnA16 family: 16-bit activations x any supported low-bit weight, dense GEMM (mma.sync)."""

from __future__ import annotations

from humming_core.device import DeviceCaps, GemmProblem, KernelSource, Support
from humming_core.spec import QuantSpec

from .bind import Wna16Kernel
from .config import KernelFormat, Wna16Config
from .heuristics import candidates, supports
from .layout import Wna16Layout
from .render import DIALECTS, render


class Wna16Family:
    """`KernelFamily` implementation (see humming_cuda.kernels.base)."""

    name = "wna16"
    config_type = Wna16Config

    def supports(self, spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> Support:
        return supports(spec, problem, caps)

    def candidates(
        self, spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps
    ) -> list[Wna16Config]:
        return candidates(spec, problem, caps)

    def weight_layout(self, spec: QuantSpec, config: Wna16Config, caps: DeviceCaps) -> Wna16Layout:
        return Wna16Layout(KernelFormat.from_spec(spec))

    def render(
        self, spec: QuantSpec, config: Wna16Config, caps: DeviceCaps, dialect: str = "nvidia"
    ) -> KernelSource:
        return render(spec, config, caps, dialect)

    def bind(self, function, spec: QuantSpec, config: Wna16Config, caps: DeviceCaps) -> Wna16Kernel:
        return Wna16Kernel(function, spec, config)


FAMILY = Wna16Family()

__all__ = ["DIALECTS", "FAMILY", "Wna16Config", "Wna16Family", "Wna16Kernel", "Wna16Layout"]
