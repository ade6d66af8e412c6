"""The WnA16 decode family: 16-bit activations x wna16's low-bit weights at M <= 16, computing out^T
with the weights as the MMA's A operand and group scales on fp32 partial sums
(include/humming/kernel/wna16_decode.cuh).

Specs: wna16's, except float zero points. Weights use the wna16 layout with the same identity, so a
layer packs once for this family and wna16. Written in session 5 and verified on the H200 on
2026-11-29 (session 6: tests/test_wna16_decode_conformance.py, 101 cases, and compute-sanitizer
memcheck/racecheck clean), where it ran 1.15-1.24x faster than wna16 on every decode point
measured (benchmarks/notes/wna16_decode_split_k_compare.json). M = 9-16 (config.tokens = 16: a
second n8 block of tokens) was added in session 10 and verified on the H200 in session 12; there it
takes only formats with per-channel scales or groups of 64 or more (heuristics.prefers), the others
staying on wna16. Registered before wna16, which takes M > 16.
"""

from __future__ import annotations

from humming_core.device import DeviceCaps
from humming_core.spec import QuantSpec

from ..family import ModuleFamily
from ..wna16.config import KernelFormat
from ..wna16.layout import Wna16Layout
from .bind import Wna16DecodeKernel
from .config import Wna16DecodeConfig
from .heuristics import candidates, prefers, supports
from .render import render


class Wna16DecodeFamily(ModuleFamily):
    """`KernelFamily` implementation (see humming_cuda.kernels.base)."""

    name = "wna16_decode"
    config_type = Wna16DecodeConfig
    kernel_type = Wna16DecodeKernel  # wna16's parameters, grid, split-K and prepared call
    supports = staticmethod(supports)
    candidates = staticmethod(candidates)
    prefers = staticmethod(prefers)
    render = staticmethod(render)

    def weight_layout(
        self, spec: QuantSpec, config: Wna16DecodeConfig, caps: DeviceCaps
    ) -> Wna16Layout:
        return Wna16Layout(KernelFormat.from_spec(spec))


FAMILY = Wna16DecodeFamily()

__all__ = ["FAMILY", "Wna16DecodeConfig", "Wna16DecodeFamily", "Wna16DecodeKernel"]
