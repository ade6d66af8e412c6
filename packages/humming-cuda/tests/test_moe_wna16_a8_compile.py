"""moe_wna16_a8 units compile on every arch it runs on without spills, within the registers of
their threads, and each module carries both quantizer entries next to the row-scaled MoE kernel:
MXFP4 x e4m3 (SiLU GLU, gpt-oss's clamped SwiGLU with biases, plain with router weights) and
MXINT4 x int8 at decode, mid and prefill row counts (moe_wna16's decode form and dense K loop,
and on sm_90a moe_wna16_wgmma: its e4m3 form for MXFP4 x e4m3, 64- and 128-row blocks)."""

from __future__ import annotations

import pytest
from compile_units import Units, assert_fits_registers
from moe_cases import OAI, moe_spec

from humming_core.device import GemmProblem
from humming_core.spec import presets

pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (cuda-bindings) is not installed")
from humming_cuda.kernels.moe_wna16_a8 import FAMILY

ARCHS = ("sm_80", "sm_90a", "sm_120a")
ROWS = (8, 2048, 4096, 65536)
SPECS = (
    moe_spec(presets.MXFP4_A8, glu="silu_mul"),
    moe_spec(presets.MXFP4_A8, **dict(OAI), bias=True),
    moe_spec(presets.MXFP4_A8),
    moe_spec(
        presets.MXINT4.replace(act={"dtype": "int8", "quant": "dynamic", "granularity": "token"})
    ),
)


@pytest.mark.compile
@pytest.mark.timeout(900)
@pytest.mark.parametrize("arch", ARCHS)
def test_units_compile_without_spills(arch):
    units = Units(FAMILY, arch)
    for spec in SPECS:
        for rows in ROWS:
            units.add_first(spec, GemmProblem(n=1536, k=2048, m=rows, num_experts=128))
    for spec, cfg, artifact in units.compile(workers=2):
        assert_fits_registers(artifact, cfg.threads, f"{arch} {spec.act.dtype.name} {cfg}")
        for dtype in ("fp16", "bf16"):  # the quantizer entries are in the same cubin
            assert f"{artifact.name}_quant_{dtype}".encode() in artifact.binary
