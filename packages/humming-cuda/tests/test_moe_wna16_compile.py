"""Every MoE WnA16 configuration the heuristics generate compiles (no real spills) on every target.

Per arch: the tile configs over the M buckets (W4A16, GLU and plain), and a matrix of weight formats
x epilogues (GLUs, activations, bias; gpt-oss's clamped SwiGLU on MXFP4 and W4A16) on the smallest
tile.
"""

from __future__ import annotations

import pytest
from compile_units import Units
from moe_cases import moe_spec

from humming_core.device import GemmProblem
from humming_core.spec import presets

pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (cuda-bindings) is not installed")
from humming_cuda.kernels.moe_wna16 import FAMILY

ARCHS = ("sm_80", "sm_89", "sm_90a", "sm_120a")
ROWS = (1, 128, 512, 4096 * 8)
FORMATS = (
    presets.W4A16_G128,
    presets.W8A16,
    presets.GPTQ_INT4,
    presets.GGUF_Q4_K,
    presets.MXFP4,
    presets.NVFP4,
    presets.FP8_CHANNEL,
)
EPILOGUES = (
    {"glu": "silu_mul"},
    {"glu": "gelu_tanh_mul", "glu_layout": "interleaved"},
    {"glu": "gelu_mul", "bias": True},
    {"activation": "relu", "bias": True},
    {},
)
# gpt-oss's clamped SwiGLU (with its expert biases), on the formats that carry it.
OAI = {"glu": "swiglu_oai", "glu_layout": "interleaved", "bias": True}
OAI_FORMATS = (presets.MXFP4, presets.W4A16_G128)


def _units(arch: str) -> Units:
    units = Units(FAMILY, arch)
    for epi in EPILOGUES[:2] + EPILOGUES[-1:]:
        spec = moe_spec(presets.W4A16_G128, **epi)
        for rows in ROWS:
            units.add_candidates(spec, GemmProblem(n=2048, k=4096, m=rows, num_experts=64))
    small = GemmProblem(n=2048, k=4096, m=1, num_experts=64)
    matrix = [(base, epi) for base in FORMATS for epi in EPILOGUES]
    for base, epi in matrix + [(base, OAI) for base in OAI_FORMATS]:
        spec = moe_spec(base, **epi)
        if FAMILY.supports(spec, small, units.caps):
            units.add_first(spec, small)
    return units


@pytest.mark.compile
@pytest.mark.timeout(900)
@pytest.mark.parametrize("arch", ARCHS)
def test_generated_configs_compile_without_spills(arch):
    units = _units(arch)
    assert len(units) >= len(FORMATS)
    for spec, cfg, artifact in units.compile(workers=2):
        res = artifact.meta["resources"]
        where = f"{arch} {spec.weight.dtype.name}/{spec.act.dtype.name} {spec.epilogue} {cfg}"
        # The dense family's criterion: a few bytes of spill on rare formats (NVFP4 + bias on
        # sm_90a: 4 bytes); anything larger is a regression.
        assert res["spill_stores"] <= 16, f"spills: {where} {res}"
