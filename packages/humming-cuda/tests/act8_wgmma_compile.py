"""What the compile tests of the two fp8-activation wgmma families (w8a8_wgmma, w4a8_wgmma) share:
the units (every format x every candidate over the M buckets the families take, bias and bf16
output; fp16 / fp32 outputs without bias on the first candidate) and their checks (the GEMM and
its two activation-quantizer entries compile without spills, fit the registers of the CTAs they
keep per SM, and the PTX holds the Hopper instructions that make it this kernel)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from compile_units import Units, assert_fits_registers, dumped_ptx

from humming_core.device import GemmProblem
from humming_core.ops.layer import M_BUCKETS
from humming_cuda.kernels.w8a8_wgmma.heuristics import MIN_M

SHAPE = (4096, 4096)
PTX_NEEDS = (
    "wgmma.mma_async.sync.aligned.m64n",  # n128, or w4a8_wgmma's narrow token tiles (n32 / n64)
    "k32.f32.e4m3.e4m3",
    "cp.async.bulk.tensor.2d",
    "mbarrier.arrive.expect_tx",
    "wgmma.wait_group",
)


def act8_wgmma_units(family, make_spec: Callable, formats: Sequence[tuple]) -> Units:
    """The units of `formats` (arguments of `make_spec` before bias / out) for `family`."""
    units = Units(family, "sm_90a")
    for fmt in formats:
        for m in (b for b in M_BUCKETS if b >= MIN_M):
            units.add_candidates(make_spec(*fmt, bias=True, out="bf16"), GemmProblem(*SHAPE, m=m))
        for out in ("fp16", "fp32"):
            units.add_first(make_spec(*fmt, bias=False, out=out), GemmProblem(*SHAPE, m=256))
    return units


def check_act8_wgmma_units(units: Units, dump_dir: Path, needs: Sequence[str]) -> None:
    """Compile every unit (HUMMING_DUMP_DIR=dump_dir) and check it (see the module docstring)."""
    for spec, cfg, artifact in units.compile(workers=4):
        functions = artifact.meta["functions"]
        assert len(functions) == 3, functions  # the GEMM plus two quantizer entries
        for name, res in functions.items():
            where = f"{name} {spec.weight} {spec.act} {cfg}"
            assert res["spill_stores"] == 0 and res["spill_loads"] == 0, f"spills: {where} {res}"
        where = f"{spec.weight} {spec.act} {cfg}"
        assert_fits_registers(artifact, cfg.threads * cfg.ctas_per_sm, where)
    dumped_ptx(dump_dir, units, needs)
