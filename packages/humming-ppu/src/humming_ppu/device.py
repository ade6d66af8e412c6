"""`PpuDevice`: humming-cuda's WnA16 and W8A8 families rendered in the PPU dialect, built with
the SDK.

Every step is a humming-cuda family with PPU inputs (families.py: WnA16 for 16-bit activations,
W8A8 / W4A8 for int8 ones): the caps row of the detected model, the family's `supports` behind the
dialect's own `check`, candidates tuned for the PPU's SM count, the family's layout with the PPU
row permutation (layout.py), and `render(..., dialect="ppu")`. Compiling runs the SDK compiler in
a subprocess (toolchain.py). Nothing here has run on a PPU, so the families are offered only with
HUMMING_UNVERIFIED_KERNELS=1, as humming-cuda does for families not yet verified on hardware.
"""

from __future__ import annotations

import dataclasses

from humming_core.device import (
    Artifact,
    DeviceCaps,
    DeviceNotAvailable,
    GemmProblem,
    Kernel,
    KernelSource,
    Support,
)
from humming_core.env import ENV
from humming_core.spec import QuantSpec
from humming_cuda.headers import humming_include_root
from humming_cuda.kernels import KernelConfig, WeightLayout

from . import dialect
from .caps import PpuModel
from .families import family_for, family_named, ppu_layout
from .toolchain import PpuToolchain

# SMs assumed where a row has no count (M890): the 810E's 20, not humming-cuda's H200 default of
# 132, which would make split-K cut the K loop six times too finely for a PPU.
DEFAULT_PPU_SMS = 20


def tuning_caps(caps: DeviceCaps) -> DeviceCaps:
    """The caps row the family's heuristics see: the PPU's SM count, or DEFAULT_PPU_SMS."""
    return caps if caps.sm_count else caps.model_copy(update={"sm_count": DEFAULT_PPU_SMS})


class PpuDevice:
    """`humming_core.device.Device` for one PPU model. `on_ppu` is True only when the plugin found
    a PPU through torch; otherwise the device renders and compiles but refuses to load."""

    name = "ppu"

    def __init__(
        self, model: PpuModel, toolchain: PpuToolchain | None = None, on_ppu: bool = False
    ) -> None:
        self.model = model
        self.on_ppu = on_ppu
        self._toolchain = toolchain

    @property
    def torch_device(self):
        """Where core packs weights: the vendor's torch exposes the PPU as a `cuda` device."""
        import torch

        return torch.device("cuda", torch.cuda.current_device())

    @property
    def toolchain(self) -> PpuToolchain:
        """The SDK compiler, located on first use (so check/render work without an SDK)."""
        if self._toolchain is None:
            self._toolchain = PpuToolchain.locate()
        return self._toolchain

    def caps(self, index: int = 0) -> DeviceCaps:
        return self.model.caps

    def fingerprint(self) -> str:
        return self.toolchain.fingerprint()

    def check(self, spec: QuantSpec, problem: GemmProblem) -> Support:
        support = dialect.check(spec, problem)
        if not support:
            return support
        family = family_for(spec)
        if not ENV.HUMMING_UNVERIFIED_KERNELS:
            return Support.no(
                f"{family.name} in the ppu dialect has never run on a PPU (compiled and emulated "
                "on NVIDIA only): set HUMMING_UNVERIFIED_KERNELS=1 to use it anyway"
            )
        support = family.supports(spec, problem, self.caps())
        if not support:
            return Support.no(f"{family.name} on {self.model.key}: {support.reason}")
        return support

    def candidates(self, spec: QuantSpec, problem: GemmProblem) -> list[KernelConfig]:
        support = self.check(spec, problem)
        if not support:
            raise ValueError(f"no ppu kernel for this spec: {support.reason}")
        return family_for(spec).candidates(spec, problem, tuning_caps(self.caps()))

    def weight_layout(self, spec: QuantSpec, config: KernelConfig) -> WeightLayout:
        return ppu_layout(spec, config, self.caps())

    def render(self, spec: QuantSpec, config: KernelConfig) -> KernelSource:
        family = family_named(config.family)
        source = family.render(spec, config, self.caps(), dialect="ppu")
        binding = {
            "family": family.name,
            "spec": spec.model_dump(mode="json"),
            "config": config.model_dump(mode="json"),
        }
        headers = tuple(dict.fromkeys((str(humming_include_root()), *map(str, source.headers))))
        meta = {**source.meta, "binding": binding}
        return dataclasses.replace(source, headers=headers, meta=meta)

    def compile(self, source: KernelSource) -> Artifact:
        artifact = self.toolchain.compile(source)
        meta = {**artifact.meta, "source": dict(source.meta)}
        return dataclasses.replace(artifact, meta=meta)

    def load(self, artifact: Artifact) -> Kernel:
        if not self.on_ppu:
            raise DeviceNotAvailable(
                f"cannot load PPU kernel {artifact.name!r}: no PPU runtime here (torch's CUDA device "
                "0 is not a PPU). Render and compile work anywhere with the SDK; run on a PPU, or "
                "use HUMMING_DEVICE=reference"
            )
        return self._load_on_ppu(artifact)

    def _load_on_ppu(self, artifact: Artifact) -> Kernel:
        # The vendor's runtime is CUDA-compatible, so the driver-API loader and the family's
        # binding are humming-cuda's. Unverified: no PPU has run this.
        from humming_cuda import loader

        binding = artifact.meta.get("source", {}).get("binding")
        if binding is None:
            raise ValueError(
                f"artifact {artifact.name!r} carries no family/spec/config binding: build it with "
                "PpuDevice.render and PpuDevice.compile"
            )
        family = family_named(binding["family"])
        spec = QuantSpec.model_validate(binding["spec"])
        config = family.config_type.model_validate(binding["config"])
        return family.bind(loader.load(artifact), spec, config, self.caps())

    def __repr__(self) -> str:
        return f"PpuDevice({self.model.key}, on_ppu={self.on_ppu})"
