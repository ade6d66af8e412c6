"""Which problems the decode WnA16 kernel takes (M <= 8, wna16's specs but float zero points,
NVIDIA mma.sync arches) and its configs: wna16's decode tile and split-K choice."""

from __future__ import annotations

from humming_core.device import DeviceCaps, GemmProblem, Support
from humming_core.spec import QuantSpec

from ..wna16 import heuristics as wna16
from ..wna16.config import KernelFormat
from .config import Wna16DecodeConfig

MAX_M = 8  # one n8 block of tokens (include/humming/kernel/wna16_decode.cuh says why)


def supports(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> Support:
    base = wna16.supports(spec, problem, caps)
    if not base:
        return base
    if spec.weight.zero_point == "float":
        return Support.no(
            "float zero points (w * s - z) are applied per weight: the wna16_decode kernel scales "
            "fp32 partial sums per group, so that form runs on the wna16 family"
        )
    if problem.m is not None and problem.m > MAX_M:
        return Support.no(
            f"M={problem.m}: the wna16_decode kernel takes M <= {MAX_M} (one n8 block of tokens)"
        )
    return Support.yes()


def candidates(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> list[Wna16DecodeConfig]:
    """wna16's first config for this decode-size problem in this form, split as wna16 splits it;
    empty when `supports` says no."""
    if not supports(spec, problem, caps):
        return []
    m = problem.m if problem.m is not None else 1
    first = wna16.candidates(spec, GemmProblem(n=problem.n, k=problem.k, m=min(m, MAX_M)), caps)
    if not first:
        return []
    fields = first[0].model_dump(exclude={"family"})
    config = Wna16DecodeConfig(**fields)
    fmt = KernelFormat.from_spec(spec)
    return [config] if fmt.smem_bytes(config) <= caps.smem_per_block else []
