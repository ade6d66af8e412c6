"""`PpuEmulationDevice`: the PPU data paths on an NVIDIA GPU, to check them numerically.

A CudaDevice whose kernels (families.py: WnA16 for 16-bit activations, W8A8 / W4A8 for int8
ones) are rendered with dialect="ppu_emulation": the PPU weight layout (rows permuted within every
8, layout.py), N=16 accumulator fragments in the PPU's N-before-M order, each N=16 MMA (fp16 /
bf16 or int8) issued as two sm80 N=8 MMAs, and no evict-first hint. What it cannot check is the
PPU's own instructions (ppu.mma, ppu.ldmatrix) and its compiler. Only the families the PPU devices
offer run, and only for specs the PPU itself accepts (dialect.check).
"""

from __future__ import annotations

import dataclasses

from humming_core.device import GemmProblem, KernelSource, Support
from humming_core.spec import QuantSpec
from humming_cuda.device import CudaDevice
from humming_cuda.kernels import KernelConfig, WeightLayout

from . import dialect
from .families import family_for, family_named, ppu_layout


class PpuEmulationDevice(CudaDevice):
    name = "ppu-emulation"

    def check(self, spec: QuantSpec, problem: GemmProblem) -> Support:
        support = dialect.check(spec, problem)
        if not support:
            return support
        family = family_for(spec)
        support = family.supports(spec, problem, self.caps())
        if not support:
            return Support.no(f"{family.name} (ppu emulation): {support.reason}")
        return support

    def candidates(self, spec: QuantSpec, problem: GemmProblem) -> list[KernelConfig]:
        support = self.check(spec, problem)
        if not support:
            raise ValueError(f"no ppu-emulation kernel for this spec: {support.reason}")
        return family_for(spec).candidates(spec, problem, self.caps())

    def weight_layout(self, spec: QuantSpec, config: KernelConfig) -> WeightLayout:
        return ppu_layout(spec, config, self.caps())

    def render(self, spec: QuantSpec, config: KernelConfig) -> KernelSource:
        # CudaDevice.render adds the header roots and the family/spec/config binding that load()
        # reads; only the code differs, so render the emulation source and keep the rest.
        base = super().render(spec, config)
        family = family_named(config.family)
        source = family.render(spec, config, self.caps(), dialect="ppu_emulation")
        return dataclasses.replace(
            base, name=source.name, code=source.code, meta={**base.meta, **source.meta}
        )

    def __repr__(self) -> str:
        return f"PpuEmulationDevice({super().__repr__()})"
