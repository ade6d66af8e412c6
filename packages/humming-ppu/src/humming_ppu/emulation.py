"""`PpuEmulationDevice`: the PPU data paths on an NVIDIA GPU, to check them numerically.

A CudaDevice whose WnA16 kernels are rendered with dialect="ppu_emulation": the PPU weight layout
(rows permuted within every 8, layout.py), N=16 accumulator fragments in the PPU's N-before-M
order, each N=16 MMA issued as two sm80 N=8 MMAs, and no evict-first hint. What it cannot check
is the PPU's own instructions (ppu.mma, ppu.ldmatrix) and its compiler. Only the WnA16 family is
offered, and only for specs the PPU itself accepts (dialect.check).
"""

from __future__ import annotations

import dataclasses

from humming_core.device import GemmProblem, KernelSource, Support
from humming_core.spec import QuantSpec
from humming_cuda.device import CudaDevice
from humming_cuda.kernels.wna16 import FAMILY, Wna16Config

from . import dialect
from .layout import PpuWna16Layout


class PpuEmulationDevice(CudaDevice):
    name = "ppu-emulation"

    def check(self, spec: QuantSpec, problem: GemmProblem) -> Support:
        support = dialect.check(spec, problem)
        if not support:
            return support
        support = FAMILY.supports(spec, problem, self.caps())
        if not support:
            return Support.no(f"{FAMILY.name} (ppu emulation): {support.reason}")
        return support

    def candidates(self, spec: QuantSpec, problem: GemmProblem) -> list[Wna16Config]:
        support = self.check(spec, problem)
        if not support:
            raise ValueError(f"no ppu-emulation kernel for this spec: {support.reason}")
        return FAMILY.candidates(spec, problem, self.caps())

    def weight_layout(self, spec: QuantSpec, config: Wna16Config) -> PpuWna16Layout:
        return PpuWna16Layout(FAMILY.weight_layout(spec, config, self.caps()))

    def render(self, spec: QuantSpec, config: Wna16Config) -> KernelSource:
        # CudaDevice.render adds the header roots and the family/spec/config binding that load()
        # reads; only the code differs, so render the emulation source and keep the rest.
        base = super().render(spec, config)
        source = FAMILY.render(spec, config, self.caps(), dialect="ppu_emulation")
        return dataclasses.replace(
            base, name=source.name, code=source.code, meta={**base.meta, **source.meta}
        )

    def __repr__(self) -> str:
        return f"PpuEmulationDevice({super().__repr__()})"
