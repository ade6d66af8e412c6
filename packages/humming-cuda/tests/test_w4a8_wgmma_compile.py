"""Every W4A8-wgmma configuration the heuristics return compiles for sm_90a without spills, and
its PTX really uses the Hopper paths (wgmma.mma_async fp8, cp.async.bulk.tensor, mbarrier
expect_tx) and the 4-bit expansion (prmt): a fallback to ordinary loads or MMAs would still compile
but not be this kernel.

Units: every format of w4a8_wgmma_cases x every candidate over the M buckets > 16 (bias, bf16 out),
plus fp16 / fp32 outputs without bias on the first candidate.
"""

from __future__ import annotations

import pytest
from compile_units import Units, assert_fits_registers, dumped_ptx
from w4a8_wgmma_cases import W4_WGMMA_FORMATS
from w8a8_cases import make_w4_spec

from humming_core.device import GemmProblem
from humming_core.ops.layer import M_BUCKETS

pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (cuda-bindings) is not installed")
from humming_cuda.kernels.w4a8_wgmma import FAMILY

SHAPE = (4096, 4096)
PTX_NEEDS = (
    "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3",
    "cp.async.bulk.tensor.2d",
    "mbarrier.arrive.expect_tx",
    "wgmma.wait_group",
    "prmt.b32",
)


def _units() -> Units:
    units = Units(FAMILY, "sm_90a")
    for fmt in W4_WGMMA_FORMATS:
        for m in (b for b in M_BUCKETS if b > 16):
            units.add_candidates(
                make_w4_spec(*fmt, bias=True, out="bf16"), GemmProblem(*SHAPE, m=m)
            )
        for out in ("fp16", "fp32"):
            units.add_first(make_w4_spec(*fmt, bias=False, out=out), GemmProblem(*SHAPE, m=256))
    return units


@pytest.mark.compile
def test_generated_configs_compile_without_spills(monkeypatch, tmp_path):
    monkeypatch.setenv("HUMMING_DUMP_DIR", str(tmp_path))
    units = _units()
    assert len(units) >= 2 * len(W4_WGMMA_FORMATS) + 2 * len(W4_WGMMA_FORMATS)
    for spec, cfg, artifact in units.compile(workers=4):
        functions = artifact.meta["functions"]
        assert len(functions) == 3, functions  # the GEMM plus two quantizer entries
        for name, res in functions.items():
            where = f"{name} {spec.weight} {spec.act} {cfg}"
            assert res["spill_stores"] == 0 and res["spill_loads"] == 0, f"spills: {where} {res}"
        assert_fits_registers(artifact, cfg.threads, f"{spec.weight} {spec.act} {cfg}")
    dumped_ptx(tmp_path, units, PTX_NEEDS)
