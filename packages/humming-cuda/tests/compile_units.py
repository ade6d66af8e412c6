"""The kernel units a family's compile test builds: distinct rendered sources, compiled in parallel.

Configs that render the same code (e.g. split-K variants, a launch parameter) compile once: units
are keyed by their rendered source. Rendering needs no NVRTC; `Units.compile` does (call it in
tests that `pytest.importorskip("cuda.bindings.nvrtc")`).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from humming_core.device import Artifact, GemmProblem, KernelSource
from humming_cuda.caps import caps_for_arch
from humming_cuda.kernels import KernelFamily


class Units:
    """The distinct (spec, config) units of one family on one arch, in the order first added."""

    def __init__(self, family: KernelFamily, arch: str) -> None:
        self.family = family
        self.caps = caps_for_arch(arch)
        self._units: dict[str, tuple[object, object, KernelSource]] = {}

    def __len__(self) -> int:
        return len(self._units)

    def add(self, spec, cfg) -> None:
        source = self.family.render(spec, cfg, self.caps)
        self._units[source.code] = (spec, cfg, source)

    def add_candidates(self, spec, problem: GemmProblem) -> None:
        """Every config the heuristics return for `problem`."""
        for cfg in self.family.candidates(spec, problem, self.caps):
            self.add(spec, cfg)

    def add_first(self, spec, problem: GemmProblem) -> None:
        """The heuristic's choice for `problem`."""
        self.add(spec, self.family.candidates(spec, problem, self.caps)[0])

    def compile(self, workers: int) -> list[tuple[object, object, Artifact]]:
        """(spec, config, artifact) per unit; NVRTC runs in `workers` threads."""
        from humming_cuda.compiler import compile_source

        units = list(self._units.values())
        with ThreadPoolExecutor(max_workers=workers) as pool:
            artifacts = list(pool.map(lambda u: compile_source(u[2]), units))
        return [(spec, cfg, a) for (spec, cfg, _), a in zip(units, artifacts, strict=True)]
