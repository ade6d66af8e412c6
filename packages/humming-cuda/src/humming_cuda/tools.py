"""The cuda side of `humming compile`: build one kernel for a spec on any arch and report it.

Works without a GPU (the device is bound to the arch's capability row), so a CI machine can check
that every arch compiles and what each kernel costs in registers, spills and shared memory.
"""

from __future__ import annotations

from typing import Any

from humming_core.device import GemmProblem
from humming_core.jit import cache_key, compile_count, get_or_build
from humming_core.spec import QuantSpec

from .device import CudaDevice
from .kernels import KernelConfig


def compile_report(
    spec: QuantSpec,
    problem: GemmProblem,
    arch: str | None = None,
    config: KernelConfig | None = None,
) -> dict[str, Any]:
    """Build (or fetch from the cache) one kernel and describe it.

    arch: a compile target such as 'sm_90a' (None: the GPU present). config: None takes the
    heuristic's first candidate for `problem`. Raises ValueError when no family supports the spec.
    """
    device = CudaDevice.for_arch(arch) if arch is not None else CudaDevice()
    support = device.check(spec, problem)
    if not support:
        raise ValueError(support.reason)
    candidates = device.candidates(spec, problem)
    chosen = config if config is not None else candidates[0]
    source = device.render(spec, chosen)
    before = compile_count()
    artifact = get_or_build(device, source)
    resources = artifact.meta.get("resources", {})
    return {
        "device": device.name,
        "arch": source.arch,
        "family": chosen.family,
        "config": chosen.model_dump(mode="json"),
        "candidates": len(candidates),
        "kernel": source.name,
        "symbol": artifact.meta.get("symbol", source.name),
        "registers": resources.get("registers"),
        "spill_stores": resources.get("spill_stores"),
        "spill_loads": resources.get("spill_loads"),
        "stack_bytes": resources.get("stack_bytes"),
        "static_smem_bytes": resources.get("smem_bytes"),
        "cubin_bytes": len(artifact.binary),
        "compile_s": artifact.meta.get("compile_s"),
        "compiled_now": compile_count() > before,
        "cache_key": cache_key(device, source),
        "nvrtc": artifact.meta.get("nvrtc"),
    }
