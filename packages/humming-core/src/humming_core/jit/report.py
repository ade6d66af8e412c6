"""Build one kernel for a spec (on any device, e.g. one bound to another arch) and describe it.

Works without the hardware: a device returned by `for_arch` renders and compiles for that target,
so a CI machine can check that every arch compiles and what each kernel costs in registers,
spills and shared memory. `humming compile` prints this report.
"""

from __future__ import annotations

from typing import Any

from ..device import Device, GemmProblem
from ..spec import QuantSpec
from .cache import compile_count, get_or_build
from .keys import cache_key


def compile_report(
    device: Device, spec: QuantSpec, problem: GemmProblem, config: Any = None
) -> dict[str, Any]:
    """Build (or fetch from the cache) the kernel for `problem` and describe it.

    config: None takes the device's first candidate. Raises ValueError with the device's reason
    when it cannot run the spec.
    """
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
        "family": getattr(chosen, "family", None),
        "config": chosen.model_dump(mode="json"),
        "candidates": len(candidates),
        "kernel": source.name,
        "symbol": artifact.meta.get("symbol", source.name),
        "registers": resources.get("registers"),
        "spill_stores": resources.get("spill_stores"),
        "spill_loads": resources.get("spill_loads"),
        "stack_bytes": resources.get("stack_bytes"),
        "static_smem_bytes": resources.get("smem_bytes"),
        "binary_bytes": len(artifact.binary),
        "compile_s": artifact.meta.get("compile_s"),
        "compiled_now": compile_count() > before,
        "cache_key": cache_key(device, source),
        "compiler": artifact.meta.get("nvrtc"),
    }
