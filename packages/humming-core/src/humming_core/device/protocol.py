"""The device contract: what a device package provides, and the data that flows between the steps.

Core owns the order of the steps (see DESIGN.md): check -> candidates -> select -> render ->
cache.get_or_build(compile) -> load -> launch. A device never calls core's cache itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from ..spec import QuantSpec

API_VERSION = 1


class DeviceCaps(BaseModel):
    """What one hardware target can do; device packages keep one row per architecture."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    device: str  # plugin name: reference, cuda, ppu
    arch: str  # compiler target string: sm_90a, ppu_10, cpu
    name: str = ""  # marketing name when known (NVIDIA H200)
    sm_count: int = 0
    smem_per_block: int = 0  # bytes of shared memory one block may use
    l2_bytes: int = 0
    mem_bandwidth_gbs: float = 0.0
    mma: dict[
        str, list[str]
    ] = {}  # operand types -> instruction shapes ("mma.m16n8k16", "wgmma.m64nNk16")
    features: list[str] = []  # cp.async, tma, clusters, pdl, fp8, fp4, block_scaled_mma, ...
    verified: bool = True  # False where a row comes from public material only
    notes: str = ""

    def has(self, feature: str) -> bool:
        return feature in self.features


@dataclass(frozen=True)
class Support:
    """Whether a device can run a spec on a problem, and if not, why."""

    ok: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.ok

    @classmethod
    def yes(cls) -> Support:
        return cls(True)

    @classmethod
    def no(cls, reason: str) -> Support:
        return cls(False, reason)


@dataclass(frozen=True)
class GemmProblem:
    """Shapes of one GEMM: out[M, N] = x[M, K] @ W[N, K]^T (MoE: E experts, top-k routing).

    `m` is None for a layer whose batch is not known yet (configs are then chosen per M bucket).
    """

    n: int
    k: int
    m: int | None = None
    num_experts: int = 1
    topk: int = 1
    act_dtype: str = "fp16"  # dtype of the 16-bit tensor the caller passes (fp16 or bf16)


@dataclass(frozen=True)
class KernelSource:
    """A rendered translation unit: a few lines including shared headers plus one instantiation."""

    name: str  # entry symbol
    code: str
    arch: str
    headers: tuple[str, ...] = ()  # header include roots whose contents enter the cache key
    options: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)


@dataclass(frozen=True)
class Artifact:
    """Compiled bytes plus what the compiler said about them."""

    binary: bytes
    name: str
    meta: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)


@runtime_checkable
class Kernel(Protocol):
    """A loaded kernel; calling it launches on the caller's current stream.

    Dense GEMM kernels are called by core as
    `kernel(x=x, out=out, **packed)` where `packed` is what the device's weight layout
    returned from `pack()` (the bias, when the layer has one, is packed with the weights); MoE
    kernels also get `sorted_token_ids, expert_ids, num_tokens_post_padded, top_k, block_size,
    topk_weights`. Kernels write `out` in place and reject keywords they do not take. A MoE kernel
    writes only the rows its routing names (ids below M*top_k in blocks of an expert >= 0) and
    leaves the others as they are: `PreparedMoe.run` zeroes them first unless its caller never
    reads them (fused_moe: w13's unrouted rows; w2's are zeroed by moe_align's `zero_rows`, or
    by that fill with an expert map).

    Optional: `kernel.prepare(**packed) -> call`; it lets a kernel check the weights and build its
    launch arguments once per layer instead of on every call. For dense kernels
    `call(x, out, **extra)` equals `kernel(x=x, out=out, **extra, **packed)` (PreparedGemm uses
    it); for MoE kernels `call(**values)` with the keywords above equals
    `kernel(**values, **packed)` (PreparedMoe uses it). A MoE call with `overlaps_routing = True`
    also takes `routing_ready=True`, passed when the routing tensors were complete before the
    previous kernel in the stream began: it may then read them (and its weights) while that
    kernel finishes (CUDA: programmatic dependent launch).
    """

    name: str

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


@runtime_checkable
class Device(Protocol):
    """One accelerator (or the reference): the steps core runs in order, see the module docstring.

    Optional: a device that can align MoE routing on its own tensors also implements
    `SupportsMoeAlign.moe_align` (below); `humming_core.ops.moe_align` / `fused_moe` use it and
    fall back to the reference numerics (which read the counts back to the host) otherwise.
    """

    name: str

    def caps(self, index: int = 0) -> DeviceCaps: ...

    def fingerprint(self) -> str: ...

    def check(self, spec: QuantSpec, problem: GemmProblem) -> Support: ...

    def candidates(self, spec: QuantSpec, problem: GemmProblem) -> list[Any]: ...

    def weight_layout(self, spec: QuantSpec, config: Any) -> Any: ...

    def render(self, spec: QuantSpec, config: Any) -> KernelSource: ...

    def compile(self, source: KernelSource) -> Artifact: ...

    def load(self, artifact: Artifact) -> Kernel: ...


@runtime_checkable
class SupportsMoeAlign(Protocol):
    """The optional routing-alignment step of a Device (vLLM's `moe_align_block_size`).

    `moe_align(topk_ids, block_size, num_experts, expert_map=None, ignore_invalid_experts=False,
    pad_sorted_ids=False, zero_rows=None)` -> `(sorted_token_ids, expert_ids,
    num_tokens_post_padded)`, all int32 on `topk_ids`' device, exactly as
    `humming_core.numerics.moe.moe_align` defines them (its docstring is the contract, `zero_rows`
    included: it zeroes the rows of dropped entries, which fused_moe uses in place of a fill of its
    whole output; tokens may be permuted within an expert only if the device says so in its own
    docs). `num_experts` is the global expert count; `expert_map` maps every global expert to its
    local id or -1. It must not synchronise with the host (num_tokens_post_padded stays a device
    tensor) so that a fused MoE layer can be captured in a CUDA graph; it may compile on its first
    call, so callers warm it up before capture.
    """

    def moe_align(
        self,
        topk_ids: Any,
        block_size: int,
        num_experts: int,
        expert_map: Any = None,
        ignore_invalid_experts: bool = False,
        pad_sorted_ids: bool = False,
        zero_rows: Any = None,
    ) -> tuple[Any, Any, Any]: ...


@runtime_checkable
class PreparesMoeAlign(Protocol):
    """Optional beside `SupportsMoeAlign`: build the alignment op ahead of its first call.

    `prepare_moe_align(id_dtypes)` compiles and loads everything `moe_align` needs for topk_ids of
    each of these torch dtypes on the current device. `humming_core.ops.PreparedMoe` calls it when a
    layer is built, so that the layer's first forward pass (or a CUDA-graph capture) compiles
    nothing. Repeated calls must be cheap (a memo lookup).
    """

    def prepare_moe_align(self, id_dtypes: tuple[Any, ...]) -> None: ...


@runtime_checkable
class DevicePlugin(Protocol):
    """Found through the `humming.devices` entry-point group."""

    name: str
    priority: int
    api_version: int

    def probe(self) -> bool:
        """Cheap, never raises, creates no context: is this device usable here?"""
        ...

    def load(self) -> Device: ...
