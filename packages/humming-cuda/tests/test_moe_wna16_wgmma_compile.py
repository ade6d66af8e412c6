"""MoE WnA16-wgmma units compile for sm_90a without spills, within the registers of 384 threads
(setmaxnreg hands the consumers more), with no wgmma serialized by ptxas, and their PTX has the
kernel's paths: wgmma on 16-bit operands, x rows gathered with cp.async, the weights' bulk copies
on mbarriers.

Units: W4A16 g128 with a SiLU GLU, uint8 codes with zero points (no GLU, router weights) and
MXFP4 (bf16), each at the blocks the heuristics take for 32, 64, 128 and 512 rows per expert
(64, 96, 160 and 128; zero-point codes 128 instead of 160) on their first ring depth and on 3
stages; and the 128-column tile at 64 and 96 rows on two CTAs per SM.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from compile_units import Units, assert_fits_registers, dumped_ptx
from moe_cases import UINT8_ZP, moe_spec

import humming_cuda
from humming_core.device import GemmProblem
from humming_core.spec import presets

pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (cuda-bindings) is not installed")
from humming_cuda.kernels.moe_wna16_wgmma import FAMILY, MoeWna16WgmmaConfig
from humming_cuda.kernels.moe_wna16_wgmma.config import (
    NARROW_N_BLOCK_MS,
    smem_bytes,
    smem_limit,
)
from humming_cuda.kernels.moe_wna16_wgmma.config import STAGES as CONFIG_STAGES
from humming_cuda.kernels.moe_wna16_wgmma.heuristics import MIN_ROWS_PER_EXPERT
from humming_cuda.kernels.wna16.config import KernelFormat

HEADER = Path(humming_cuda.__file__).parent / "include/humming/kernel/moe_wna16_wgmma.cuh"
pytestmark = pytest.mark.skipif(not HEADER.exists(), reason=f"{HEADER.name} is not written yet")

PTX_NEEDS = (
    "wgmma.mma_async.sync.aligned.m64n",
    "cp.async.cg.shared.global",  # the producer warpgroup's gathers of x rows
    "cp.async.bulk.shared::cluster.global.mbarrier",  # the weights, scales and zero points
    "mbarrier.arrive.expect_tx",
)
SPECS = (
    moe_spec(presets.W4A16_G128, glu="silu_mul"),
    moe_spec(UINT8_ZP, topk_weight=True),
    moe_spec(presets.MXFP4),
)


def _units() -> Units:
    """Per spec and block: the heuristics' ring depth (the deepest that fits) and the shallowest."""
    units = Units(FAMILY, "sm_90a")
    for spec in SPECS:
        for per_expert in (MIN_ROWS_PER_EXPERT, 64, 128, 512):
            problem = GemmProblem(n=1536, k=2048, m=128 * per_expert, num_experts=128)
            units.add_first(spec, problem)
            block_m = FAMILY.candidates(spec, problem, units.caps)[0].block_m
            units.add(spec, MoeWna16WgmmaConfig(arch="sm_90a", stages=3, block_m=block_m))
    return units


@pytest.mark.compile
@pytest.mark.timeout(900)
def test_units_compile_without_spills(monkeypatch, tmp_path):
    monkeypatch.setenv("HUMMING_DUMP_DIR", str(tmp_path))
    units = _units()
    blocks = {(spec.weight.dtype.name, cfg.block_m) for spec, cfg, _ in units.sources()}
    assert blocks == {
        *((code, b) for code in ("int4", "e2m1") for b in (48, 96, 128, 160)),
        *(("uint8", b) for b in (64, 96, 128)),  # zero points: no 48-row route
    }
    for spec, cfg, artifact in units.compile(workers=2):
        assert_fits_registers(artifact, cfg.threads, f"{spec.weight} {spec.epilogue} {cfg}")
    dumped_ptx(tmp_path, units, PTX_NEEDS)


def _narrow_n_units() -> Units:
    """The 128-column tile at two CTAs per SM (routed with 48-row blocks at 16-32 rows per
    expert): each spec at 48-, 64- and 96-row blocks, on the deepest ring that fits half an SM
    (zero-point codes' 96-row blocks: 3 stages)."""
    units = Units(FAMILY, "sm_90a")
    for spec in SPECS:
        fmt = KernelFormat.from_spec(spec)
        for block_m in NARROW_N_BLOCK_MS:
            fits = [
                cfg
                for stages in sorted(CONFIG_STAGES, reverse=True)
                for cfg in [
                    MoeWna16WgmmaConfig(
                        arch="sm_90a", stages=stages, block_m=block_m, block_n=128, ctas_per_sm=2
                    )
                ]
                if smem_bytes(fmt, cfg) <= smem_limit(cfg, units.caps.smem_per_block)
            ]
            units.add(spec, fits[0])
    return units


@pytest.mark.compile
@pytest.mark.timeout(900)
def test_128_column_units_compile_without_spills(monkeypatch, tmp_path):
    """The gathering producer keeps 72 (80) registers and one consumer warpgroup 184 (176) at two
    CTAs per SM: no spills, no serialized wgmma, within 128 registers per thread at launch."""
    monkeypatch.setenv("HUMMING_DUMP_DIR", str(tmp_path))
    units = _narrow_n_units()
    assert len(units) == len(NARROW_N_BLOCK_MS) * len(SPECS)
    for spec, cfg, artifact in units.compile(workers=2):
        assert cfg.threads == 256
        assert_fits_registers(artifact, 2 * cfg.threads, f"{spec.weight} {spec.epilogue} {cfg}")
    dumped_ptx(tmp_path, units, PTX_NEEDS)
