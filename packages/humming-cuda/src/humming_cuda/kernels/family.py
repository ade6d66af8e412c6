"""`ModuleFamily`: a `KernelFamily` whose steps are the functions of its package's modules.

Every family package has the same shape (heuristics.supports / candidates, render.render, a kernel
class built as `Kernel(function, spec, config)`), so its family class only names them, e.g.

    class W8a8Family(ModuleFamily):
        name = "w8a8"
        config_type = W8a8Config
        kernel_type = W8a8Kernel
        supports = staticmethod(supports)  # the functions imported from .heuristics / .render
        candidates = staticmethod(candidates)
        render = staticmethod(render)

        def weight_layout(self, spec, config, caps): ...

`weight_layout` stays a method of each family: what a layout is built from differs per family.
Class attributes (not instance ones) so that tests can patch `hardware_verified` on the type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from humming_core.device import DeviceCaps, GemmProblem, Kernel
    from humming_core.spec import QuantSpec

    from ..loader import LoadedFunction
    from .base import KernelConfig


class ModuleFamily:
    """Base of the registered families (see humming_cuda.kernels.base.KernelFamily)."""

    # False for a family only compile-tested: CudaDevice offers it only with
    # HUMMING_UNVERIFIED_KERNELS=1 (see `unverified_reason`).
    hardware_verified: ClassVar[bool] = True
    # Called as kernel_type(function, spec, config) to bind a loaded function.
    kernel_type: ClassVar[type]

    def bind(
        self, function: LoadedFunction, spec: QuantSpec, config: KernelConfig, caps: DeviceCaps
    ) -> Kernel:
        return self.kernel_type(function, spec, config)

    def unverified_reason(self, spec: QuantSpec) -> str:
        """Why this family running `spec` has not been verified on hardware ('' when it has):
        the whole family unless `hardware_verified`; a family verified for part of its specs
        narrows it."""
        return "" if self.hardware_verified else "not yet verified on hardware"

    @staticmethod
    def prefers(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> bool:
        """Whether this family should take a problem it supports (see KernelFamily)."""
        return True


def check_config_arch(config: KernelConfig, caps: DeviceCaps) -> None:
    """A config chosen for one arch must not be rendered for another (its tile and pipeline were
    sized for that arch's shared memory and instructions)."""
    if config.arch != caps.arch:
        raise ValueError(
            f"config.arch={config.arch!r} but rendering for {caps.arch!r}: choose candidates for "
            "the target arch (config.arch must equal caps.arch)"
        )


def arch_has_pdl(arch: str) -> bool:
    """Whether kernels built for an NVIDIA `arch` may launch with programmatic dependent launch
    (sm_90+). Families offered on other devices (the PPU's w8a8 and wna16) take their configs'
    `pdl` field instead: their arch strings have no row here."""
    from ..caps import caps_for_arch

    return caps_for_arch(arch).has("pdl")


def check_pdl_arch(pdl: bool, arch: str) -> None:
    """A config that asks for programmatic dependent launch (field `pdl`) must target an arch that
    has it (sm_90+): the kernels wait for the previous grid with griddepcontrol.wait, which older
    arches lack (their builds compile the wait out)."""
    if pdl and not arch_has_pdl(arch):
        raise ValueError(f"pdl=True: {arch} has no programmatic dependent launch (sm_90+)")
