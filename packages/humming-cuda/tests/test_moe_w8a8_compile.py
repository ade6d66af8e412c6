"""Every MoE W8A8 / W4A8 configuration the heuristics generate compiles (no spills) on its targets:
fp8 activations on sm_89, sm_90a and sm_120a, int8 activations on those and sm_80.

Per arch: the tile configs of the three alignment blocks (16, 32, 64 rows), and the weight formats x
epilogues (GLUs, gpt-oss's clamped SwiGLU with biases, activation + bias, plain) on the decode tile.
"""

from __future__ import annotations

import pytest
from compile_units import Units
from moe_cases import moe_spec

from humming_core.device import GemmProblem
from humming_core.spec import QuantSpec, WeightSpec, presets

pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (cuda-bindings) is not installed")
from humming_cuda.kernels.moe_w8a8 import FAMILY

ARCHS = ("sm_80", "sm_89", "sm_90a", "sm_120a")
FP8_ARCHS = ARCHS[1:]
ROWS = (1, 256, 4096)  # over 8 experts: alignment blocks of 16, 32 and 64 rows
# uint4 with integer zero points x int8 (the only W4A8 format with a zero point)
W4A8_UINT4 = presets.W4A8_INT8.replace(
    weight=WeightSpec(dtype="uint4", scale=presets.W4A8_INT8.weight.scale, zero_point="int")
)
SILU = {"glu": "silu_mul"}
OAI = {"glu": "swiglu_oai", "glu_layout": "interleaved", "bias": True}
RELU_BIAS = {"activation": "relu", "bias": True}
MATRIX: tuple[tuple[QuantSpec, tuple[dict, ...]], ...] = (
    (presets.MXFP4_A8, (SILU, OAI, {})),
    (presets.W4A8_FP8, (SILU, {})),
    (presets.W8A8_FP8, (SILU, RELU_BIAS)),
    (presets.W8A8_INT8, (SILU, RELU_BIAS)),
    (presets.W4A8_INT8, (SILU, {})),
    (W4A8_UINT4, (SILU,)),
)


def _units(arch: str) -> Units:
    units = Units(FAMILY, arch)
    tiles = presets.MXFP4_A8 if arch in FP8_ARCHS else presets.W4A8_INT8
    for rows in ROWS:
        units.add_candidates(
            moe_spec(tiles, **SILU), GemmProblem(n=1024, k=512, m=rows, num_experts=8)
        )
    small = GemmProblem(n=1024, k=512, m=1, num_experts=8)
    for base, epilogues in MATRIX:
        for epi in epilogues:
            spec = moe_spec(base, **epi)
            if FAMILY.supports(spec, small, units.caps):
                units.add_first(spec, small)
    return units


@pytest.mark.compile
@pytest.mark.timeout(900)
@pytest.mark.parametrize("arch", ARCHS)
def test_generated_configs_compile_without_spills(arch):
    units = _units(arch)
    assert len(units) >= (14 if arch in FP8_ARCHS else 8)
    for spec, cfg, artifact in units.compile(workers=2):
        res = artifact.meta["resources"]
        where = f"{arch} {spec.weight.dtype.name}/{spec.act.dtype.name} {spec.epilogue} {cfg}"
        assert res["spill_stores"] == 0 and res["spill_loads"] == 0, f"spills: {where} {res}"
