"""The kernel units a family's compile test builds: distinct rendered sources, compiled in parallel.

Configs that render the same code (e.g. split-K variants, a launch parameter) compile once: units
are keyed by their rendered source. Rendering needs no NVRTC; `Units.compile` does (call it in
tests that `pytest.importorskip("cuda.bindings.nvrtc")`).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

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

    def sources(self) -> list[tuple[object, object, KernelSource]]:
        """(spec, config, rendered source) per unit, in the order first added."""
        return list(self._units.values())

    def compile(self, workers: int) -> list[tuple[object, object, Artifact]]:
        """(spec, config, artifact) per unit; NVRTC runs in `workers` threads."""
        from humming_cuda.compiler import compile_source

        units = list(self._units.values())
        with ThreadPoolExecutor(max_workers=workers) as pool:
            artifacts = list(pool.map(lambda u: compile_source(u[2]), units))
        return [(spec, cfg, a) for (spec, cfg, _), a in zip(units, artifacts, strict=True)]


def dumped_ptx(dump_dir: Path, units: Units, needs: Sequence[str] = ()) -> list[str]:
    """The PTX of every unit, compiled with HUMMING_DUMP_DIR=dump_dir, each checked to contain all
    of `needs` (the instructions that make it the intended kernel: a fallback to other loads or
    MMAs would still compile)."""
    files = list(Path(dump_dir).glob("*/kernel.ptx"))
    assert len(files) == len(units), f"{len(files)} PTX files for {len(units)} units"
    texts = []
    for ptx in files:
        text = ptx.read_text()
        for needed in needs:
            assert needed in text, f"{ptx.parent.name}: no {needed!r} in the PTX"
        texts.append(text)
    return texts


def assert_fits_registers(artifact: Artifact, threads: int, where: str) -> None:
    """No spills, registers for `threads` threads per CTA, and no wgmma serialized by ptxas (it
    says so in the log when the accumulators do not stay in registers across the async MMA)."""
    res = artifact.meta["resources"]
    assert res["spill_stores"] == 0 and res["spill_loads"] == 0, f"spills: {where} {res}"
    assert res["registers"] <= 65536 // threads, f"{where} {res}"
    assert "serialized" not in artifact.meta["log"], artifact.meta["log"]
