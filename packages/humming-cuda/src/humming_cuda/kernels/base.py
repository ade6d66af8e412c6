"""The contract between CudaDevice and the kernel families that do the spec-specific work.

CudaDevice knows no quantization format. For every step that depends on the spec (does a kernel
exist, which configs to try, how weights are laid out, what source to render, how the loaded
function is called) it asks a `KernelFamily`. Families are listed in `humming_cuda.kernels.FAMILIES`,
first match wins.

A family's configs are frozen pydantic models deriving from `KernelConfig`; their `family` field
names the family, so a config alone (e.g. read back from a tuning database) finds its family again.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    import torch

    from humming_core.device import DeviceCaps, GemmProblem, Kernel, KernelSource, Support
    from humming_core.packing.canonical import CanonicalWeight
    from humming_core.spec import QuantSpec

    from ..loader import LoadedFunction


class KernelConfig(BaseModel):
    """How one kernel does its work (tile shapes, stages, ...). Subclasses set `family`'s default.

    Example: `class WnA16Config(KernelConfig): family: Literal["wna16"] = "wna16"; block_n: int`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    family: str

    def with_fields(self, **fields) -> KernelConfig:
        """A copy with `fields` changed, validated as a hand-made config is: pydantic's
        `model_copy(update=...)` skips the validators, so a heuristic could build a tile the
        kernel refuses (or was never built for) without an error here."""
        return type(self).model_validate({**self.model_dump(), **fields})


@runtime_checkable
class WeightLayout(Protocol):
    """How a family stores a layer's weights for one config.

    `identity` is equality-comparable (and hashable): two configs whose layouts have equal
    identities can share one packed copy of the weights, so a layer that switches configs per M
    bucket packs its weights once.
    """

    @property
    def identity(self) -> Hashable: ...

    def pack(self, cw: CanonicalWeight, device: torch.device | str) -> dict[str, torch.Tensor]:
        """Repack canonical weights into this layout: tensor name -> tensor, on `device`."""
        ...


@runtime_checkable
class KernelFamily(Protocol):
    """One family of kernels (e.g. WnA16: 16-bit activations × n-bit weights).

    - `supports` answers without compiling anything; its reason says what is missing and what the
      family does support.
    - `candidates` returns configs best first (the first one is the heuristic's choice).
    - `unverified_reason(spec)` (optional; ModuleFamily derives it from `hardware_verified`): why
      running `spec` has not been verified on hardware yet, '' when it has. CudaDevice skips such
      a family unless HUMMING_UNVERIFIED_KERNELS=1.
    - `prefers` (optional; ModuleFamily says yes) answers whether, among families that support a
      problem, this one should win it: a later family that also supports it and prefers it is
      chosen instead. It is a speed choice only, so a family never refuses work it could do.
    - `render` returns a small translation unit: includes of the family's headers plus one
      instantiation; `KernelSource.name` is the entry symbol (a C name, or a C++ name expression
      such as `ns::kernel<4, 128>` that the compiler resolves to its mangled name).
    - `bind` wraps a loaded function into a `Kernel` called as `kernel(x=..., out=..., **weights)`;
      the kernel checks its arguments (humming_cuda.args) and then launches on torch's current
      stream (humming_cuda.launch).
    """

    name: str
    config_type: type[KernelConfig]

    def supports(self, spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> Support: ...

    def candidates(
        self, spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps
    ) -> list[KernelConfig]: ...

    def weight_layout(
        self, spec: QuantSpec, config: KernelConfig, caps: DeviceCaps
    ) -> WeightLayout: ...

    def render(self, spec: QuantSpec, config: KernelConfig, caps: DeviceCaps) -> KernelSource: ...

    def bind(
        self, function: LoadedFunction, spec: QuantSpec, config: KernelConfig, caps: DeviceCaps
    ) -> Kernel: ...
